"""The dispatcher: one loop that shares a backend's workers among every open call.

Each call (:class:`~asp.selfplay.calls.Call`) keeps its queue of shards here, in the parent. The loop
hands a free worker the next shards of the first call in dispatch order (the highest
priority, then the first come) that has any, so calls never wait for one another while a
worker is free, and a call made inside another (a ``play`` inside a ``stream``, in any task)
simply shares the workers. Each turn of the loop:

* replaces lost workers at once, so that they start while the others play;
* sends every free slot whose worker is ready the next shards of the first waiting call;
* settles the flights that finished, and checks the deadlines of the others
  (:mod:`asp.selfplay.running`: exactly once, retries, stalls, cancellation);
* offers: a worker that asks for more games (:func:`asp.more_games`) is offered the next
  shards of its call while no call ahead of it waits (how many: :mod:`asp.selfplay.offers`);
* ends the calls that have everything, and cancels the running shards of those whose caller left.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import structlog

from asp import progress
from asp.backends.base import Backend, SlotState, WorkerLost
from asp.backends.worker import ShardTask
from asp.errors import AspError, ConfigError
from asp.selfplay.calls import Call, Shard, take_batch
from asp.selfplay.offers import FlightCounts, plan_offers
from asp.selfplay.running import Flight, Flights, Limits
from asp.util.cleanup import finish

__all__ = ["Dispatcher"]

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
        call = Call(self._numbered, what, shards, target, refs, priority=priority, offers=offers, log=bound)
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
            if not call.ended and not call.queue and call.flights == 0:
                call.finish()
            if call.ended and call.flights == 0:
                self._calls.remove(call)
                call.drained.set()
        self._flights.cancel_ended()

    def _next_call(self) -> Call | None:
        return next((call for call in self._calls if call.queue and not call.ended), None)

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
            shards = take_batch(call.queue, call.target)
            lead = shards[0]
            games = sum(s.games for s in shards)
            cfg = lead.cfg if len(shards) == 1 else dataclasses.replace(lead.cfg, n_games=games)
            attempt = max(s.attempt for s in shards)
            task = ShardTask(self.play_fn, cfg, call.model_ref, call.opp_ref, lead.index, attempt)
            try:
                future = backend.submit(slot, task)
            except WorkerLost:  # its worker died while idle, and the backend noticed first
                call.queue.extendleft(reversed(shards))
                await self._lost_idle(slot, await backend.idle_loss(slot) or "unknown")
                continue
            except ConfigError as exc:  # the task does not pickle: the caller's mistake
                call.fail(exc)
                continue
            self._flights.add(Flight(call, shards, slot, future, backend.pid(slot), time.monotonic(), 4 * call.target))
            call.log.debug(
                "shard_dispatched",
                shard=lead.index,
                shards=len(shards),
                attempt=attempt,
                slot=slot,
                pid=backend.pid(slot),
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
