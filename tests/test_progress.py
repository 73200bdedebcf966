"""heartbeat: a no-op outside a worker; inside one, progress counting and cooperative cancellation."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from asp import ShardCancelled, heartbeat
from asp import progress as progress_module
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess

Attached = tuple[list[int], list[int], list[int], list[int]]


@pytest.fixture
def attached() -> Iterator[Callable[[int], Attached]]:
    """``attach(slot)``: plain lists stand in for a worker's shared arrays; globals restored after."""
    names = ("_progress", "_cancel", "_pids", "_phase", "_slot")
    saved = [getattr(progress_module, name) for name in names]

    def attach(slot: int) -> Attached:
        counters, cancel, pids, phase = [0, 0], [0, 0], [0, 0], [0, 0]
        progress_module.attach(slot, counters, cancel, pids, phase)
        return counters, cancel, pids, phase

    try:
        yield attach
    finally:
        for name, value in zip(names, saved, strict=True):
            setattr(progress_module, name, value)


def test_heartbeat_outside_a_worker_is_a_no_op() -> None:
    assert progress_module._progress is None  # the test process is no worker
    assert heartbeat() is None
    assert heartbeat(1000) is None
    assert progress_module._progress is None and progress_module._cancel is None
    # so a play_fn that reports progress also runs on its own, in any process
    records, stats = fault_play(TinyChess(ModelConfig(hidden=8, blocks=0)), None, FaultConfig(n_games=2))
    assert [r.game_id for r in records] == [0, 1]
    assert stats["plies"] == 20


def test_heartbeat_counts_plies_in_its_slot(attached: Callable[[int], Attached]) -> None:
    counters, cancel, pids, phase = attached(1)
    progress_module.begin_shard()
    assert pids == [0, os.getpid()] and phase == [0, progress_module.RUNNING]
    heartbeat(3)
    heartbeat()
    assert counters == [0, 4]
    cancel[0] = 1  # another slot's cancel flag does not concern this shard
    heartbeat(2)
    assert counters == [0, 6]
    progress_module.end_shard()  # the result is on its way back: no stall clock now
    assert phase == [0, progress_module.RETURNING]


def test_heartbeat_raises_shard_cancelled_once_the_flag_is_set(attached: Callable[[int], Attached]) -> None:
    counters, cancel, _, _ = attached(0)
    heartbeat(5)
    cancel[0] = 1
    with pytest.raises(ShardCancelled, match="slot 0 was cancelled"):
        heartbeat(1)
    assert counters[0] == 6  # the ply was still counted
    with pytest.raises(ShardCancelled):  # and it keeps raising until the slot is reused
        heartbeat(0)
    # a play_fn stops at its next heartbeat: the cancelled shard returns nothing
    with pytest.raises(ShardCancelled):
        fault_play(TinyChess(ModelConfig(hidden=8, blocks=0)), None, FaultConfig(n_games=2))
