"""SelfPlay: the public front of the orchestrator. Options, life cycle, ``play`` and ``stream``.

>>> import asyncio
>>> from asp.games import PlayConfig
>>> from asp.tinychess.game import TinyChessGame
>>> chess = TinyChessGame()
>>> async def main():
...     async with SelfPlay(workers=1) as selfplay:
...         records, stats = await selfplay.play(chess.network(), None, PlayConfig(chess, n_games=4, max_plies=8))
...     return [r.game_id for r in records], stats["shards"]
>>> asyncio.run(main())
([0, 1, 2, 3], 4)

How it works:

* Calls share the workers. Every call (``play`` or ``stream``, from any task of the event
  loop that started the SelfPlay) has its own queue of shards, kept here in the parent; one
  dispatcher (:mod:`asp.selfplay.dispatch`) hands each free worker the next shards of the first call
  in order: the highest ``priority`` first, then the first come. So a call made inside
  another (a ``play`` inside ``async for ... in stream(...)``, through ``wait_for``,
  ``gather`` or ``create_task``) cannot deadlock, and evaluation can run beside self-play
  on the same workers. Cancelling or failing one call leaves the others running.
* Shards are handed to a worker only when its slot is free, one slot per worker, so nothing
  that has not started waits in a backend, and cancelling means cancelling running shards only.
* Balancing: by default shards are small (:func:`default_shard_games`) and a free worker is
  sent a full play batch of them at once (at most its share of the call): its first batch
  dealt round-robin (:func:`~asp.selfplay.calls.deal`), the later ones contiguous.
  While it plays, the worker asks for more as its games end (:func:`asp.more_games`), and
  the dispatcher keeps a small reserve of shards on offer to it, so a worker whose games
  are short takes on more and no batch empties while games wait. With an explicit
  ``shard_games``, each task is one shard and nothing is offered.
* Workers belong to a backend (:mod:`asp.backends.base`): spawn processes on this machine
  (``backend="local"``) or Ray actors (``backend="ray"``). A worker that dies or stalls costs
  its own shard, which runs again, and its own worker, which is replaced.
* Weights are published once per version (a file, or Ray's object store); every shard names
  the publication it must use, and a worker reloads when its copy differs. A publication
  lives as long as a call that names it.
* Every game has an id. Execution is at-least-once (a shard can run again after a crash),
  results are exactly-once: every result is checked against the ids of its shards, and
  ``play`` keeps one record per game id.
* Deadlines live here. Workers count plies in shared memory; a counter that stops moving for
  ``stall_timeout`` seconds marks its worker stalled: its Python stack is logged, the worker
  is killed and replaced, and its shard runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import Any

import anyio
import structlog
from torch import nn

from asp import backends
from asp.backends.weights import WeightRef
from asp.backends.worker import cfg_play, check_playable
from asp.errors import ClosedError, ConfigError, LoopError
from asp.selfplay.calls import Call, ShardResult, call_stats, collect_games, default_shard_games, plan_shards
from asp.selfplay.dispatch import Dispatcher, Limits
from asp.util.checks import SECONDS, check_cfg, check_int, check_number
from asp.util.cleanup import finish
from asp.util.cores import available_cores
from asp.util.log import quiet_unless_configured

__all__ = ["PlayFn", "SelfPlay", "ShardResult", "default_shard_games"]

log = structlog.get_logger("asp.selfplay")

PlayFn = Callable[[nn.Module, nn.Module | None, Any], tuple[list[Any], dict[str, Any]]]
"""``play_fn(model, opp, cfg) -> (records, stats)``: a module-level function. ``cfg`` is a
dataclass with at least ``n_games``, ``seed``, ``first_game`` and ``model_version``; each
record has a ``game_id``."""


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


class SelfPlay:
    """Plays games in worker processes (local spawn processes or Ray actors), behind an async API.

    Use it as ``async with SelfPlay(...) as selfplay:``. The workers and the published weights
    live from entering to leaving the ``async with``. Any number of calls may be open at once,
    from any tasks of the event loop that entered it: they share the workers (see the module
    docstring). A call from another event loop raises :class:`~asp.errors.LoopError` at once.

    :param workers: worker processes (default: usable cores // threads_per_worker, at least 1;
        usable cores follow the CPU affinity and a cgroup CPU quota).
    :param threads_per_worker: torch/OpenMP threads in each worker (1 to 256).
    :param play_fn: plays one shard (default: the cfg's own ``play(model, opp)`` method, as
        :class:`asp.games.PlayConfig` has; see :func:`asp.backends.worker.cfg_play`).
    :param shard_games: games per shard (default: :func:`default_shard_games`).
    :param stall_timeout: seconds without a progress report (:func:`asp.heartbeat`) after
        which a worker counts as stalled and is killed; None disables it.
    :param retries: attempts per shard after the first when it raises, stalls or its
        worker dies (0 to 100).
    :param cancel_grace: seconds a cancelled shard has to stop by itself before its
        worker is killed.
    :param start_timeout: seconds a worker may take to start (and to begin a shard it was sent).
    :param summarise: turns all records of a call into stats (default: the cfg's own
        ``summarise(records)`` method when it has one, else ``{"games": n}``); the shards'
        numeric stats it lacks are added, summed over shards.
    :param backend: ``"local"`` (spawn processes on this machine) or ``"ray"`` (Ray actors;
        needs the extra ``asp[ray]``).
    :param address: Ray only: None starts a private Ray instance on this machine, ``"auto"``
        joins the cluster this machine belongs to (``ray start``), ``"ray://host:10001"``
        connects a Ray client.
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
        check_int("SelfPlay.threads_per_worker", threads_per_worker, 1, 256)
        if workers is None:
            workers = max(1, available_cores() // threads_per_worker)
        check_int("SelfPlay.workers", workers, 1, 1024)
        if shard_games is not None:
            check_int("SelfPlay.shard_games", shard_games, 1, 10**9)
        check_number("SelfPlay.stall_timeout", stall_timeout, 0, math.inf, open_low=True, also=(None,), what=SECONDS)
        check_int("SelfPlay.retries", retries, 0, 100)
        check_number("SelfPlay.cancel_grace", cancel_grace, 0, math.inf, open_low=True, what=SECONDS)
        check_number("SelfPlay.start_timeout", start_timeout, 0, math.inf, open_low=True, what=SECONDS)
        if play_fn is None:
            play_fn = cfg_play  # the cfg plays its own games: cfg.play(model, opp)
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dispatcher = Dispatcher(
            self._backend,
            play_fn=play_fn,
            limits=Limits(retries, stall_timeout, start_timeout, cancel_grace),
        )

    @property
    def busy_seconds(self) -> float:
        """Seconds the workers have spent inside shards, summed over workers, since this
        SelfPlay started (every call: play, stream, evaluation...), up to now.

        A shard counts the seconds from its sending to its end (its result settled, or its
        failure, give-up or cancellation), and one still running the seconds since it was
        sent: the time its worker's slot was taken. So the figure only grows, and the
        difference between two readings is the busy time between them, not the time of the
        shards that ended there.
        """
        return self._dispatcher.busy_seconds

    @property
    def pids(self) -> list[int | None]:
        """The pid of each slot's worker process (None where none is running)."""
        return [self._backend.pid(slot) for slot in range(self.workers)]

    def summarise(
        self, records: list[Any], cfg: Any = None, shard_stats: Iterable[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """The stats of a call's ``records``: by this SelfPlay's ``summarise``, else by
        ``cfg.summarise`` when the cfg has one, else ``{"games": n}``; and the numeric
        ``shard_stats`` (of its :class:`ShardResult` s) that those lack, summed
        (:func:`asp.selfplay.calls.call_stats`)."""
        return call_stats(records, shard_stats, self._summary(cfg))

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
        self._loop = asyncio.get_running_loop()
        try:
            await self._backend.start()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop every worker and remove every temporary file. Safe to call more than once.

        Clean-up completes even if the calling task is cancelled again meanwhile (a second
        Ctrl-C): what cannot wait is then done at once (SIGKILL, removing the directory).
        Calls still open end with :class:`~asp.errors.ClosedError`.
        """
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        try:
            closed = ClosedError("SelfPlay was closed (aclose) while this call was running")
            await finish(self._dispatcher.close(closed))
            await finish(self._backend.close(grace=self.cancel_grace))
        finally:
            self._backend.kill_now()
            log.info("selfplay_closed", backend=self.backend)

    def _check_open(self, what: str) -> None:
        if self._state is _State.NEW:
            raise ClosedError(f"SelfPlay.{what}: not started; use `async with SelfPlay(...) as selfplay:`")
        if self._state is _State.CLOSED:
            raise ClosedError(f"SelfPlay.{what}: this SelfPlay is closed")
        if asyncio.get_running_loop() is not self._loop:
            raise LoopError(
                f"SelfPlay.{what}: called from another event loop than the one that started this SelfPlay; "
                f"make the call on that loop (asyncio.run_coroutine_threadsafe from another thread), "
                f"or give each thread its own SelfPlay or SyncSelfPlay"
            )

    # -- public calls -------------------------------------------------------------------------

    async def play(
        self,
        model: nn.Module,
        opp: nn.Module | None,
        cfg: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the whole call's deadline, part of the API)
        priority: int = 0,
    ) -> tuple[list[Any], dict[str, Any]]:
        """Play ``cfg.n_games`` games in the workers; return ``(records, stats)`` like play_fn.

        Records are sorted by game id, one per id from ``cfg.first_game``. ``stats`` holds the
        summary of all records plus ``workers``, ``shards``, ``retries``, ``respawns``,
        ``seconds``, ``worker_seconds`` (the workers' time inside the shards that were kept,
        summed) and ``plies_per_s``. The weights of ``model`` and ``opp`` are read when the
        call starts: don't change them until it returns. Other calls may run meanwhile: free
        workers go to the call of the highest ``priority`` that has shards waiting, then to
        the first come.

        :raises TimeoutError: if ``timeout`` seconds pass first (the workers stay usable).
        :raises ShardFailed: if a shard fails on every attempt.
        :raises LoopError: if called from another event loop than the SelfPlay's.
        """
        self._check_open("play")
        results: list[ShardResult] = []
        with anyio.fail_after(timeout):
            async with self._call("play", model, opp, cfg, priority) as call:
                while (result := await call.next()) is not None:
                    results.append(result)
        figures = call.figures
        records = collect_games((r for result in results for r in result.records), cfg, "SelfPlay.play")
        stats = self.summarise(records, cfg, (r.stats for r in results))
        seconds = time.perf_counter() - figures.started
        stats.update(
            workers=self.workers,
            shards=figures.shards,
            retries=figures.retries,
            respawns=figures.respawns,
            seconds=seconds,
            worker_seconds=sum(r.seconds for r in results),
        )
        if "plies" in stats:
            stats["plies_per_s"] = stats["plies"] / seconds if seconds > 0 else 0.0
        return records, stats

    async def stream(
        self, model: nn.Module, opp: nn.Module | None, cfg: Any, *, priority: int = 0
    ) -> AsyncGenerator[ShardResult, None]:
        """Yield each shard's :class:`ShardResult` as it completes (completion order).

        Each result's games are exactly those of the shards it names. Leaving the loop early
        cancels the shards still running; to have that happen at once rather than when the
        iterator is collected, wrap it in ``contextlib.aclosing``. Other calls, from this
        task or any other, may run while the stream is open.

        :raises ShardFailed: if a shard fails on every attempt.
        :raises LoopError: if called from another event loop than the SelfPlay's.
        """
        self._check_open("stream")
        async with self._call("stream", model, opp, cfg, priority) as call:
            while (result := await call.next()) is not None:
                yield result

    @contextlib.asynccontextmanager
    async def _call(self, what: str, model: nn.Module, opp: nn.Module | None, cfg: Any, priority: int) -> Any:
        """Plan, publish and open one call; when it is left, stop its shards and release its weights."""
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ConfigError(f"SelfPlay.{what} priority must be an int, got {priority!r}")
        check_cfg(cfg)
        if self.play_fn is cfg_play:
            check_playable(cfg)  # here, not in every worker: the error is the caller's
        shards, target = plan_shards(cfg, workers=self.workers, shard_games=self.shard_games)
        refs = await self._publish(model, opp, cfg)
        try:
            self._check_open(what)
            bound = log.bind(what=what, model_version=refs[0].version, publication=refs[0].publication)
            offers = self.shard_games is None  # fixed shards: one per task, and no offers
            call: Call = self._dispatcher.open(what, shards, target, refs, priority=priority, offers=offers, log=bound)
            try:
                yield call
            finally:
                await self._dispatcher.leave(call)
        finally:
            for ref in refs:
                if ref is not None:
                    self._backend.release(ref)

    async def _publish(self, model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[WeightRef, WeightRef | None]:
        self._backend.check_network(model, "model")
        if opp is not None:
            self._backend.check_network(opp, "opponent")
        model_ref = await self._backend.publish("model", model, cfg.model_version)
        opp_ref = None
        if opp is not None:
            try:
                opp_ref = await self._backend.publish("opponent", opp, getattr(cfg, "opponent_version", 0))
            except BaseException:
                self._backend.release(model_ref)
                raise
        return model_ref, opp_ref
