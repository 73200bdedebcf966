"""The local backend: one spawn worker process per slot, each in its own executor.

:class:`LocalBackend` implements :class:`asp.backends.base.Backend` on this machine.

A slot is a place for one in-flight shard; there are as many slots as workers. Each slot's
worker is a single-worker spawn ``ProcessPoolExecutor`` (the initializer builds the model
once), so a worker that dies, stalls or must be stopped costs its own shard and its own
process only: the other slots keep playing. Shared memory holds, per slot, a progress
counter, a cancel flag, the phase of its shard and the pid that runs it
(:mod:`asp.progress` is the worker's side).

Every worker is started by a ping submitted from the event loop's thread (PR_SET_PDEATHSIG
is tied to the thread that spawned a process); the ping runs after the initializer, so a
started worker is one that has built its model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import anyio
import structlog
from torch import nn

from asp import progress, worker
from asp.backends import tempdirs
from asp.backends.base import SlotState, StartFailures, UnreadableResult, WorkerLost, remote_traceback, retrieve
from asp.checks import check_main_module, check_rebuildable, check_spawnable
from asp.errors import AspError, ConfigError
from asp.log import log_settings
from asp.weights import WeightRef, WeightStore

__all__ = ["LocalBackend", "WorkerProcess", "signal_name"]

log = structlog.get_logger("asp.pool")

_UNPICKLE_IN_THREAD = 1 << 20  # results larger than this (bytes) are unpickled off the loop


class SlotArrays:
    """Shared memory of every slot: progress counters, cancel flags, phases, pids, offers."""

    def __init__(self, slots: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.progress = ctx.Array("q", slots, lock=False)
        self.cancel = ctx.Array("b", slots, lock=False)
        self.phase = ctx.Array("b", slots, lock=False)
        self.pids = ctx.Array("q", slots, lock=False)
        self.offers = progress.OfferCells(
            posted=ctx.Array("q", slots, lock=False),
            taken=ctx.Array("q", slots, lock=False),
            asked=ctx.Array("q", slots, lock=False),
            first=ctx.Array("q", slots * progress.OFFER_RING, lock=False),
            games=ctx.Array("q", slots * progress.OFFER_RING, lock=False),
        )

    def reset(self, slot: int) -> None:
        self.progress[slot] = 0
        self.cancel[slot] = 0
        self.phase[slot] = progress.IDLE
        self.pids[slot] = 0
        self.offers.reset(slot)


def _executor_process(executor: concurrent.futures.ProcessPoolExecutor) -> BaseProcess | None:
    # The one read of a private attribute: a ProcessPoolExecutor does not expose its processes
    # (3.14 adds kill_workers()), and killing a stalled worker needs its process. A single-worker
    # executor spawns its process inside the first submit(), so it is known right after.
    processes: dict[int, BaseProcess] = getattr(executor, "_processes", None) or {}
    return next(iter(processes.values()), None)


class WorkerProcess:
    """One slot's spawn process, inside a single-worker ``ProcessPoolExecutor``."""

    def __init__(
        self,
        *,
        slot: int,
        number: int,
        threads_per_worker: int,
        stack_dir: Path,
        arrays: SlotArrays,
        warm: tuple[type[nn.Module], Any] | None,
    ) -> None:
        self.slot = slot
        self.number = number
        self.stack_dir = stack_dir
        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=worker.initialize,
            initargs=(
                threads_per_worker,
                os.getpid(),
                str(stack_dir),
                slot,
                arrays.progress,
                arrays.cancel,
                arrays.pids,
                arrays.phase,
                arrays.offers,
                warm,
                log_settings(),
            ),
        )
        self.process: BaseProcess | None = None
        self.started: asyncio.Future[int] | None = None
        self.start_began = 0.0
        self.announced = False
        self.killed = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> asyncio.Future[int]:
        """Spawn the process (from the loop's thread); the future answers once its initializer ran."""
        self.start_began = time.monotonic()
        self.started = asyncio.get_running_loop().run_in_executor(self.executor, worker.ping)
        self.started.add_done_callback(retrieve)
        self.process = _executor_process(self.executor)
        return self.started

    @property
    def ready(self) -> bool:
        fut = self.started
        return fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None and not self.killed

    def alive(self) -> bool:
        """True unless the process has ended (its sentinel is readable: no race with reaping)
        or is ending: a SIGKILLed process whose threads are still being torn down closes its
        sentinel some milliseconds after it turned zombie, and a shard sent meanwhile would be
        charged with its death."""
        if self.process is None or self.killed:
            return False
        if multiprocessing.connection.wait([self.process.sentinel], timeout=0):
            return False
        return not _dying(self.process.pid)

    def submit(self, fn: Callable[[bytes], bytes], payload: bytes) -> asyncio.Future[bytes]:
        future = asyncio.get_running_loop().run_in_executor(self.executor, fn, payload)
        future.add_done_callback(retrieve)
        return future

    async def exit_code(self, *, wait: float = 1.0) -> int | None:
        """The process's exit code, waiting up to ``wait`` s for a dying process to be reaped."""
        process = self.process
        if process is None:
            return None
        await _wait_exit(process, seconds=wait)
        return process.exitcode

    async def dump_stack(self, *, wait: float = 1.0) -> str:
        """Ask the worker for every thread's Python stack (faulthandler) and return it."""
        pid = self.pid
        if pid is None:
            return "(the worker has no process)"
        path = self.stack_dir / f"stack-{pid}.txt"
        before = path.stat().st_size if path.exists() else 0
        try:
            os.kill(pid, worker.STACK_SIGNAL)
        except ProcessLookupError:
            return "(worker already exited)"
        deadline = time.monotonic() + wait
        size = before
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            new_size = path.stat().st_size if path.exists() else 0
            if new_size > before and new_size == size:
                break  # written and no longer growing
            size = new_size
        data = await anyio.Path(path).read_bytes() if path.exists() else b""
        return data[before:].decode("utf-8", errors="replace") or "(no stack written)"

    def kill_now(self) -> None:
        """SIGKILL the process and release the executor, without waiting: safe in any ``finally``."""
        if self.killed:
            return
        self.killed = True
        process = self.process
        if process is not None and process.is_alive():
            process.kill()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def kill(self, reason: str) -> None:
        """SIGKILL the process and wait (up to 5 s) until it is reaped."""
        already = self.killed
        self.kill_now()
        if self.process is not None:
            await _wait_exit(self.process, seconds=5.0)
        if not already:
            log.info("worker_killed", slot=self.slot, worker=self.number, pid=self.pid, reason=reason)

    async def close(self, *, grace: float) -> None:
        """Let the idle process exit; kill it if it is still alive after ``grace`` seconds."""
        if self.killed:
            return
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.process is not None and not await _wait_exit(self.process, seconds=grace):
            await self.kill("close_timeout")
        self.killed = True
        # The executor's manager thread ends once its worker has; join it off the loop.
        await asyncio.to_thread(self.executor.shutdown, wait=True)


class LocalBackend:
    """The slots' worker processes on this machine: start, replace, run shards in, kill, close."""

    name = "local"

    def __init__(
        self, *, workers: int, threads_per_worker: int, start_timeout: float, play_fn: Callable[..., Any]
    ) -> None:
        check_spawnable(play_fn, "play_fn")
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.start_timeout = start_timeout
        self.arrays = SlotArrays(workers)
        self.procs: list[WorkerProcess | None] = [None] * workers
        self._failed_starts = StartFailures(workers)
        self._numbers = 0
        self._tmp: Path | None = None
        self._weights: WeightStore | None = None

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        check_main_module()
        # Named for this process and locked while it lives: a later start removes it if this
        # process is killed before it can (asp.backends.tempdirs).
        self._tmp = tempdirs.owned_dir()
        self._weights = WeightStore(self._tmp / "weights")
        began = time.perf_counter()
        procs = [self._spawn(slot) for slot in range(self.workers)]
        try:
            with anyio.fail_after(self.start_timeout):
                await asyncio.gather(*(p.started for p in procs if p.started is not None))
        except (BrokenProcessPool, TimeoutError) as e:
            raise AspError(f"the worker pool could not start: {e!r} (see the workers' stderr)") from e
        for proc in procs:
            proc.announced = True
        seconds = round(time.perf_counter() - began, 3)
        log.info("pool_started", backend="local", workers=self.workers, pids=[p.pid for p in procs], seconds=seconds)

    async def close(self, *, grace: float) -> None:
        for slot in range(self.workers):
            self.arrays.cancel[slot] = 1  # a shard still running stops at its next heartbeat
        procs = [p for p in self.procs if p is not None]
        await asyncio.gather(*(p.close(grace=grace) for p in procs))
        self._remove_files()

    def kill_now(self, slot: int | None = None) -> None:
        for i, proc in enumerate(self.procs):
            if proc is not None and slot in (None, i):
                proc.kill_now()
        if slot is None:
            self._remove_files()

    def _remove_files(self) -> None:
        if self._weights is not None:
            self._weights.close()
        if self._tmp is not None:
            tempdirs.release(self._tmp)

    def check_network(self, net: nn.Module, role: str) -> None:
        check_rebuildable(net, role)

    async def publish(self, role: str, net: nn.Module, version: int) -> WeightRef:
        assert self._weights is not None, "start() first"
        # torch.save, fsync and the comparison with the last publication take long for a large
        # model: off the event loop, so that shards of other work are collected meanwhile.
        ref: WeightRef = await asyncio.to_thread(self._weights.publish, role, net, version=version, hold=True)
        return ref

    def release(self, ref: WeightRef) -> None:
        if self._weights is not None:
            self._weights.release(ref)

    def _warm(self) -> tuple[type[nn.Module], Any] | None:
        return self._weights.first_model if self._weights is not None else None

    # -- slots --------------------------------------------------------------------------------

    def pid(self, slot: int) -> int | None:
        proc = self.procs[slot]
        return proc.pid if proc is not None and not proc.killed else None

    def vacant(self) -> list[int]:
        return [slot for slot, proc in enumerate(self.procs) if proc is None or proc.killed]

    def replace(self, slot: int) -> None:
        self._spawn(slot)

    def _spawn(self, slot: int) -> WorkerProcess:
        assert self._tmp is not None, "start() first"
        self._numbers += 1
        proc = WorkerProcess(
            slot=slot,
            number=self._numbers,
            threads_per_worker=self.threads_per_worker,
            stack_dir=self._tmp,
            arrays=self.arrays,
            warm=self._warm(),
        )
        self.procs[slot] = proc
        self.arrays.reset(slot)
        proc.start()
        return proc

    def ready(self, slot: int) -> bool:
        proc = self.procs[slot]
        return proc is not None and proc.ready

    def starting(self) -> list[asyncio.Future[Any]]:
        return [p.started for p in self.procs if p is not None and p.started is not None and not p.started.done()]

    async def check_starts(self) -> None:
        for slot, proc in enumerate(self.procs):
            if proc is not None and proc.ready and not proc.announced:
                proc.announced = True
                self._failed_starts.started(slot)
                seconds = round(time.monotonic() - proc.start_began, 3)
                log.info("worker_started", slot=slot, worker=proc.number, pid=proc.pid, seconds=seconds)
            if proc is None or proc.started is None or proc.killed or proc.ready:
                continue
            fut = proc.started
            if fut.done():
                exc = fut.exception()
                code = await proc.exit_code()
                reason = f"{exc!r} (worker exit: {signal_name(code)})"
            elif time.monotonic() - proc.start_began > self.start_timeout:
                reason = f"not started within start_timeout={self.start_timeout} s"
            else:
                continue
            await proc.kill("start_failed")
            self.procs[slot] = None
            hint = " (see the workers' stderr; the initializer builds the model, which may not fit in memory)"
            self._failed_starts.failed(slot, reason, worker="worker", hint=hint, pid=proc.pid)

    async def idle_loss(self, slot: int) -> str | None:
        proc = self._proc(slot)
        if proc.alive():
            return None
        return signal_name(await proc.exit_code())

    # -- shards -------------------------------------------------------------------------------

    def submit(self, slot: int, task: worker.ShardTask) -> asyncio.Future[worker.ShardOutput]:
        proc = self._proc(slot)
        try:
            payload = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise ConfigError(f"shard {task.shard}'s task (play_fn, cfg) cannot be pickled: {e!r}") from e
        self.arrays.reset(slot)
        try:
            future = proc.submit(worker.run_shard, payload)
        except BrokenProcessPool as e:  # its worker died while idle, and the executor noticed first
            raise WorkerLost(
                f"worker {proc.pid} died while idle", pid=proc.pid, exit="unknown", started_shard=False, cause=None
            ) from e
        outcome: asyncio.Future[worker.ShardOutput] = asyncio.get_running_loop().create_future()
        outcome.add_done_callback(retrieve)

        def settle(fut: asyncio.Future[bytes]) -> None:
            if outcome.done():
                return
            if not fut.cancelled() and fut.exception() is None and len(fut.result()) <= _UNPICKLE_IN_THREAD:
                try:  # the common case, at once: a task per shard costs the coordinator a turn of its loop
                    outcome.set_result(pickle.loads(fut.result()))
                    return
                except Exception:  # noqa: BLE001 (the slow path below reports it)
                    pass
            slow = asyncio.ensure_future(self._outcome(slot, task.shard, proc, fut))
            slow.add_done_callback(lambda done: _chain(done, outcome))

        future.add_done_callback(settle)
        return outcome

    async def _outcome(
        self, slot: int, shard: int, proc: WorkerProcess, future: asyncio.Future[bytes]
    ) -> worker.ShardOutput:
        try:
            payload = await future
        except BrokenProcessPool as e:
            code = signal_name(await proc.exit_code())
            began = self.arrays.phase[slot] != progress.IDLE
            reason = f"worker {proc.pid} died ({code})" + ("" if began else " before it started the shard")
            cause = remote_traceback(e) if e.__cause__ is not None else None
            raise WorkerLost(reason, pid=proc.pid, exit=code, started_shard=began, cause=cause) from e
        try:
            if len(payload) > _UNPICKLE_IN_THREAD:
                out: worker.ShardOutput = await asyncio.to_thread(pickle.loads, payload)
            else:
                out = pickle.loads(payload)
        except Exception as e:
            raise UnreadableResult(f"the coordinator could not unpickle shard {shard}'s result: {e!r}") from e
        return out

    async def states(self, slots: list[int]) -> dict[int, SlotState]:
        a, o = self.arrays, self.arrays.offers
        return {
            s: SlotState(int(a.phase[s]), int(a.progress[s]), int(a.pids[s]) or None, int(o.taken[s]), int(o.asked[s]))
            for s in slots
        }

    def offer(self, slot: int, seq: int, first_game: int, n_games: int) -> None:
        offers = self.arrays.offers
        if seq != offers.posted[slot] or seq - offers.taken[slot] >= progress.OFFER_RING:
            posted, taken = offers.posted[slot], offers.taken[slot]
            raise AspError(f"slot {slot}: offer {seq} out of order (posted {posted}, taken {taken})")
        cell = slot * progress.OFFER_RING + seq % progress.OFFER_RING
        offers.first[cell], offers.games[cell] = first_game, n_games
        offers.posted[slot] = seq + 1  # last: the worker reads the cells once it sees this

    def cancel(self, slot: int) -> None:
        self.arrays.cancel[slot] = 1

    async def stack(self, slot: int) -> str:
        return await self._proc(slot).dump_stack()

    async def kill(self, slot: int, reason: str) -> None:
        await self._proc(slot).kill(reason)

    def _proc(self, slot: int) -> WorkerProcess:
        proc = self.procs[slot]
        assert proc is not None, f"slot {slot} has no worker"
        return proc


def _chain(source: asyncio.Future[Any], target: asyncio.Future[Any]) -> None:
    """Give ``target`` the outcome of ``source``."""
    if target.done():
        retrieve(source)  # nobody else will look at it
    elif source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())  # type: ignore[arg-type]
    else:
        target.set_result(source.result())


async def _wait_exit(process: BaseProcess, *, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``process`` to end (its sentinel turns readable); True if it did."""
    if process.is_alive():
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        fd = process.sentinel

        def on_end() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(fd, on_end)
        try:
            await asyncio.wait([ended], timeout=seconds)
        finally:
            loop.remove_reader(fd)
    # The sentinel turns readable as the process closes its files, a moment before it can be
    # reaped (and the executor's thread may be reaping it at the same time): look again briefly.
    deadline = time.monotonic() + min(seconds, 1.0)
    while process.is_alive() and time.monotonic() < deadline:  # noqa: ASYNC110 (no event for "reaped")
        await asyncio.sleep(0.005)
    return not process.is_alive()


def _dying(pid: int | None) -> bool:
    """True when ``pid`` is a zombie or dead (Linux's /proc; elsewhere the sentinel alone decides)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def signal_name(exitcode: int | None) -> str:
    """``"SIGKILL"`` for exit code -9, ``"exit 1"`` for 1, ``"running"`` for None."""
    if exitcode is None:
        return "running"
    if exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit {exitcode}"
