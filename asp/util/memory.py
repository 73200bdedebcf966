"""This process's peak resident memory: :func:`peak_rss_mb`, which ``asp train`` writes in
every iteration's metrics (``mem/peak_rss_mb``).

>>> peak_rss_mb() > 0
True
"""

from __future__ import annotations

import resource
import sys

__all__ = ["peak_rss_mb"]


def peak_rss_mb() -> float:
    """The most resident memory this process has held so far, in MiB (``ru_maxrss``; on Linux
    it counts the parent's memory at the fork that made this process, before its ``exec``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere
