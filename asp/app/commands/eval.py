"""``asp eval RUN``: a checkpoint's score against a mover of its game, an engine of its game
(:func:`asp.games.protocol.engine_names`) or another checkpoint, with its Elo; or ``--ladder``,
the run's rating ladder from its evaluations."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asp.app.commands.options import (
    POLICY_ONLY_HELP,
    SEARCH_HELP,
    check_game_options,
    engine_options,
    play_search,
)
from asp.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from asp.app.game_run import GameRun
    from asp.search import SearchConfig

__all__ = ["HELP", "add_arguments", "checkpoint_name", "run"]

HELP = "score a checkpoint against a mover or an engine of its game, or another checkpoint"
"""The command's line in ``asp --help``."""


def add_arguments(ev: argparse.ArgumentParser) -> None:
    """``asp eval``'s options."""
    ev.add_argument("checkpoint", metavar="RUN", help="checkpoint file, run directory or RUN@VERSION (a kept version)")
    ev.add_argument(
        "--vs",
        default="random",
        metavar="MOVER|ENGINE|RUN2",
        help="the opponent: the uniformly random mover (default), another mover of the run's game (its movers, or "
        "one it knows by name: OpenSpiel's mctsN, N simulations), an engine of the game (docs/cli.md), or another "
        "checkpoint file or run directory, or RUN@VERSION, a version the run keeps (./random for a directory of that "
        "name); a name the game does not know is answered with its movers and engines",
    )
    ev.add_argument("--games", type=int, default=200, help="games (default 200)")
    ev.add_argument(
        "--temperature",
        type=float,
        help="the model's sampling temperature, 0: its likeliest move (default 0)",
    )
    ev.add_argument("--search", type=int, help=SEARCH_HELP + "; another checkpoint likewise")
    ev.add_argument("--policy-only", action="store_true", help=POLICY_ONLY_HELP + "; another checkpoint likewise")
    ev.add_argument("--seed", type=int, default=0, help="seed of the games (default 0)")
    ev.add_argument("--max-plies", type=int, help="ply cap (default: the run's; TinyChess 200)")
    ev.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes, each with its own engine (default 1: play in this process)",
    )
    _add_engine_options(ev)
    ev.add_argument(
        "--from-start",
        action="store_true",
        help="start every game from the initial position (no openings, no random plies)",
    )
    ev.add_argument(
        "--pgn", metavar="PATH", help="also write the games to this file, in the game's own format (where it has one)"
    )
    ev.add_argument(
        "--ladder",
        action="store_true",
        help="print the run's rating ladder instead (its evaluated versions and the movers on one Elo scale, "
        "from every evaluation game)",
    )


def _add_engine_options(ev: argparse.ArgumentParser) -> None:
    """``asp eval``'s options of an engine opponent."""
    ev.add_argument(
        "--skill",
        type=int,
        help="--vs ENGINE: its skill level (default: the engine's)",
    )
    ev.add_argument("--nodes", type=int, help="--vs ENGINE: nodes searched per move (default: the engine's)")
    ev.add_argument("--move-time", type=float, help="--vs ENGINE: seconds per move (default: the engine's)")
    ev.add_argument(
        "--depth",
        type=int,
        help="--vs ENGINE: plies searched per move (default: the engine's)",
    )
    ev.add_argument(
        "--engine",
        metavar="PATH",
        help="--vs ENGINE: the program to run (default: where the game looks for it)",
    )


_ENGINE_NAMES = {
    "skill": "--skill",
    "nodes": "--nodes",
    "time": "--move-time",
    "depth": "--depth",
    "path": "--engine",
    "name": "--vs",
}
"""The engine's fields and the ``asp eval`` options that set them."""


def run(args: argparse.Namespace) -> int:
    """Run ``asp eval``: the match of ``RUN`` against ``--vs``, or ``--ladder``."""
    from asp.app.run.directory import run_from_checkpoint

    if args.ladder:
        return _ladder(args)
    check_game_options(args)
    if args.pgn:
        from asp.app.outputs import check_output_file

        check_output_file("--pgn", args.pgn)
    run, model, state = run_from_checkpoint(args.checkpoint, trust_game=args.trust_game)
    return _eval(args, run, model, state["version"])


_NOT_OF_A_MATCH = ("log_format", "log_level", "trust_game", "ladder")
"""``asp eval``'s options that ``--ladder`` takes too."""


def _ladder(args: argparse.Namespace) -> int:
    """``asp eval RUN --ladder``: it plays no game, so an option of a match is refused."""
    from asp.app.evaluation.ladder import ladder_table
    from asp.app.run import RunDir
    from asp.app.run.directory import RunError

    where = args.checkpoint
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = vars(parser.parse_args([where]))
    given = [
        name
        for name, value in vars(args).items()
        if name in defaults and name not in _NOT_OF_A_MATCH and value != defaults[name]
    ]
    if given:
        option = "--" + given[0].replace("_", "-")
        raise ConfigError(
            f"{option}: --ladder reads the run's evaluations and plays no game: drop {option} or --ladder"
        )
    if not Path(where).is_dir():
        raise RunError(f"{where}: --ladder reads a run directory (its metrics.jsonl)")
    print(ladder_table(RunDir(where).read_metrics(), where))  # noqa: T201
    return 0


def _eval(args: argparse.Namespace, run: GameRun, model: torch.nn.Module, version: int) -> int:
    """``asp eval RUN`` of the run ``run`` (``model`` at ``version``): a match against one of
    the game's movers, one of its engines or another checkpoint of the same game; prints the
    score with its Elo, and writes the games to ``--pgn`` in the game's own format."""
    from asp.app.run_config import match_starts
    from asp.games import PlayConfig
    from asp.games.protocol import engine_names, exported

    if args.pgn and exported(run.game, []) is None:
        raise ConfigError(f"--pgn applies to a game with a file format of its own, not to a {run.cfg.game} run")
    movers = _movers(run, args.vs)
    opponent, described, opponent_version, opponent_search = _opponent(args, run, movers)
    engine = args.vs in engine_names(run.game)
    play_cfg = PlayConfig(
        run.game,
        n_games=args.games,
        seed=args.seed,
        max_plies=run.cfg.max_plies if args.max_plies is None else args.max_plies,
        temperature=0.0 if args.temperature is None else args.temperature,
        opponent_temperature=1.0 if args.vs in movers else None,
        model_version=version,
        opponent_version=opponent_version,
        search=play_search(run, args),
        opponent_search=opponent_search,
        samples=False,
        # Two players that play to win would play the same two games over and over.
        **(
            {}
            if args.vs == "random" or args.from_start
            else match_starts(run.game, between_networks=args.vs not in movers)
        ),
    )
    records = _play_match(model, opponent, play_cfg, workers=args.workers)
    if args.pgn:
        _write_pgn(args, run, records, opponent_version, named=args.vs not in movers and not engine)
    return _print_match(args, version, described, records, engine=engine)


def _write_pgn(
    args: argparse.Namespace, run: GameRun, records: list[Any], opponent_version: int, *, named: bool
) -> None:
    """Write the match's games to ``--pgn``; another checkpoint (``named``) is named by its run."""
    from asp.app.outputs import writing
    from asp.games.protocol import exported
    from asp.util.atomic import write_text_atomic

    if named:
        name = checkpoint_name(args.vs, opponent_version)
        records = [dataclasses.replace(record, opponent_name=name) for record in records]
    export = exported(run.game, records)
    assert export is not None, "a game without a format of its own is refused above"
    with writing(args.pgn):
        write_text_atomic(args.pgn, export[1])


def checkpoint_name(path: str, version: int) -> str:
    """A checkpoint as an opponent, in words fit for a PGN tag: ``asp model v3 of RUN``.

    >>> checkpoint_name("/tmp/runs/c4 (old)", 3)
    'asp model v3 of c4__old_'
    """
    where = Path(path).resolve()
    run = where.name if where.is_dir() or where.suffix != ".pt" else where.parent.name
    return f"asp model v{version} of " + (re.sub(r"[^\w.+-]", "_", run)[:80] or "a run")


def _play_match(model: torch.nn.Module, opponent: Any, cfg: Any, *, workers: int) -> list[Any]:
    """The records of ``asp eval``'s match (:func:`asp.selfplay.sync.play_games_parallel`); an engine
    opponent's program in this process is closed after (the workers close their own)."""
    from asp.selfplay.sync import play_games_parallel

    try:
        records, _ = play_games_parallel(model, opponent, cfg, workers=workers)
    finally:
        close = getattr(opponent, "close", None)
        if callable(close):
            close()
    return list(records)


def _print_match(args: argparse.Namespace, version: int, described: str, records: list[Any], *, engine: bool) -> int:
    """Print ``asp eval``'s line of the match of ``args.checkpoint`` (at ``version``) against
    ``described`` (with its engine failures, against an ``engine``), and the versions its run
    keeps; return the exit code, 0."""
    from asp.app.evaluation.elo import match_result_of
    from asp.app.run.directory import kept_versions_line

    result = match_result_of(records)
    print(  # noqa: T201
        f"{args.checkpoint} (version {version}) against {described}: "
        f"{result.describe(failures=engine)}" + (f"; wrote {args.pgn}" if args.pgn else "")
    )
    if kept := kept_versions_line(args.checkpoint):
        print(kept)  # noqa: T201
    return 0


def _opponent(
    args: argparse.Namespace, run: GameRun, movers: dict[str, Any]
) -> tuple[Any, str, int, SearchConfig | None]:
    """``asp eval``'s opponent in the run ``run``: ``(opponent, in words, its version, its
    search)``: one of ``movers`` (:func:`_movers`), one of the game's engines, or another
    checkpoint of the same game."""
    from asp.app.run.directory import run_from_checkpoint
    from asp.games.protocol import engine_config, engine_names

    engines, given = engine_names(run.game), engine_options(args, _ENGINE_NAMES)
    if given and args.vs not in engines:
        option = _ENGINE_NAMES[next(iter(given))]
        if not engines:
            raise ConfigError(f"{option} applies to an engine, and {run.cfg.game} has none")
        raise ConfigError(f"{option} applies to {' or '.join(f'--vs {e}' for e in engines)} only, not --vs {args.vs}")
    if args.vs in movers:
        return movers[args.vs], f"the {args.vs} mover", 0, None
    if args.vs in engines:
        fields = {"name": args.vs, **given}
        found = engine_config(run.game, fields, _ENGINE_NAMES).opponent()  # a missing engine: a usage error
        return found, found.opponent_name, 0, None
    if not args.vs.strip() or _names_no_file(args.vs):
        raise ConfigError(
            f"--vs {args.vs}: not an opponent of {run.cfg.game}; its movers: {', '.join([*movers, *engines])}, or a RUN"
        )
    other, opponent, opponent_state = run_from_checkpoint(args.vs, trust_game=args.trust_game)
    if other.cfg.game != run.cfg.game and other.game.name != run.game.name:
        raise ConfigError(f"--vs {args.vs}: a run of {other.cfg.game}, not of {run.cfg.game}")
    version = opponent_state["version"]
    return opponent, f"{args.vs} (version {version})", version, play_search(other, args)


def _movers(run: GameRun, vs: str) -> dict[str, Any]:
    """The movers of the run's game (:func:`~asp.games.movers.movers_of`), and ``vs`` where
    the game knows a mover by that name besides them (OpenSpiel's ``mctsN``)."""
    from asp.games.movers import mover_named, movers_of

    movers: dict[str, Any] = movers_of(run.game)  # each an nn.Module (asp.games.Mover)
    if vs not in movers and (named := mover_named(run.game, vs)) is not None:
        movers[vs] = named
    return movers


def _names_no_file(vs: str) -> bool:
    """Whether ``--vs`` is a word that names no file: a mover's name, not a RUN (a path, a
    checkpoint file, ``RUN@VERSION``)."""
    return not Path(vs).exists() and not any(mark in vs for mark in ("/", os.sep, "@")) and not vs.endswith(".pt")
