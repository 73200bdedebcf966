"""The shards running in the workers, one :class:`Flight` per busy slot, and how each one ends.

The dispatcher (:mod:`asp.selfplay.dispatch`) sends a free slot a task and hands it to
:class:`Flights`, which keeps its call's guarantees until the flight is over:

* settling: a finished flight's records are checked against the ids of the games it held
  and go to its call; offers it never took go back to its call's queue;
* retries: a flight whose run raised, lost its worker or sent an unreadable result has its
  shards queued again, at most ``retries`` times, then its call fails with
  :class:`~asp.errors.ShardFailed`; the other calls go on;
* deadlines: a worker whose progress counter stops moving for ``stall_timeout`` seconds is
  stalled: its Python stack is logged, it is killed and its shards run again; one that does
  not begin a shard within ``start_timeout`` is treated alike;
* cancellation: the flights of a call that ended are cancelled, and their workers killed
  after ``cancel_grace`` seconds if they do not stop;
* busy time: a flight counts from its sending to its end.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from asp import progress
from asp.backends.base import Backend, SlotState, UnreadableResult, WorkerLost, remote_traceback
from asp.errors import AspError, NotRetried, ShardCancelled, ShardFailed
from asp.selfplay.calls import Call, Shard, ShardResult, id_mismatch

__all__ = ["Flight", "Flights", "Limits"]


@dataclass
class Flight:
    """What one slot's worker runs for a call: one task of contiguous shards, plus the offers it took."""

    call: Call
    shards: list[Shard]
    """The shards the task was sent with (contiguous game ids)."""
    slot: int
    future: asyncio.Future[Any]
    pid: int | None
    dispatched: float
    cap: int
    """Games this flight may hold in all (offers stop there)."""
    offers: list[Shard] = field(default_factory=list)
    """Shards offered to it while it runs, in order; it took the first ``state.taken``."""
    state: SlotState = SlotState(progress.IDLE, 0, None)
    moved: float | None = None
    """When the counter last moved; None until the worker has started the shard."""
    taken_seen: int = 0
    """Offers it had taken at the last top-up (their rate sizes the reserve)."""
    cancel_by: float | None = None
    """Once cancelled: when its worker is killed if the shard has not stopped by itself."""

    @property
    def games(self) -> int:
        return sum(s.games for s in self.shards + self.offers)

    @property
    def lead(self) -> Shard:
        return self.shards[0]

    def played(self, taken: int) -> list[Shard]:
        """Its shards and the first ``taken`` offers: what its result holds, or what it lost."""
        return self.shards + self.offers[:taken]

    def describe(self) -> dict[str, Any]:
        return {"shard": self.lead.index, "shards": len(self.shards), "attempt": max(s.attempt for s in self.shards)}


@dataclass(frozen=True)
class Limits:
    """How often a shard runs again and how long its worker may take: the options of
    :class:`asp.SelfPlay` of the same names, checked there (see the module docstring)."""

    retries: int
    stall_timeout: float | None
    start_timeout: float
    cancel_grace: float


class Flights:
    """The flights in ``backend``'s slots, and their ends (see the module docstring)."""

    def __init__(self, backend: Backend, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self._by_slot: dict[int, Flight] = {}
        self._busy = 0.0

    def __contains__(self, slot: int) -> bool:
        return slot in self._by_slot

    def __iter__(self) -> Iterator[Flight]:
        return iter(list(self._by_slot.values()))

    def __len__(self) -> int:
        return len(self._by_slot)

    def slots(self) -> list[int]:
        return list(self._by_slot)

    @property
    def busy_seconds(self) -> float:
        """Seconds the workers have spent inside flights, up to now: ended ones and running ones."""
        now = time.monotonic()
        return self._busy + sum(now - flight.dispatched for flight in self._by_slot.values())

    def add(self, flight: Flight) -> None:
        self._by_slot[flight.slot] = flight
        flight.call.flights += 1

    def abandon(self) -> None:
        """Forget every flight (the dispatcher is closing; the backend stops the workers)."""
        for flight in list(self._by_slot.values()):
            self._end(flight)

    def _end(self, flight: Flight) -> None:
        """A flight is over (settled, or its worker is about to be killed): busy until now."""
        del self._by_slot[flight.slot]
        flight.call.flights -= 1
        self._busy += time.monotonic() - flight.dispatched

    # -- cancellation -------------------------------------------------------------------------

    def cancel_ended(self) -> None:
        """Ask the shards of every call that has ended to stop; their workers are killed if
        they have not stopped ``cancel_grace`` seconds later (:meth:`check_deadlines`)."""
        for flight in self._by_slot.values():
            if flight.call.ended and flight.cancel_by is None:
                flight.cancel_by = time.monotonic() + self.limits.cancel_grace
                self.backend.cancel(flight.slot)
                flight.call.log.info("shard_cancelled", **flight.describe(), pid=flight.pid)

    def kill_now(self, call: Call) -> None:
        """Kill the workers still running ``call``'s shards, without waiting: for ``finally``."""
        for flight in self._by_slot.values():
            if flight.call is call and not flight.future.done():
                self.backend.kill_now(flight.slot)

    # -- settling -----------------------------------------------------------------------------

    async def settle_finished(self) -> list[int]:
        """Settle every flight whose future is done; the slots whose worker returned a result.

        A flight that breaks its call's contract, or has no retry left, fails its call."""
        returned = []
        for flight in [f for f in self._by_slot.values() if f.future.done()]:
            self._end(flight)
            future = flight.future
            if not future.cancelled() and future.exception() is None:
                returned.append(flight.slot)
            try:
                await self._settle(flight)
            except Exception as exc:  # ShardFailed, or a result that breaks its call's contract
                flight.call.fail(exc)
        return returned

    async def _settle(self, flight: Flight) -> None:
        """A finished flight: its result to its call, or a retry (ShardFailed when none is left)."""
        call, future = flight.call, flight.future
        exc = None if future.cancelled() else future.exception()
        if call.ended:
            await self._settle_cancelled(flight, exc)
            return
        if exc is None and not future.cancelled():
            self._deliver(flight, future.result())
            return
        taken = await self._taken(flight)
        if isinstance(exc, UnreadableResult):
            self._retry(flight, taken, str(exc), "".join(traceback.format_exception(exc)))
        elif isinstance(exc, WorkerLost):
            call.log.warning(
                "worker_died",
                pid=exc.pid,
                exit=exc.exit,
                slot=flight.slot,
                **flight.describe(),
                started_shard=exc.started_shard,
                cause=exc.cause,
            )
            await self.backend.kill(flight.slot, "worker died")
            self._retry(flight, taken, exc.reason, exc.cause or exc.reason)
        else:
            assert exc is not None
            self._retry(flight, taken, f"play_fn raised {exc!r}", remote_traceback(exc), error=exc)

    def _deliver(self, flight: Flight, out: Any) -> None:
        """Check a flight's output against the ids of the games it played and give it to its call."""
        call = flight.call
        played = flight.played(out.offers_taken)
        call.queue.extendleft(reversed(flight.offers[out.offers_taken :]))  # offered, never taken
        wrong = id_mismatch((record.game_id for record in out.records), played)
        if wrong is not None:
            first, last = played[0].first_game, played[-1].first_game + played[-1].games - 1
            raise AspError(
                f"{call.what}: shard {flight.lead.index}: the play_fn's games do not match the ids of "
                f"the games it was given ({first}..{last}): {wrong}"
            )
        games = sum(s.games for s in played)
        call.log.info(
            "shard_done",
            **flight.describe(),
            offers_taken=out.offers_taken,
            pid=out.pid,
            games=games,
            seconds=round(out.seconds, 3),
            plies=out.stats.get("plies"),
        )
        call.deliver(
            ShardResult(
                **{f.name: getattr(out, f.name) for f in fields(out)},  # what the worker sent back
                shard=flight.lead.index,
                attempt=max(s.attempt for s in played),
                first_game=flight.lead.first_game,
                n_games=games,
                shards=tuple(sorted(s.index for s in played)),
            )
        )

    async def _settle_cancelled(self, flight: Flight, exc: BaseException | None) -> None:
        """A flight of a call that has ended: nothing of it is kept."""
        if isinstance(exc, WorkerLost):
            await self.backend.kill(flight.slot, "worker died")
        elif exc is not None and not isinstance(exc, ShardCancelled):
            flight.call.log.info("cancelled_shard_raised", shard=flight.lead.index, error=repr(exc))

    async def _taken(self, flight: Flight) -> int:
        """How many offers a flight that failed had taken (the last word of its worker)."""
        state = (await self.backend.states([flight.slot])).get(flight.slot)
        return max(flight.state.taken, state.taken if state is not None else 0)

    # -- deadlines ----------------------------------------------------------------------------

    async def check_deadlines(self, states: dict[int, SlotState]) -> None:
        """Kill the workers of stalled flights, of flights never started, and of cancelled ones past their grace."""
        now = time.monotonic()
        for flight in list(self._by_slot.values()):
            if flight.future.done():
                continue  # settled at the next turn of the loop
            if flight.cancel_by is not None:
                if now > flight.cancel_by:
                    self._end(flight)  # ended here: its kill must not be taken for a later worker's death
                    await self.backend.kill(flight.slot, "cancelled shard did not stop within the grace period")
                continue
            state = states.get(flight.slot, flight.state)  # no answer: the counter did not move
            if state.phase == progress.IDLE and flight.moved is None:
                if now - flight.dispatched > self.limits.start_timeout:
                    await self._give_up_on(flight, "not_started")
                continue
            if flight.pid is None:
                flight.pid = state.pid
            if state.phase == progress.RETURNING:
                flight.state = state
                continue  # pickling and sending a result is not a stall, however large it is
            if flight.moved is None or state.plies != flight.state.plies:
                flight.state, flight.moved = state, now
            elif self.limits.stall_timeout is not None and now - flight.moved > self.limits.stall_timeout:
                await self._give_up_on(flight, "stalled")

    async def _give_up_on(self, flight: Flight, overdue: str) -> None:
        """Kill the worker of a flight that stalled or never started, and retry its shards."""
        call, pid = flight.call, flight.pid
        self._end(flight)
        if overdue == "stalled":
            assert flight.moved is not None
            idle = time.monotonic() - flight.moved
            stack = await self.backend.stack(flight.slot)
            call.log.error(
                "worker_stalled",
                pid=pid,
                slot=flight.slot,
                **flight.describe(),
                seconds_without_progress=round(idle, 2),
                plies=flight.state.plies,
                stack=stack,
            )
            reason, details = f"worker {pid} stalled: no progress for {idle:.1f} s", stack
        else:
            waited = time.monotonic() - flight.dispatched
            call.log.error(
                "shard_not_started", pid=pid, slot=flight.slot, **flight.describe(), seconds=round(waited, 2)
            )
            reason = f"worker {pid} did not start the shard within start_timeout={self.limits.start_timeout} s"
            details = reason
        taken = await self._taken(flight)
        await self.backend.kill(flight.slot, reason)
        try:
            self._retry(flight, taken, reason, details)
        except ShardFailed as exc:
            call.fail(exc)

    # -- retries ------------------------------------------------------------------------------

    def _retry(self, flight: Flight, taken: int, reason: str, details: str, error: BaseException | None = None) -> None:
        """Queue a failed flight's shards again (one attempt more each), or raise ShardFailed:
        after its last retry, or at once for an ``error`` that is :class:`NotRetried`.

        Its shards and the offers it took count as attempted; offers it had not taken go back
        as they were."""
        call = flight.call
        lost = flight.played(taken)
        worst = max(lost, key=lambda s: s.attempt)
        if isinstance(error, NotRetried):  # the caller gets it, said as it is: no fault to report here
            call.log.info("shard_failed", shard=worst.index, attempts=worst.attempt + 1, reason=reason)
            raise ShardFailed(worst.index, worst.attempt + 1, reason, details, error)
        if worst.attempt >= self.limits.retries:
            call.log.error(
                "shard_failed", shard=worst.index, attempts=worst.attempt + 1, reason=reason, traceback=details
            )
            raise ShardFailed(worst.index, worst.attempt + 1, reason, details, error)
        call.log.warning(
            "shard_retried",
            shard=flight.lead.index,
            shards=[s.index for s in lost],
            attempt=worst.attempt,
            reason=reason,
            traceback=details,
        )
        for shard in lost:
            shard.attempt += 1
        call.figures.retries += 1
        call.queue.extendleft(reversed(lost + flight.offers[taken:]))
