"""Ctrl-C and the processes asp starts: held back while a child is spawned or torch loads.

Ctrl-C in a terminal reaches the whole process group, children included. A child still
importing (Python, torch) when it comes would print a KeyboardInterrupt traceback and die
before its initializer could ignore the signal; and numpy swallows one raised inside its own
initialisation, leaving a module half made. A signal blocked meanwhile waits instead: the
child's initializer drops it (:func:`ignore_ctrl_c`), and this process gets it once the
block ends. This module imports nothing else of asp, nor torch: the ``asp`` command uses it
before either is loaded (:func:`asp.app.cli.script`).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

__all__ = ["ctrl_c_held", "ignore_ctrl_c"]


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Hold SIGINT back in this thread while the block runs, and let a held one through at
    its end. A child spawned inside (and a thread started inside) starts with it blocked,
    and is deaf to Ctrl-C until :func:`ignore_ctrl_c`. This process loses nothing: a signal
    that its other threads do not block reaches them, and Python handles it in the main
    thread as always (multiprocessing's resource tracker is spawned the same way).
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_ctrl_c() -> None:
    """In a child spawned inside :func:`ctrl_c_held`: ignore SIGINT from now on (the coordinator
    handles Ctrl-C: it cancels, then stops its children), and drop one held back since spawn."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
