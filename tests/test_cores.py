"""How many cores asp takes by default: the CPU affinity and a cgroup CPU quota cap them."""

from __future__ import annotations

import os
from pathlib import Path

from asp import SelfPlay
from asp.testing import fault_play
from asp.util.cores import _cgroup_quota, available_cores


def test_default_workers_follow_the_cpu_affinity() -> None:
    saved = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(saved)})
        assert available_cores() == 1
        assert SelfPlay(play_fn=fault_play).workers == 1
    finally:
        os.sched_setaffinity(0, saved)
    assert SelfPlay(play_fn=fault_play).workers == available_cores()


def test_a_cgroup_cpu_quota_caps_the_cores(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert _cgroup_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _cgroup_quota(tmp_path) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _cgroup_quota(v1) == 0.5
