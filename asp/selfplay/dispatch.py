"""The dispatcher: one loop that shares a backend's workers among every open call, and keeps
each shard it sends until it ends.

Each call (:class:`~asp.selfplay.calls.Call`) keeps its queue of shards here, in the parent. The loop
hands a free worker the next shards of the first call in dispatch order (the highest
priority, then the first come) that has any, so calls never wait for one another while a
worker is free, and a call made inside another (a ``play`` inside a ``stream``, in any task)
simply shares the workers. Each turn of the loop:

* replaces lost workers at once, so that they start while the others play;
* sends every free slot whose worker is ready the next shards of the first waiting call: the
  batch dealt to it (:func:`~asp.selfplay.calls.deal`) or the next contiguous shards;
* settles the flights that finished, and checks the deadlines of the others (below);
* offers: a worker that asks for more games (:func:`asp.more_games`) is offered the next
  shards of its call while no call ahead of it waits (how many: :mod:`asp.selfplay.offers`);
* ends the calls that have everything, and cancels the running shards of those whose caller left.

What a worker runs for a call is a :class:`Flight` (one per busy slot), and :class:`Flights`
keeps its call's guarantees until the flight is over:

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
import dataclasses
import time
import traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import structlog

from asp import progress
from asp.backends.base import Backend, SlotState, UnreadableResult, WorkerLost, remote_traceback
from asp.backends.worker import ShardTask
from asp.errors import AspError, ConfigError, NotRetried, ShardCancelled, ShardFailed
from asp.selfplay.calls import Call, Shard, ShardResult, id_mismatch, take_batch
from asp.selfplay.offers import FlightCounts, plan_offers
from asp.util.cleanup import finish

__all__ = ["Dispatcher", "Flight", "Flights", "Limits"]

log = structlog.get_logger("asp.selfplay")

_TICK = 0.1  # seconds between looks at progress counters while shards run
_MAX_IDLE_DEATHS = 3  # deaths of one slot's worker in a row, with no shard, before giving up


class Dispatcher:
    """Runs every open call's shards on ``backend``'s workers (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        *,
        play_fn: Any,
        limits: Limits,
    ) -> None:
        self.backend = backend
        self.workers = backend.workers
        self.play_fn = play_fn
        self._calls: list[Call] = []
        self._flights = Flights(backend, limits)
        self._idle_deaths = [0] * self.workers
        self._numbered = 0
        self._poke: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    # -- what the SelfPlay front asks ---------------------------------------------------------

    @property
    def busy_seconds(self) -> float:
        """Seconds the workers have spent inside shards, up to now (see :attr:`SelfPlay.busy_seconds`)."""
        return self._flights.busy_seconds

    def open(
        self,
        what: str,
        shards: list[Shard],
        target: int,
        refs: tuple[Any, Any],
        *,
        priority: int,
        offers: bool,
        log: Any,
    ) -> Call:
        """Register a new call; its shards are dispatched from the next turn of the loop. With
        ``offers``, its running shards are offered its next shards as they ask for more."""
        self._numbered += 1
        bound = log.bind(call=self._numbered)
        call = Call(
            self._numbered,
            what,
            shards,
            target,
            refs,
            workers=self.workers,
            priority=priority,
            offers=offers,
            log=bound,
        )
        self._calls.append(call)
        self._calls.sort(key=lambda c: c.order)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="asp-dispatch")
        self._wake()
        return call

    async def leave(self, call: Call) -> None:
        """The caller of ``call`` is done with it: cancel its running shards and wait until they stop.

        Completes however often the task is cancelled meanwhile; if even that is cut short (the
        event loop shutting down), the workers still running its shards are killed at once.
        """
        call.leave()
        self._wake()
        try:
            await finish(call.drained.wait())
        finally:
            if not call.drained.is_set():
                self._flights.kill_now(call)

    async def close(self, error: BaseException) -> None:
        """Stop the loop; every open call ends with ``error`` (its workers are the backend's to stop)."""
        for call in self._calls:
            call.fail(error)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
        self._flights.abandon()
        for call in self._calls:
            call.drained.set()
        self._calls.clear()

    # -- the loop -----------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._poke is not None and not self._poke.done():
            self._poke.set_result(None)

    async def _run(self) -> None:
        looked = 0.0
        try:
            while True:
                self._poke = asyncio.get_running_loop().create_future()
                if not self._calls and not self._flights:
                    await self._poke
                    continue
                try:
                    looked = await self._turn(looked)
                except Exception as exc:
                    self._fail_all(exc)
                self._end_calls()
        finally:  # no call may wait for a loop that has stopped (close() ended them already)
            for call in self._calls:
                call.fail(AspError("the dispatcher stopped"))

    def _fail_all(self, error: Exception) -> None:
        """The workers' failure, not one call's (a slot that cannot start): every open call ends with it."""
        log.error("dispatch_failed", error=repr(error), calls=len(self._calls))
        for call in self._calls:
            call.fail(error)

    async def _turn(self, looked: float) -> float:
        self._replace_lost()
        await self._dispatch()
        waits: list[asyncio.Future[Any]] = [f.future for f in self._flights]
        waits += self.backend.starting()
        assert self._poke is not None
        waits.append(self._poke)
        await asyncio.wait(waits, timeout=_TICK, return_when=asyncio.FIRST_COMPLETED)
        try:
            await self.backend.check_starts()
        except Exception as exc:  # the running shards are still settled, and cancelled ones killed
            self._fail_all(exc)
        for slot in await self._flights.settle_finished():
            self._idle_deaths[slot] = 0
        if time.monotonic() - looked >= _TICK:  # deadlines need no closer look than this
            looked = time.monotonic()
            states = await self.backend.states(self._flights.slots())
            await self._flights.check_deadlines(states)
            self._offer(states)
        return looked

    def _end_calls(self) -> None:
        """Finish calls that have everything, cancel the shards of calls that ended early, and
        let go of ended calls that have no shard running."""
        for call in list(self._calls):
            if not call.ended and not call.waiting and call.flights == 0:
                call.finish()
            if call.ended and call.flights == 0:
                self._calls.remove(call)
                call.drained.set()
        self._flights.cancel_ended()

    def _next_call(self) -> Call | None:
        return next((call for call in self._calls if call.waiting and not call.ended), None)

    async def _dispatch(self) -> None:
        """Send every free slot whose worker is ready the next shards of the first call that has some."""
        backend = self.backend
        for slot in range(self.workers):
            call = self._next_call()
            if call is None:
                return
            if slot in self._flights or not backend.ready(slot):
                continue  # busy, or its worker is still starting
            loss = await backend.idle_loss(slot)
            if loss is not None:
                await self._lost_idle(slot, loss)
                continue
            batch = call.dealt.popleft() if call.dealt else take_batch(call.queue, call.target)
            shards = take_batch(deque(batch), call.target)  # the task: its contiguous start
            offered = batch[len(shards) :]  # the rest of a dealt batch: offered before it starts
            lead = shards[0]
            games = sum(s.games for s in shards)
            cfg = lead.cfg if len(shards) == 1 else dataclasses.replace(lead.cfg, n_games=games)
            attempt = max(s.attempt for s in batch)
            task = ShardTask(self.play_fn, cfg, call.model_ref, call.opp_ref, lead.index, attempt)
            try:
                future = backend.submit(slot, task, [(s.first_game, s.games) for s in offered])
            except WorkerLost:  # its worker died while idle, and the backend noticed first
                call.requeue(batch)
                await self._lost_idle(slot, await backend.idle_loss(slot) or "unknown")
                continue
            except ConfigError as exc:  # the task does not pickle: the caller's mistake
                call.fail(exc)
                continue
            pid, now = backend.pid(slot), time.monotonic()
            self._flights.add(Flight(call, shards, slot, future, pid, now, 4 * call.target, offers=offered))
            call.log.debug(
                "shard_dispatched",
                shard=lead.index,
                shards=len(shards),
                offered=len(offered),
                attempt=attempt,
                slot=slot,
                pid=pid,
                games=games,
                first_game=lead.first_game,
            )

    def _offer(self, states: dict[int, SlotState]) -> None:
        """Keep a reserve of offered shards at every running worker of the first waiting call
        that takes offers, as :func:`~asp.selfplay.offers.plan_offers` sizes it.

        Only the first call in dispatch order that has shards waiting is offered, so no call
        ahead waits for offers to a call behind it.
        """
        call = self._next_call()
        if call is None or not call.offers:
            return
        flights = [f for f in self._flights if f.call is call and f.slot in states and f.cancel_by is None]
        counts = [_counts(f, states[f.slot]) for f in flights]
        plan = plan_offers(counts, [s.games for s in call.queue], workers=self.workers)
        for flight, top_up in zip(flights, plan, strict=True):
            flight.taken_seen = top_up.taken_seen
            for _ in range(top_up.shards):
                shard = call.queue.popleft()
                self.backend.offer(flight.slot, len(flight.offers), shard.first_game, shard.games)
                flight.offers.append(shard)

    def _replace_lost(self) -> None:
        """Start a new worker in every slot whose worker is gone: now, not when a shard needs the
        slot, so that it starts while the others play."""
        for slot in self.backend.vacant():
            self.backend.replace(slot)
            for call in self._calls:
                if not call.ended:
                    call.figures.respawns += 1
            log.info("worker_respawning", slot=slot, pid=self.backend.pid(slot))

    async def _lost_idle(self, slot: int, exit: str) -> None:
        """A worker died with no shard: replace it, and give up if that keeps happening."""
        self._idle_deaths[slot] += 1
        deaths = self._idle_deaths[slot]
        log.warning("worker_died", pid=self.backend.pid(slot), exit=exit, slot=slot, shard=None, idle=True)
        await self.backend.kill(slot, "died while idle")
        if deaths >= _MAX_IDLE_DEATHS:
            raise AspError(
                f"the worker of slot {slot} died {deaths} times in a row without a shard "
                f"(last: {exit}); see the workers' stderr"
            )


def _counts(flight: Flight, state: SlotState) -> FlightCounts:
    """``flight`` and its worker's last counters, as plain numbers for :func:`~asp.selfplay.offers.plan_offers`."""
    return FlightCounts(
        running=state.phase == progress.RUNNING and not flight.future.done(),
        asked=state.asked,
        taken=state.taken,
        taken_seen=flight.taken_seen,
        offered=len(flight.offers),
        untaken_games=sum(s.games for s in flight.offers[state.taken :]),
        games=flight.games,
        cap=flight.cap,
    )


# The shards running in the workers: one Flight per busy slot, kept by Flights until it ends.


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
    """Shards offered to it, in order (the rest of a dealt batch before it starts, then more
    while it runs); it took the first ``state.taken``."""
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
        call.requeue(flight.offers[out.offers_taken :])  # offered, never taken
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
        call.requeue(lost + flight.offers[taken:])
