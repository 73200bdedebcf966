"""SelfPlay end to end, with real spawn worker pools: results, faults, deadlines, cleanup.

Every test that starts processes has its own ``timeout`` mark, well above its normal run
time. Fault tests use :func:`asp.testing.fault_play` with a tiny model; ``once=True`` with a
``marker_dir`` makes a fault happen on the first attempt only.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch
from helpers import pid_alive, survivors, wait_until
from selfplay_helpers import Logs, events, ids, tiny
from torch import nn

from asp import ClosedError, ConfigError, SelfPlay, ShardFailed, ShardResult, play_games_parallel
from asp.games import PlayConfig, play_games
from asp.testing import EchoRecord, FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

Children = Callable[[], list[int]]

SUMMARY_KEYS = {
    "games",
    "plies",
    "length_min",
    "length_mean",
    "length_max",
    "results",
    "terminations",
    "score",
}
CALL_KEYS = {"workers", "shards", "retries", "respawns", "seconds", "plies_per_s"}


def slow(n_games: int = 4, **fields: Any) -> FaultConfig:
    """Games of 100 heartbeats 10 ms apart: about a second each, cancellable at every ply."""
    return FaultConfig(n_games=n_games, plies=100, delay=0.01, **fields)


def both_slots_busy(selfplay: SelfPlay) -> Callable[[], bool]:
    """True once both workers have reported progress on their shard."""
    pool = selfplay._backend
    assert pool is not None
    return lambda: all(pool.arrays.progress[slot] > 0 for slot in range(selfplay.workers))


def ordered_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[Any], dict[str, Any]]:
    """fault_play, except that the shard of game 0 finishes only once ``marker_dir/release`` exists."""
    records, stats = fault_play(model, opp, cfg)
    if cfg.first_game == 0 and cfg.marker_dir:
        release = Path(cfg.marker_dir) / "release"
        deadline = time.monotonic() + 30
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return records, stats


class NoCfgNet(nn.Module):
    """A network without ``cfg`` whose constructor needs an argument: no worker can rebuild it."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, 1)


@dataclasses.dataclass
class MutableNetConfig:
    """A plain (mutable, hence unhashable) dataclass config: a common shape for a user's config."""

    width: int = 4


class MutableCfgNet(nn.Module):
    def __init__(self, cfg: MutableNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(cfg.width, 1)


@dataclasses.dataclass(frozen=True)
class NoFirstGame:
    n_games: int = 2
    seed: int = 0
    model_version: int = 0


class NotADataclass:
    n_games = 2
    seed = 0
    first_game = 0
    model_version = 0


def _assert_same_games(got: list[Any], want: list[Any]) -> None:
    """Same games: every field equal, samples included."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.plain() == w.plain()
        assert g.samples == w.samples


# -- results ---------------------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_play_returns_the_games_play_games_plays_in_process(logs: Logs) -> None:
    torch.manual_seed(0)
    model, opp = TinyChess(ModelConfig(hidden=16, blocks=0)), TinyChess(ModelConfig(hidden=16, blocks=0))
    self_cfg = PlayConfig(TinyChessGame(), n_games=6, first_game=11, seed=5, max_plies=24, model_version=3)
    vs_cfg = dataclasses.replace(self_cfg, first_game=40, opponent_version=2)
    async with SelfPlay(workers=2) as selfplay:
        began = time.perf_counter()
        got_self, stats_self = await selfplay.play(model, None, self_cfg)
        between = time.perf_counter()
        got_vs, stats_vs = await selfplay.play(model, opp, vs_cfg)
        walls = [between - began, time.perf_counter() - between]

    calls = ((self_cfg, None, got_self, stats_self, walls[0]), (vs_cfg, opp, got_vs, stats_vs, walls[1]))
    for cfg, opponent, got, stats, wall in calls:
        want, want_stats = play_games(model, opponent, cfg)
        # sorted by id, each id of the call exactly once
        assert ids(got) == list(range(cfg.first_game, cfg.first_game + cfg.n_games))
        _assert_same_games(got, want)
        assert stats.keys() >= SUMMARY_KEYS | CALL_KEYS
        assert {k: stats[k] for k in SUMMARY_KEYS} == {k: want_stats[k] for k in SUMMARY_KEYS}
        assert stats["workers"] == 2
        # default_shard_games(6, 2, 64): shards of one game; each worker is sent its share, 3 at once
        assert stats["shards"] == 6
        assert (stats["retries"], stats["respawns"]) == (0, 0)
        assert 0 < stats["seconds"] <= wall  # the call's own time, within the time around it
        assert stats["plies_per_s"] == pytest.approx(stats["plies"] / stats["seconds"])
    assert {r.opponent_version for r in got_vs} == {2} and {r.model_version for r in got_vs} == {3}
    assert {(r.first, r.second) for r in got_vs} == {("model", "opponent"), ("opponent", "model")}
    assert len(events(logs, "shard_done")) == 4
    assert len(events(logs, "pool_started")) == 1


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_busy_seconds_count_the_shards_while_they_run() -> None:
    """busy_seconds grows while a shard runs, so that two readings give the busy time between
    them (the pipeline's per-iteration idle time), not the time of the shards that ended there."""
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=2) as selfplay:
        task = asyncio.create_task(selfplay.play(tiny(), None, slow(4)))  # two shards of ~2 s
        await wait_until(both_slots_busy(selfplay))
        began, before = time.monotonic(), selfplay.busy_seconds
        await asyncio.sleep(0.5)  # each shard takes 2 s at least: neither ends meanwhile
        during, elapsed = selfplay.busy_seconds - before, time.monotonic() - began
        assert not task.done()
        # two workers busy all along (before the fix: 0 until a result came)
        assert during == pytest.approx(2 * elapsed, abs=0.01)
        _, stats = await task
        total = selfplay.busy_seconds
        await asyncio.sleep(0.2)
        assert selfplay.busy_seconds == total  # nothing runs: nothing more counts
        assert 0.9 * stats["seconds"] * 2 <= total <= stats["seconds"] * 2 + 0.1

        # A cancelled call counts its shards until they stopped.
        task = asyncio.create_task(selfplay.play(tiny(), None, slow(4)))
        await wait_until(lambda: selfplay.busy_seconds >= total + 0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        stopped = selfplay.busy_seconds
        assert stopped >= total + 0.5
        await asyncio.sleep(0.2)
        assert selfplay.busy_seconds == stopped


# -- faults ----------------------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_worker_that_dies_is_replaced_and_the_call_completes(
    logs: Logs, children: Children, tmp_path: Path
) -> None:
    model = tiny()
    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        workers = children()
        assert workers == sorted(selfplay.pids)
        task = asyncio.create_task(selfplay.play(model, None, slow(2, first_game=100)))
        await wait_until(both_slots_busy(selfplay))
        victim = workers[0]
        os.kill(victim, signal.SIGKILL)
        records, stats = await task

        assert ids(records) == [100, 101]  # complete, no duplicate
        assert stats["respawns"] == 1
        assert stats["retries"] == 1  # the victim's shard; the other shard went on undisturbed
        died = events(logs, "worker_died")
        assert [(e["pid"], e["exit"], e["started_shard"]) for e in died] == [(victim, "SIGKILL", True)]
        assert len(events(logs, "worker_killed")) == 1 and len(events(logs, "worker_respawning")) == 1
        new_workers = children()
        # only the victim was replaced: one failure costs one worker
        assert len(new_workers) == 2 and set(new_workers) & set(workers) == set(workers) - {victim}
        assert {r.pid for r in records} <= set(workers) | set(new_workers)

        # a worker that kills itself (once): retried on the new pool, the call completes
        mark = len(logs)
        crash = FaultConfig(n_games=4, fault="crash", fault_game=2, once=True, marker_dir=str(tmp_path))
        records, stats = await selfplay.play(model, None, crash)
        assert ids(records) == [0, 1, 2, 3]
        assert (stats["retries"], stats["respawns"]) == (1, 1)
        died = events(logs[mark:], "worker_died")
        assert [(e["shard"], e["exit"]) for e in died] == [(2, "SIGKILL")]
        assert died[0]["pid"] in new_workers
        retried = events(logs[mark:], "shard_retried")
        assert [e["shard"] for e in retried] == [2] and "SIGKILL" in retried[0]["reason"]

        # a worker that dies between calls (the OOM killer, while the trainer trains): the next
        # call notices the broken pool, starts a new one and loses nothing
        mark = len(logs)
        workers = children()
        victim = workers[0]
        os.kill(victim, signal.SIGKILL)
        await wait_until(lambda: not pid_alive(victim))
        await asyncio.sleep(0.5)  # the executor notices the death and marks itself broken
        records, stats = await selfplay.play(model, None, FaultConfig(n_games=4))
        assert ids(records) == [0, 1, 2, 3]
        assert (stats["retries"], stats["respawns"]) == (0, 1)
        idle_deaths = events(logs[mark:], "worker_died")
        assert [(e["pid"], e["idle"]) for e in idle_deaths] == [(victim, True)]
        new_workers = children()
        assert len(new_workers) == 2 and set(new_workers) & set(workers) == set(workers) - {victim}
        assert {r.pid for r in records} <= set(new_workers)


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_stalled_worker_has_its_stack_logged_and_its_shard_replayed(
    logs: Logs, children: Children, tmp_path: Path
) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, stall_timeout=1.0, shard_games=1) as selfplay:
        for fault in ("hang", "hang_in_c"):  # a Python loop, then a block inside C
            mark = len(logs)
            workers = children()
            marker_dir = tmp_path / fault
            marker_dir.mkdir()
            cfg = FaultConfig(n_games=4, fault=fault, fault_game=1, once=True, marker_dir=str(marker_dir))
            records, stats = await selfplay.play(tiny(), None, cfg)

            assert ids(records) == [0, 1, 2, 3], fault
            assert (stats["retries"], stats["respawns"]) == (1, 1), fault
            stalled = events(logs[mark:], "worker_stalled")
            assert len(stalled) == 1, fault
            event = stalled[0]
            assert event["shard"] == 1 and event["pid"] in workers
            stack = event["stack"]
            assert "asp/testing.py" in stack and "in _misbehave" in stack, stack
            assert "in fault_play" in stack and "asp/backends/worker.py" in stack, stack
            assert [e["shard"] for e in events(logs[mark:], "shard_retried")] == [1]
            assert "stalled" in events(logs[mark:], "shard_retried")[0]["reason"]
            assert not pid_alive(event["pid"])  # the stalled worker was killed, and only it
            assert set(children()) & set(workers) == set(workers) - {event["pid"]}
            # replaced at once: the new worker starts while the call finishes on the other one
            assert [e["event"] for e in logs[mark:] if e["event"] in ("worker_killed", "worker_respawning")] == [
                "worker_killed",
                "worker_respawning",
            ]


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_shard_that_always_raises_fails_the_call_with_the_worker_traceback(
    logs: Logs, children: Children
) -> None:
    model = tiny()
    bad = FaultConfig(n_games=4, fault="raise", fault_game=2)
    async with SelfPlay(workers=2, play_fn=fault_play, retries=2) as selfplay:
        workers = selfplay.pids
        with pytest.raises(ShardFailed, match="shard 2 failed after 3 attempt") as info:
            await selfplay.play(model, None, bad)
        assert (info.value.shard, info.value.attempts) == (2, 3)
        assert "RuntimeError: fault_play: the injected failure" in info.value.traceback
        assert "in _misbehave" in info.value.traceback  # the worker's traceback, not the coordinator's
        assert [e["attempt"] for e in events(logs, "shard_retried")] == [0, 1]
        assert [e["attempts"] for e in events(logs, "shard_failed")] == [3]

        # an exception in play_fn costs no process: the same pool plays the next call
        records, stats = await selfplay.play(model, None, FaultConfig(n_games=4))
        assert ids(records) == [0, 1, 2, 3]
        assert (stats["retries"], stats["respawns"]) == (0, 0)
        assert selfplay.pids == workers
        assert not events(logs, "worker_killed")

    # retries=0: one attempt; the error leaves the `async with`, which still cleans up
    mark = len(logs)
    with pytest.raises(ShardFailed) as info:
        async with SelfPlay(workers=2, play_fn=fault_play, retries=0) as selfplay:
            tmp = selfplay._backend._tmp
            assert tmp is not None and tmp.is_dir()
            await selfplay.play(model, None, bad)
    assert info.value.attempts == 1
    assert not events(logs[mark:], "shard_retried")
    assert not tmp.exists()
    assert children() == []
    assert events(logs[mark:], "selfplay_closed")


# -- cancellation and deadlines --------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_cancelled_or_timed_out_call_stops_its_shards_and_keeps_the_pool(logs: Logs, children: Children) -> None:
    model = tiny()
    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        workers = children()

        async def cancel_task() -> None:
            task = asyncio.create_task(selfplay.play(model, None, slow()))
            await wait_until(both_slots_busy(selfplay))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        async def asyncio_timeout() -> None:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5):
                    await selfplay.play(model, None, slow())

        async def anyio_scope() -> None:
            with anyio.move_on_after(0.5) as scope:
                await selfplay.play(model, None, slow())
            assert scope.cancelled_caught

        async def timeout_option() -> None:
            with pytest.raises(TimeoutError):
                await selfplay.play(model, None, slow(), timeout=0.5)

        for how in (cancel_task, asyncio_timeout, anyio_scope, timeout_option):
            mark = len(logs)
            await how()
            # a cooperative stop: the shards saw the flag at a heartbeat; no worker was killed
            assert not events(logs[mark:], "worker_killed"), how.__name__
            assert len(events(logs[mark:], "shard_cancelled")) == 2, how.__name__
            records, stats = await selfplay.play(model, None, FaultConfig(n_games=4, first_game=7))
            assert ids(records) == [7, 8, 9, 10], how.__name__
            assert (stats["retries"], stats["respawns"]) == (0, 0), how.__name__
            # no process was killed or replaced
            assert children() == workers, how.__name__
        assert not events(logs, "worker_killed")


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_cancelling_a_shard_stuck_in_c_kills_its_worker_and_the_next_call_replaces_it(
    logs: Logs, children: Children
) -> None:
    model = tiny()
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, stall_timeout=None) as selfplay:
        assert selfplay._backend is not None
        arrays = selfplay._backend.arrays
        workers = children()
        stuck = selfplay.pids[0]
        task = asyncio.create_task(selfplay.play(model, None, FaultConfig(n_games=2, fault="hang_in_c")))
        # shard 0 has started in slot 0's worker, and loaded its weights: play_fn (and its hang)
        # next. (Its start alone is not enough on a loaded machine: cancelled while loading, the
        # worker stops cooperatively and nothing is killed.)
        await wait_until(lambda: arrays.pids[0] != 0 and arrays.progress[0] >= 1)
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        killed = events(logs, "worker_killed")
        assert [(e["pid"], "grace" in e["reason"]) for e in killed] == [(stuck, True)]
        assert not pid_alive(stuck) and children() == sorted(set(workers) - {stuck})

        records, stats = await selfplay.play(model, None, FaultConfig(n_games=4))
        assert ids(records) == [0, 1, 2, 3]
        assert stats["respawns"] == 1
        new_workers = children()
        assert len(new_workers) == 2 and set(new_workers) & set(workers) == set(workers) - {stuck}


# -- stream ----------------------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_stream_yields_each_shard_once_as_it_completes(logs: Logs, children: Children, tmp_path: Path) -> None:
    model = tiny()
    async with SelfPlay(workers=2, play_fn=ordered_play, shard_games=1) as selfplay:
        workers = children()
        # the shard of game 0 finishes only after the test has received another shard
        cfg = FaultConfig(n_games=6, plies=3, marker_dir=str(tmp_path))
        results: list[ShardResult] = []
        listened = time.monotonic()
        async with contextlib.aclosing(selfplay.stream(model, None, cfg)) as shards:
            async for shard in shards:
                if not results:
                    (tmp_path / "release").touch()
                results.append(shard)
        assert results[0].shard != 0  # completion order, not shard order
        assert sorted(r.shard for r in results) == list(range(6))
        for r in results:
            assert isinstance(r, ShardResult)
            assert (r.first_game, r.n_games, r.attempt) == (r.shard, 1, 0)
            assert ids(r.records) == [r.first_game]
            assert all(isinstance(rec, EchoRecord) and rec.pid == r.pid for rec in r.records)
            assert r.pid in workers
            assert r.stats == {"games": 1, "plies": 3}
            assert 0 <= r.seconds <= time.monotonic() - listened  # measured in the worker, within the stream

        # leaving the loop early cancels the other running shard; the pool stays
        mark = len(logs)
        async with contextlib.aclosing(selfplay.stream(model, None, slow(6))) as shards:
            async for shard in shards:
                assert shard.n_games == 1
                break
        # the workers stay busy while the caller reads a result: the freed one took the next shard
        assert 1 <= len(events(logs[mark:], "shard_cancelled")) <= 2
        records, stats = await selfplay.play(model, None, FaultConfig(n_games=4))
        assert ids(records) == [0, 1, 2, 3] and stats["respawns"] == 0
        assert children() == workers
        assert not events(logs, "worker_killed")


# -- life cycle ------------------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_closing_removes_processes_and_files_and_refuses_later_calls(logs: Logs, children: Children) -> None:
    model = tiny()
    cfg = FaultConfig(n_games=2)
    unstarted = SelfPlay(workers=2, play_fn=fault_play)
    with pytest.raises(ClosedError, match="not started"):
        await unstarted.play(model, None, cfg)
    with pytest.raises(ClosedError, match="not started"):
        async for _ in unstarted.stream(model, None, cfg):
            pass
    assert children() == []

    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        await selfplay.play(model, None, cfg)
        tmp = selfplay._backend._tmp
        assert tmp is not None and any(tmp.iterdir())  # weights and stack files
        assert len(children()) == 2
    assert tmp is not None and not tmp.exists()
    assert children() == []  # aclose returns once every worker has exited or been killed
    with pytest.raises(ClosedError, match="closed"):
        await selfplay.play(model, None, cfg)
    with pytest.raises(ClosedError, match="closed"):
        async for _ in selfplay.stream(model, None, cfg):
            pass
    with pytest.raises(ClosedError):
        await selfplay.start()
    await selfplay.aclose()  # closing twice is fine
    assert len(events(logs, "selfplay_closed")) == 1

    # cancelled while inside `async with`, in the middle of a call
    opened: list[SelfPlay] = []

    async def run() -> None:
        async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
            opened.append(selfplay)
            await selfplay.play(model, None, slow())

    task = asyncio.create_task(run())
    await wait_until(lambda: bool(opened) and both_slots_busy(opened[0])())
    tmp = opened[0]._backend._tmp
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tmp is not None and not tmp.exists()
    assert children() == []
    assert len(events(logs, "selfplay_closed")) == 2


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_normal_close_reports_no_worker_killed(logs: Logs, children: Children) -> None:
    # Once every close logged worker_killed reason=close_timeout at info: idle workers took over
    # a second to exit (the garbage collector's passes over torch at interpreter exit).
    for _ in range(2):
        async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
            await selfplay.play(tiny(), None, FaultConfig(n_games=4, plies=2))
    assert [e for e in events(logs, "worker_killed") if e["log_level"] != "debug"] == []
    assert children() == []


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_aclose_kills_workers_that_do_not_exit_in_time(logs: Logs, children: Children) -> None:
    """A worker still busy when the SelfPlay closes (here: a stream left suspended while its other
    shard hangs inside C) is killed after ``cancel_grace``; aclose does not return before."""
    selfplay = SelfPlay(workers=2, play_fn=fault_play, shard_games=1, stall_timeout=None, cancel_grace=1.0)
    await selfplay.start()
    selfplay_pids = selfplay.pids
    shards = selfplay.stream(tiny(), None, FaultConfig(n_games=2, fault="hang_in_c", fault_game=1))
    try:
        first = await shards.__anext__()  # shard 0; shard 1 hangs in its worker
        assert first.shard == 0
        assert selfplay._backend is not None
        arrays = selfplay._backend.arrays
        await wait_until(lambda: arrays.progress[1] >= 1)  # weights loaded: play_fn (and its hang) next
        await asyncio.sleep(0.2)
        await selfplay.aclose()
        left = children()
        assert left == [], f"aclose returned with workers alive: {left}"
        hung = selfplay_pids[1]
        killed = events(logs, "worker_killed")
        assert (hung, "close_timeout") in [(e["pid"], e["reason"]) for e in killed]
    finally:
        for pid in children():  # should there be any
            os.kill(pid, signal.SIGKILL)
        await shards.aclose()


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_workers_die_with_a_killed_coordinator(tmp_path: Path) -> None:
    script = tmp_path / "coordinator.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio

            from asp import SelfPlay
            from asp.testing import fault_play


            async def main():
                async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
                    print("PIDS", *selfplay.pids, flush=True)
                    await asyncio.sleep(120)


            if __name__ == "__main__":
                asyncio.run(main())
            """
        )
    )
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert proc.stdout is not None
        line = ""
        for line in proc.stdout:  # structlog also prints its events to standard output
            if line.startswith("PIDS"):
                break
        assert line.startswith("PIDS"), stderr.read_text()
        workers = [int(pid) for pid in line.split()[1:]]
        assert len(workers) == 2 and all(pid_alive(pid) for pid in workers)
        proc.kill()  # SIGKILL: no cleanup code runs in the coordinator
        proc.wait(timeout=10)
        assert survivors(workers, seconds=5) == [], "orphaned workers outlived their coordinator"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_a_main_module_read_from_stdin_is_refused() -> None:
    script = textwrap.dedent(
        """
        import asyncio

        from asp import SelfPlay
        from asp.testing import fault_play


        def my_play(model, opp, cfg):
            return fault_play(model, opp, cfg)


        async def main():
            try:
                async with SelfPlay(workers=1):
                    print("STARTED")
            except Exception as e:
                print("START", type(e).__name__, e)
            try:
                SelfPlay(workers=1, play_fn=my_play)
            except Exception as e:
                print("PLAY_FN", type(e).__name__, e)


        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=50, check=False)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line}
    assert "STARTED" not in lines
    assert lines["START"].startswith("START ConfigError") and "__main__" in lines["START"], done.stdout
    assert lines["PLAY_FN"].startswith("PLAY_FN ConfigError") and "__main__" in lines["PLAY_FN"]


# -- weights ---------------------------------------------------------------------------------


def _fill(model: nn.Module, value: float) -> float:
    """Set every parameter to ``value``; return the parameter sum as fault_play computes it."""
    with torch.no_grad():
        for p in model.parameters():
            nn.init.constant_(p, value)
        return float(sum(p.sum() for p in model.parameters()))


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_every_game_is_played_with_the_weights_of_its_call(logs: Logs) -> None:
    """Each call's games see exactly that call's weights, in every worker, every time.

    A broadcast such as ``pool.map(set_weights, [path] * n_workers)`` would fail this: the
    executor hands tasks to whichever worker is free first, so one worker can take two of the
    broadcast tasks and another none, and the latter plays the next shards with old weights.
    Here every shard names the publication it needs and a worker reloads when its copy differs.
    """
    models = [tiny(), tiny()]
    pids: set[int] = set()
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
        for version in range(6):
            model = models[version % 2]  # alternate two networks, each updated in place
            expected = _fill(model, version + 1.0)
            cfg = FaultConfig(n_games=8, plies=5, delay=0.005, model_version=version)
            records, stats = await selfplay.play(model, None, cfg)
            assert ids(records) == list(range(8))
            assert stats["shards"] == 8
            assert [(r.model_version, r.weight_sum) for r in records] == [(version, expected)] * 8
            pids |= {r.pid for r in records}
        assert len(pids) == 2  # both workers played, and switched weights several times

        # the same version, changed in place: the store notices, the workers reload
        model = models[1]
        mark = len(logs)
        expected = _fill(model, 0.25)
        cfg = FaultConfig(n_games=8, plies=5, delay=0.005, model_version=5)
        for _ in range(2):
            records, _ = await selfplay.play(model, None, cfg)
            assert [(r.model_version, r.weight_sum) for r in records] == [(5, expected)] * 8
        # ... and an unchanged model is written once for both calls
        assert len(events(logs[mark:], "weights_published")) == 1
    assert len(events(logs, "weights_published")) == 7


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_model_with_a_mutable_dataclass_cfg_can_be_played(logs: Logs) -> None:
    model = MutableCfgNet(MutableNetConfig(width=4))
    async with SelfPlay(workers=1, play_fn=fault_play, retries=0) as selfplay:
        records, _ = await selfplay.play(model, None, FaultConfig(n_games=2))
    assert ids(records) == [0, 1]


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("workers", 0),
        ("workers", 2.0),
        ("threads_per_worker", 0),
        ("retries", -1),
        ("retries", 101),
        ("stall_timeout", 0),
        ("stall_timeout", float("inf")),
        ("shard_games", 0),
        ("cancel_grace", -1.0),
        ("start_timeout", 0),
    ],
)
def test_bad_options_raise_config_error_naming_the_option(option: str, value: object, children: Children) -> None:
    with pytest.raises(ConfigError, match=option):
        SelfPlay(**{option: value})
    assert children() == []  # refused before any process starts


def _local_play(model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[list[Any], dict[str, Any]]:
    return fault_play(model, opp, cfg)


def test_a_play_fn_workers_cannot_import_is_refused() -> None:
    def closure(model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[list[Any], dict[str, Any]]:
        return fault_play(model, opp, cfg)

    with pytest.raises(ConfigError, match="module level.*closure"):
        SelfPlay(play_fn=closure)
    with pytest.raises(ConfigError, match="module level.*lambda"):
        SelfPlay(play_fn=lambda model, opp, cfg: fault_play(model, opp, cfg))
    SelfPlay(play_fn=_local_play)  # module level: fine


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_without_a_play_fn_the_cfg_plays_its_own_games_or_the_call_is_refused(logs: Logs) -> None:
    with pytest.raises(ConfigError, match=r"FaultConfig\) has no play\(model, opp\) method"):
        play_games_parallel(tiny(), None, FaultConfig(n_games=2), workers=1)  # in this process
    async with SelfPlay(workers=1) as selfplay:
        with pytest.raises(ConfigError, match=r"FaultConfig\) has no play\(model, opp\) method"):
            await selfplay.play(tiny(), None, FaultConfig(n_games=2))
        assert not events(logs, "shard_dispatched")  # refused here, not in a worker
        records, stats = await selfplay.play(tiny(), None, PlayConfig(TinyChessGame(), n_games=2, max_plies=4))
        assert ids(records) == [0, 1] and stats["plies"] == 8  # PlayConfig.play, PlayConfig.summarise


@pytest.mark.timeout(90)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_bad_call_arguments_raise_config_error_and_keep_the_selfplay_usable(logs: Logs) -> None:
    class LocalNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 1)

    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        with pytest.raises(ConfigError, match="cfg"):
            await selfplay.play(NoCfgNet(3), None, FaultConfig(n_games=2))
        with pytest.raises(ConfigError, match="opponent.*cfg"):
            await selfplay.play(tiny(), NoCfgNet(3), FaultConfig(n_games=2))
        with pytest.raises(ConfigError, match="module level"):
            await selfplay.play(LocalNet(), None, FaultConfig(n_games=2))
        with pytest.raises(ConfigError, match="dataclass"):
            await selfplay.play(tiny(), None, NotADataclass())
        with pytest.raises(ConfigError, match="first_game"):
            await selfplay.play(tiny(), None, NoFirstGame())
        assert not events(logs, "weights_published") and not events(logs, "shard_dispatched")

        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=2))
        assert ids(records) == [0, 1] and stats["respawns"] == 0
