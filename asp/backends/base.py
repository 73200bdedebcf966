"""The seam between SelfPlay's policy and the machinery that runs shards: :class:`Backend`.

:class:`~asp.SelfPlay` plans shards, queues them, keeps deadlines, retries and de-duplicates;
a backend owns the workers. A backend has a fixed number of *slots*, each the place of one
worker and of at most one shard in flight. What a backend must do, and nothing more:

* start a worker in every slot, tell when each is ready, replace one that is lost;
* publish weights once per change (:class:`~asp.backends.weights.Publications`);
* run a :class:`~asp.backends.worker.ShardTask` in a slot and answer with its
  :class:`~asp.backends.worker.ShardOutput`, the exception ``play_fn`` raised, or :class:`WorkerLost`;
* while a shard runs: its progress (:class:`SlotState`), offers of more games to it, a
  cooperative cancel, and its worker's Python stack for a stall report;
* kill one slot's worker (it costs that slot's shard only), and close them all.

Two backends implement it: :mod:`asp.backends.local` (spawn processes on this machine) and
:mod:`asp.backends.ray_backend` (Ray actors, any number of machines). Both are built on
:class:`asp.backends.slots.SlotBackend`, which does what every backend does the same way
(slots, starts and start failures, warm-up, publication, logging), so that a backend writes
only its mechanics. The contract tests in ``tests/test_backends.py`` run against both.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from torch import nn

from asp.backends.weights import WeightRef
from asp.backends.worker import ShardOutput, ShardTask

__all__ = ["Backend", "SlotState", "UnreadableResult", "WorkerLost", "remote_traceback", "retrieve"]


@dataclass(frozen=True)
class SlotState:
    """What a slot's worker last said about the shard it runs."""

    phase: int
    """:data:`asp.progress.IDLE` (not started), ``RUNNING`` (the stall clock applies) or
    ``RETURNING`` (sending its result back: never a stall)."""
    plies: int
    """Progress counter: plies reported by :func:`asp.heartbeat` since the shard began."""
    pid: int | None
    """Process id of the worker that runs the shard, once it has begun it."""
    taken: int = 0
    """Offers of more games (:meth:`Backend.offer`) the shard has taken so far."""
    asked: int = 0
    """Times the shard asked for more games (:func:`asp.more_games`) and none was on offer."""


class WorkerLost(Exception):
    """A slot's worker ended, or could no longer be reached, before it returned the shard."""

    def __init__(self, reason: str, *, pid: int | None, exit: str, started_shard: bool, cause: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pid = pid
        self.exit = exit
        """How it ended: ``"SIGKILL"``, ``"exit 1"``, or the backend's word for it."""
        self.started_shard = started_shard
        self.cause = cause
        """The backend's traceback or message about the loss, when it has one."""


class UnreadableResult(Exception):
    """The coordinator could not read (unpickle) a shard's result: an error of that shard."""


class Backend(Protocol):
    """The mechanics of running shards in ``workers`` slots; see the module docstring."""

    workers: int

    async def start(self) -> None:
        """Start a worker in every slot and wait until each has built its model.

        :raises AspError: when the workers cannot start.
        """

    def check_network(self, net: nn.Module, role: str) -> None:
        """Refuse up front (ConfigError) a network the workers could never rebuild."""

    async def publish(self, role: str, net: nn.Module, version: int) -> WeightRef:
        """Make ``net``'s weights available to workers, once per change, and hold them until
        :meth:`release`: a publication that a newer one of its role replaces stays readable
        while a call that named it is open."""

    def release(self, ref: WeightRef) -> None:
        """Let go of one hold that :meth:`publish` took on ``ref``."""

    def pid(self, slot: int) -> int | None:
        """The process id of the slot's worker, when it runs on this machine and has started."""

    def vacant(self) -> list[int]:
        """Slots without a worker (lost or killed): :meth:`replace` starts one."""

    def replace(self, slot: int) -> None:
        """Begin starting a new worker in ``slot``; it is ready when :meth:`ready` says so."""

    def ready(self, slot: int) -> bool:
        """True when the slot's worker has started and may be given a shard."""

    def starting(self) -> list[asyncio.Future[Any]]:
        """Futures of workers still starting: SelfPlay wakes up when one is done."""

    async def check_starts(self) -> None:
        """Log workers that started; kill those that failed or took longer than ``start_timeout``.

        :raises AspError: when one slot failed to start too often in a row.
        """

    async def idle_loss(self, slot: int) -> str | None:
        """None while the slot's worker, with no shard, is alive; else how it ended (``"SIGKILL"``)."""

    def submit(self, slot: int, task: ShardTask, offers: Sequence[tuple[int, int]] = ()) -> asyncio.Future[ShardOutput]:
        """Run ``task`` in the slot's worker; the future fails with :class:`WorkerLost` if the
        worker is lost, or with what ``play_fn`` raised. ``offers`` (``(first_game, n_games)``
        each) are its offers 0, 1... made before it starts (see :meth:`offer`).

        :raises ConfigError: when the task cannot be sent (it does not pickle).
        :raises WorkerLost: when the slot's worker is found lost before the task is sent.
        """

    def offer(self, slot: int, seq: int, first_game: int, n_games: int) -> None:
        """Offer the slot's running shard games ``first_game ..`` as its offer number ``seq``.

        Offers are numbered from 0 within each shard, made in order, and at most
        :data:`asp.progress.OFFER_RING` of them wait untaken. The worker takes them in order
        (:func:`asp.more_games`); the shard's output says how many it took."""

    async def states(self, slots: list[int]) -> dict[int, SlotState]:
        """The progress of each slot's shard (a slot that cannot answer is left out)."""

    def cancel(self, slot: int) -> None:
        """Ask the slot's shard to stop: its next :func:`asp.heartbeat` raises ShardCancelled."""

    async def stack(self, slot: int) -> str:
        """Every thread's Python stack in the slot's worker, for a stall report."""

    async def kill(self, slot: int, reason: str) -> None:
        """Kill the slot's worker now and wait until it is gone; the slot becomes vacant."""

    def kill_now(self, slot: int | None = None) -> None:
        """Kill the slot's worker (every worker for None) without waiting: for ``finally``."""

    async def close(self, *, grace: float) -> None:
        """Stop every worker: each running shard is cancelled and killed after ``grace`` s."""


def remote_traceback(exc: BaseException) -> str:
    """The traceback to report for a shard's exception: the worker's, where it came with one."""
    cause = exc.__cause__
    if cause is not None and type(cause).__name__ == "_RemoteTraceback":  # concurrent.futures' carrier
        return str(cause).strip()
    return "".join(traceback.format_exception(exc)).strip()


def retrieve(fut: asyncio.Future[Any]) -> None:
    """Done-callback for a future that may be abandoned (its worker killed): retrieve its
    exception, so that asyncio does not report it as never retrieved."""
    if not fut.cancelled():
        fut.exception()
