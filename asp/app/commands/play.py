"""``asp play``: self-play games of a checkpoint (or a fresh model), written as JSON lines
(:mod:`asp.app.game_run`) and in the game's own format where it has one (chess: PGN); or,
with ``--human``, a game against a person at the terminal: the board after every move, the
person's move read in the game's notation (a bad one is one line, and asked again)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asp.app.commands.options import POLICY_ONLY_HELP, SEARCH_HELP, check_game_options, play_search
from asp.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from asp.app.game_run import GameRun

__all__ = ["HELP", "add_arguments", "play_summary", "run"]

HELP = "play self-play games and write them (chess: PGN; other games: JSON lines)"
"""The command's line in ``asp --help``."""


def add_arguments(play: argparse.ArgumentParser) -> None:
    """``asp play``'s options."""
    play.add_argument("--checkpoint", help="checkpoint file or run directory (default: a fresh model)")
    play.add_argument(
        "--game",
        help="the game of a fresh model: tinychess (default), connect4, openspiel:NAME or MODULE:ATTR "
        "(a checkpoint: its own)",
    )
    play.add_argument("--games", type=int, default=64, help="games to play (default 64)")
    play.add_argument("--max-plies", type=int, help="ply cap (default: the run's; TinyChess 200)")
    play.add_argument("--seed", type=int, default=0, help="seed of the games (and of a fresh model; default 0)")
    play.add_argument("--temperature", type=float, help="sampling temperature (default 1)")
    play.add_argument("--search", type=int, help=SEARCH_HELP)
    play.add_argument("--policy-only", action="store_true", help=POLICY_ONLY_HELP)
    play.add_argument("--workers", type=int, default=1, help="worker processes (default 1: play in this process)")
    play.add_argument(
        "--human",
        nargs="?",
        const="first",
        choices=("first", "second"),
        help="play the model yourself, at the terminal: you move first (default) or second; "
        "moves in the game's notation, 'quit' to stop",
    )
    play.add_argument(
        "--out",
        help="file to write: .jsonl, or the game's own format (chess: .pgn; default selfplay.pgn; other "
        "games: selfplay.jsonl)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``asp play``: the games of ``--checkpoint``, or of a fresh model of ``--game`` as
    ``asp train`` would start it."""
    import torch

    from asp.app.game_loader import TINYCHESS, load_game
    from asp.app.game_run import GameRun
    from asp.app.run.directory import run_from_checkpoint
    from asp.app.run_config import defaults_for

    check_game_options(args)
    if args.checkpoint:
        if args.game is not None:
            raise ConfigError("--game is for a fresh model: a checkpoint plays its own run's game")
        run, model, state = run_from_checkpoint(args.checkpoint, trust_game=args.trust_game)
        play = _human if args.human else _play
        return play(args, run, model, state["version"])
    spec = args.game or TINYCHESS
    loaded = load_game(spec)
    fresh = GameRun(defaults_for(spec, loaded), loaded)  # as asp train would start it
    torch.manual_seed(args.seed)
    return (_human if args.human else _play)(args, fresh, fresh.new_model(), 0)


def _human(args: argparse.Namespace, run: GameRun, model: torch.nn.Module, version: int) -> int:
    """``asp play --human``: one game between the model, playing to win, and the person at
    the terminal, the board printed after every move."""
    from asp.app.player import Player
    from asp.games.checked import legal_actions
    from asp.games.protocol import adjudicated, outcome

    if args.out is not None or args.workers != 1 or args.games != 64 or args.temperature is not None:
        raise ConfigError("--human plays one game at the terminal: no --out, --games, --workers or --temperature")
    player, game = Player(run, model, play_search(run, args), version), run.game
    human = 0 if args.human == "first" else 1
    state, plies = game.start(), 0
    max_plies = run.cfg.max_plies if args.max_plies is None else args.max_plies
    print(f"{game.name}: you play {args.human}; moves in the game's notation, 'quit' to stop\n{game.show(state)}")  # noqa: T201
    while outcome(game, state) is None and plies < max_plies:
        if game.to_move(state) == human:
            try:
                text = input("your move: ")
            except EOFError:
                text = "quit"
            if text.strip().lower() in ("quit", "exit", "resign"):
                print("stopped")  # noqa: T201
                return 0
            try:
                action = game.parse_action(state, text)
                if action not in legal_actions(game, state):
                    raise ValueError(f"{text.strip()!r} is no legal move here")
            except ValueError as e:
                print(f"not a move: {e}")  # noqa: T201
                continue
        else:
            action = player.move(state)
            print(f"asp plays {game.action_text(state, action)}")  # noqa: T201
        state, plies = game.apply(state, action), plies + 1
        print(game.show(state))  # noqa: T201
    value = outcome(game, state)
    cut = value is None  # at max_plies: the game's adjudicate says who won, as in training
    value = adjudicated(game, state) if value is None else value
    yours = value if game.to_move(state) == human else -value
    verdict = "you won" if yours > 0 else "you lost" if yours < 0 else "a draw"
    where = f"cut at {plies} plies, adjudicated; " if cut else ""
    print(f"{verdict} ({where}{game.state_text(state)})")  # noqa: T201
    return 0


def _play(args: argparse.Namespace, run: GameRun, model: torch.nn.Module, version: int) -> int:
    """``asp play`` of a game: self-play games written as JSON lines to ``--out`` (and in the
    game's own format beside them, where it has one), or in the game's own format alone where
    ``--out`` has its suffix (chess: ``.pgn``); by default to ``selfplay`` with the game's own
    suffix, else ``selfplay.jsonl``. A file of the game's own format that is already there
    beside a ``--out`` of JSON lines is refused, not overwritten: the user did not name it."""
    from asp.app.outputs import check_output_file, writing
    from asp.games import PlayConfig
    from asp.games.protocol import exported
    from asp.selfplay.sync import play_games_parallel
    from asp.util.atomic import write_text_atomic

    own = exported(run.game, [])  # the game's own format, if it has one: the default file's
    out = args.out or "selfplay" + (own[0] if own is not None else ".jsonl")
    check_output_file("--out", out)
    beside = Path(out).with_suffix(own[0]) if own is not None else Path(out)
    if beside != Path(out) and beside.exists():
        raise ConfigError(
            f"--out {out}: the games go in {beside} beside it too, and {beside} exists: remove it or pick another --out"
        )
    search = play_search(run, args, sampling=True)
    play_cfg = PlayConfig(
        run.game,
        n_games=args.games,
        seed=args.seed,
        max_plies=run.cfg.max_plies if args.max_plies is None else args.max_plies,
        temperature=1.0 if args.temperature is None else args.temperature,
        model_version=version,
        search=search,
        samples=False,
    )
    records, stats = play_games_parallel(model, None, play_cfg, workers=args.workers)
    export = exported(run.game, records)
    with writing(out):
        if export is not None and Path(out).suffix == export[0]:  # chess: --out games.pgn asks for PGN
            write_text_atomic(out, export[1])
        else:
            run.write_games([r.plain() for r in records], out)
    print(play_summary(stats, out))  # noqa: T201
    return 0


def play_summary(stats: dict[str, Any], out: str | os.PathLike[str]) -> str:
    """The line of ``asp play``: how many games and plies, how fast, their results, where.

    >>> play_summary({"games": 4, "plies": 130, "seconds": 2.0, "results": {"0-1": 1, "1-0": 3}}, "c4.jsonl")
    'played 4 games, 130 plies in 2.0 s (65 plies/s); results 1-0 3, 0-1 1; wrote c4.jsonl'
    """
    order = {"1-0": 0, "1/2-1/2": 1, "0-1": 2}
    results = sorted(stats["results"].items(), key=lambda item: order.get(item[0], 3))
    return (
        f"played {stats['games']} games, {stats['plies']} plies in {stats['seconds']:.1f} s "
        f"({stats['plies'] / max(stats['seconds'], 1e-9):.0f} plies/s); "
        f"results {', '.join(f'{result} {count}' for result, count in results)}; wrote {os.fspath(out)}"
    )
