"""How many CPU cores this process may use: affinity and cgroup quota, not the machine's count.

``os.cpu_count()`` counts the machine's cores. A process pinned with ``taskset`` or a
container limited by a cgroup CPU quota gets fewer, and workers beyond them only compete.

>>> 1 <= available_cores() <= (os.cpu_count() or 1)
True
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["available_cores"]


def _cgroup_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """Cores allowed by a cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us`` (None: no limit)."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup CPU quota (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)
