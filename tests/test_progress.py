"""heartbeat: a no-op outside a worker; inside one, progress counting and cooperative cancellation.
more_games: offers of more games, the worker's side against the local backend's real cells."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from asp import AspError, ShardCancelled, heartbeat, more_games
from asp import progress as progress_module
from asp.backends.local import LocalBackend
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess

Attached = tuple[list[int], list[int], list[int], list[int]]


@pytest.fixture
def attached() -> Iterator[Callable[[int], Attached]]:
    """``attach(slot)``: plain lists stand in for a worker's shared arrays; globals restored after."""
    names = ("_progress", "_cancel", "_pids", "_phase", "_offers", "_slot")
    saved = [getattr(progress_module, name) for name in names]

    def attach(slot: int) -> Attached:
        counters, cancel, pids, phase = [0, 0], [0, 0], [0, 0], [0, 0]
        ring = progress_module.OFFER_RING
        offers = progress_module.OfferCells([0, 0], [0, 0], [0, 0], [0] * 2 * ring, [0] * 2 * ring)
        progress_module.attach(slot, counters, cancel, pids, phase, offers)
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


@pytest.fixture
def backend(attached: Callable[[int], Attached]) -> LocalBackend:
    """A local backend (not started) whose slot 1 this process is attached to, as its worker."""
    attached(1)  # for the restoring of the globals afterwards
    backend = LocalBackend(workers=2, threads_per_worker=1, start_timeout=1.0, play_fn=fault_play)
    a = backend.arrays
    progress_module.attach(1, a.progress, a.cancel, a.pids, a.phase, a.offers)
    return backend


@pytest.mark.asyncio
async def test_offers_are_taken_in_order_once_each_and_counted(backend: LocalBackend) -> None:
    assert more_games() is None  # nothing offered yet: the ask is counted
    backend.offer(1, 0, 40, 2)
    backend.offer(1, 1, 7, 1)
    assert (more_games(), more_games(), more_games()) == ((40, 2), (7, 1), None)
    state = (await backend.states([1]))[1]
    assert (state.taken, state.asked) == (2, 2)
    assert progress_module.offers_taken() == 2
    assert (await backend.states([0]))[0].taken == 0  # the other slot's cells are its own


@pytest.mark.asyncio
async def test_the_ring_holds_offer_after_offer_and_a_new_shard_starts_from_zero(backend: LocalBackend) -> None:
    for seq in range(3 * progress_module.OFFER_RING):  # around the ring three times, one waiting at a time
        backend.offer(1, seq, 1000 + seq, 1)
        assert more_games() == (1000 + seq, 1)
    backend.offer(1, 3 * progress_module.OFFER_RING, 5, 5)  # offered, never taken
    backend.arrays.reset(1)  # as submit does before the slot's next shard
    assert more_games() is None and progress_module.offers_taken() == 0


def test_an_offer_out_of_order_or_past_the_ring_is_refused(backend: LocalBackend) -> None:
    with pytest.raises(AspError, match="out of order"):
        backend.offer(1, 1, 0, 1)
    for seq in range(progress_module.OFFER_RING):
        backend.offer(1, seq, seq, 1)
    with pytest.raises(AspError, match="out of order"):
        backend.offer(1, progress_module.OFFER_RING, 0, 1)  # would overwrite an offer not yet taken
