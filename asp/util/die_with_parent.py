"""A child process that dies with its parent: :func:`die_with_parent`, for the workers and
the run's games writer, so that no process of asp outlives the one that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Make this process exit when ``parent_pid``, its parent, dies, even by SIGKILL.

    A spawn child holds both ends of its task queue's pipe, so it never sees the end of it:
    without this, a child of a killed coordinator waits on its queue forever.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the watchdog below still works
        pass

    # PR_SET_PDEATHSIG fires when the *thread* that spawned us exits, and not at all if the
    # parent died before the prctl call: a watchdog on the parent's pid covers both.
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="asp-parent-watchdog", daemon=True).start()
