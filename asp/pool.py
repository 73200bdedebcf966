"""The local backend: one spawn worker process per slot, each in its own executor.

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
import signal
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import anyio
import structlog
from torch import nn

from asp import progress, worker
from asp.errors import AspError
from asp.log import log_settings

__all__ = ["LocalPool", "WorkerProcess", "signal_name"]

log = structlog.get_logger("asp.pool")


class SlotArrays:
    """Shared memory of every slot: progress counters, cancel flags, phases, pids."""

    def __init__(self, slots: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.progress = ctx.Array("q", slots, lock=False)
        self.cancel = ctx.Array("b", slots, lock=False)
        self.phase = ctx.Array("b", slots, lock=False)
        self.pids = ctx.Array("q", slots, lock=False)

    def reset(self, slot: int) -> None:
        self.progress[slot] = 0
        self.cancel[slot] = 0
        self.phase[slot] = progress.IDLE
        self.pids[slot] = 0


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
        self.started.add_done_callback(_retrieve)
        self.process = _executor_process(self.executor)
        return self.started

    @property
    def ready(self) -> bool:
        fut = self.started
        return fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None and not self.killed

    def alive(self) -> bool:
        """True unless the process has ended (its sentinel is readable: no race with reaping)."""
        if self.process is None or self.killed:
            return False
        return not multiprocessing.connection.wait([self.process.sentinel], timeout=0)

    def submit(self, fn: Callable[[bytes], bytes], payload: bytes) -> asyncio.Future[bytes]:
        future = asyncio.get_running_loop().run_in_executor(self.executor, fn, payload)
        future.add_done_callback(_retrieve)
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


class LocalPool:
    """The slots' worker processes: start, replace, kill and close them."""

    MAX_FAILED_STARTS = 3
    """Consecutive failed starts of a slot after which starting gives up."""

    def __init__(self, *, workers: int, threads_per_worker: int, stack_dir: Path, start_timeout: float) -> None:
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.stack_dir = stack_dir
        self.start_timeout = start_timeout
        self.arrays = SlotArrays(workers)
        self.warm: tuple[type[nn.Module], Any] | None = None
        self.procs: list[WorkerProcess | None] = [None] * workers
        self._failed_starts = [0] * workers  # in a row, per slot; reset by a successful start
        self._numbers = 0

    def spawn(self, slot: int) -> WorkerProcess:
        """Start a new worker in ``slot`` (replacing a dead one); it is ready once ``started`` is."""
        self._numbers += 1
        proc = WorkerProcess(
            slot=slot,
            number=self._numbers,
            threads_per_worker=self.threads_per_worker,
            stack_dir=self.stack_dir,
            arrays=self.arrays,
            warm=self.warm,
        )
        self.procs[slot] = proc
        self.arrays.reset(slot)
        proc.start()
        return proc

    async def start(self) -> float:
        """Start every worker and wait until each has run its initializer; return the seconds."""
        began = time.perf_counter()
        procs = [self.spawn(slot) for slot in range(self.workers)]
        await asyncio.gather(*(p.started for p in procs if p.started is not None))
        for proc in procs:
            proc.announced = True
        seconds = time.perf_counter() - began
        log.info("pool_started", workers=self.workers, pids=[p.pid for p in procs], seconds=round(seconds, 3))
        return seconds

    def starting(self) -> list[asyncio.Future[int]]:
        """The start futures of workers that are still starting."""
        return [p.started for p in self.procs if p is not None and p.started is not None and not p.started.done()]

    async def check_starts(self) -> None:
        """Deal with workers whose start ended or ran out of time: log, count, give up if hopeless.

        :raises AspError: when a slot's worker failed to start MAX_FAILED_STARTS times in a row.
        """
        for slot, proc in enumerate(self.procs):
            if proc is not None and proc.ready and not proc.announced:
                proc.announced = True
                self._failed_starts[slot] = 0
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
            self._failed_starts[slot] += 1
            failures = self._failed_starts[slot]
            log.warning("worker_start_failed", slot=slot, pid=proc.pid, reason=reason, failures=failures)
            if failures >= self.MAX_FAILED_STARTS:
                raise AspError(
                    f"the worker of slot {slot} failed to start {failures} times in a row; last: {reason} "
                    f"(see the workers' stderr; the initializer builds the model, which may not fit in memory)"
                )

    async def close(self, *, grace: float) -> None:
        """Stop every worker: idle ones exit by themselves, the others are killed after ``grace``."""
        for slot in range(self.workers):
            self.arrays.cancel[slot] = 1  # a shard still running stops at its next heartbeat
        procs = [p for p in self.procs if p is not None]
        await asyncio.gather(*(p.close(grace=grace) for p in procs))

    def kill_now(self) -> None:
        """SIGKILL every worker without waiting (clean-up that must finish under cancellation)."""
        for proc in self.procs:
            if proc is not None:
                proc.kill_now()


def _retrieve(fut: asyncio.Future[Any]) -> None:
    # A future may be abandoned (its worker killed): retrieve its exception so that asyncio
    # does not report it as never retrieved.
    if not fut.cancelled():
        fut.exception()


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
