"""How many CPU cores this process may use: affinity and cgroup quota, not the machine's count.

``os.cpu_count()`` counts the machine's cores. A process pinned with ``taskset`` or a
container limited by a cgroup CPU quota gets fewer, and workers beyond them only compete.

>>> 1 <= available_cores() <= (os.cpu_count() or 1)
True
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ThreadBudget", "available_cores", "split_cores"]


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


@dataclass(frozen=True)
class ThreadBudget:
    """How a training run shares the cores: ``workers`` x ``threads_per_worker`` + ``trainer_threads``."""

    cores: int
    workers: int
    threads_per_worker: int
    trainer_threads: int
    overlap: bool
    """Whether the trainer runs while the workers play (then the sum must fit in ``cores``)."""

    @property
    def busy_threads(self) -> int:
        """Threads that compute at the same time."""
        play = self.workers * self.threads_per_worker
        return play + self.trainer_threads if self.overlap else max(play, self.trainer_threads)

    def describe(self) -> str:
        """One line for people: ``"2 cores: 1 worker x 1 thread(s) + trainer 1 thread(s) (overlapped)"``."""
        plural = "s" if self.workers != 1 else ""
        how = "overlapped" if self.overlap else "in turn"
        if self.busy_threads > self.cores:
            how += f"; {self.busy_threads} busy threads at most"
        return (
            f"{self.cores} cores: {self.workers} worker{plural} x {self.threads_per_worker} thread(s) "
            f"+ trainer {self.trainer_threads} thread(s) ({how})"
        )


def split_cores(
    *,
    overlap: bool,
    workers: int | None = None,
    threads_per_worker: int = 1,
    trainer_threads: int | None = None,
    cores: int | None = None,
) -> ThreadBudget:
    """Share the cores between self-play workers and the trainer; what is given is kept.

    By default both sides get every core: the workers ``cores // threads_per_worker``, the
    trainer ``cores`` threads. Overlapped, that is more busy threads than cores, on purpose:
    in a pipeline that plays iteration k+1 while it trains on k, each side waits for the other
    at every iteration's end, and the operating system hands the waiting side's cores to the
    busy one. Measured on 2 cores (``benchmarks/bench_train.py``, 8 iterations, medians of 2):
    2 workers + a 2-thread trainer took 0.81x the wall time of 1 worker + a 1-thread trainer
    (0.98x for 2 workers + 1 trainer thread).

    >>> split_cores(overlap=True, cores=2).describe()
    '2 cores: 2 workers x 1 thread(s) + trainer 2 thread(s) (overlapped; 4 busy threads at most)'
    >>> b = split_cores(overlap=True, cores=8, threads_per_worker=2); (b.workers, b.trainer_threads)
    (4, 8)
    >>> split_cores(overlap=True, cores=2, workers=1, trainer_threads=1).describe()
    '2 cores: 1 worker x 1 thread(s) + trainer 1 thread(s) (overlapped)'
    """
    cores = cores if cores is not None else available_cores()
    if workers is None:
        workers = max(1, cores // threads_per_worker)
    if trainer_threads is None:
        trainer_threads = cores
    return ThreadBudget(cores, workers, threads_per_worker, trainer_threads, overlap)
