"""This process's peak resident memory: :func:`peak_rss_mb`, which ``asp train`` writes in
every iteration's metrics (``mem/peak_rss_mb``); and :func:`lean_heap`, which the ``asp``
command calls first, so that glibc's malloc gives back what the process frees.

>>> peak_rss_mb() > 0
True
"""

from __future__ import annotations

import ctypes
import resource
import sys

__all__ = ["lean_heap", "peak_rss_mb"]

_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_MMAP_THRESHOLD = 4 * 2**20


def lean_heap() -> bool:
    """Have glibc's malloc give back the large blocks the process frees: blocks of 4 MiB and
    more get pages of their own, unmapped when freed, and all threads share at most two heaps
    (arenas). Without it glibc raises that threshold to the largest block freed (up to 32 MiB),
    gives each thread a heap of its own, and keeps in them what was freed. Call it before
    any thread starts. False where the C library is not glibc (nothing changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)  # this process's own C library, as asp.util.die_with_parent opens it
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(libc.mallopt(_M_ARENA_MAX, 2))
    except (OSError, AttributeError):
        return False


def peak_rss_mb() -> float:
    """The most resident memory this process has held so far, in MiB (``ru_maxrss``; on Linux
    it counts the parent's memory at the fork that made this process, before its ``exec``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere
