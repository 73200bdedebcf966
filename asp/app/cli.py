"""The ``asp`` command line.

* ``asp train``: the main job, a pipelined training run (of TinyChess by default) with a live display;
* ``asp play``: games of a checkpoint (or a fresh model) written as JSON lines (or the game's own format);
* ``asp eval``: a checkpoint's score against a mover or an engine of its game, or another
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
from types import ModuleType

from asp.app.commands import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, moves, play, show, train
from asp.app.commands import eval as eval_command
from asp.app.game_loader import TRUST_HINT
from asp.errors import AspError, NotRetried, ShardFailed
from asp.util.log import LOG_FORMATS, LOG_LEVELS, configure_logging

__all__ = ["COMMANDS", "main"]

TRUST_GAME_HELP = (
    "import the game that a file read names (a checkpoint's, a kept version's, a games file's, a config's) "
    "where it is a module outside asp (MODULE:ATTR): that runs the module's code, so only for files you trust"
)


COMMANDS: dict[str, ModuleType] = {
    "train": train,
    "play": play,
    "eval": eval_command,
    "show": show,
    "moves": moves,
}
"""The commands: each module has its ``HELP``, ``add_arguments(parser)`` and ``run(args)``
(:mod:`asp.app.commands`). Their imports at the top are light: ``asp --help`` imports no torch."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asp", description="Async self-play for board games.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.HELP)
        command.add_arguments(p)
        p.add_argument(
            "--log-format", choices=LOG_FORMATS, default="console", help="console or json lines (default console)"
        )
        p.add_argument(
            "--log-level", choices=LOG_LEVELS, default="warning", help="least level logged (default warning)"
        )
        p.add_argument(TRUST_HINT, action="store_true", help=TRUST_GAME_HELP)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    configure_logging(fmt=args.log_format, level=args.log_level)
    try:
        code: int = COMMANDS[args.command].run(args)
        return code
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
