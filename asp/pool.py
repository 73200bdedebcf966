"""The local backend: one generation of spawn-context worker processes.

A :class:`Generation` is disposable. It owns a ``ProcessPoolExecutor`` with the spawn start
method, shared-memory progress counters and cancel flags (one per slot: a slot is a place for
one in-flight shard, and there are as many slots as workers), and a stack file per worker.
When a worker dies, stalls or must be stopped, the coordinator kills the whole generation and
starts the next one: a ``ProcessPoolExecutor`` is broken by the loss of any worker anyway.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import structlog
from torch import nn

from asp import worker
from asp.log import log_settings

__all__ = ["Generation"]

log = structlog.get_logger("asp.pool")


class Generation:
    """``workers`` spawn processes, each running :func:`asp.worker.initialize` once."""

    def __init__(
        self,
        *,
        number: int,
        workers: int,
        threads_per_worker: int,
        stack_dir: Path,
        warm: tuple[type[nn.Module], Any] | None,
    ) -> None:
        self.number = number
        self.workers = workers
        self.stack_dir = stack_dir
        ctx = multiprocessing.get_context("spawn")
        self.progress = ctx.Array("q", workers, lock=False)
        self.cancel = ctx.Array("b", workers, lock=False)
        self.slot_pids = ctx.Array("q", workers, lock=False)
        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=worker.initialize,
            initargs=(
                threads_per_worker,
                os.getpid(),
                str(stack_dir),
                self.progress,
                self.cancel,
                self.slot_pids,
                warm,
                log_settings(),
            ),
        )
        self.processes: dict[int, Any] = {}
        self.pids: list[int] = []
        self.killed = False

    async def start(self) -> float:
        """Start every worker (the executor spawns them on demand) and wait until each answers.

        Submits only from the event loop's thread: PR_SET_PDEATHSIG is tied to the thread
        that spawned a worker. Returns the seconds it took.
        """
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self.executor, worker.ping) for _ in range(self.workers)]
        await asyncio.gather(*futures)
        # Every worker is up now and the executor never replaces one: keep them for kill/close.
        self.processes = dict(getattr(self.executor, "_processes", None) or {})
        self.pids = sorted(self.processes)
        seconds = time.perf_counter() - started
        log.info(
            "pool_started",
            generation=self.number,
            workers=self.workers,
            pids=self.pids,
            seconds=round(seconds, 3),
        )
        return seconds

    def submit(
        self, fn: Callable[[worker.ShardTask], worker.ShardOutput], task: worker.ShardTask
    ) -> asyncio.Future[worker.ShardOutput]:
        self.progress[task.slot] = 0
        self.cancel[task.slot] = 0
        self.slot_pids[task.slot] = 0
        future = asyncio.get_running_loop().run_in_executor(self.executor, fn, task)
        # The coordinator may abandon a future (its generation killed); retrieve its exception
        # so that asyncio does not report it as never retrieved.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    async def dead_workers(self, *, wait: float = 1.0) -> dict[int, int | None]:
        """Pid and exit code of every worker process that has exited.

        The executor can report a broken pool a moment before the dead process can be
        reaped, so this waits up to ``wait`` seconds for at least one.
        """
        processes = self._all_processes()
        deadline = time.monotonic() + wait
        while True:
            dead = {pid: p.exitcode for pid, p in processes.items() if not p.is_alive()}
            if dead or time.monotonic() >= deadline:
                return dead
            await asyncio.sleep(0.01)

    async def dump_stack(self, pid: int, *, wait: float = 1.0) -> str:
        """Ask worker ``pid`` for every thread's Python stack (faulthandler) and return it."""
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

    async def kill(self, reason: str) -> None:
        """SIGKILL every worker, then release the executor. Safe to call twice."""
        if self.killed:
            return
        self.killed = True
        processes = self._all_processes()
        for process in processes.values():
            if process.is_alive():
                process.kill()
        await self._reap(processes, seconds=5.0)
        self.executor.shutdown(wait=False)
        log.info("pool_killed", generation=self.number, reason=reason, pids=sorted(processes))

    async def close(self, *, grace: float = 2.0) -> None:
        """Let idle workers exit; kill whatever is still alive after ``grace`` seconds."""
        if self.killed:
            return
        processes = self._all_processes()
        self.executor.shutdown(wait=False)
        if not await self._reap(processes, seconds=grace):
            await self.kill("close_timeout")
        self.killed = True
        # The executor's manager thread ends once its workers have; join it off the loop.
        await asyncio.to_thread(self.executor.shutdown, wait=True)

    def _all_processes(self) -> dict[int, Any]:
        # Before start() finishes, only the executor knows the processes it spawned so far.
        return {**self.processes, **(getattr(self.executor, "_processes", None) or {})}

    @staticmethod
    async def _reap(processes: dict[int, Any], *, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while any(p.is_alive() for p in processes.values()):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        for p in processes.values():
            p.join(timeout=0)
        return True


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
