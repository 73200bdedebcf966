"""SelfPlay: the async orchestrator. Shard planning, dispatch, deadlines, retries, de-duplication.

>>> import asyncio
>>> from asp.tinychess import PlayConfig, TinyChess
>>> async def main():
...     async with SelfPlay(workers=1) as selfplay:
...         records, stats = await selfplay.play(TinyChess(), None, PlayConfig(n_games=4, max_plies=8))
...     return [r.game_id for r in records], stats["shards"]
>>> asyncio.run(main())
([0, 1, 2, 3], 1)

How it works (see DESIGN.md, "Facts about process pools"):

* Shards wait in a queue here, in the parent. A shard is handed to the executor only when a
  slot is free, one slot per worker, so nothing that has not started sits inside the
  executor, and cancelling means cancelling running shards only.
* Weights are published to a file once per version (:class:`asp.weights.WeightStore`); every
  shard names the publication it must use, and a worker reloads when its copy differs.
* Every game has an id. Execution is at-least-once (a shard can run again after a crash),
  results are exactly-once: a shard's result is taken once, and ``play`` keeps one record
  per game id.
* Deadlines live here. Workers count plies in shared memory; a counter that stops moving for
  ``stall_timeout`` seconds marks its worker stalled: its Python stack is logged, the whole
  pool generation is killed and a new one started, and the in-flight shards run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import AsyncGenerator, Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog
from torch import nn

from asp import worker
from asp.errors import AspError, ClosedError, ConfigError, ShardCancelled, ShardFailed
from asp.pool import Generation, signal_name
from asp.weights import WeightRef, WeightStore

__all__ = ["PlayFn", "SelfPlay", "ShardResult"]

log = structlog.get_logger("asp.selfplay")

PlayFn = Callable[[nn.Module, nn.Module | None, Any], tuple[list[Any], dict[str, Any]]]
"""``play_fn(model, opp, cfg) -> (records, stats)``: a module-level function. ``cfg`` is a
dataclass with at least ``n_games``, ``seed``, ``first_game`` and ``model_version``; each
record has a ``game_id``."""

_TICK = 0.1  # seconds between looks at progress counters while shards run


@dataclass(frozen=True)
class ShardResult:
    """One finished shard, as :meth:`SelfPlay.stream` yields it."""

    records: list[Any]
    """The shard's game records, as ``play_fn`` returned them."""
    stats: dict[str, Any]
    """The shard's stats, as ``play_fn`` returned them."""
    shard: int
    """Index of the shard within its call (0-based)."""
    attempt: int
    """Which attempt produced it: 0 for the first run, 1 for the first retry..."""
    pid: int
    """Process id of the worker that played it."""
    seconds: float
    """Seconds the worker spent on it."""
    first_game: int
    """Id of the shard's first game."""
    n_games: int
    """Games in the shard."""


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
    shard: _Shard
    slot: int
    future: asyncio.Future[worker.ShardOutput]
    generation: Generation
    dispatched: float
    plies: int = 0
    moved: float = 0.0


@dataclass
class _CallFigures:
    shards: int = 0
    retries: int = 0
    respawns: int = 0
    started: float = field(default_factory=time.perf_counter)


def _broke(flight: _Flight) -> bool:
    fut = flight.future
    return fut.done() and not fut.cancelled() and isinstance(fut.exception(), BrokenProcessPool)


def _remote_traceback(exc: BaseException) -> str:
    cause = exc.__cause__
    if cause is not None and type(cause).__name__ == "_RemoteTraceback":
        return str(cause).strip()
    return "".join(traceback.format_exception(exc)).strip()


def _check_spawnable(obj: object, what: str) -> None:
    """Refuse up front what spawn workers could never import."""
    qualname = getattr(obj, "__qualname__", repr(obj))
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ConfigError(f"{what} must be defined at module level for spawn workers to import it, got {qualname}")
    if getattr(obj, "__module__", None) == "__main__":
        main_file = getattr(sys.modules["__main__"], "__file__", None)
        if main_file is None or not os.path.exists(main_file):
            raise ConfigError(
                f"{what} {qualname} lives in a __main__ module that spawn workers cannot import "
                f"(a script read from standard input or an interactive session): move it into a module file"
            )


def _check_rebuildable(net: nn.Module, role: str) -> None:
    """Workers rebuild a network as ``cls(net.cfg)``, or ``cls()`` when it has no ``cfg``."""
    cls = type(net)
    _check_spawnable(cls, f"the {role}'s class")
    if getattr(net, "cfg", None) is None and cls not in _NO_ARG_OK:
        try:
            cls()
        except TypeError as e:
            raise ConfigError(
                f"the {role} ({cls.__qualname__}) cannot be rebuilt in a worker: give it a `cfg` attribute "
                f"so that {cls.__qualname__}(cfg) rebuilds it, or a constructor that needs no arguments ({e})"
            ) from None
        _NO_ARG_OK.add(cls)


_NO_ARG_OK: set[type[nn.Module]] = set()


def _check_main_module() -> None:
    main_file = getattr(sys.modules["__main__"], "__file__", None)
    if main_file is not None and not os.path.exists(main_file):
        raise ConfigError(
            f"the __main__ module ({main_file}) cannot be re-imported by spawn workers: run asp from a "
            f"script file (with its top-level code under `if __name__ == '__main__':`) or from a module"
        )


def _merge_stats(shard_stats: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for stats in shard_stats:
        for key, value in stats.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
    return merged


class SelfPlay:
    """Plays games in a pool of spawn worker processes, behind an async API.

    Use it as ``async with SelfPlay(...) as selfplay:``. Calls on one SelfPlay run one at a
    time (a second call waits for the first); the pool and the published weights live from
    entering to leaving the ``async with``.
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
    ) -> None:
        """
        :param workers: worker processes (default: cores // threads_per_worker, at least 1).
        :param threads_per_worker: torch/OpenMP threads in each worker (1 to 256).
        :param play_fn: plays one shard (default :func:`asp.tinychess.play_games`).
        :param shard_games: games per shard (default: :func:`default_shard_games`).
        :param stall_timeout: seconds without a progress report (:func:`asp.heartbeat`) after
            which a worker counts as stalled and is killed; None disables it.
        :param retries: attempts per shard after the first when it raises, stalls or its
            worker dies (0 to 100).
        :param cancel_grace: seconds a cancelled shard has to stop by itself before its
            worker is killed.
        :param start_timeout: seconds the pool may take to start.
        :param summarise: turns all records of a call into stats (default: TinyChess's
            ``summarise`` for the default play_fn, else a sum of the shards' numeric stats).
        """
        cores = os.cpu_count() or 1
        _positive_int("threads_per_worker", threads_per_worker, 256)
        if workers is None:
            workers = max(1, cores // threads_per_worker)
        _positive_int("workers", workers, 1024)
        if shard_games is not None:
            _positive_int("shard_games", shard_games, 10**9)
        if stall_timeout is not None:
            _positive_number("stall_timeout", stall_timeout)
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 100:
            raise ConfigError(f"SelfPlay retries must be an int in 0..100, got {retries!r}")
        _positive_number("cancel_grace", cancel_grace)
        _positive_number("start_timeout", start_timeout)
        if play_fn is None:
            from asp.tinychess import play_games
            from asp.tinychess import summarise as tinychess_summarise

            play_fn, summarise = play_games, summarise or tinychess_summarise
        _check_spawnable(play_fn, "play_fn")
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
        self._generation: Generation | None = None
        self._generations = 0
        self._tmp: Path | None = None
        self._weights: WeightStore | None = None
        self._lock: asyncio.Lock | None = None
        self._warm: tuple[type[nn.Module], Any] | None = None

    # -- life cycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> SelfPlay:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the worker pool; ``async with`` calls this for you."""
        if self._state is not _State.NEW:
            raise ClosedError(f"SelfPlay.start: already {self._state.value}; a SelfPlay starts once")
        _check_main_module()
        self._state = _State.OPEN
        self._lock = asyncio.Lock()
        self._tmp = Path(tempfile.mkdtemp(prefix="asp-"))
        self._weights = WeightStore(self._tmp / "weights")
        try:
            await self._ensure_generation(_CallFigures())
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop every worker and remove every temporary file. Safe to call more than once."""
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        with anyio.CancelScope(shield=True):
            if self._generation is not None:
                await self._generation.close(grace=self.cancel_grace)
                self._generation = None
            if self._weights is not None:
                self._weights.close()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
        log.info("selfplay_closed")

    def _check_open(self, what: str) -> None:
        if self._state is _State.NEW:
            raise ClosedError(f"SelfPlay.{what}: not started; use `async with SelfPlay(...) as selfplay:`")
        if self._state is _State.CLOSED:
            raise ClosedError(f"SelfPlay.{what}: this SelfPlay is closed")

    async def _ensure_generation(self, figures: _CallFigures) -> Generation:
        if self._generation is not None and not self._generation.killed:
            return self._generation
        self._check_open("play")  # never respawn a pool behind aclose()
        assert self._tmp is not None
        self._generations += 1
        if self._generations > 1:
            figures.respawns += 1
            log.info("pool_respawning", generation=self._generations)
        generation = Generation(
            number=self._generations,
            workers=self.workers,
            threads_per_worker=self.threads_per_worker,
            stack_dir=self._tmp,
            warm=self._warm,
        )
        self._generation = generation
        try:
            with anyio.fail_after(self.start_timeout):
                await generation.start()
        except BaseException as e:
            with anyio.CancelScope(shield=True):
                await generation.kill("start_failed")
            if isinstance(e, BrokenProcessPool | TimeoutError):
                raise AspError(f"the worker pool could not start: {e!r} (see the workers' stderr)") from e
            raise
        return generation

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
        ``seconds`` and ``plies_per_s``.

        :raises TimeoutError: if ``timeout`` seconds pass first (the pool stays usable).
        :raises ShardFailed: if a shard fails on every attempt.
        """
        self._check_open("play")
        figures = _CallFigures()
        by_id: dict[int, Any] = {}
        shard_stats: list[dict[str, Any]] = []
        with anyio.fail_after(timeout):
            async with contextlib.aclosing(self._stream(model, opp, cfg, figures)) as results:
                async for result in results:
                    shard_stats.append(result.stats)
                    for record in result.records:
                        by_id.setdefault(record.game_id, record)
        expected = range(cfg.first_game, cfg.first_game + cfg.n_games)
        if sorted(by_id) != list(expected):
            raise AspError(
                f"play_fn returned game ids that do not match {expected}: "
                f"{len(by_id)} distinct ids for {cfg.n_games} games"
            )
        records = [by_id[i] for i in expected]
        stats = self._summarise(records) if self._summarise is not None else _merge_stats(shard_stats)
        seconds = time.perf_counter() - figures.started
        stats.update(
            workers=self.workers,
            shards=figures.shards,
            retries=figures.retries,
            respawns=figures.respawns,
            seconds=seconds,
        )
        if "plies" in stats:
            stats["plies_per_s"] = stats["plies"] / seconds if seconds > 0 else 0.0
        return records, stats

    async def stream(self, model: nn.Module, opp: nn.Module | None, cfg: Any) -> AsyncGenerator[ShardResult, None]:
        """Yield each shard's :class:`ShardResult` as it completes (completion order).

        Leaving the loop early cancels the shards still running; to have that happen at once
        rather than when the iterator is collected, wrap it in ``contextlib.aclosing``.
        """
        self._check_open("stream")
        async with contextlib.aclosing(self._stream(model, opp, cfg, _CallFigures())) as results:
            async for result in results:
                yield result

    # -- the dispatch loop --------------------------------------------------------------------

    def _plan(self, cfg: Any) -> list[_Shard]:
        for name in ("n_games", "seed", "first_game", "model_version"):
            if not hasattr(cfg, name):
                raise ConfigError(f"cfg must have a field {name!r} (n_games, seed, first_game, model_version)")
        if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
            raise ConfigError(f"cfg must be a dataclass instance, got {type(cfg).__name__}")
        cfg = _as_any(cfg)
        size = self.shard_games or default_shard_games(cfg.n_games, self.workers, getattr(cfg, "batch_size", 1))
        return [
            _Shard(
                i,
                dataclasses.replace(cfg, first_game=cfg.first_game + start, n_games=min(size, cfg.n_games - start)),
            )
            for i, start in enumerate(range(0, cfg.n_games, size))
        ]

    def _publish(self, model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[WeightRef, WeightRef | None]:
        assert self._weights is not None
        for net, role in ((model, "model"), (opp, "opponent")):
            if net is not None:
                _check_rebuildable(net, role)
        model_ref = self._weights.publish("model", model, version=cfg.model_version)
        opp_ref = None
        if opp is not None:
            opp_ref = self._weights.publish("opponent", opp, version=getattr(cfg, "opponent_version", 0))
        if self._warm is None:
            self._warm = (model_ref.model_class, model_ref.model_cfg)
        return model_ref, opp_ref

    async def _stream(
        self, model: nn.Module, opp: nn.Module | None, cfg: Any, figures: _CallFigures
    ) -> AsyncGenerator[ShardResult, None]:
        assert self._lock is not None
        queue = deque(self._plan(cfg))
        figures.shards = len(queue)
        async with self._lock:
            self._check_open("play")
            model_ref, opp_ref = self._publish(model, opp, cfg)
            flights: dict[int, _Flight] = {}
            done_shards: set[int] = set()
            call = log.bind(model_version=model_ref.version, publication=model_ref.publication)
            try:
                while queue or flights:
                    generation = await self._ensure_generation(figures)
                    free = [s for s in range(self.workers) if s not in flights]
                    while queue and free:
                        shard, slot = queue.popleft(), free.pop(0)
                        task = worker.ShardTask(
                            self.play_fn, shard.cfg, model_ref, opp_ref, shard.index, shard.attempt, slot
                        )
                        try:
                            future = generation.submit(worker.run_shard, task)
                        except BrokenProcessPool:
                            # A worker died while idle: nothing of ours was lost, start anew.
                            queue.appendleft(shard)
                            await generation.kill("a worker died while idle")
                            self._drop_generation(generation)
                            break
                        now = time.monotonic()
                        flights[slot] = _Flight(shard, slot, future, generation, now, moved=now)
                        call.debug(
                            "shard_dispatched",
                            shard=shard.index,
                            attempt=shard.attempt,
                            slot=slot,
                            games=shard.cfg.n_games,
                            first_game=shard.cfg.first_game,
                        )
                    broken_on_submit = self._generation is not generation
                    if not broken_on_submit:
                        await asyncio.wait(
                            [f.future for f in flights.values()],
                            timeout=_TICK,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                    blame: dict[int, tuple[str, str]] | None
                    if broken_on_submit:
                        blame = {}  # nobody to blame: settle (requeue) what was dispatched
                    elif any(_broke(f) for f in flights.values()):
                        # A worker died and took the executor with it: settle every flight.
                        blame = await self._blame_dead(generation, flights, call)
                        await generation.kill("a worker died")
                    elif (stalled := self._find_stall(flights)) is not None:
                        blame = await self._blame_stalled(stalled, call)
                        await generation.kill(f"worker stalled on shard {stalled.shard.index}")
                    else:
                        blame = None
                    if blame is not None:
                        self._drop_generation(generation)
                    settled = [f for f in flights.values() if blame is not None or f.future.done()]
                    for flight in settled:
                        del flights[flight.slot]
                        result = self._settle(flight, queue, figures, call, (blame or {}).get(flight.slot))
                        if result is not None and result.shard not in done_shards:
                            done_shards.add(result.shard)
                            yield result
            finally:
                if flights:
                    with anyio.CancelScope(shield=True):
                        await self._cancel_flights(flights, call)

    def _settle(
        self,
        flight: _Flight,
        queue: deque[_Shard],
        figures: _CallFigures,
        call: Any,
        blame: tuple[str, str] | None,
    ) -> ShardResult | None:
        """Take a flight off: its result, or a retry (ShardFailed when none is left).

        ``blame`` is (reason, details) when this flight's worker died or stalled; a flight that
        did not finish and is not to blame was collateral damage and runs again uncounted.
        """
        shard, fut = flight.shard, flight.future
        exc = fut.exception() if fut.done() and not fut.cancelled() else None
        if fut.done() and not fut.cancelled() and exc is None:
            out = fut.result()
            call.info(
                "shard_done",
                shard=shard.index,
                attempt=shard.attempt,
                pid=out.pid,
                games=shard.cfg.n_games,
                seconds=round(out.seconds, 3),
                plies=out.stats.get("plies"),
            )
            return ShardResult(
                out.records,
                out.stats,
                shard.index,
                shard.attempt,
                out.pid,
                out.seconds,
                shard.cfg.first_game,
                shard.cfg.n_games,
            )
        if blame is not None:
            self._retry(shard, queue, figures, call, *blame)
        elif exc is not None and not isinstance(exc, BrokenProcessPool):
            self._retry(shard, queue, figures, call, f"play_fn raised {exc!r}", _remote_traceback(exc))
        else:
            call.info("shard_requeued", shard=shard.index, attempt=shard.attempt)
            queue.appendleft(shard)
        return None

    def _retry(
        self, shard: _Shard, queue: deque[_Shard], figures: _CallFigures, call: Any, reason: str, details: str
    ) -> None:
        if shard.attempt >= self.retries:
            call.error(
                "shard_failed",
                shard=shard.index,
                attempts=shard.attempt + 1,
                reason=reason,
                traceback=details,
            )
            raise ShardFailed(shard.index, shard.attempt + 1, reason, details)
        call.warning("shard_retried", shard=shard.index, attempt=shard.attempt, reason=reason, traceback=details)
        shard.attempt += 1
        figures.retries += 1
        queue.appendleft(shard)

    def _drop_generation(self, generation: Generation) -> None:
        if self._generation is generation:
            self._generation = None

    async def _blame_dead(
        self, generation: Generation, flights: dict[int, _Flight], call: Any
    ) -> dict[int, tuple[str, str]]:
        dead = await generation.dead_workers()
        # The executor SIGTERMs the survivors once one worker dies: blame the others.
        dead = {pid: code for pid, code in dead.items() if code != -signal.SIGTERM} or dead
        blame = {}
        for flight in flights.values():
            pid = generation.slot_pids[flight.slot]
            if pid in dead:
                reason = f"worker {pid} died ({signal_name(dead[pid])})"
                call.warning(
                    "worker_died",
                    pid=pid,
                    exit=signal_name(dead[pid]),
                    shard=flight.shard.index,
                    attempt=flight.shard.attempt,
                    generation=generation.number,
                )
                blame[flight.slot] = (reason, reason)
        return blame

    async def _blame_stalled(self, flight: _Flight, call: Any) -> dict[int, tuple[str, str]]:
        pid = flight.generation.slot_pids[flight.slot]
        idle = time.monotonic() - flight.moved
        stack = await flight.generation.dump_stack(pid) if pid else "(the shard never started in a worker)"
        call.error(
            "worker_stalled",
            pid=pid,
            shard=flight.shard.index,
            attempt=flight.shard.attempt,
            seconds_without_progress=round(idle, 2),
            plies=flight.plies,
            stack=stack,
        )
        return {flight.slot: (f"worker {pid} stalled: no progress for {idle:.1f} s", stack)}

    def _find_stall(self, flights: dict[int, _Flight]) -> _Flight | None:
        if self.stall_timeout is None:
            return None
        now = time.monotonic()
        for flight in flights.values():
            plies = flight.generation.progress[flight.slot]
            if plies != flight.plies:
                flight.plies, flight.moved = plies, now
            elif now - flight.moved > self.stall_timeout:
                return flight
        return None

    async def _cancel_flights(self, flights: dict[int, _Flight], call: Any) -> None:
        """Ask running shards to stop; kill their generation if they do not within the grace."""
        for flight in flights.values():
            flight.generation.cancel[flight.slot] = 1
            call.info("shard_cancelled", shard=flight.shard.index, attempt=flight.shard.attempt)
        pending = [f.future for f in flights.values() if not f.future.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.cancel_grace)
        stuck = {f.generation for f in flights.values() if not f.future.done()}
        for generation in stuck:
            await generation.kill("cancelled shards did not stop within the grace period")
            self._drop_generation(generation)
        for flight in flights.values():
            if flight.future.done() and not flight.future.cancelled():
                exc = flight.future.exception()  # retrieve it so asyncio does not log it
                if exc is not None and not isinstance(exc, ShardCancelled | BrokenProcessPool):
                    call.info("cancelled_shard_raised", shard=flight.shard.index, error=repr(exc))
        flights.clear()


def default_shard_games(n_games: int, workers: int, batch_size: int = 1) -> int:
    """Games per shard when ``shard_games`` is not given.

    Up to four shards per worker, to even out uneven game lengths, but no shard smaller than
    the play batch while there are games enough (a smaller shard would shrink the network's
    batch, which costs more than balancing gains), and a number of shards that is a multiple
    of the workers.

    >>> default_shard_games(128, 2, 64), default_shard_games(1024, 2, 64), default_shard_games(8, 2)
    (64, 128, 1)
    """
    per_worker = max(1, min(4, n_games // (workers * max(1, batch_size))))
    return max(1, math.ceil(n_games / (workers * per_worker)))


def _as_any(value: object) -> Any:
    return value


def _positive_int(name: str, value: object, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise ConfigError(f"SelfPlay {name} must be an int in 1..{high}, got {value!r}")


def _positive_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"SelfPlay {name} must be a positive number of seconds, got {value!r}")
