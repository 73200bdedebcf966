"""What every backend shares beneath the protocol: :class:`SlotWorker` and :class:`SlotBackend`.

A backend built on :class:`SlotBackend` keeps one :class:`SlotWorker` per slot and writes
only its mechanics: how a worker is made, how it runs a shard and reports on it, how it is
killed, and what the backend holds besides its workers. The base does the part of
:class:`~asp.backends.base.Backend` that is the same everywhere:

* slots: the worker of each slot (numbered from 1 in the order they are made, over every
  slot), which slots are vacant, which workers are ready and which are still starting;
* start: every slot's worker started at once, within ``start_timeout``;
* start failures: a worker whose start failed, or took longer than ``start_timeout``, is
  killed and its slot left vacant; a slot that fails :attr:`SlotBackend.MAX_START_FAILURES`
  times in a row is hopeless (:class:`~asp.errors.AspError`);
* warm-up: a new worker builds the first network published as ``"model"`` while it starts;
* publication: weights published off the event loop, once per change, and held while a call
  names them (:class:`~asp.backends.weights.Publications`);
* logging: one logger, ``asp.backends``, every event bound with ``backend=<name>``.

A worker subclass gives its ``pid``, its ``node``, and how to kill it (at once, or waiting
until it is gone); a backend subclass gives its ``name``, ``_prepare`` (what the workers
need before they start), ``_new_worker``, ``_let_go`` (what it holds besides its workers)
and the shard mechanics of the protocol: ``submit``, ``states``, ``offer``, ``cancel``,
``stack``, ``idle_loss`` and ``close``.
"""

from __future__ import annotations

import abc
import asyncio
import os
import time
from typing import Any, ClassVar, Generic, TypeVar

import structlog
from torch import nn

from asp.backends.base import retrieve
from asp.backends.weights import Publications, WeightRef
from asp.errors import AspError
from asp.util.checks import check_rebuildable

__all__ = ["SlotBackend", "SlotWorker", "process_ended"]

_log = structlog.get_logger("asp.backends")


class SlotWorker(abc.ABC):
    """One slot's worker, as its backend keeps it: its number, its start, whether it was killed."""

    def __init__(self, number: int, started: asyncio.Future[Any]) -> None:
        self.number = number
        """Workers are numbered in the order they were made, from 1, over every slot."""
        self.started = started
        """Answers once the worker has built its model, and fails if it cannot start."""
        self.start_began = time.monotonic()
        self.announced = False
        """Its start has been logged (``worker_started``, or ``pool_started`` for the first ones)."""
        self.killed = False
        started.add_done_callback(retrieve)

    @property
    def has_started(self) -> bool:
        """True once :attr:`started` has answered (the worker may have been killed since)."""
        fut = self.started
        return fut.done() and not fut.cancelled() and fut.exception() is None

    @property
    def ready(self) -> bool:
        """True when the worker has started and may be given a shard."""
        return self.has_started and not self.killed

    @property
    @abc.abstractmethod
    def pid(self) -> int | None:
        """Its process id, once known."""

    @property
    @abc.abstractmethod
    def node(self) -> str:
        """The machine it runs on, in the backend's words (a host name, a Ray node id)."""

    async def start_error(self) -> str:
        """Why its start failed, once :attr:`started` has failed."""
        return repr(self.started.exception())

    @abc.abstractmethod
    def kill_now(self) -> None:
        """Kill it without waiting (safe in any ``finally``); sets :attr:`killed`."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Kill it and wait until it is gone; sets :attr:`killed`."""


W = TypeVar("W", bound=SlotWorker)


class SlotBackend(abc.ABC, Generic[W]):
    """The slots of a backend, their starts and its publications (see the module docstring).

    Its public methods are those of :class:`~asp.backends.base.Backend`, which says what each
    promises.
    """

    name: str
    """``"local"``, ``"ray"``: what logs and errors call this backend."""
    worker_kind: ClassVar[str] = "worker"
    """What a worker is called in errors: ``"worker"``, ``"Ray actor"``."""
    rebuilds_importable_networks: ClassVar[bool] = True
    """Workers rebuild a network from its importable class (else the class is shipped by value)."""
    start_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """What a failed start raises, besides the ``TimeoutError`` of ``start_timeout``."""
    MAX_START_FAILURES: ClassVar[int] = 3
    """Failed starts in a row after which a slot is hopeless."""

    def __init__(self, *, workers: int, threads_per_worker: int, start_timeout: float) -> None:
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.start_timeout = start_timeout
        self.slots: list[W | None] = [None] * workers
        """The worker of each slot; None while vacant."""
        self._weights: Publications | None = None
        self._numbers = 0
        self._failed_starts = [0] * workers

    @property
    def log(self) -> Any:
        """The backends' logger, bound with ``backend=<name>`` at each use (the logging
        configuration may change while a backend lives)."""
        return _log.bind(backend=self.name)

    # -- what a backend adds ------------------------------------------------------------------

    @abc.abstractmethod
    async def _prepare(self) -> Publications:
        """Set up what the workers need before they start; the publications they will read."""

    @abc.abstractmethod
    def _new_worker(self, slot: int, number: int, warm: tuple[type[nn.Module], Any] | None) -> W:
        """Make the slot's new worker and begin starting it; it builds ``warm`` as it starts."""

    def _start_help(self) -> str:
        """What to add to a start error, to help find why (" (see the workers' stderr)")."""
        return ""

    def _let_go(self) -> None:
        """Release what the backend holds besides its workers, without waiting: for ``finally``."""

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start a worker in every slot and wait until each has built its model.

        :raises AspError: when the workers cannot start within ``start_timeout``.
        """
        began = time.perf_counter()
        self._weights = await self._prepare()
        workers = [self._spawn(slot) for slot in range(self.workers)]
        failed: tuple[type[BaseException], ...] = (TimeoutError, *self.start_errors)
        try:
            async with asyncio.timeout(self.start_timeout):
                await asyncio.gather(*(w.started for w in workers))
        except failed as e:
            raise AspError(f"the {self.worker_kind}s could not start: {e!r}{self._start_help()}") from e
        for w in workers:
            w.announced = True
        self.log.info(
            "pool_started",
            workers=self.workers,
            pids=[w.pid for w in workers],
            nodes=sorted({w.node for w in workers}),
            seconds=round(time.perf_counter() - began, 3),
        )

    def kill_now(self, slot: int | None = None) -> None:
        """Kill the slot's worker (every worker, and let go of the rest, for None) without waiting."""
        for i, w in enumerate(self.slots):
            if w is not None and slot in (None, i):
                w.kill_now()
        if slot is None:
            self._let_go()

    async def kill(self, slot: int, reason: str) -> None:
        """Kill the slot's worker now and wait until it is gone; the slot becomes vacant."""
        w = self._worker(slot)
        already = w.killed
        await w.kill()
        if not already:
            self._log_killed(slot, w, reason)

    def _log_killed(self, slot: int, w: W, reason: str) -> None:
        self.log.info("worker_killed", slot=slot, worker=w.number, pid=w.pid, reason=reason)

    # -- publication --------------------------------------------------------------------------

    def check_network(self, net: nn.Module, role: str) -> None:
        check_rebuildable(net, role, importable=self.rebuilds_importable_networks)

    async def publish(self, role: str, net: nn.Module, version: int) -> WeightRef:
        assert self._weights is not None, "start() first"
        # Saving (or putting) and comparing with the last publication take long for a large
        # model: off the event loop, so that shards of other work are collected meanwhile.
        ref: WeightRef = await asyncio.to_thread(self._weights.publish, role, net, version=version, hold=True)
        return ref

    def release(self, ref: WeightRef) -> None:
        if self._weights is not None:
            self._weights.release(ref)

    # -- slots --------------------------------------------------------------------------------

    def pid(self, slot: int) -> int | None:
        w = self.slots[slot]
        return w.pid if w is not None and not w.killed else None

    def vacant(self) -> list[int]:
        return [slot for slot, w in enumerate(self.slots) if w is None or w.killed]

    def replace(self, slot: int) -> None:
        self._spawn(slot)

    def _spawn(self, slot: int) -> W:
        self._numbers += 1
        warm = self._weights.first_model if self._weights is not None else None
        w = self._new_worker(slot, self._numbers, warm)
        self.slots[slot] = w
        return w

    def ready(self, slot: int) -> bool:
        w = self.slots[slot]
        return w is not None and w.ready

    def starting(self) -> list[asyncio.Future[Any]]:
        return [w.started for w in self.slots if w is not None and not w.killed and not w.started.done()]

    async def check_starts(self) -> None:
        """Log workers that started; kill those that failed or took longer than ``start_timeout``.

        :raises AspError: when one slot failed to start :attr:`MAX_START_FAILURES` times in a row.
        """
        for slot, w in enumerate(self.slots):
            if w is None or w.killed:
                continue
            if w.ready:
                if not w.announced:
                    w.announced = True
                    self._failed_starts[slot] = 0
                    seconds = round(time.monotonic() - w.start_began, 3)
                    self.log.info("worker_started", slot=slot, worker=w.number, pid=w.pid, node=w.node, seconds=seconds)
                continue
            if w.started.done():
                reason = await w.start_error()
            elif time.monotonic() - w.start_began > self.start_timeout:
                reason = f"not started within start_timeout={self.start_timeout} s"
            else:
                continue
            await self.kill(slot, "start_failed")
            self.slots[slot] = None
            self._start_failed(slot, w, reason)

    def _start_failed(self, slot: int, w: W, reason: str) -> None:
        self._failed_starts[slot] += 1
        failures = self._failed_starts[slot]
        self.log.warning("worker_start_failed", slot=slot, worker=w.number, pid=w.pid, reason=reason, failures=failures)
        if failures >= self.MAX_START_FAILURES:
            raise AspError(
                f"the {self.worker_kind} of slot {slot} failed to start {failures} times in a row; "
                f"last: {reason}{self._start_help()}"
            )

    def _worker(self, slot: int) -> W:
        w = self.slots[slot]
        assert w is not None, f"slot {slot} has no worker"
        return w


def process_ended(pid: int) -> bool:
    """True once process ``pid`` of this machine has ended: gone, or a zombie (Linux's /proc;
    elsewhere, whether a signal can still reach it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True
    except (OSError, IndexError):  # no /proc (not Linux)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
