"""The ``asp`` command line.

* ``asp train``: the main job, a pipelined training run (of TinyChess by default) with a live display;
* ``asp play``: games of a checkpoint (or a fresh model) written as JSON lines (chess: or PGN);
* ``asp eval``: a checkpoint's score against a mover of its game, Stockfish or another
  checkpoint, with its Elo;
* ``asp show``: a position of a recorded game as a text board and an SVG picture;
* ``asp moves``: the move a checkpoint plays in each position of a file.

Every command takes the runs of every game: ``asp train --game connect4`` (or ``MODULE:ATTR``,
a game of the user's) trains another game than TinyChess, and the other commands read the
game from the run.

>>> import tempfile
>>> out = tempfile.mkdtemp() + "/games.pgn"
>>> main(["play", "--games", "2", "--max-plies", "4", "--workers", "1", "--out", out])  # doctest: +ELLIPSIS
played 2 games, 8 plies in ...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from asp.app.entry import EXIT_INTERRUPTED
from asp.app.outputs import check_output_file, writing
from asp.app.train_command import engine_from_options, train_command
from asp.errors import AspError, ConfigError, NotRetried, ShardFailed
from asp.log import LOG_FORMATS, LOG_LEVELS, configure_logging

if TYPE_CHECKING:
    from asp.tinychess.engine import EngineConfig

__all__ = ["main"]

EXIT_USAGE = 2
POLICY_ONLY_HELP = "the model plays its policy network alone: no search"
SEARCH_HELP = "simulations of the model's search before each move, 0 for none (default: as its run was configured)"
EXIT_FAILURE = 1
TRUST_GAME_HELP = (
    "import the game that a file read names (a checkpoint's, a kept version's, a games file's, a config's) "
    "where it is a module outside asp (MODULE:ATTR): that runs the module's code, so only for files you trust"
)


_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The subcommands' parsers (``add_parser``)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asp", description="Async self-play for board games.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = (_train_parser(sub), _play_parser(sub), _eval_parser(sub), _show_parser(sub), _moves_parser(sub))
    for p in commands:
        p.add_argument(
            "--log-format", choices=LOG_FORMATS, default="console", help="console or json lines (default console)"
        )
        p.add_argument(
            "--log-level", choices=LOG_LEVELS, default="warning", help="least level logged (default warning)"
        )
        p.add_argument("--trust-game", action="store_true", help=TRUST_GAME_HELP)
    return parser


MAX_STALENESS = 16
"""``asp.pipeline.MAX_STALENESS``, for the help text: importing the pipeline imports torch,
which ``asp --help`` should not wait for (tests/test_cli_help.py keeps the two equal)."""


def _train_parser(sub: _Commands) -> argparse.ArgumentParser:
    train = sub.add_parser("train", help="train a game (TinyChess by default) by pipelined self-play (the main job)")
    train.add_argument(
        "--game",
        help="the game: tinychess (default), connect4, or MODULE:ATTR, a game of your own (an asp.games.Game class "
        "or object; the current directory is importable)",
    )
    train.add_argument("--iterations", type=int, help="iterations to train (default 20)")
    train.add_argument("--games", type=int, help="self-play games per iteration (default 160; other games: 200)")
    train.add_argument("--seed", type=int, help="seed of model, games and trainer (default 0)")
    train.add_argument("--max-plies", type=int, help="ply cap of a game (default 200; other games: 1000)")
    train.add_argument("--eval-every", type=int, help="evaluate every N iterations (default 10; other games: 4)")
    train.add_argument(
        "--eval-games", type=int, help="the most games of an evaluation, against each opponent (default 100)"
    )
    train.add_argument(
        "--eval-precision",
        type=float,
        help="an evaluation stops once its score is known to +- this (95%%; default 0.1; 0: play every game)",
    )
    train.add_argument(
        "--eval-vs",
        choices=("random", "stockfish"),
        default="random",
        help="opponents of every evaluation: the game's movers (TinyChess: the random and the one-ply greedy "
        "mover; default), or Stockfish as well",
    )
    train.add_argument("--eval-skill", type=int, help="--eval-vs stockfish: Skill Level 0-20 (default 0)")
    train.add_argument("--eval-nodes", type=int, help="--eval-vs stockfish: nodes per move (default 100)")
    train.add_argument(
        "--engine", help="--eval-vs stockfish: the engine's executable (default: stockfish on PATH or in /usr/games)"
    )
    train.add_argument("--sequential", action="store_true", help="do not overlap play and training")
    train.add_argument(
        "--max-staleness",
        type=int,
        help=f"versions a game may lag behind the weights that train on it (0-{MAX_STALENESS}; default 1: the next "
        "iteration is played while training; N >= 2: self-play runs up to N iterations ahead)",
    )
    train.add_argument(
        "--search",
        type=int,
        help="simulations of the model's search per move, trained on its improved policy "
        "(1-10000; default 8; other games: 16)",
    )
    train.add_argument(
        "--eval-search",
        type=int,
        help="simulations of the model's search when it plays to win (evaluations, asp eval); "
        "0: the policy alone (default 64)",
    )
    train.add_argument("--policy-only", action="store_true", help=argparse.SUPPRESS)  # refused, with what to do
    train.add_argument(
        "--hidden",
        type=int,
        help="width of the network's trunk (default: the game's; 256 for TinyChess and Connect Four)",
    )
    _add_file_options(train)
    _add_machine_options(train)
    return train


def _add_file_options(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options of the files a run reads and writes besides its own."""
    train.add_argument(
        "--config",
        metavar="FILE",
        help="the run's settings from a TOML file (or a run's config.json); the options override it",
    )
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the run's whole config as a file for --config, and exit",
    )
    train.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write every metric as TensorBoard scalars in RUN/tensorboard (needs asp[tensorboard])",
    )


def _add_machine_options(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options of where and how it runs, rather than what it trains."""
    train.add_argument("--workers", type=int, help="worker processes (default: cores // threads)")
    train.add_argument("--threads-per-worker", type=int, default=1, help="torch threads per worker (default 1)")
    train.add_argument(
        "--trainer-threads", type=int, help="torch threads of the trainer (default: every core; the split is printed)"
    )
    train.add_argument("--backend", choices=("local", "ray"), default="local", help="where workers run (default local)")
    train.add_argument(
        "--address",
        help="Ray only: 'auto' joins this machine's Ray cluster, ray://HOST:PORT a Ray client (default: "
        "a private Ray instance on this machine)",
    )
    train.add_argument("--run-dir", help="run directory (default runs/<name>)")
    train.add_argument("--name", help="run name, for the default run directory (default: the game's name)")
    train.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR where it stopped")
    train.add_argument("--device", help="trainer device: auto, cpu, cuda (default auto)")
    train.add_argument("--no-progress", action="store_true", help="no live display, one line per iteration")


def _play_parser(sub: _Commands) -> argparse.ArgumentParser:
    play = sub.add_parser("play", help="play self-play games and write them (chess: PGN; other games: JSON lines)")
    play.add_argument("--checkpoint", help="checkpoint file or run directory (default: a fresh model)")
    play.add_argument(
        "--game", help="the game of a fresh model: tinychess (default), connect4 or MODULE:ATTR (a checkpoint: its own)"
    )
    play.add_argument("--games", type=int, default=64, help="games to play (default 64)")
    play.add_argument("--max-plies", type=int, help="ply cap (default: the run's; TinyChess 200)")
    play.add_argument("--seed", type=int, default=0, help="seed of the games (and of a fresh model; default 0)")
    play.add_argument("--temperature", type=float, help="sampling temperature (default 1)")
    play.add_argument("--search", type=int, help=SEARCH_HELP)
    play.add_argument("--policy-only", action="store_true", help=POLICY_ONLY_HELP)
    play.add_argument("--workers", type=int, default=1, help="worker processes (default 1: play in this process)")
    play.add_argument(
        "--out",
        help="file to write: .jsonl, or the game's own format (chess: .pgn; default selfplay.pgn; other "
        "games: selfplay.jsonl)",
    )
    return play


def _eval_parser(sub: _Commands) -> argparse.ArgumentParser:
    ev = sub.add_parser(
        "eval",
        help="score a checkpoint against a mover (random, greedy, a game's own), Stockfish or another checkpoint",
    )
    ev.add_argument("checkpoint", metavar="RUN", help="checkpoint file, run directory or RUN@VERSION (a kept version)")
    ev.add_argument(
        "--vs",
        default="random",
        metavar="random|greedy|stockfish|uci|MOVER|RUN2",
        help="the opponent: the uniformly random mover (default), the one-ply material-greedy mover, Stockfish, "
        "any UCI engine (--engine PATH), a mover of the run's game (Connect Four: winblock), or another "
        "checkpoint file or run directory, or RUN@VERSION, a version the run keeps (./random for a directory of that "
        "name)",
    )
    ev.add_argument("--games", type=int, default=200, help="games (default 200)")
    ev.add_argument(
        "--temperature",
        type=float,
        help="the model's sampling temperature, 0: greedy (default 0)",
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
    ev.add_argument(
        "--skill",
        type=int,
        help="--vs stockfish/uci: its Skill Level, 0-20 (default: 0 for stockfish, unset for uci)",
    )
    ev.add_argument("--nodes", type=int, help="--vs stockfish/uci: nodes searched per move (default 100)")
    ev.add_argument(
        "--move-time", type=float, help="--vs stockfish/uci: seconds per move (default: the node limit only)"
    )
    ev.add_argument(
        "--engine",
        metavar="PATH",
        help="--vs stockfish: the engine to run (default: stockfish on PATH or in /usr/games); --vs uci: required",
    )
    ev.add_argument(
        "--from-start",
        action="store_true",
        help="start every game from the initial position (no openings, no random plies)",
    )
    ev.add_argument("--pgn", metavar="PATH", help="also write the games to this PGN file (a game of chess)")
    ev.add_argument(
        "--ladder",
        action="store_true",
        help="print the run's rating ladder instead (its evaluated versions and the movers on one Elo scale, "
        "from every evaluation game)",
    )
    return ev


def _show_parser(sub: _Commands) -> argparse.ArgumentParser:
    show = sub.add_parser("show", help="draw a position of a recorded game (a text board and an SVG picture)")
    show.add_argument(
        "pgn",
        metavar="GAMES",
        help="a PGN file (TinyChess: asp play, or games/iter-NNNN.pgn of a run), or the .jsonl games file of "
        "another game",
    )
    show.add_argument("--game", type=int, default=1, help="which game of the file, counting from 1 (default 1)")
    show.add_argument(
        "--ply", type=int, help="the position after K plies; 0 is the start position (default: the final position)"
    )
    show.add_argument(
        "--out",
        default="board.svg",
        help="SVG file to write (default board.svg); a directory (existing, or ending in /): "
        "one SVG per ply of the game, ply-000.svg, ply-001.svg, ...",
    )
    return show


def _moves_parser(sub: _Commands) -> argparse.ArgumentParser:
    moves = sub.add_parser("moves", help="the move a checkpoint plays in each position of a file")
    moves.add_argument("checkpoint", metavar="RUN", help="checkpoint file or run directory")
    moves.add_argument(
        "--positions",
        required=True,
        metavar="FILE",
        help="one position a line, the whole line (TinyChess: a FEN, or an EPD with its operations; Connect Four: "
        "the columns played, 1-7, and the position's score or not, as in the solver test sets)",
    )
    moves.add_argument("--search", type=int, help=SEARCH_HELP)
    moves.add_argument("--policy-only", action="store_true", help=POLICY_ONLY_HELP)
    return moves


def _play(args: argparse.Namespace) -> int:
    from asp.app.checkpoint import model_from_checkpoint, new_model, run_config_of
    from asp.app.game_commands import game_play
    from asp.app.game_config import defaults_for
    from asp.app.games import TINYCHESS

    _check_game_options(args)
    if args.checkpoint:
        if args.game is not None:
            raise ConfigError("--game is for a fresh model: a checkpoint plays its own run's game")
        model, state = model_from_checkpoint(args.checkpoint, trust_game=args.trust_game)
        return game_play(args, model, state["version"], run_config_of(state))
    import torch

    fresh = defaults_for(args.game or TINYCHESS)  # as asp train would start it
    torch.manual_seed(args.seed)
    return game_play(args, new_model(fresh), 0, fresh)


_GAME_OPTIONS = (("games", 1, 10**6), ("max_plies", 1, 10_000), ("seed", 0, 2**63 - 1), ("workers", 1, 4096))
"""The integer options of ``asp play`` and ``asp eval`` and their ranges."""


def _check_game_options(args: argparse.Namespace) -> None:
    """ConfigError naming the first option of ``asp play``/``asp eval`` out of its range."""
    from asp.checks import check_number

    for name, low, high in _GAME_OPTIONS:
        value = getattr(args, name)
        if value is not None and not low <= value <= high:
            raise ConfigError(f"--{name.replace('_', '-')} must be in {low}..{high}, got {value}")
    if args.search is not None and not 0 <= args.search <= 10_000:
        raise ConfigError(f"--search must be in 0..10000 (simulations; 0: no search), got {args.search}")
    if args.search and args.policy_only:
        raise ConfigError(f"--policy-only plays without search: drop --search {args.search} or --policy-only")
    if args.temperature is not None:
        check_number("--temperature", args.temperature, 0.01, 100, also=(0,))


_ENGINE_OPTIONS = {"skill": "--skill", "nodes": "--nodes", "time": "--move-time", "path": "--engine"}
"""EngineConfig's fields and the ``asp eval`` options that set them."""


def _engine_config(args: argparse.Namespace) -> EngineConfig | None:
    """The EngineConfig of ``--vs stockfish``, its errors naming the options; None for other opponents."""

    given = [option for option in _ENGINE_OPTIONS.values() if getattr(args, option[2:].replace("-", "_")) is not None]
    if args.vs not in ("stockfish", "uci"):
        if given:
            raise ConfigError(f"{given[0]} applies to --vs stockfish or --vs uci only, not --vs {args.vs}")
        return None
    if args.vs == "uci" and args.engine is None:
        raise ConfigError("--vs uci needs --engine PATH: the UCI engine to play")
    return engine_from_options(
        _ENGINE_OPTIONS,
        path=args.engine,
        skill=args.skill if args.skill is not None or args.vs == "uci" else 0,
        nodes=args.nodes if args.nodes is not None or args.move_time is not None else 100,
        time=args.move_time,
    )


def _eval(args: argparse.Namespace) -> int:
    from asp.app.checkpoint import model_from_checkpoint, run_config_of
    from asp.app.game_commands import game_eval

    if args.ladder:
        return _ladder(args)
    _check_game_options(args)
    engine_cfg = _engine_config(args)  # option errors first, before anything is loaded
    if args.pgn:
        check_output_file("--pgn", args.pgn)
    model, state = model_from_checkpoint(args.checkpoint, trust_game=args.trust_game)
    return game_eval(args, model, state, run_config_of(state), engine_cfg)


_NOT_OF_A_MATCH = ("log_format", "log_level", "trust_game", "ladder")
"""``asp eval``'s options that ``--ladder`` takes too."""


def _ladder(args: argparse.Namespace) -> int:
    """``asp eval RUN --ladder``: it plays no game, so an option of a match is refused."""
    from asp.app.checkpoint import RunError
    from asp.app.ladder import ladder_table
    from asp.app.run import RunDir

    where = args.checkpoint
    defaults = vars(_parser().parse_args(["eval", where]))
    given = [name for name, value in vars(args).items() if name not in _NOT_OF_A_MATCH and value != defaults[name]]
    if given:
        option = "--" + given[0].replace("_", "-")
        raise ConfigError(
            f"{option}: --ladder reads the run's evaluations and plays no game: drop {option} or --ladder"
        )
    if not Path(where).is_dir():
        raise RunError(f"{where}: --ladder reads a run directory (its metrics.jsonl)")
    print(ladder_table(RunDir(where).read_metrics(), where))
    return 0


def _show(args: argparse.Namespace) -> int:
    from asp.app.game_commands import game_show
    from asp.app.show import write_boards

    if args.pgn.endswith(".jsonl"):
        return game_show(args)

    with writing(args.out):
        boards = write_boards(args.pgn, args.out, game=args.game, ply=args.ply)
    print(boards.describe())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    configure_logging(fmt=args.log_format, level=args.log_level)
    try:
        if args.command == "train":
            return train_command(args)
        if args.command == "play":
            return _play(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "show":
            return _show(args)
        if args.command == "moves":
            from asp.app.moves_command import moves_command

            return moves_command(args)
    except AspError as e:
        if isinstance(e, ShardFailed) and isinstance(e.error, NotRetried):
            e = e.error  # a worker's own one-line account (a broken engine): the shard adds nothing
        print(f"asp {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # asp train handles its own; play, eval and show just stop
        print(f"asp {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:  # a full disk, a file removed under us: the environment, not the options
        where = f" ({e.filename})" if e.filename else ""
        print(f"asp {args.command}: {e.strerror or e}{where}", file=sys.stderr)
        return EXIT_FAILURE
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    from asp.app.entry import main as entry

    entry()
