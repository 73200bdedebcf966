"""The ``asp`` command line, from its console script (:func:`script`) on.

* ``asp train``: the main job, a pipelined training run (of TinyChess by default) with a live display;
* ``asp play``: games of a checkpoint (or a fresh model) written as JSON lines (or the game's own format);
* ``asp eval``: a checkpoint's score against a mover or an engine of its game, or another
  checkpoint, with its Elo;
* ``asp show``: a position of a recorded game as a text board and an SVG picture;
* ``asp moves``: the move a checkpoint plays in each position of a file.

Every command takes the runs of every game: ``asp train --game connect4`` (or ``MODULE:ATTR``,
a game of the user's) trains another game than TinyChess, and the other commands read the
game from the run.

Ctrl-C at any moment ends the process in one line with status 130. This module imports
nothing of asp's at its top but the exit codes (:mod:`asp.app.commands`, which imports
nothing), so that the command's own imports (torch, argparse, the commands) already run
inside the ``try`` of :func:`script` that turns a KeyboardInterrupt into that line; only
Python's own start-up comes before it. Once the command has returned, a Ctrl-C ends the
process at once and quietly: the interpreter's exit (joining threads, finalizers) has nothing
left to say.

>>> import tempfile
>>> out = tempfile.mkdtemp() + "/games.pgn"
>>> main(["play", "--games", "2", "--max-plies", "4", "--workers", "1", "--out", out])  # doctest: +ELLIPSIS
played 2 games, 8 plies in ...
0
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

from asp.app.commands import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE

if TYPE_CHECKING:
    import argparse

__all__ = ["commands", "main", "script"]

TRUST_GAME_HELP = (
    "import the game that a file read names (a checkpoint's, a kept version's, a games file's, a config's) "
    "where it is a module outside asp (MODULE:ATTR): that runs the module's code, so only for files you trust"
)


def commands() -> dict[str, ModuleType]:
    """The commands by name: each module has its ``HELP``, ``add_arguments(parser)`` and
    ``run(args)`` (:mod:`asp.app.commands`). Their imports at the top are light: ``asp --help``
    imports no torch."""
    from asp.app.commands import eval as eval_command
    from asp.app.commands import moves, play, show, train

    return {"train": train, "play": play, "eval": eval_command, "show": show, "moves": moves}


def _parser() -> argparse.ArgumentParser:
    import argparse

    from asp.app.game_loader import TRUST_HINT
    from asp.util.log import LOG_FORMATS, LOG_LEVELS

    parser = argparse.ArgumentParser(prog="asp", description="Async self-play for board games.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in commands().items():
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
    from asp.errors import AspError, NotRetried, ShardFailed
    from asp.util.log import configure_logging

    args = _parser().parse_args(argv)
    configure_logging(fmt=args.log_format, level=args.log_level)
    try:
        code: int = commands()[args.command].run(args)
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


def _import_torch() -> None:
    """Import torch (and numpy with it) with Ctrl-C held back (:func:`asp.util.interrupts.ctrl_c_held`),
    then let a held one through: a KeyboardInterrupt raised inside numpy's initialisation is
    swallowed there, and the command went on as if no Ctrl-C had come, or failed later on a
    RecursionError. Every command but the help needs torch, so it is imported first, whole.
    Threads that torch starts meanwhile inherit the mask: none takes the signal in their stead.
    """
    from asp.util.interrupts import ctrl_c_held

    with ctrl_c_held():
        import torch  # noqa: F401


def script() -> None:
    """The console script ``asp``: run :func:`main` with ``sys.argv`` and exit with its status."""
    code: int | None = None
    try:
        from asp.util.memory import lean_heap

        lean_heap()  # first: before torch's threads and allocations
        if not {"-h", "--help"} & set(sys.argv[1:]) and len(sys.argv) > 1:
            _import_torch()
        code = main()
        _quiet_from_now(code)
    except KeyboardInterrupt:
        if code is None:  # while importing, before the command could handle it
            print("asp: interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        # else the command had returned and its last line was out: its status stands
        _quiet_from_now(code)
    sys.exit(code)


def _quiet_from_now(status: int) -> None:
    """Flush the command's output, then let a Ctrl-C end the process at once with ``status``.
    Called inside :func:`script`'s ``try``: a Ctrl-C between the command's return and the new
    handler is caught there, not printed as a traceback with status -2."""
    sys.stdout.flush()
    sys.stderr.flush()

    def exit_now(signum: int, frame: FrameType | None) -> None:
        os._exit(status)

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, exit_now)
