"""The SelfPlay contract, held against every backend: the same tests on local processes and Ray.

Each test takes the ``backend`` fixture, which is every name in :data:`asp.backends.NAMES`;
a third backend joins the list and is held to the same promises: every game once, each call's
games played with that call's weights, a killed or hung worker costing its own shard only, a
cancelled call stopping its shards and keeping the workers, nothing left after closing, a new
worker building the first model as it starts, and a slot whose worker cannot start failing
the calls after three tries in a row.
The Ray backend runs on a real local Ray instance (loopback only, no dashboard, no usage
reports), started once for this module.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from helpers import pid_alive, survivors, wait_until
from selfplay_helpers import Logs, events, ids, tiny
from torch import nn

from asp import SelfPlay, backends, progress
from asp.errors import AspError
from asp.testing import FaultConfig, fault_play

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """A local Ray on loopback with 2 CPUs, for this module's tests; stopped afterwards."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray")
    # Ray's workers inherit the environment of the instance: with this directory on their
    # path they import this module's networks, as spawn workers do.
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parent), saved) if p)
    try:
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(
    params=[pytest.param(name, marks=[pytest.mark.slow] if name == "ray" else []) for name in backends.NAMES]
)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_instance")
    name: str = request.param
    return name


async def running(selfplay: SelfPlay, slot: int, *, plies: int = 1, seconds: float = 60.0) -> int:
    """Wait until the slot's shard runs and has reported ``plies``; return its worker's pid."""
    deadline = time.monotonic() + seconds
    while True:
        state = (await selfplay._backend.states([slot])).get(slot)
        if state is not None and state.phase == progress.RUNNING and state.plies >= plies and state.pid:
            return state.pid
        assert time.monotonic() < deadline, f"slot {slot} never ran a shard: {state}"
        await asyncio.sleep(0.05)


def _fill(model: nn.Module, value: float) -> float:
    with torch.no_grad():
        for p in model.parameters():
            nn.init.constant_(p, value)
        return float(sum(p.sum() for p in model.parameters()))


@pytest.mark.asyncio
@pytest.mark.slow
async def test_play_and_stream_give_every_game_once(backend: str) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=3, backend=backend) as selfplay:
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=10, first_game=5, plies=2))
        assert ids(records) == list(range(5, 15))
        assert (stats["shards"], stats["retries"], stats["games"], stats["plies"]) == (4, 0, 10, 20)

        shards = [s async for s in selfplay.stream(tiny(), None, FaultConfig(n_games=7, plies=2))]
        assert sorted(s.shard for s in shards) == [0, 1, 2]
        assert sorted(i for s in shards for i in ids(s.records)) == list(range(7))
        assert {s.pid for s in shards} <= set(selfplay.pids) and all(s.node for s in shards)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_every_game_is_played_with_the_weights_of_its_call(backend: str, logs: Logs) -> None:
    models = [tiny(), tiny()]
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, backend=backend) as selfplay:
        for version in range(4):
            model = models[version % 2]  # two networks, each changed in place
            expected = _fill(model, version + 1.0)
            records, _ = await selfplay.play(model, None, FaultConfig(n_games=6, plies=3, model_version=version))
            assert [(r.model_version, r.weight_sum) for r in records] == [(version, expected)] * 6
        mark = len(logs)
        for _ in range(2):  # unchanged weights: published once, still played
            records, _ = await selfplay.play(model, None, FaultConfig(n_games=4, plies=3, model_version=3))
            assert {r.weight_sum for r in records} == {expected}
        assert len(events(logs[mark:], "weights_published")) == 0
    assert len(events(logs, "weights_published")) == 4


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_worker_killed_mid_call_costs_only_its_own_shard(backend: str, logs: Logs) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, backend=backend) as selfplay:
        task = asyncio.create_task(selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=150, delay=0.01)))
        victim = await running(selfplay, 1, plies=5)
        survivor = await running(selfplay, 0, plies=5)
        os.kill(victim, signal.SIGKILL)
        records, stats = await task
        assert ids(records) == [0, 1]
        assert (stats["retries"], stats["respawns"]) == (1, 1)  # one shard ran again, one worker replaced
        died = events(logs, "worker_died")
        assert [(e["pid"], e["shard"], e["started_shard"]) for e in died] == [(victim, 1, True)]
        assert records[0].pid == survivor  # the other shard was not touched
        assert records[1].pid != victim  # shard 1 again: on the new worker, or the survivor if it was free first
        assert selfplay.pids[0] == survivor and victim not in selfplay.pids
        assert not pid_alive(victim)


@pytest.mark.asyncio
@pytest.mark.slow
@pytest.mark.parametrize("fault", ["sys_exit", "keyboard_interrupt"])
async def test_a_play_fn_that_exits_or_is_interrupted_fails_its_shard_and_nothing_else(
    backend: str, fault: str, logs: Logs, tmp_path: Path
) -> None:
    # Once SystemExit and KeyboardInterrupt came back from the worker as they were, and
    # ended the coordinator's program (asyncio.run re-raised them).
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, backend=backend, retries=1) as selfplay:
        workers = selfplay.pids
        once = FaultConfig(n_games=2, plies=2, fault=fault, fault_game=1, once=True, marker_dir=str(tmp_path))
        records, stats = await selfplay.play(tiny(), None, once)
        assert ids(records) == [0, 1] and (stats["retries"], stats["respawns"]) == (1, 0)
        with pytest.raises(AspError, match="shard 1 failed after 2 attempt") as info:
            await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=2, fault=fault, fault_game=1))
        name = "SystemExit(3)" if fault == "sys_exit" else "KeyboardInterrupt()"
        assert f"PlayExited: play_fn raised {name}" in getattr(info.value, "traceback", "")
        assert selfplay.pids == workers and not events(logs, "worker_died")  # no worker was lost


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_hung_shard_is_detected_with_its_stack_and_only_it_runs_again(
    backend: str, logs: Logs, tmp_path: Path
) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, stall_timeout=1.0, backend=backend) as selfplay:
        cfg = FaultConfig(
            n_games=2, plies=100, delay=0.01, fault="hang", fault_game=1, once=True, marker_dir=str(tmp_path)
        )
        records, stats = await selfplay.play(tiny(), None, cfg)
        assert ids(records) == [0, 1]
        assert stats["retries"] == 1
        (stalled,) = events(logs, "worker_stalled")
        assert stalled["shard"] == 1 and stalled["seconds_without_progress"] >= 1.0
        assert "_misbehave" in stalled["stack"]  # the Python stack of the hung thread
        (killed,) = events(logs, "worker_killed")
        assert killed["pid"] == stalled["pid"] and not pid_alive(stalled["pid"])
        assert [r.pid for r in records][0] in selfplay.pids  # shard 0's worker kept playing


@pytest.mark.asyncio
@pytest.mark.slow
async def test_cancelling_a_call_stops_its_shards_and_keeps_the_workers(backend: str, logs: Logs) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, backend=backend) as selfplay:
        workers = list(selfplay.pids)
        task = asyncio.create_task(selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=10_000, delay=0.01)))
        for slot in (0, 1):
            await running(selfplay, slot)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(events(logs, "shard_cancelled")) == 2
        assert not events(logs, "worker_killed")  # they stopped at a heartbeat
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=4, first_game=3, plies=2))
        assert ids(records) == [3, 4, 5, 6] and stats["respawns"] == 0
        assert selfplay.pids == workers


@pytest.mark.asyncio
@pytest.mark.slow
async def test_closing_stops_a_running_call_and_leaves_no_worker(backend: str) -> None:
    selfplay = SelfPlay(workers=2, play_fn=fault_play, shard_games=1, cancel_grace=0.5, backend=backend)
    await selfplay.start()
    workers = [pid for pid in selfplay.pids if pid is not None]
    assert len(workers) == 2
    task = asyncio.create_task(selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=10_000, delay=0.01)))
    await running(selfplay, 0)
    await selfplay.aclose()
    with pytest.raises(Exception, match="closed"):
        await task
    assert await asyncio.to_thread(survivors, workers, seconds=10) == []


@pytest.mark.asyncio
@pytest.mark.slow
async def test_workers_take_offered_games_into_their_batch_and_every_game_comes_once(backend: str, logs: Logs) -> None:
    # Default shard_games: shards of one game; each worker is sent 4 at once (its batch) and,
    # as its uneven games end, takes the next shards the coordinator offers it.
    async with SelfPlay(workers=2, play_fn=fault_play, backend=backend) as selfplay:
        # Games of 0.25 to 1 s: long enough for an offer to arrive through Ray's progress polls (0.25 s).
        cfg = FaultConfig(n_games=40, first_game=100, batch_size=4, plies=5, plies_step=5, delay=0.05)
        results = [r async for r in selfplay.stream(tiny(), None, cfg)]
    assert sorted(i for r in results for i in ids(r.records)) == list(range(100, 140))
    shards = sorted(s for r in results for s in r.shards)
    assert shards == list(range(40))  # every shard in exactly one result
    for r in results:
        assert sorted(ids(r.records)) == [100 + s for s in r.shards]  # a result holds its shards' games
    done = events(logs, "shard_done")
    assert len(done) == len(results) < 10  # fewer tasks than 40 / 4: batches refilled by offers
    assert sum(e["offers_taken"] for e in done) > 0


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_worker_killed_after_taking_offers_loses_no_game_and_plays_none_twice(
    backend: str, logs: Logs, tmp_path: Path
) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, backend=backend) as selfplay:
        # Game 30 is never in a first batch (games 0-3 and 4-7): the worker that begins it has
        # taken it as an offer, and SIGKILLs itself there, the first time only.
        cfg = FaultConfig(
            n_games=40,
            batch_size=4,
            plies=5,
            plies_step=5,
            delay=0.05,
            fault="crash",
            fault_game=30,
            once=True,
            marker_dir=str(tmp_path),
        )
        records, stats = await selfplay.play(tiny(), None, cfg)
        assert ids(records) == list(range(40))  # exactly once: play() would have kept the first copy
        assert (stats["retries"], stats["respawns"]) == (1, 1)
    (died,) = events(logs, "worker_died")
    (retried,) = events(logs, "shard_retried")
    assert retried["shard"] == died["shard"]
    if backend == "local":  # the offers it took are known exactly (Ray: as of its last progress report)
        assert died["started_shard"] and 30 in retried["shards"] and len(retried["shards"]) > 4
    assert all(records[i].pid != died["pid"] for i in retried["shards"])  # its flight's games: played again


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_worker_killed_between_calls_is_replaced_without_charging_a_shard(backend: str, logs: Logs) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, retries=0, backend=backend) as selfplay:
        await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=2))
        victim = selfplay.pids[0]
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        await wait_until(lambda: not pid_alive(victim), seconds=20)
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=4, plies=2))
        assert ids(records) == [0, 1, 2, 3]
        assert stats["retries"] == 0  # retries=0: a charge would have failed the call
        assert victim not in selfplay.pids


@pytest.mark.asyncio
@pytest.mark.slow
async def test_concurrent_calls_keep_every_game_once_while_workers_are_killed(backend: str, logs: Logs) -> None:
    """A small chaos run on each backend: three calls at once, two workers SIGKILLed mid-shard."""
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, retries=5, backend=backend) as selfplay:
        cfgs = [FaultConfig(n_games=4, first_game=100 * i, plies=40, delay=0.01) for i in range(3)]
        calls = [asyncio.create_task(selfplay.play(tiny(), None, cfg, priority=i % 2)) for i, cfg in enumerate(cfgs)]
        for slot in (0, 1):
            os.kill(await running(selfplay, slot, plies=5), signal.SIGKILL)
        for cfg, (records, _) in zip(cfgs, await asyncio.gather(*calls), strict=True):
            assert ids(records) == list(range(cfg.first_game, cfg.first_game + 4))
        assert len(events(logs, "worker_died")) == 2


@dataclass(frozen=True)
class FragileConfig:
    marker_dir: str
    coordinator: int
    """The test's pid: the network is always built there."""
    width: int = 2


class FragileNet(nn.Module):
    """A network that no worker can build while ``marker_dir/broken`` exists."""

    def __init__(self, cfg: FragileConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(cfg.width, 1)
        if os.getpid() != cfg.coordinator and os.path.exists(os.path.join(cfg.marker_dir, "broken")):
            raise RuntimeError("FragileNet cannot be built here")


async def kill_and_wait(pid: int | None) -> None:
    """SIGKILL worker ``pid`` and wait until it is gone."""
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await wait_until(lambda: not pid_alive(pid), seconds=20)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_new_worker_builds_the_first_model_as_it_starts_and_a_slot_that_cannot_start_fails_the_call(
    backend: str, logs: Logs, tmp_path: Path
) -> None:
    model = FragileNet(FragileConfig(str(tmp_path), os.getpid()))
    async with SelfPlay(workers=1, play_fn=fault_play, shard_games=1, backend=backend) as selfplay:
        await selfplay.play(model, None, FaultConfig(n_games=1))  # new workers now build this model as they start
        first = selfplay.pids[0]
        await kill_and_wait(first)
        records, stats = await selfplay.play(model, None, FaultConfig(n_games=2))
        assert ids(records) == [0, 1] and (stats["retries"], stats["respawns"]) == (0, 1)
        (started,) = events(logs, "worker_started")
        assert (started["backend"], started["slot"], started["pid"]) == (backend, 0, selfplay.pids[0])
        assert started["pid"] != first and started["node"]

        (tmp_path / "broken").touch()  # from now on a new worker fails as it builds the model
        await kill_and_wait(selfplay.pids[0])
        with pytest.raises(AspError, match="failed to start 3 times in a row"):
            await selfplay.play(model, None, FaultConfig(n_games=2))
    failed = events(logs, "worker_start_failed")
    assert [(e["backend"], e["slot"], e["failures"]) for e in failed[:3]] == [(backend, 0, n) for n in (1, 2, 3)]
    killed = events(logs, "worker_killed")
    assert {e["backend"] for e in killed} == {backend} and "start_failed" in {e["reason"] for e in killed}
