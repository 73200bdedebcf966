"""The ``asp`` command's process: Ctrl-C at any moment ends it in one line with status 130.

The console script calls :func:`main`. This module imports nothing of asp's at its top, so
that the command's own imports (argparse, then torch for most commands) already run inside
the ``try`` that turns a KeyboardInterrupt into that line; only Python's own start-up comes
before it. Once the command has returned, a Ctrl-C ends the process at once and quietly: the
interpreter's exit (joining threads, finalizers) has nothing left to say.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

__all__ = ["main"]

EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a job that Ctrl-C stopped."""


def main() -> None:
    """Run the command line with ``sys.argv`` and exit with its status."""
    try:
        from asp.app.cli import main as command

        code = command()
    except KeyboardInterrupt:  # while importing, before the command could handle it
        print("asp: interrupted", file=sys.stderr)  # noqa: T201 (the command line's own output)
        code = EXIT_INTERRUPTED
    sys.stdout.flush()
    sys.stderr.flush()
    status = code

    def exit_now(signum: int, frame: FrameType | None) -> None:
        os._exit(status)

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, exit_now)
    sys.exit(code)
