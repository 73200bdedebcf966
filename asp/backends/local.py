"""The local backend: one spawn worker process per slot, each in its own executor.

:class:`LocalBackend` implements :class:`asp.backends.base.Backend` on this machine, on the
slots of :class:`~asp.backends.slots.SlotBackend`.

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
import platform
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import anyio
from torch import nn

from asp import progress
from asp.backends import tempdirs, worker
from asp.backends.base import SlotState, UnreadableResult, WorkerLost, remote_traceback, retrieve
from asp.backends.slots import SlotBackend, SlotWorker, process_ended
from asp.backends.weights import Publications, WeightStore
from asp.errors import AspError, ConfigError
from asp.util.checks import check_main_module, check_spawnable
from asp.util.interrupts import ctrl_c_held
from asp.util.log import log_settings

__all__ = ["LocalBackend", "WorkerProcess", "signal_name"]

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


class WorkerProcess(SlotWorker):
    """One slot's spawn process, inside a single-worker ``ProcessPoolExecutor``.

    It is spawned as it is made, by a ping submitted from the event loop's thread; the ping
    answers once the initializer has built the model.
    """

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
        with ctrl_c_held():  # the process is spawned here: deaf to Ctrl-C until initialized
            started = asyncio.get_running_loop().run_in_executor(self.executor, worker.ping)
        super().__init__(number, started)
        self.process = _executor_process(self.executor)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def node(self) -> str:
        return platform.node()

    async def start_error(self) -> str:
        code = await self.exit_code()
        return f"{self.started.exception()!r} (worker exit: {signal_name(code)})"

    def alive(self) -> bool:
        """True unless the process has ended (its sentinel is readable: no race with reaping)
        or is ending: a SIGKILLed process whose threads are still being torn down closes its
        sentinel some milliseconds after it turned zombie, and a shard sent meanwhile would be
        charged with its death."""
        if self.process is None or self.killed:
            return False
        if multiprocessing.connection.wait([self.process.sentinel], timeout=0):
            return False
        pid = self.process.pid
        return pid is not None and not process_ended(pid)

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

    async def kill(self) -> None:
        """SIGKILL the process and wait (up to 5 s) until it is reaped."""
        self.kill_now()
        if self.process is not None:
            await _wait_exit(self.process, seconds=5.0)

    async def close(self, *, grace: float) -> bool:
        """Let the idle process exit; kill it if it is still alive after ``grace`` seconds, or at
        once while it is still starting (it holds no shard: nothing to wait for).

        False when it had to be killed."""
        if self.killed:
            return True
        self.executor.shutdown(wait=False, cancel_futures=True)
        exited = self.process is None or (self.has_started and await _wait_exit(self.process, seconds=grace))
        if not exited:
            await self.kill()
        self.killed = True
        # The executor's manager thread ends once its worker has; join it off the loop.
        await asyncio.to_thread(self.executor.shutdown, wait=True)
        return exited


class LocalBackend(SlotBackend[WorkerProcess]):
    """The slots' worker processes on this machine: start, replace, run shards in, kill, close."""

    name = "local"
    start_errors = (BrokenProcessPool,)

    def __init__(
        self, *, workers: int, threads_per_worker: int, start_timeout: float, play_fn: Callable[..., Any]
    ) -> None:
        check_spawnable(play_fn, "play_fn")
        super().__init__(workers=workers, threads_per_worker=threads_per_worker, start_timeout=start_timeout)
        self.arrays = SlotArrays(workers)
        self._tmp: Path | None = None

    # -- life cycle ---------------------------------------------------------------------------

    async def _prepare(self) -> Publications:
        check_main_module()
        # Named for this process and locked while it lives: a later start removes it if this
        # process is killed before it can (asp.backends.tempdirs).
        self._tmp = tempdirs.owned_dir()
        return WeightStore(self._tmp / "weights")

    def _new_worker(self, slot: int, number: int, warm: tuple[type[nn.Module], Any] | None) -> WorkerProcess:
        assert self._tmp is not None, "start() first"
        self.arrays.reset(slot)
        return WorkerProcess(
            slot=slot,
            number=number,
            threads_per_worker=self.threads_per_worker,
            stack_dir=self._tmp,
            arrays=self.arrays,
            warm=warm,
        )

    def _start_help(self) -> str:
        return " (see the workers' stderr; the initializer builds the model, which may not fit in memory)"

    async def close(self, *, grace: float) -> None:
        for slot in range(self.workers):
            self.arrays.cancel[slot] = 1  # a shard still running stops at its next heartbeat

        async def close_one(slot: int, proc: WorkerProcess) -> None:
            busy = self.arrays.phase[slot] != progress.IDLE
            reason = "close_idle" if proc.has_started else "close_starting"
            if not await proc.close(grace=grace):
                if busy:  # a shard that would not stop
                    self._log_killed(slot, proc, "close_timeout")
                else:  # an idle or starting worker: nothing was lost, nothing to report
                    self.log.debug("worker_killed", slot=slot, worker=proc.number, pid=proc.pid, reason=reason)

        await asyncio.gather(*(close_one(slot, p) for slot, p in enumerate(self.slots) if p is not None))
        self._let_go()

    def _let_go(self) -> None:
        if self._weights is not None:
            self._weights.close()
        if self._tmp is not None:
            tempdirs.release(self._tmp)

    # -- shards -------------------------------------------------------------------------------

    async def idle_loss(self, slot: int) -> str | None:
        proc = self._worker(slot)
        if proc.alive():
            return None
        return signal_name(await proc.exit_code())

    def submit(
        self, slot: int, task: worker.ShardTask, offers: Sequence[tuple[int, int]] = ()
    ) -> asyncio.Future[worker.ShardOutput]:
        proc = self._worker(slot)
        try:
            payload = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise ConfigError(f"shard {task.shard}'s task (play_fn, cfg) cannot be pickled: {e!r}") from e
        self.arrays.reset(slot)
        for seq, (first_game, n_games) in enumerate(offers):  # in the cells before the worker can look
            self.offer(slot, seq, first_game, n_games)
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
        return await self._worker(slot).dump_stack()


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
