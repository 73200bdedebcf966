"""SelfPlay: the async orchestrator. Shard planning, dispatch, deadlines, retries, de-duplication.

>>> import asyncio
>>> from asp.tinychess import PlayConfig, TinyChess
>>> async def main():
...     async with SelfPlay(workers=1) as selfplay:
...         records, stats = await selfplay.play(TinyChess(), None, PlayConfig(n_games=4, max_plies=8))
...     return [r.game_id for r in records], stats["shards"]
>>> asyncio.run(main())
([0, 1, 2, 3], 4)

How it works (see DESIGN.md, "Facts about process pools"):

* Shards wait in a queue here, in the parent. Shards are handed to a worker only when its
  slot is free, one slot per worker, so nothing that has not started waits in a backend,
  and cancelling means cancelling running shards only.
* Balancing: by default shards are small (:func:`default_shard_games`) and a free worker is
  sent several contiguous ones at once, a full play batch (at most its share of the call).
  While it plays, the worker asks for more as its games end (:func:`asp.more_games`), and
  the coordinator keeps a small reserve of shards on offer to it, so a worker whose games
  are short takes on more and no batch empties while games wait. A result holds the shards
  the task was sent plus the offers it took; offers it did not take go back to the queue.
  With an explicit ``shard_games``, each task is one shard and nothing is offered.
* Workers belong to a backend (:mod:`asp.backends.base`): spawn processes on this machine
  (``backend="local"``, :mod:`asp.backends.local`) or Ray actors (``backend="ray"``,
  :mod:`asp.backends.ray_backend`). SelfPlay holds the policy only and knows the backend by
  its protocol. A worker that dies or stalls costs its own shard, which runs again, and its
  own worker, which is replaced; the other workers keep playing.
* Weights are published once per version (a file, or Ray's object store); every shard names
  the publication it must use, and a worker reloads when its copy differs.
* Every game has an id. Execution is at-least-once (a shard can run again after a crash),
  results are exactly-once: a shard's result is taken once, and ``play`` keeps one record
  per game id.
* Deadlines live here. Workers count plies in shared memory; a counter that stops moving for
  ``stall_timeout`` seconds marks its worker stalled: its Python stack is logged, the worker
  is killed and replaced, and its shard runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import math
import time
import traceback
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from torch import nn

from asp import backends, progress
from asp.backends.base import SlotState, UnreadableResult, WorkerLost, remote_traceback
from asp.checks import check_cfg, positive_int, positive_seconds
from asp.cores import available_cores
from asp.errors import AspError, ClosedError, ConfigError, ReentrancyError, ShardCancelled, ShardFailed
from asp.log import quiet_unless_configured
from asp.shield import finish
from asp.weights import WeightRef
from asp.worker import ShardOutput, ShardTask, check_playable, play_cfg

__all__ = ["PlayFn", "SelfPlay", "ShardResult", "default_shard_games"]

log = structlog.get_logger("asp.selfplay")

PlayFn = Callable[[nn.Module, nn.Module | None, Any], tuple[list[Any], dict[str, Any]]]
"""``play_fn(model, opp, cfg) -> (records, stats)``: a module-level function. ``cfg`` is a
dataclass with at least ``n_games``, ``seed``, ``first_game`` and ``model_version``; each
record has a ``game_id``."""

_TICK = 0.1  # seconds between looks at progress counters while shards run
_WAIT_WARNING = 30.0  # seconds a call waits for another call before it says so in the log
_MAX_IDLE_DEATHS = 3  # deaths of one slot's worker in a row, with no shard, before giving up


@dataclass(frozen=True)
class ShardResult:
    """What one worker played in one go (a shard, or several), as :meth:`SelfPlay.stream` yields it."""

    records: list[Any]
    """The shard's game records, as ``play_fn`` returned them."""
    stats: dict[str, Any]
    """The shard's stats, as ``play_fn`` returned them."""
    shard: int
    """Index of its first shard within its call (0-based)."""
    attempt: int
    """Which attempt produced it: 0 for the first run, 1 for the first retry... (the highest of
    its shards)."""
    pid: int
    """Process id of the worker that played it."""
    seconds: float
    """Seconds the worker spent on it."""
    first_game: int
    """Id of the first game of its first shard."""
    n_games: int
    """Games in all its shards."""
    node: str
    """The machine that played it: its host name (local backend) or Ray node id."""
    shards: tuple[int, ...]
    """Every shard whose games it holds: with the default ``shard_games`` a worker plays several
    at once in one batch (see :class:`SelfPlay`, "balancing"); else just ``(shard,)``."""


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


@dataclass
class _Shard:
    index: int
    cfg: Any
    attempt: int = 0


@dataclass
class _Flight:
    """What one slot's worker runs: one task of contiguous shards, plus the offers it took."""

    shards: list[_Shard]
    """The shards the task was sent with (contiguous game ids)."""
    slot: int
    future: asyncio.Future[ShardOutput]
    pid: int | None
    dispatched: float
    cap: int
    """Games this flight may hold in all (offers stop there)."""
    offers: list[_Shard] = field(default_factory=list)
    """Shards offered to it while it runs, in order; it took the first ``state.taken``."""
    state: SlotState = SlotState(progress.IDLE, 0, None)
    moved: float | None = None
    """When the counter last moved; None until the worker has started the shard."""
    taken_seen: int = 0
    """Offers it had taken at the last top-up (their rate sizes the reserve)."""

    @property
    def games(self) -> int:
        return sum(int(s.cfg.n_games) for s in self.shards + self.offers)

    @property
    def lead(self) -> _Shard:
        return self.shards[0]

    def played(self, taken: int) -> list[_Shard]:
        """Its shards and the first ``taken`` offers: what its result holds, or what it lost."""
        return self.shards + self.offers[:taken]

    def describe(self) -> dict[str, Any]:
        return {"shard": self.lead.index, "shards": len(self.shards), "attempt": max(s.attempt for s in self.shards)}


@dataclass
class _CallFigures:
    shards: int = 0
    retries: int = 0
    respawns: int = 0
    started: float = field(default_factory=time.perf_counter)


def _merge_stats(shard_stats: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for stats in shard_stats:
        for key, value in stats.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
    return merged


class SelfPlay:
    """Plays games in worker processes (local spawn processes or Ray actors), behind an async API.

    Use it as ``async with SelfPlay(...) as selfplay:``. Calls on one SelfPlay run one at a
    time: a call from another task waits for the running one (and says so in the log every
    30 s); a call from the task that has a stream of this SelfPlay open raises
    :class:`~asp.errors.ReentrancyError` at once, as it could never start. The workers and the
    published weights live from entering to leaving the ``async with``.
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        threads_per_worker: int = 1,
        play_fn: PlayFn | None = None,
        shard_games: int | None = None,
        stall_timeout: float | None = 60.0,
        retries: int = 2,
        cancel_grace: float = 1.0,
        start_timeout: float = 120.0,
        summarise: Callable[[list[Any]], dict[str, Any]] | None = None,
        backend: str = "local",
        address: str | None = None,
    ) -> None:
        """
        :param workers: worker processes (default: usable cores // threads_per_worker, at least 1;
            usable cores follow the CPU affinity and a cgroup CPU quota).
        :param threads_per_worker: torch/OpenMP threads in each worker (1 to 256).
        :param play_fn: plays one shard (default: the cfg's own ``play(model, opp)`` method, as
            :class:`asp.tinychess.PlayConfig` has; see :func:`asp.worker.play_cfg`).
        :param shard_games: games per shard (default: :func:`default_shard_games`).
        :param stall_timeout: seconds without a progress report (:func:`asp.heartbeat`) after
            which a worker counts as stalled and is killed; None disables it.
        :param retries: attempts per shard after the first when it raises, stalls or its
            worker dies (0 to 100).
        :param cancel_grace: seconds a cancelled shard has to stop by itself before its
            worker is killed.
        :param start_timeout: seconds a worker may take to start (and to begin a shard it was sent).
        :param summarise: turns all records of a call into stats (default: the cfg's own
            ``summarise(records)`` method when it has one, else a sum of the shards' numeric stats).
        :param backend: ``"local"`` (spawn processes on this machine) or ``"ray"`` (Ray actors;
            needs the extra ``asp[ray]``).
        :param address: Ray only: None starts a private Ray instance on this machine, ``"auto"``
            joins the cluster this machine belongs to (``ray start``), ``"ray://host:10001"``
            connects a Ray client.
        """
        positive_int("threads_per_worker", threads_per_worker, 256)
        if workers is None:
            workers = max(1, available_cores() // threads_per_worker)
        positive_int("workers", workers, 1024)
        if shard_games is not None:
            positive_int("shard_games", shard_games, 10**9)
        if stall_timeout is not None:
            positive_seconds("stall_timeout", stall_timeout)
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 100:
            raise ConfigError(f"SelfPlay retries must be an int in 0..100, got {retries!r}")
        positive_seconds("cancel_grace", cancel_grace)
        positive_seconds("start_timeout", start_timeout)
        if play_fn is None:
            play_fn = play_cfg  # the cfg plays its own games: cfg.play(model, opp)
        self._backend = backends.create(
            backend,
            workers=workers,
            threads_per_worker=threads_per_worker,
            start_timeout=start_timeout,
            play_fn=play_fn,
            address=address,
        )
        self.backend = backend
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.play_fn = play_fn
        self.shard_games = shard_games
        self.stall_timeout = stall_timeout
        self.retries = retries
        self.cancel_grace = cancel_grace
        self.start_timeout = start_timeout
        self._summarise = summarise
        self._state = _State.NEW
        self._lock: asyncio.Lock | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._idle_deaths = [0] * workers
        self._busy = 0.0
        self._flights: dict[int, _Flight] = {}  # the running call's (one call at a time)

    @property
    def busy_seconds(self) -> float:
        """Seconds the workers have spent inside shards, summed over workers, since this
        SelfPlay started (every call: play, stream, evaluation...), up to now.

        A shard whose result came counts the seconds its worker measured; one still running,
        the seconds since it was sent; one that failed, was given up on or was cancelled, the
        seconds from its sending to its end. So the figure grows while shards run, and the
        difference between two readings is the busy time between them (within a few
        milliseconds of sending and returning), not the time of the shards that ended there.
        """
        now = time.monotonic()
        return self._busy + sum(now - flight.dispatched for flight in self._flights.values())

    def _ended(self, flight: _Flight) -> None:
        """Count the time of a flight that ends without a result: it was busy until now."""
        self._busy += time.monotonic() - flight.dispatched

    @property
    def pids(self) -> list[int | None]:
        """The pid of each slot's worker process (None where none is running)."""
        return [self._backend.pid(slot) for slot in range(self.workers)]

    def summarise(self, records: list[Any], cfg: Any = None) -> dict[str, Any]:
        """The stats of ``records``: by this SelfPlay's ``summarise``, else by ``cfg.summarise``
        when the cfg has one, else ``{"games": n}``."""
        summary = self._summary(cfg)
        return summary(records) if summary is not None else {"games": len(records)}

    def _summary(self, cfg: Any) -> Callable[[list[Any]], dict[str, Any]] | None:
        if self._summarise is not None:
            return self._summarise
        of_cfg = getattr(cfg, "summarise", None)
        return of_cfg if callable(of_cfg) else None

    # -- life cycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> SelfPlay:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every worker and wait until each has built its model; ``async with`` calls this."""
        if self._state is not _State.NEW:
            raise ClosedError(f"SelfPlay.start: already {self._state.value}; a SelfPlay starts once")
        quiet_unless_configured()
        self._state = _State.OPEN
        self._lock = asyncio.Lock()
        try:
            await self._backend.start()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop every worker and remove every temporary file. Safe to call more than once.

        Clean-up completes even if the calling task is cancelled again meanwhile (a second
        Ctrl-C): what cannot wait is then done at once (SIGKILL, removing the directory).
        A call running in another task ends with :class:`~asp.errors.ClosedError`.
        """
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        try:
            await finish(self._backend.close(grace=self.cancel_grace))
        finally:
            self._backend.kill_now()
            log.info("selfplay_closed", backend=self.backend)

    def _check_open(self, what: str) -> None:
        if self._state is _State.NEW:
            raise ClosedError(f"SelfPlay.{what}: not started; use `async with SelfPlay(...) as selfplay:`")
        if self._state is _State.CLOSED:
            raise ClosedError(f"SelfPlay.{what}: this SelfPlay is closed")

    def _check_still_open(self) -> None:
        if self._state is _State.CLOSED:
            raise ClosedError("SelfPlay was closed (aclose) while this call was running")

    @contextlib.asynccontextmanager
    async def _one_call(self, what: str) -> AsyncIterator[None]:
        """Hold the call lock; refuse at once a call that could only wait for itself."""
        assert self._lock is not None
        me = asyncio.current_task()
        if self._owner is not None and self._owner is me:
            raise ReentrancyError(
                f"SelfPlay.{what}: this task already has a call of this SelfPlay open (a stream being "
                f"iterated or left half-read): finish or close that stream first (contextlib.aclosing), "
                f"or make this call from another task"
            )
        acquire = asyncio.ensure_future(self._lock.acquire())
        waited = 0.0
        try:
            while not (await asyncio.wait({acquire}, timeout=_WAIT_WARNING))[0]:
                waited += _WAIT_WARNING
                holder = self._owner.get_name() if self._owner is not None else None
                log.warning("selfplay_call_waiting", call=what, seconds=waited, busy_with_task=holder)
        except BaseException:
            if not acquire.cancel() and not acquire.cancelled() and acquire.exception() is None:
                self._lock.release()  # it was acquired as we were cancelled
            raise
        self._owner = me
        try:
            yield
        finally:
            self._owner = None
            self._lock.release()

    # -- public calls -------------------------------------------------------------------------

    async def play(
        self,
        model: nn.Module,
        opp: nn.Module | None,
        cfg: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the whole call's deadline, part of the API)
    ) -> tuple[list[Any], dict[str, Any]]:
        """Play ``cfg.n_games`` games in the workers; return ``(records, stats)`` like play_fn.

        Records are sorted by game id, one per id from ``cfg.first_game``. ``stats`` holds the
        summary of all records plus ``workers``, ``shards``, ``retries``, ``respawns``,
        ``seconds``, ``worker_seconds`` (the workers' time inside the shards that were kept,
        summed) and ``plies_per_s``. The weights of ``model`` and ``opp`` are read when the
        call starts: don't change them until it returns.

        :raises TimeoutError: if ``timeout`` seconds pass first (the workers stay usable).
        :raises ShardFailed: if a shard fails on every attempt.
        :raises ReentrancyError: if this task has a stream of this SelfPlay open.
        """
        self._check_open("play")
        figures = _CallFigures()
        by_id: dict[int, Any] = {}
        shard_stats: list[dict[str, Any]] = []
        worker_seconds = 0.0
        with anyio.fail_after(timeout):
            async with contextlib.aclosing(self._stream(model, opp, cfg, figures, "play")) as results:
                async for result in results:
                    shard_stats.append(result.stats)
                    worker_seconds += result.seconds
                    for record in result.records:
                        by_id.setdefault(record.game_id, record)
        expected = range(cfg.first_game, cfg.first_game + cfg.n_games)
        if sorted(by_id) != list(expected):
            raise AspError(
                f"play_fn returned game ids that do not match {expected}: "
                f"{len(by_id)} distinct ids for {cfg.n_games} games"
            )
        records = [by_id[i] for i in expected]
        summary = self._summary(cfg)
        stats = summary(records) if summary is not None else _merge_stats(shard_stats)
        seconds = time.perf_counter() - figures.started
        stats.update(
            workers=self.workers,
            shards=figures.shards,
            retries=figures.retries,
            respawns=figures.respawns,
            seconds=seconds,
            worker_seconds=worker_seconds,
        )
        if "plies" in stats:
            stats["plies_per_s"] = stats["plies"] / seconds if seconds > 0 else 0.0
        return records, stats

    async def stream(self, model: nn.Module, opp: nn.Module | None, cfg: Any) -> AsyncGenerator[ShardResult, None]:
        """Yield each shard's :class:`ShardResult` as it completes (completion order).

        Leaving the loop early cancels the shards still running; to have that happen at once
        rather than when the iterator is collected, wrap it in ``contextlib.aclosing``. While
        the stream is open, this task cannot make another call on this SelfPlay.
        """
        self._check_open("stream")
        async with contextlib.aclosing(self._stream(model, opp, cfg, _CallFigures(), "stream")) as results:
            async for result in results:
                yield result

    # -- the dispatch loop --------------------------------------------------------------------

    def _plan(self, cfg: Any) -> tuple[list[_Shard], int]:
        """The call's shards, and the games to send a free worker at once (several shards)."""
        check_cfg(cfg)
        if self.play_fn is play_cfg:
            check_playable(cfg)  # here, not in every worker: the error is the caller's
        batch = getattr(cfg, "batch_size", None) or None  # 0: a play_fn that plays one game at a time
        size = self.shard_games or default_shard_games(cfg.n_games, self.workers, batch or 1)
        shards = [
            _Shard(
                i,
                dataclasses.replace(cfg, first_game=cfg.first_game + start, n_games=min(size, cfg.n_games - start)),
            )
            for i, start in enumerate(range(0, cfg.n_games, size))
        ]
        if self.shard_games is not None:
            return shards, size  # fixed shards: one per task, and no offers
        share = math.ceil(cfg.n_games / self.workers)
        return shards, max(size, min(share, batch if batch is not None else math.ceil(share / 4)))

    async def _publish(self, model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[WeightRef, WeightRef | None]:
        self._backend.check_network(model, "model")
        if opp is not None:
            self._backend.check_network(opp, "opponent")
        model_ref = await self._backend.publish("model", model, cfg.model_version)
        opp_ref = None
        if opp is not None:
            opp_ref = await self._backend.publish("opponent", opp, getattr(cfg, "opponent_version", 0))
        return model_ref, opp_ref

    async def _stream(
        self, model: nn.Module, opp: nn.Module | None, cfg: Any, figures: _CallFigures, what: str
    ) -> AsyncGenerator[ShardResult, None]:
        shards, target = self._plan(cfg)
        queue = deque(shards)
        figures.shards = len(queue)
        async with self._one_call(what):
            self._check_open(what)
            backend = self._backend
            model_ref, opp_ref = await self._publish(model, opp, cfg)
            flights: dict[int, _Flight] = {}
            self._flights = flights
            looked = 0.0
            call = log.bind(model_version=model_ref.version, publication=model_ref.publication)
            try:
                while queue or flights:
                    self._check_still_open()
                    self._replace_lost(figures, call)
                    await self._dispatch(queue, target, flights, call, model_ref, opp_ref)
                    waits: list[asyncio.Future[Any]] = [f.future for f in flights.values()]
                    waits += backend.starting()
                    if waits:
                        await asyncio.wait(waits, timeout=_TICK, return_when=asyncio.FIRST_COMPLETED)
                    else:
                        await asyncio.sleep(_TICK)
                    await backend.check_starts()
                    for flight in [f for f in flights.values() if f.future.done()]:
                        del flights[flight.slot]
                        result = await self._settle(flight, queue, figures, call)
                        if result is not None:
                            yield result
                    if time.monotonic() - looked >= _TICK:  # deadlines need no closer look than this
                        looked = time.monotonic()
                        states = await backend.states(list(flights))
                        for flight, overdue in self._overdue(flights, states):
                            del flights[flight.slot]
                            self._ended(flight)
                            await self._give_up_on(flight, overdue, queue, figures, call)
                        if self.shard_games is None:
                            self._offer(flights, states, queue)
                self._replace_lost(figures, call)  # the last ones too: they start while the caller works
            finally:
                if flights:
                    await self._cancel_flights(flights, call)
                self._flights = {}

    async def _dispatch(
        self,
        queue: deque[_Shard],
        target: int,
        flights: dict[int, _Flight],
        call: Any,
        model_ref: WeightRef,
        opp_ref: WeightRef | None,
    ) -> None:
        """Send free slots whose worker is ready their next shards: contiguous ones, ``target`` games."""
        backend = self._backend
        for slot in range(self.workers):
            if not queue or slot in flights or not backend.ready(slot):
                continue  # nothing to send, busy, or its worker is still starting
            loss = await backend.idle_loss(slot)
            if loss is not None:
                await self._lost_idle(slot, loss, call)
                continue
            shards = [queue.popleft()]
            games = shards[0].cfg.n_games
            while queue and games < target and queue[0].cfg.first_game == shards[0].cfg.first_game + games:
                games += queue[0].cfg.n_games
                shards.append(queue.popleft())
            lead = shards[0]
            cfg = lead.cfg if len(shards) == 1 else dataclasses.replace(lead.cfg, n_games=games)
            attempt = max(s.attempt for s in shards)
            task = ShardTask(self.play_fn, cfg, model_ref, opp_ref, lead.index, attempt)
            try:
                future = backend.submit(slot, task)
            except WorkerLost:  # its worker died while idle, and the backend noticed first
                queue.extendleft(reversed(shards))
                await self._lost_idle(slot, await backend.idle_loss(slot) or "unknown", call)
                continue
            flights[slot] = _Flight(shards, slot, future, backend.pid(slot), time.monotonic(), cap=4 * target)
            call.debug(
                "shard_dispatched",
                shard=lead.index,
                shards=len(shards),
                attempt=attempt,
                slot=slot,
                pid=backend.pid(slot),
                games=games,
                first_game=lead.cfg.first_game,
            )

    def _offer(self, flights: dict[int, _Flight], states: dict[int, SlotState], queue: deque[_Shard]) -> None:
        """Keep a reserve of offered shards at every worker that takes offers (:func:`asp.more_games`).

        A worker whose games end early takes the next shards this way, into the batch it is
        playing, instead of its flight ending with a half-empty batch while another worker
        still plays. Only workers that have asked get offers (a play_fn that never asks
        holds no reserve). The reserve is twice what the worker took since the last look,
        at least one shard, but no more than its share of the games not yet begun: what a
        worker holds untaken it must play itself, so near the end of a call the last games
        go to the workers as they free up. A flight takes no more than its ``cap`` of games.
        """
        untaken = {f.slot: f.offers[states[f.slot].taken :] for f in flights.values() if f.slot in states}
        waiting = sum(s.cfg.n_games for s in queue) + sum(s.cfg.n_games for u in untaken.values() for s in u)
        share = math.ceil(waiting / self.workers)
        for flight in flights.values():
            state = states.get(flight.slot)
            if state is None or state.phase != progress.RUNNING or flight.future.done():
                continue
            if state.asked == 0 and state.taken == 0:
                continue  # it has never asked: its play_fn takes no offers, or its batch is full
            shards = min(progress.OFFER_RING - 1, max(1, 2 * (state.taken - flight.taken_seen)))
            flight.taken_seen = state.taken
            held = sum(s.cfg.n_games for s in untaken[flight.slot])
            while queue and len(flight.offers) - state.taken < shards:
                games = queue[0].cfg.n_games
                if flight.games + games > flight.cap or (held and held + games > share):
                    break
                shard = queue.popleft()
                self._backend.offer(flight.slot, len(flight.offers), shard.cfg.first_game, games)
                flight.offers.append(shard)
                held += games

    def _replace_lost(self, figures: _CallFigures, call: Any) -> None:
        """Start a new worker in every slot whose worker is gone: now, not when a shard needs the
        slot, so that it starts while the others play."""
        for slot in self._backend.vacant():
            figures.respawns += 1
            self._backend.replace(slot)
            call.info("worker_respawning", slot=slot, pid=self._backend.pid(slot))

    async def _lost_idle(self, slot: int, exit: str, call: Any) -> None:
        """A worker died with no shard of ours: replace it, and give up if that keeps happening."""
        self._idle_deaths[slot] += 1
        deaths = self._idle_deaths[slot]
        call.warning("worker_died", pid=self._backend.pid(slot), exit=exit, slot=slot, shard=None, idle=True)
        await self._backend.kill(slot, "died while idle")
        if deaths >= _MAX_IDLE_DEATHS:
            raise AspError(
                f"the worker of slot {slot} died {deaths} times in a row without a shard "
                f"(last: {exit}); see the workers' stderr"
            )

    async def _settle(
        self, flight: _Flight, queue: deque[_Shard], figures: _CallFigures, call: Any
    ) -> ShardResult | None:
        """A finished flight: its result, or a retry (ShardFailed when none is left)."""
        fut = flight.future
        exc = fut.exception()
        if exc is None:
            out = fut.result()
            self._idle_deaths[flight.slot] = 0
            self._busy += out.seconds
            played = flight.played(out.offers_taken)
            queue.extendleft(reversed(flight.offers[out.offers_taken :]))  # offered, never taken
            games = sum(s.cfg.n_games for s in played)
            call.info(
                "shard_done",
                **flight.describe(),
                offers_taken=out.offers_taken,
                pid=out.pid,
                games=games,
                seconds=round(out.seconds, 3),
                plies=out.stats.get("plies"),
            )
            lead = flight.lead
            return ShardResult(
                out.records,
                out.stats,
                lead.index,
                max(s.attempt for s in played),
                out.pid,
                out.seconds,
                lead.cfg.first_game,
                games,
                out.node,
                tuple(sorted(s.index for s in played)),
            )
        self._ended(flight)
        self._check_still_open()  # a shard that aclose() stopped is no failure of the shard
        taken = await self._taken(flight)
        if isinstance(exc, UnreadableResult):
            self._retry(flight, taken, queue, figures, call, str(exc), "".join(traceback.format_exception(exc)))
            return None
        if not isinstance(exc, WorkerLost):
            self._retry(flight, taken, queue, figures, call, f"play_fn raised {exc!r}", remote_traceback(exc))
            return None
        call.warning(
            "worker_died",
            pid=exc.pid,
            exit=exc.exit,
            slot=flight.slot,
            **flight.describe(),
            started_shard=exc.started_shard,
            cause=exc.cause,
        )
        await self._backend.kill(flight.slot, "worker died")
        self._retry(flight, taken, queue, figures, call, exc.reason, exc.cause or exc.reason)
        return None

    async def _taken(self, flight: _Flight) -> int:
        """How many offers a flight that failed had taken (the last word of its worker)."""
        state = (await self._backend.states([flight.slot])).get(flight.slot)
        return max(flight.state.taken, state.taken if state is not None else 0)

    def _overdue(self, flights: dict[int, _Flight], states: dict[int, SlotState]) -> list[tuple[_Flight, str]]:
        """Flights to give up on: stalled ones, and ones their worker never started."""
        now = time.monotonic()
        overdue = []
        for flight in flights.values():
            if flight.future.done():
                continue  # settled at the next turn of the loop
            state = states.get(flight.slot, flight.state)  # no answer: the counter did not move
            if state.phase == progress.IDLE and flight.moved is None:
                if now - flight.dispatched > self.start_timeout:
                    overdue.append((flight, "not_started"))
                continue
            if flight.pid is None:
                flight.pid = state.pid
            if state.phase == progress.RETURNING:
                flight.state = state
                continue  # pickling and sending a result is not a stall, however large it is
            if flight.moved is None or state.plies != flight.state.plies:
                flight.state, flight.moved = state, now
            elif self.stall_timeout is not None and now - flight.moved > self.stall_timeout:
                overdue.append((flight, "stalled"))
        return overdue

    async def _give_up_on(
        self, flight: _Flight, overdue: str, queue: deque[_Shard], figures: _CallFigures, call: Any
    ) -> None:
        pid = flight.pid
        if overdue == "stalled":
            assert flight.moved is not None
            idle = time.monotonic() - flight.moved
            stack = await self._backend.stack(flight.slot)
            call.error(
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
            call.error("shard_not_started", pid=pid, slot=flight.slot, **flight.describe(), seconds=round(waited, 2))
            reason = f"worker {pid} did not start the shard within start_timeout={self.start_timeout} s"
            details = reason
        taken = await self._taken(flight)
        await self._backend.kill(flight.slot, reason)
        self._retry(flight, taken, queue, figures, call, reason, details)

    def _retry(
        self,
        flight: _Flight,
        taken: int,
        queue: deque[_Shard],
        figures: _CallFigures,
        call: Any,
        reason: str,
        details: str,
    ) -> None:
        """Queue a failed flight's shards again (one attempt more each), or raise ShardFailed.

        Its shards and the offers it took count as attempted; offers it had not taken go back
        as they were."""
        lost = flight.played(taken)
        worst = max(lost, key=lambda s: s.attempt)
        if worst.attempt >= self.retries:
            call.error("shard_failed", shard=worst.index, attempts=worst.attempt + 1, reason=reason, traceback=details)
            raise ShardFailed(worst.index, worst.attempt + 1, reason, details)
        call.warning(
            "shard_retried",
            shard=flight.lead.index,
            shards=[s.index for s in lost],
            attempt=worst.attempt,
            reason=reason,
            traceback=details,
        )
        for shard in lost:
            shard.attempt += 1
        figures.retries += 1
        queue.extendleft(reversed(lost + flight.offers[taken:]))

    async def _cancel_flights(self, flights: dict[int, _Flight], call: Any) -> None:
        """Ask running shards to stop; kill the workers of those that do not within the grace.

        Completes however often the task is cancelled meanwhile; if even that is cut short
        (the event loop shutting down), the workers still running a shard are killed at once.
        """
        try:
            await finish(self._stop_flights(flights, call))
        finally:
            for flight in flights.values():
                self._ended(flight)
                if not flight.future.done():
                    self._backend.kill_now(flight.slot)
            flights.clear()

    async def _stop_flights(self, flights: dict[int, _Flight], call: Any) -> None:
        for flight in flights.values():
            self._backend.cancel(flight.slot)
            call.info("shard_cancelled", **flight.describe(), pid=flight.pid)
        pending = [f.future for f in flights.values() if not f.future.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.cancel_grace)
        for flight in flights.values():
            if not flight.future.done():
                await self._backend.kill(flight.slot, "cancelled shard did not stop within the grace period")
            elif not flight.future.cancelled():
                exc = flight.future.exception()
                if exc is not None and not isinstance(exc, ShardCancelled | WorkerLost):
                    call.info("cancelled_shard_raised", shard=flight.lead.index, error=repr(exc))


def default_shard_games(n_games: int, workers: int, batch_size: int = 1) -> int:
    """Games per shard when ``shard_games`` is not given: small blocks, the unit of balancing.

    A free worker is sent several contiguous shards at once, enough for a full batch (at most
    its share of the call), and is offered more, a shard at a time, as its games end
    (:func:`asp.more_games`). So shards are small: an eighth of the batch, and at least eight
    per worker.

    >>> default_shard_games(192, 2, 64), default_shard_games(1024, 2, 64), default_shard_games(8, 2)
    (8, 8, 1)
    """
    return max(1, min(math.ceil(batch_size / 8), math.ceil(n_games / (workers * 8))))
