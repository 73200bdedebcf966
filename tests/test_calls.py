"""Many calls on one SelfPlay at once: they share the workers, and each keeps its guarantees.

Before the dispatcher, calls took turns behind a lock: a ``play`` inside a ``stream``
raised (same task) or waited forever (another task: ``wait_for``, ``create_task``,
``gather``), a call from another event loop waited for the first loop's call without a
word, and a stream passed on a result that lacked games the play_fn had taken on offer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from helpers import wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selfplay_helpers import Logs, events, ids, tiny

from asp import AspError, LoopError, SelfPlay
from asp.testing import FaultConfig, fault_play

module_loop = pytest.mark.asyncio(loop_scope="module")


def games(first: int, n: int, *, plies: int = 10, delay: float = 0.005, **more: Any) -> FaultConfig:
    return FaultConfig(n_games=n, first_game=first, plies=plies, delay=delay, **more)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[SelfPlay]:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
        yield selfplay


async def nested(selfplay: SelfPlay, how: str) -> list[int]:
    """Ids of a 2-game play made the way ``how`` says, from inside a running stream."""
    call = selfplay.play(tiny(), None, games(100, 2))
    if how == "direct":
        records, _ = await call
    elif how == "wait_for":
        records, _ = await asyncio.wait_for(call, 20)
    elif how == "create_task":
        records, _ = await asyncio.create_task(call)
    else:
        ((records, _),) = await asyncio.gather(call)
    return ids(records)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["direct", "wait_for", "create_task", "gather"])
@module_loop
async def test_a_play_inside_a_stream_shares_the_workers_however_it_is_awaited(pool: SelfPlay, how: str) -> None:
    streamed: list[int] = []
    async with asyncio.timeout(30):  # the lock made each of these raise or wait forever
        async with contextlib.aclosing(pool.stream(tiny(), None, games(0, 4))) as shards:
            async for shard in shards:
                if not streamed:
                    assert await nested(pool, how) == [100, 101]
                streamed += ids(shard.records)
    assert sorted(streamed) == [0, 1, 2, 3]


@pytest.mark.timeout(60)
@module_loop
async def test_a_half_read_stream_kept_open_does_not_block_a_play_of_the_same_task(pool: SelfPlay) -> None:
    stream = pool.stream(tiny(), None, games(0, 2))
    first = await stream.__anext__()
    records, _ = await asyncio.wait_for(pool.play(tiny(), None, games(10, 3)), 20)
    assert ids(records) == [10, 11, 12]
    rest = [r for shard in [s async for s in stream] for r in ids(shard.records)]
    assert sorted(ids(first.records) + rest) == [0, 1]


@pytest.mark.timeout(60)
@module_loop
async def test_cancelling_one_call_leaves_the_others_running(pool: SelfPlay, logs: Logs) -> None:
    doomed = asyncio.create_task(pool.play(tiny(), None, games(0, 6, plies=40)))
    kept = asyncio.create_task(pool.play(tiny(), None, games(50, 6, plies=10)))
    await wait_until(lambda: any(e["first_game"] < 6 for e in events(logs, "shard_dispatched")))  # doomed's run
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    records, stats = await kept
    assert ids(records) == list(range(50, 56))
    assert stats["retries"] == 0
    assert not events(logs, "worker_killed")  # the doomed call's shards stopped when asked


@pytest.mark.timeout(60)
@module_loop
async def test_a_call_of_higher_priority_goes_before_the_queued_shards_of_a_lower_one(
    pool: SelfPlay, logs: Logs
) -> None:
    low = asyncio.create_task(pool.play(tiny(), None, games(0, 12, plies=20, delay=0.01)))
    await wait_until(lambda: events(logs, "shard_dispatched"))  # the low call's first shards run; ten wait
    records, _ = await pool.play(tiny(), None, games(100, 2), priority=1)
    assert ids(records) == [100, 101]
    assert not low.done()  # first come, first served would have played all of it first
    assert ids((await low)[0]) == list(range(12))


@pytest.mark.timeout(60)
@module_loop
async def test_a_call_from_another_event_loop_is_a_loop_error_at_once(pool: SelfPlay) -> None:
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            asyncio.run(pool.play(tiny(), None, games(0, 1)))
        except BaseException as e:  # noqa: BLE001 (the test reports whatever it was)
            errors.append(e)

    running = asyncio.create_task(pool.play(tiny(), None, games(0, 4)))
    thread = threading.Thread(target=elsewhere)
    thread.start()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], LoopError), errors
    assert "another event loop" in str(errors[0])
    assert ids((await running)[0]) == [0, 1, 2, 3]


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_stream_fails_when_the_play_fn_drops_games_it_took_on_offer() -> None:
    cfg = FaultConfig(n_games=8, plies=20, plies_step=20, delay=0.01, batch_size=2, drop_offers=True)
    got: list[int] = []
    async with SelfPlay(workers=1, play_fn=fault_play) as selfplay:  # default shards: offers made
        with pytest.raises(AspError, match=r"do not match the ids .*: missing \["):
            async for shard in selfplay.stream(tiny(), None, cfg):
                got += ids(shard.records)
        # nothing it passed on lacked a game: the result that dropped some was the error
        assert len(got) == len(set(got))


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_each_worker_is_dealt_every_other_shard_of_the_first_batches() -> None:
    """A block of costly games of neighbouring ids is shared by the workers: 32 games in
    shards of one, batches of 8, so each worker's first batch is every other game of 0..15
    (not 0..7 and 8..15), taken at once as it fills its batch, whatever the timing."""
    cfg = FaultConfig(n_games=32, plies=20, delay=0.002, batch_size=8)
    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        results = [result async for result in selfplay.stream(tiny(), None, cfg)]
    first = {result.shard: set(result.shards) for result in results if result.shard in (0, 1)}
    assert set(first) == {0, 1}
    for lead, shards in first.items():
        assert shards & set(range(16)) == set(range(lead, 16, 2)), (lead, sorted(shards))
    assert sorted(game for result in results for game in ids(result.records)) == list(range(32))


# -- eight calls at once, and a property test with kills and cancels -------------------------


@pytest.mark.timeout(120)
@module_loop
async def test_eight_calls_from_eight_tasks_each_get_every_game_once(pool: SelfPlay) -> None:
    async def streamed(first: int) -> list[int]:
        out: list[int] = []
        async with contextlib.aclosing(pool.stream(tiny(), None, games(first, 5))) as shards:
            async for shard in shards:
                if not out:
                    assert await nested(pool, "wait_for") == [100, 101]
                out += ids(shard.records)
        return sorted(out)

    async def played(first: int) -> list[int]:
        return ids((await pool.play(tiny(), None, games(first, 5)))[0])

    tasks = [asyncio.create_task(streamed(1000 * i) if i % 2 else played(1000 * i)) for i in range(8)]
    doomed = tasks[2], tasks[5]
    await asyncio.sleep(0.3)
    for task in doomed:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for i, (task, result) in enumerate(zip(tasks, results, strict=True)):
        if task in doomed and isinstance(result, asyncio.CancelledError):
            continue
        assert result == list(range(1000 * i, 1000 * i + 5)), (i, result)
    assert pool._dispatcher._calls == [] and not pool._dispatcher._flights


@dataclass(frozen=True)
class Planned:
    n_games: int
    plies: int
    priority: int
    cancel_after: float | None


calls = st.builds(
    Planned,
    n_games=st.integers(1, 6),
    plies=st.integers(1, 20),
    priority=st.integers(0, 2),
    cancel_after=st.one_of(st.none(), st.floats(0.0, 0.4)),
)


@pytest.fixture(scope="module")
def runner_pool() -> Iterator[tuple[asyncio.Runner, SelfPlay]]:
    with asyncio.Runner() as runner:
        selfplay = SelfPlay(workers=2, play_fn=fault_play, retries=20, cancel_grace=0.5)
        runner.run(selfplay.start())
        try:
            yield runner, selfplay
        finally:
            runner.run(selfplay.aclose())


async def scenario(selfplay: SelfPlay, planned: list[Planned], kill_at: float | None) -> None:
    async def one(i: int, plan: Planned) -> list[int]:
        cfg = games(100 * i, plan.n_games, plies=plan.plies)
        return ids((await selfplay.play(tiny(), None, cfg, priority=plan.priority))[0])

    tasks = [asyncio.create_task(one(i, plan)) for i, plan in enumerate(planned)]

    async def cancel(task: asyncio.Task[list[int]], after: float) -> None:
        await asyncio.sleep(after)
        task.cancel()

    async def kill(after: float) -> None:
        await asyncio.sleep(after)
        # a started worker: three deaths in a row while starting make a slot hopeless, by design
        started = [p for slot, p in enumerate(selfplay.pids) if p is not None and selfplay._backend.ready(slot)]
        if started:
            with contextlib.suppress(ProcessLookupError):  # dead and reaped since the list was read
                os.kill(random.choice(started), signal.SIGKILL)

    chaos = [cancel(t, p.cancel_after) for t, p in zip(tasks, planned, strict=True) if p.cancel_after is not None]
    if kill_at is not None:
        chaos.append(kill(kill_at))
    await asyncio.gather(*chaos)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for i, (plan, result) in enumerate(zip(planned, results, strict=True)):
        if plan.cancel_after is not None and isinstance(result, asyncio.CancelledError):
            continue
        assert result == list(range(100 * i, 100 * i + plan.n_games)), (i, plan, result)
    assert selfplay._dispatcher._calls == [] and not selfplay._dispatcher._flights


@pytest.mark.timeout(600)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planned=st.lists(calls, min_size=1, max_size=6), kill_at=st.one_of(st.none(), st.floats(0.0, 0.5)))
@pytest.mark.slow
def test_concurrent_calls_with_kills_and_cancels_return_every_game_exactly_once(
    runner_pool: tuple[asyncio.Runner, SelfPlay], planned: list[Planned], kill_at: float | None
) -> None:
    runner, selfplay = runner_pool
    runner.run(asyncio.wait_for(scenario(selfplay, planned, kill_at), 60))
