"""The ``asp`` command's process: Ctrl-C at any moment ends it in one line with status 130.

The console script calls :func:`main`. This module imports nothing of asp's at its top but
the exit codes (:mod:`asp.app.commands`, which imports nothing), so that the command's own
imports (torch, argparse) already run inside the ``try`` that turns a KeyboardInterrupt into
that line; only Python's own start-up comes before it. Once the
command has returned, a Ctrl-C ends the process at once and quietly: the interpreter's exit
(joining threads, finalizers) has nothing left to say.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from asp.app.commands import EXIT_INTERRUPTED

__all__ = ["main"]


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


def main() -> None:
    """Run the command line with ``sys.argv`` and exit with its status."""
    code: int | None = None
    try:
        from asp.util.memory import lean_heap

        lean_heap()  # first: before torch's threads and allocations
        if not {"-h", "--help"} & set(sys.argv[1:]) and len(sys.argv) > 1:
            _import_torch()
        from asp.app.cli import main as command

        code = command()
        _quiet_from_now(code)
    except KeyboardInterrupt:
        if code is None:  # while importing, before the command could handle it
            print("asp: interrupted", file=sys.stderr)  # noqa: T201 (the command line's own output)
            code = EXIT_INTERRUPTED
        # else the command had returned and its last line was out: its status stands
        _quiet_from_now(code)
    sys.exit(code)


def _quiet_from_now(status: int) -> None:
    """Flush the command's output, then let a Ctrl-C end the process at once with ``status``.
    Called inside :func:`main`'s ``try``: a Ctrl-C between the command's return and the new
    handler is caught there, not printed as a traceback with status -2."""
    sys.stdout.flush()
    sys.stderr.flush()

    def exit_now(signum: int, frame: FrameType | None) -> None:
        os._exit(status)

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, exit_now)
