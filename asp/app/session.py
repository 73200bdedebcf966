"""The training session behind ``asp train``: pipeline + trainer + run directory, any game.

:func:`train_session` is the main job of asp: it plays and trains with :class:`asp.Pipeline`,
evaluates, and after every iteration writes the iteration's games, the curves, a metrics
line and an atomic checkpoint. What depends on the game (its network, trainer, evaluations
and games file) comes from the run's :class:`~asp.app.game_run.GameRun`, built once by
the command and passed on.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import functools
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
import torch

from asp.app.evaluation.evaluate import engine_opponent, evaluate
from asp.app.evaluation.ladder import ladder_metrics, past_versions
from asp.app.game_run import GameRun
from asp.app.loop_watch import LoopWatch
from asp.app.run import RunDir
from asp.app.run.checkpoint import (
    Restored,
    RunError,
    checkpoint_state,
    kept_versions,
    restore_checkpoint,
    run_from_checkpoint,
    version_path,
)
from asp.app.run.curves import plot_history
from asp.app.run.metrics import metrics_line
from asp.app.run.tensorboard import TENSORBOARD, write_scalars
from asp.app.run.writer import Writer
from asp.errors import IterationFailed, NotRetried, ShardFailed
from asp.pipeline import IterationReport, Pipeline
from asp.selfplay import SelfPlay
from asp.util.cleanup import finish_in_thread, wait_out
from asp.util.memory import peak_rss_mb

__all__ = ["check_resumable", "train_session"]

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
        line = metrics_line(report, self.run.cfg.play_batch, self.selfplay.threads_per_worker, torch.get_num_threads())
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
