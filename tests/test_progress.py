"""heartbeat: a no-op outside a worker; inside one, progress counting and cooperative cancellation."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from asp import ShardCancelled, heartbeat
from asp import progress as progress_module
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess


@pytest.fixture
def attached() -> Iterator[tuple[list[int], list[int], list[int]]]:
    """Plain lists standing in for a worker's shared arrays; the module globals restored after."""
    saved = (progress_module._progress, progress_module._cancel, progress_module._pids, progress_module._slot)
    counters, cancel, pids = [0, 0], [0, 0], [0, 0]
    progress_module.attach(counters, cancel, pids)
    try:
        yield counters, cancel, pids
    finally:
        progress_module._progress, progress_module._cancel, progress_module._pids, progress_module._slot = saved


def test_heartbeat_outside_a_worker_is_a_no_op() -> None:
    assert progress_module._progress is None  # the test process is no worker
    assert heartbeat() is None
    assert heartbeat(1000) is None
    assert progress_module._progress is None and progress_module._cancel is None
    # so a play_fn that reports progress also runs on its own, in any process
    records, stats = fault_play(TinyChess(ModelConfig(hidden=8, blocks=0)), None, FaultConfig(n_games=2))
    assert [r.game_id for r in records] == [0, 1]
    assert stats["plies"] == 20


def test_heartbeat_counts_plies_in_its_slot(attached: tuple[list[int], list[int], list[int]]) -> None:
    counters, cancel, pids = attached
    progress_module.set_slot(1)
    assert pids == [0, os.getpid()]
    heartbeat(3)
    heartbeat()
    assert counters == [0, 4]
    cancel[0] = 1  # another slot's cancel flag does not concern this shard
    heartbeat(2)
    assert counters == [0, 6]


def test_heartbeat_raises_shard_cancelled_once_the_flag_is_set(
    attached: tuple[list[int], list[int], list[int]],
) -> None:
    counters, cancel, _ = attached
    progress_module.set_slot(0)
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
