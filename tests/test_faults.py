"""SelfPlay keeps its promises under faults that once broke them (issue 7), with real workers.

Each test names the defect it guards against. Every one failed on the coordinator that ran a
whole pool generation per failure domain: it respawned forever, blamed the wrong shard,
deadlocked, or left processes and files behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import pid_alive, wait_until
from selfplay_helpers import Logs, events, ids, tiny
from torch import nn

from asp import ClosedError, SelfPlay, ShardFailed
from asp.errors import NotRetried
from asp.testing import FaultConfig, fault_play

Children = Callable[[], list[int]]

# Each test starts, breaks and replaces real worker processes: seconds each.
pytestmark = pytest.mark.slow


def in_coordinator() -> bool:
    return multiprocessing.parent_process() is None


# -- play functions and configs that misbehave; module level, so that workers import them ----


def _exit_now() -> None:
    os._exit(7)


@dataclasses.dataclass(frozen=True)
class KillsOnUnpickle(FaultConfig):
    """A cfg whose unpickling ends the process: a worker dies on receiving the task."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_exit_now, ())


class _Unloadable:
    """A record part that a worker pickles fine and the coordinator cannot unpickle."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_refuse_in_coordinator, ())


def _refuse_in_coordinator() -> _Unloadable:
    if in_coordinator():
        raise ValueError("this result cannot be loaded in the coordinator")
    return _Unloadable()


class _SlowToPickle:
    """A record part that takes ``seconds`` to pickle: a large result, in effect."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:
        time.sleep(self.seconds)
        return (_SlowToPickle, (0.0,))


@dataclasses.dataclass
class Tagged:
    game_id: int
    payload: Any


def unloadable_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[Any], dict[str, Any]]:
    records, stats = fault_play(model, opp, cfg)
    payload: Any = _Unloadable() if cfg.fault_game in ids(records) else None
    return [Tagged(r.game_id, payload) for r in records], stats


def one_slow_shard_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[Any], dict[str, Any]]:
    """fault_play; the shard holding ``fault_game`` plays 400 heartbeats 10 ms apart."""
    if cfg.first_game <= cfg.fault_game < cfg.first_game + cfg.n_games:
        cfg = dataclasses.replace(cfg, plies=400, delay=0.01)
    return fault_play(model, opp, cfg)


def slow_to_pickle_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[Any], dict[str, Any]]:
    records, stats = fault_play(model, opp, cfg)
    return [Tagged(r.game_id, _SlowToPickle(cfg.delay * 100)) for r in records], stats


class NeedsTwoArgs(Exception):
    """An exception that pickles and cannot be unpickled: its constructor takes two arguments."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


BAD_RESULTS = {
    "no game_id": "play_fn's record 0 (dict) has no int game_id",
    "stats None": "play_fn must return its stats as a dict, got NoneType",
    "one value": "play_fn must return (records, stats), got NoneType",
    "unpicklable error": "play_fn raised NeedsTwoArgs('board: broken'), which cannot be unpickled",
}


def bad_result_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> Any:
    """fault_play, but what it returns (or raises) is broken as ``cfg.marker_dir`` names."""
    records, stats = fault_play(model, opp, cfg)
    broken = cfg.marker_dir
    if broken == "no game_id":
        return [{"id": r.game_id} for r in records], stats
    if broken == "stats None":
        return records, None
    if broken == "one value":
        return None
    if broken == "not retried":
        raise NotRetried("the engine cannot start")
    raise NeedsTwoArgs("board", "broken")


@dataclasses.dataclass(frozen=True)
class SlowStartConfig:
    marker_dir: str
    width: int = 2


class SlowStartNet(nn.Module):
    """Built slowly (3 s) once, by the first worker that finds ``marker_dir/armed``."""

    def __init__(self, cfg: SlowStartConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(cfg.width, 1)
        if not in_coordinator():
            try:
                os.unlink(os.path.join(cfg.marker_dir, "armed"))
            except FileNotFoundError:
                return
            time.sleep(3.0)


# -- 1. a worker that dies or fails before it reports its shard ------------------------------


@pytest.mark.timeout(90)
def test_a_cfg_class_under_the_main_guard_fails_the_call_with_a_hint_instead_of_respawning_forever(
    tmp_path: Path,
) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, dataclasses, sys

            from asp import SelfPlay, ShardFailed
            from asp.testing import FaultConfig, fault_play
            from asp.tinychess import ModelConfig, TinyChess

            if __name__ == "__main__":
                @dataclasses.dataclass(frozen=True)
                class MyConfig(FaultConfig):   # spawn workers never run this block
                    pass

                async def main():
                    async with SelfPlay(workers=2, play_fn=fault_play, retries=1) as selfplay:
                        try:
                            await selfplay.play(TinyChess(ModelConfig(hidden=8, blocks=0)), None, MyConfig(n_games=2))
                        except ShardFailed as e:
                            print("FAILED", e.reason, flush=True)
                            sys.exit(3)

                asyncio.run(main())
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not be unpickled in the worker" in done.stdout
    assert "module level of an importable module" in done.stdout
    assert "worker_respawning" not in done.stderr  # an error of the shard, no process died


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_a_cfg_from_a_module_workers_cannot_import_fails_with_its_traceback(logs: Logs) -> None:
    notebook = types.ModuleType("a_notebook_cell")
    exec(  # a class defined in a notebook: its module exists in the coordinator only
        "import dataclasses\nfrom asp.testing import FaultConfig\n"
        "@dataclasses.dataclass(frozen=True)\nclass CellConfig(FaultConfig):\n    pass\n",
        notebook.__dict__,
    )
    sys.modules["a_notebook_cell"] = notebook
    try:
        async with SelfPlay(workers=2, play_fn=fault_play, retries=1) as selfplay:
            pids = selfplay.pids
            with pytest.raises(ShardFailed, match="could not be unpickled") as info:
                await selfplay.play(tiny(), None, notebook.CellConfig(n_games=2))
            assert "No module named 'a_notebook_cell'" in info.value.traceback
            assert info.value.attempts == 2
            assert selfplay.pids == pids  # no worker died for it
            assert not events(logs, "worker_died")
    finally:
        del sys.modules["a_notebook_cell"]


@pytest.mark.timeout(90)
@pytest.mark.asyncio
async def test_a_worker_that_dies_on_receiving_its_task_is_charged_and_the_call_fails(logs: Logs) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, retries=2, shard_games=1) as selfplay:
        with pytest.raises(ShardFailed, match="died \\(exit 7\\)") as info:
            await selfplay.play(tiny(), None, KillsOnUnpickle(n_games=1))
        assert info.value.attempts == 3
        died = events(logs, "worker_died")
        assert [(e["shard"], e["exit"], e["log_level"]) for e in died] == [(0, "exit 7", "warning")] * 3
        assert [e["attempt"] for e in events(logs, "shard_retried")] == [0, 1]
        # the SelfPlay is still usable
        records, _ = await selfplay.play(tiny(), None, FaultConfig(n_games=2))
        assert ids(records) == [0, 1]


# -- 2. a crash noticed when the next shard is sent ------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
async def test_a_worker_killed_while_its_stream_waits_for_the_consumer_is_blamed(logs: Logs) -> None:
    async with SelfPlay(workers=2, play_fn=one_slow_shard_play, shard_games=1) as selfplay:
        assert selfplay._backend is not None
        arrays = selfplay._backend.arrays
        stream = selfplay.stream(tiny(), None, FaultConfig(n_games=4, plies=2, fault_game=1))
        got: list[int] = []
        try:
            first = await stream.__anext__()  # shard 0 (quick); shard 1 (slow) runs in slot 1
            got += ids(first.records)
            await wait_until(lambda: arrays.phase[1] == 1 and arrays.progress[1] > 2)
            victim = selfplay.pids[1]
            assert victim is not None
            os.kill(victim, signal.SIGKILL)  # the generator is suspended: nobody looks
            await wait_until(lambda: not pid_alive(victim))
            await asyncio.sleep(0.3)  # the executor notices and breaks
            async for result in stream:
                got += ids(result.records)
        finally:
            await stream.aclose()
        assert sorted(got) == [0, 1, 2, 3]
        died = events(logs, "worker_died")
        assert [(e["pid"], e["shard"], e["exit"]) for e in died] == [(victim, 1, "SIGKILL")]
        assert [e["shard"] for e in events(logs, "shard_retried")] == [1]


# -- 4. start means every worker has built its model -----------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
async def test_a_worker_still_starting_is_not_sent_shards_nor_charged_with_a_stall(
    logs: Logs, children: Children, tmp_path: Path
) -> None:
    model = SlowStartNet(SlowStartConfig(str(tmp_path)))
    cfg = FaultConfig(n_games=4, plies=60, delay=0.01)  # shards of 0.6 s: longer than the stall timeout
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, stall_timeout=0.5) as selfplay:
        await selfplay.play(model, None, FaultConfig(n_games=2))  # workers now build this model at start
        (tmp_path / "armed").touch()  # the next worker to build it takes 3 s
        survivor, victim = selfplay.pids
        assert victim is not None and selfplay._backend is not None
        victim_proc = selfplay._backend.slots[1]
        assert victim_proc is not None
        os.kill(victim, signal.SIGKILL)
        # gone for good: every thread has let go of its files (the main thread turns zombie earlier)
        await wait_until(lambda: not victim_proc.alive())
        mark = len(logs)
        records, stats = await selfplay.play(model, None, cfg)
        assert ids(records) == list(range(4))
        assert not events(logs[mark:], "worker_stalled")
        assert (stats["retries"], stats["respawns"]) == (0, 1), [
            (e["event"], e.get("pid"), e.get("slot"), e.get("shard")) for e in logs[mark:] if e["log_level"] != "debug"
        ]
        # the replacement got no shard before it had started: the survivor played them all
        assert {r.pid for r in records} == {survivor}
        # ... and it was the replacement that built the slow model. On a loaded machine its
        # start (spawn, imports) can outlast the call's four shards, so wait for it to get there.
        await wait_until(lambda: not (tmp_path / "armed").exists())


# -- 6. clean-up under repeated cancellation -------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_two_native_cancels_still_stop_every_worker_and_remove_every_file(logs: Logs, children: Children) -> None:
    for busy in (False, True):
        opened: list[SelfPlay] = []

        async def run(opened: list[SelfPlay], busy: bool) -> None:
            async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, stall_timeout=None) as selfplay:
                opened.append(selfplay)
                if busy:  # shard 0 hangs inside C: only a kill after cancel_grace stops it
                    await selfplay.play(tiny(), None, FaultConfig(n_games=2, fault="hang_in_c"))
                else:  # idle: the first cancel lands here, the second in aclose
                    await asyncio.sleep(60)

        task = asyncio.create_task(run(opened, busy))
        await wait_until(lambda opened=opened, busy=busy: _running_or_idle(opened, busy))
        await asyncio.sleep(0.3)
        tmp = opened[0]._backend._tmp
        task.cancel()
        await asyncio.sleep(0.2 if busy else 0.05)  # clean-up under way
        task.cancel()  # a second Ctrl-C: it breaks into anyio's shield
        with pytest.raises(asyncio.CancelledError):
            await task
        assert tmp is not None and not tmp.exists(), busy
        assert children() == [], busy
    assert len(events(logs, "selfplay_closed")) == 2


def _running_or_idle(opened: list[SelfPlay], busy: bool) -> bool:
    """The SelfPlay is open (``run`` adds it inside its ``async with``) and, if ``busy``, its
    slot 0 runs a shard."""
    if not opened:
        return False
    return not busy or opened[0]._backend.arrays.phase[0] == 1


# -- 10. blame ------------------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.asyncio
async def test_a_worker_sigtermed_by_an_operator_costs_only_its_own_shard(logs: Logs, children: Children) -> None:
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
        assert selfplay._backend is not None
        arrays = selfplay._backend.arrays
        workers = children()
        task = asyncio.create_task(selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=200, delay=0.01)))
        await wait_until(lambda: all(arrays.progress[s] > 5 for s in (0, 1)))
        victim, other = selfplay.pids
        assert victim is not None and other is not None
        os.kill(victim, signal.SIGTERM)  # an operator's `kill`
        records, stats = await task
        assert ids(records) == [0, 1]
        assert (stats["retries"], stats["respawns"]) == (1, 1)
        assert [(e["pid"], e["shard"], e["exit"]) for e in events(logs, "worker_died")] == [(victim, 0, "SIGTERM")]
        assert other in children() and {r.pid for r in records if r.game_id == 1} == {other}
        assert set(children()) & set(workers) == {other}


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_a_result_the_coordinator_cannot_unpickle_is_an_error_of_its_shard_with_the_real_cause(
    logs: Logs,
) -> None:
    async with SelfPlay(workers=2, play_fn=unloadable_play, shard_games=1, retries=1) as selfplay:
        pids = selfplay.pids
        with pytest.raises(ShardFailed, match="could not unpickle shard 1's result") as info:
            await selfplay.play(tiny(), None, FaultConfig(n_games=2, fault_game=1))
        assert "this result cannot be loaded in the coordinator" in info.value.traceback
        assert not events(logs, "worker_died")
        assert selfplay.pids == pids  # no worker was blamed, killed or replaced


@pytest.mark.timeout(90)
@pytest.mark.asyncio
async def test_a_play_fn_that_returns_nonsense_or_raises_what_cannot_be_unpickled_fails_its_shard_saying_so(
    logs: Logs,
) -> None:
    # Once: an AttributeError naming no shard, or a worker "died (SIGTERM)" after seconds of respawns.
    async with SelfPlay(workers=1, play_fn=bad_result_play, retries=0) as selfplay:
        pids = selfplay.pids
        for broken, message in BAD_RESULTS.items():
            with pytest.raises(ShardFailed, match="shard 0 failed after 1 attempt") as info:
                await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=1, marker_dir=broken))
            assert message in str(info.value) + info.value.traceback, broken
        assert selfplay.pids == pids and not events(logs, "worker_died")


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_a_failure_that_another_attempt_would_repeat_fails_the_call_at_once(logs: Logs) -> None:
    async with SelfPlay(workers=1, play_fn=bad_result_play, retries=2) as selfplay:
        with pytest.raises(ShardFailed, match="failed after 1 attempt") as info:
            await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=1, marker_dir="not retried"))
        assert isinstance(info.value.error, NotRetried) and str(info.value.error) == "the engine cannot start"
        assert not events(logs, "shard_retried")
        assert [e["log_level"] for e in events(logs, "shard_failed")] == ["info"]  # the caller has it


# -- 11. smaller ones ------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_pickling_a_large_result_is_not_a_stall(logs: Logs) -> None:
    async with SelfPlay(workers=1, play_fn=slow_to_pickle_play, stall_timeout=0.5) as selfplay:
        # the result takes 2 x 1 s to pickle in the worker, with no heartbeat meanwhile
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=1, delay=0.01))
        assert ids(records) == [0, 1]
        assert not events(logs, "worker_stalled") and stats["retries"] == 0


@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_aclose_from_another_task_ends_a_running_call_with_closed_error(logs: Logs, children: Children) -> None:
    selfplay = SelfPlay(workers=2, play_fn=fault_play, shard_games=1)
    await selfplay.start()
    assert selfplay._backend is not None
    arrays = selfplay._backend.arrays
    # many short shards: one finishes while the workers are being stopped, and the loop, which
    # used to send the next one to the shut-down executor, raised a bare RuntimeError
    cfg = FaultConfig(n_games=100, plies=10, delay=0.01)
    call = asyncio.create_task(selfplay.play(tiny(), None, cfg))
    await wait_until(lambda: arrays.progress[0] > 0)
    await selfplay.aclose()
    with pytest.raises(ClosedError, match="closed"):
        await call
    assert children() == []


@pytest.mark.timeout(90)
def test_a_program_that_configures_no_logging_sees_no_event_of_a_call_that_went_well(tmp_path: Path) -> None:
    script = tmp_path / "quiet.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio

            from asp import SelfPlay
            from asp.testing import FaultConfig, fault_play
            from asp.tinychess import ModelConfig, TinyChess

            async def main():
                async with SelfPlay(workers=1, play_fn=fault_play, shard_games=1) as selfplay:
                    await selfplay.play(TinyChess(ModelConfig(hidden=8, blocks=0)), None, FaultConfig(n_games=3))
                print("DONE")

            if __name__ == "__main__":
                asyncio.run(main())
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "DONE\n"  # nothing of the library on standard output
    # warnings only: once every shard printed an info line
    assert done.stderr == "", done.stderr
