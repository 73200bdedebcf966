"""The training session behind ``asp train``: pipeline + trainer + run directory, any game.

:func:`train_session` is the main job of asp: it plays and trains with :class:`asp.Pipeline`,
evaluates, and after every iteration writes the iteration's games, the curves, a metrics
line and an atomic checkpoint. What depends on the game (its network, trainer, evaluations
and games file) comes from the run's :class:`~asp.app.game_run.GameRun`, built once by
the command and passed on.

The games files and the curves are written by a :class:`Writer`, a process of its own,
replaced when it dies. PGN export and the curves are pure-Python CPU work: in a thread of the
coordinator they would hold the GIL for long stretches while the workers and the trainer keep
the cores busy, and the event loop would stall as long; in a spawn process of their own they
do not touch it. That process must not be a single point of failure: when it dies (the OOM
killer, a SIGKILL), :meth:`Writer.call` logs ``writer_replaced`` with its pid and the reason,
starts another and runs the call again. Every call must therefore be idempotent (the run's
files are written by atomic rename: a second write replaces the first whole).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import copy
import functools
import gc
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import structlog
import torch

from asp.app.evaluation.evaluate import engine_opponent, evaluate
from asp.app.evaluation.ladder import ladder_metrics, past_versions
from asp.app.game_run import GameRun
from asp.app.loop_watch import LoopWatch
from asp.app.run import RunDir
from asp.app.run.curves import plot_history
from asp.app.run.directory import (
    Restored,
    RunError,
    checkpoint_state,
    kept_versions,
    restore_checkpoint,
    run_from_checkpoint,
    version_path,
)
from asp.app.run.tensorboard import TENSORBOARD, write_scalars
from asp.errors import AspError, IterationFailed, NotRetried, ShardFailed
from asp.pipeline import IterationReport, Pipeline
from asp.selfplay import SelfPlay
from asp.util.cleanup import finish_in_thread, wait_out
from asp.util.die_with_parent import die_with_parent
from asp.util.interrupts import ctrl_c_held, ignore_ctrl_c
from asp.util.memory import peak_rss_mb

__all__ = ["Writer", "WriterFailed", "check_resumable", "train_session"]

log = structlog.get_logger("asp.train")

Progress = Callable[[str, dict[str, Any]], None]
"""``progress(kind, fields)``: kind is ``games`` (iteration, done, total) or ``iteration``
(the metrics line) — how a display follows the run."""


async def train_session(
    rundir: RunDir,
    run: GameRun,
    *,
    resume: bool,
    workers: int | None = None,
    threads_per_worker: int = 1,
    progress: Progress | None = None,
    backend: str = "local",
    address: str | None = None,
    trainer_threads: int | None = None,
    engine_path: str | None = None,
    tensorboard: bool = False,
) -> list[dict[str, Any]]:
    """Run (or resume) the training run ``run`` in the run directory ``rundir``; return every
    iteration's metrics line.

    Files are written in threads, so the workers' shards keep being collected meanwhile; once
    this returns (or raises, or is cancelled) no thread of it writes anything any more.
    ``backend`` and ``address`` choose where the workers run (see :class:`asp.SelfPlay`);
    ``trainer_threads`` sets torch's thread count in this process for the session;
    ``engine_path`` is where the engine of the run's ``eval_engine`` is (None:
    where its game looks). Without an engine, the run trains and evaluates against the movers
    only, and says so. ``tensorboard``: each metrics line also goes to TensorBoard event files
    in the run directory (:mod:`asp.app.run.tensorboard`).
    """
    notify = progress or (lambda kind, fields: None)
    threads = torch.get_num_threads()
    if trainer_threads is not None:
        torch.set_num_threads(trainer_threads)
    try:
        engine, note = engine_opponent(run, engine_path)
        selfplay = functools.partial(
            SelfPlay, workers=workers, threads_per_worker=threads_per_worker, backend=backend, address=address
        )
        saving = functools.partial(_Saver, rundir, run, engine=engine, notify=notify, tensorboard=tensorboard)
        return await _train(rundir, run, resume, selfplay, saving, notify, note)
    finally:
        torch.set_num_threads(threads)


async def _train(
    rundir: RunDir, run: GameRun, resume: bool, new_selfplay: Callable[[], SelfPlay],
    new_saver: Callable[..., _Saver], notify: Progress, note: str | None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Train, from the start or where ``rundir`` stopped; ``new_saver(history, selfplay, writer)``
    writes each iteration's files."""
    cfg = run.cfg
    torch.manual_seed(cfg.seed)
    model = run.new_model()
    trainer = run.new_trainer(model)
    start, version = 0, 0
    first_plays: list[tuple[int, torch.nn.Module]] = []
    if resume:
        restored = _restore(rundir, run, model, trainer)  # changes no file
        start, version, first_plays = restored.next_iteration, restored.version, restored.pending_plays
        history = rundir.truncate_metrics(start)
        if rundir.checkpoint.exists():
            log.info("run_resumed", run=str(rundir.path), next_iteration=start, version=version)
        else:  # started, but stopped before its first checkpoint
            log.info("run_restarted", run=str(rundir.path))
    else:
        rundir.create(cfg)
        history = []
        log.info("run_started", run=str(rundir.path), config=cfg.to_dict())
    if start >= cfg.iterations:
        return history
    if start == 0:  # version 0, the untrained network: the first rung of the ladder
        await finish_in_thread(rundir.keep_version, cfg, version=0, next_iteration=0, weights=model.state_dict())
    notify("started", {"iteration": start, "note": note})

    def on_shard(iteration: int, done: int, total: int) -> None:
        notify("games", {"iteration": iteration, "done": done, "total": total})

    writer = Writer()
    try:
        async with new_selfplay() as selfplay, LoopWatch() as watch:
            # What exists now (torch, the game's rules, the model...) lives as long as the
            # session: out of the collector's way. A full collection otherwise walks it all,
            # stopping the event loop and every thread (time/gc_pause_max).
            gc.freeze()
            pipeline = Pipeline(
                selfplay,
                model,
                train=trainer.train,
                play_cfg=run.play_cfg,
                overlap=cfg.overlap,
                max_staleness=cfg.max_staleness,
                on_shard=on_shard,
            )
            reports = pipeline.run(cfg.iterations - start, start=start, version=version, first_plays=first_plays)
            saver = new_saver(history, selfplay, writer)
            async with saver, contextlib.aclosing(reports):
                async for report in reports:
                    await saver.save(report, model, trainer, watch)
    finally:
        await finish_in_thread(writer.shutdown)
    return history


MAX_PENDING_SAVES = 3
"""Iterations whose saves may wait behind an evaluation while training goes on: each holds a
copy of the checkpoint (TinyChess: about 24 MB). Beyond it, training waits."""


class _Saver:
    """Writes each iteration's artefacts (games, evaluation, curves, metrics line, checkpoint)
    in tasks while training goes on: the saves follow one another in order, each waiting for
    the one before, so that self-play and training go on while an evaluation plays (at most
    :data:`MAX_PENDING_SAVES` behind); a save cut short by a stop leaves its files whole."""

    def __init__(
        self, rundir: RunDir, run: GameRun, history: list[dict[str, Any]], selfplay: SelfPlay, writer: Writer, *,
        engine: Any, notify: Progress, tensorboard: bool = False,
    ) -> None:  # fmt: skip
        self.rundir, self.run, self.history = rundir, run, history
        self.engine = engine
        """The engine the evaluations play, found (None: none)."""
        self.selfplay, self.writer, self.notify = selfplay, writer, notify
        self.saving: collections.deque[asyncio.Task[None]] = collections.deque()
        """The saves not yet done, oldest first."""
        self.tensorboard = tensorboard
        """Each metrics line also goes to TensorBoard (:mod:`asp.app.run.tensorboard`)."""

    async def __aenter__(self) -> _Saver:
        return self

    async def __aexit__(self, exc_type: object, *rest: object) -> None:
        try:
            # A failed iteration (a network that outputs NaN) leaves those before it good: their saves end.
            if exc_type is None or exc_type is IterationFailed:
                while self.saving:
                    await self.saving[0]  # raises what the save raised
                    self.saving.popleft()
        finally:
            for task in self.saving:  # stopped early, or a save failed: their files stay whole
                task.cancel()
            while self.saving:
                task = self.saving.popleft()
                await wait_out(task)
                if not task.cancelled():
                    task.exception()  # the stop's own exception is on its way; this one is known

    async def save(self, report: IterationReport, model: torch.nn.Module, trainer: Any, watch: LoopWatch) -> None:
        """Queue the save of ``report``'s iteration behind the saves before it; wait only
        while :data:`MAX_PENDING_SAVES` are queued."""
        cfg = self.run.cfg
        # Nothing trains until the next report is asked for: this is the state after training
        # on this iteration, copied before any thread writes it. (The weights of plays that had
        # begun are snapshots: nothing writes them.)
        pending = [(v, weights.state_dict()) for v, weights in report.pending_plays]
        # Copied in a thread (tens of megabytes: the model, the optimizer's moments, the
        # weights of pending plays) while the loop collects shards.
        checkpoint = await finish_in_thread(
            checkpoint_state,
            trainer,
            cfg,
            next_iteration=report.iteration + 1,
            version=report.version_trained + 1,
            pending_plays=pending,
        )
        report.extra["time/loop_stall_max"] = watch.take()
        report.extra["time/gc_pause_max"] = watch.gc_pause()
        report.extra["mem/peak_rss_mb"] = round(peak_rss_mb(), 1)
        evaluated = None
        if report.iteration + 1 == cfg.iterations or (report.iteration + 1) % cfg.eval_every == 0:
            evaluated = report.trained_weights
            if evaluated is None:  # sequential: the model itself trains on next
                evaluated = await finish_in_thread(copy.deepcopy, model)
        while self.saving and (len(self.saving) >= MAX_PENDING_SAVES or self.saving[0].done()):
            await self.saving[0]  # raises what the save raised
            self.saving.popleft()
        self.queue(functools.partial(self._write_iteration, report, checkpoint, evaluated), report.iteration)

    def queue(self, write: Callable[[], Awaitable[dict[str, Any]]], iteration: int) -> None:
        """Start ``write()`` in a task once the saves queued before it have ended, and tell
        the progress the metrics line it returns. Nothing of it begins before its turn: a
        task stopped before its first step leaves no coroutine behind, never awaited."""
        before = self.saving[-1] if self.saving else None
        self.saving.append(asyncio.create_task(self._after(before, write), name=f"asp-save-{iteration}"))

    async def _after(self, before: asyncio.Task[None] | None, write: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        if before is not None:
            await asyncio.shield(before)
        self.notify("iteration", await write())

    async def _write_iteration(
        self, report: IterationReport, checkpoint: dict[str, Any], evaluated: torch.nn.Module | None
    ) -> dict[str, Any]:
        """Write an iteration's games, curves, metrics line and ``checkpoint`` (evaluating
        ``evaluated``, the weights it trained, first when given); append the line to the
        history and return it."""
        rundir, writer = self.rundir, self.writer
        line = _metrics_line(report, self.run.cfg.play_batch, self.selfplay.threads_per_worker, torch.get_num_threads())
        line.update(report.extra)
        if evaluated is not None:  # first: an evaluation that fails leaves no file of the iteration
            self.notify("evaluating", {"iteration": report.iteration})
            version = report.version_trained + 1
            evaluating = time.perf_counter()
            past = await finish_in_thread(
                _kept_networks, rundir, past_versions(kept_versions(rundir.path), version), self.run
            )
            line["eval/version"] = version
            seconds = self._budget(line)
            line.update(await self._evaluate(report.iteration, evaluated, version, past, seconds))
            line.update(ladder_metrics([*self.history, line]))
            line["time/evaluation"] = round(time.perf_counter() - evaluating, 6)
            await finish_in_thread(rundir.keep_version, self.run.cfg, version=version,
                                   next_iteration=report.iteration + 1, weights=evaluated.state_dict())  # fmt: skip
        started = time.perf_counter()
        plain = [record.plain() for record in report.records]  # the samples are the trainer's, not the file's
        path = rundir.games(report.iteration)
        await finish_in_thread(writer.call, self.run.write_games, plain, path)
        games_seconds = time.perf_counter() - started
        started = time.perf_counter()
        history = [*self.history, line]
        failure = await finish_in_thread(writer.call, plot_history, history, rundir.curves)
        if failure is not None:  # a plot must never stop training
            log.warning("curves_failed", error=failure)
        # What the games and curves took: the artefacts written before the line itself.
        line["time/artefacts"] = round(games_seconds + time.perf_counter() - started, 6)
        checkpoint_seconds = await finish_in_thread(rundir.commit_iteration, line, checkpoint)
        self.history.append(line)
        if self.tensorboard:
            await finish_in_thread(_to_tensorboard, rundir, line)
        log.info("iteration_saved", iteration=report.iteration, checkpoint=str(rundir.checkpoint),
                 checkpoint_seconds=round(checkpoint_seconds, 3), score=line.get("eval/score"))  # fmt: skip
        return line

    def _budget(self, line: dict[str, Any]) -> float | None:
        """The seconds the evaluation of the iteration of ``line`` may take: ``eval_budget`` of
        the training's wall time since the evaluation before, that iteration's own included
        (None: no limit)."""
        share = self.run.cfg.eval_budget
        if share <= 0:
            return None
        since = float(line.get("time/wall", 0.0))
        for line in reversed(self.history):
            if "eval/version" in line:
                break
            since += float(line.get("time/wall", 0.0))
        return share * since

    async def _evaluate(
        self,
        iteration: int,
        model: torch.nn.Module,
        version: int,
        past: list[tuple[int, torch.nn.Module]],
        seconds: float | None,
    ) -> dict[str, Any]:
        """The evaluation of ``model``, the weights ``iteration`` trained, as ``version``, in
        ``seconds`` (see :func:`~asp.app.evaluation.evaluate.evaluate`); a failure that another
        attempt would only repeat names the iteration (IterationFailed)."""
        try:
            return await evaluate(self.run, self.selfplay, model, version, past, self.engine, seconds=seconds)
        except ShardFailed as e:
            if isinstance(e.error, NotRetried):
                raise IterationFailed(iteration, e.error) from e
            raise


def _to_tensorboard(rundir: RunDir, line: dict[str, Any]) -> None:
    """Write a metrics line to the run's TensorBoard events; a failure is logged, never raised."""
    try:
        write_scalars(rundir.path / TENSORBOARD, line)
    except Exception as e:  # noqa: BLE001 (TensorBoard must never stop training)
        log.warning("tensorboard_failed", error=repr(e))


def _kept_networks(rundir: RunDir, versions: list[int], run: GameRun) -> list[tuple[int, torch.nn.Module]]:
    """The networks of ``versions``, kept by ``rundir``, of the run ``run``."""
    return [(v, run_from_checkpoint(version_path(rundir.path, v), run=run)[1]) for v in versions]


def check_resumable(rundir: RunDir, run: GameRun) -> None:
    """Raise RunError if ``rundir`` cannot be resumed as ``run``; reads and changes no file but
    the checkpoint and metrics it reads (as :func:`train_session` with ``resume=True`` would)."""
    rng = torch.get_rng_state()
    try:
        model = run.new_model()
        _restore(rundir, run, model, run.new_trainer(model))
        _kept_networks(rundir, kept_versions(rundir.path), run)  # each a version of this run's game, whole
    finally:
        torch.set_rng_state(rng)


def _restore(rundir: RunDir, run: GameRun, model: torch.nn.Module, trainer: Any) -> Restored:
    """Load ``rundir``'s checkpoint into ``model`` and ``trainer`` and return where it stopped (a
    run stopped before its first checkpoint starts again at iteration 0). Writes no file.

    :raises RunError: metrics.jsonl is damaged (:meth:`~asp.app.run.RunDir.read_metrics`),
        or the checkpoint does not load, does not fit the run's config, or is missing while
        metrics.jsonl holds more than what a run stopped before its first checkpoint leaves
        (the line of iteration 0, written just before that checkpoint).
    """
    lines = rundir.read_metrics()
    if not rundir.checkpoint.exists():
        if len(lines) > 1 or any(line.get("iteration") != 0 for line in lines):
            raise RunError(
                f"{rundir.checkpoint}: missing, but {rundir.metrics} holds {len(lines)} iteration(s); "
                "restore the checkpoint or start a new run in another --run-dir"
            )
        return Restored(next_iteration=0, version=0, pending_plays=[])
    return restore_checkpoint(rundir.checkpoint, run, model, trainer)


def _metrics_line(
    report: IterationReport, play_batch: int, worker_threads: int, trainer_threads: int
) -> dict[str, Any]:
    """An iteration's metrics line: its games, times, search occupancy (against ``play_batch``
    positions a call), the workers' share of the wall time, and the trainer's metrics."""
    stats = report.play_stats
    line: dict[str, Any] = {
        "iteration": report.iteration,
        "version_played": report.version_played,
        "version_trained": report.version_trained,
        "staleness": report.staleness,
        "play/games": stats["games"],
        "play/plies": stats["plies"],
        "play/plies_per_s": stats["plies"] / report.play_seconds if report.play_seconds > 0 else 0.0,
        "play/length_mean": stats["length_mean"],
        "play/results": stats["results"],
        "play/terminations": stats["terminations"],
        "time/play": report.play_seconds,
        "time/train": report.train_seconds,
        "time/overlap": report.overlap_seconds,
        "time/wall": report.wall_seconds,
    }
    if stats.get("search/evaluations"):
        # Boards per network call of the searches, against the play batch: how full the
        # batched search keeps the network.
        per_call = stats["search/boards"] / stats["search/evaluations"]
        line["play/search_boards_per_call"] = per_call
        line["play/search_occupancy"] = per_call / play_batch
    workers = stats.get("workers")
    if workers and report.wall_seconds > 0:
        # The share of the iteration's wall time the workers spent inside shards (any shard:
        # self-play of whichever iteration, evaluation), and the cores left idle.
        line["time/workers_busy"] = 1.0 - report.worker_idle_seconds / (workers * report.wall_seconds)
        line["time/worker_idle_core_s"] = report.worker_idle_seconds * worker_threads
        line["time/trainer_idle_core_s"] = report.trainer_idle_seconds * trainer_threads
    line.update(report.train_metrics)
    return {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in line.items()}


# The writer: a process of its own for the games files and the curves.

T = TypeVar("T")


class WriterFailed(AspError):
    """The writer process died on every attempt of one call."""


class Writer:
    """One spawn process that runs calls for a thread of the coordinator, one at a time.

    :meth:`call` blocks (call it from a thread, not the event loop); :meth:`shutdown` waits
    for the call in progress, then stops the process.
    """

    ATTEMPTS = 3
    """Processes one call may use up: the first, and the replacements after it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = self._start()
        self._process: Any = None  # the multiprocessing Process that runs the calls

    @staticmethod
    def _start() -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_writer_started,
            initargs=(os.getpid(),),
        )

    @property
    def pid(self) -> int | None:
        """The pid of the writer process, once it has started (None before)."""
        return None if self._process is None else int(self._process.pid)

    def call(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the writer process; a replacement runs it again if the writer dies.

        :raises WriterFailed: the writer died on each of :attr:`ATTEMPTS` attempts.
        """
        for attempt in range(1, self.ATTEMPTS + 1):
            with self._lock:
                pool = self._pool
                try:  # a writer that died between calls breaks the pool: submit says so
                    with ctrl_c_held():  # submit starts the process on first use
                        future = pool.submit(func, *args)
                except BrokenProcessPool as e:
                    future, broken = None, e
                if future is not None and self._process is None:
                    self._process = _process_of(pool)
                    log.info("writer_started", pid=self.pid)
            if future is not None:
                try:
                    return future.result()
                except BrokenProcessPool as e:
                    broken = e
            self._replace(pool, broken, attempt)
        raise WriterFailed(f"the writer of games and curves died on each of {self.ATTEMPTS} attempts")

    def _replace(self, broken: concurrent.futures.ProcessPoolExecutor, error: BaseException, attempt: int) -> None:
        with self._lock:
            if self._pool is not broken:  # another thread replaced it already
                return
            pid, reason = self.pid, _death_of(self._process) or repr(error)
            broken.shutdown(wait=True, cancel_futures=True)
            self._pool, self._process = self._start(), None
        log.warning("writer_replaced", pid=pid, reason=reason, attempt=attempt)

    def shutdown(self) -> None:
        """Wait for the call in progress, then stop the process."""
        with self._lock:
            self._pool.shutdown(wait=True)


def _process_of(pool: concurrent.futures.ProcessPoolExecutor) -> Any:
    processes = getattr(pool, "_processes", None) or {}  # the executor's own: no public way
    return next(iter(processes.values()), None)


def _death_of(process: Any, *, seconds: float = 1.0) -> str | None:
    """How the writer process ended, in words (``killed by SIGKILL``), if known within ``seconds``.

    The pool's own thread reaps a dead process too. Where it wins the race, this thread's
    ``waitpid`` finds no child and reads no status, until that thread has stored the status it
    read; so the status is read again until then.
    """
    if process is None:
        return None
    deadline = time.monotonic() + seconds
    process.join(timeout=seconds)
    while (code := process.exitcode) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if code is None:
        return None
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code}"


def _writer_started(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group: the coordinator stops the run, and the write in
    # progress must finish, so the writer ignores it.
    ignore_ctrl_c()
    die_with_parent(parent_pid)
