"""The TinyChess training session behind ``asp train``: pipeline + trainer + run directory.

:func:`train_session` is the main job of asp: it plays and trains with :class:`asp.Pipeline`,
evaluates against a uniformly random mover, and after every iteration writes the
iteration's games, the curves, a metrics line and an atomic checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import functools
import gc
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import structlog
import torch

from asp.app.checkpoint import Restored, RunError, checkpoint_state, restore_checkpoint, write_checkpoint
from asp.app.evaluate import MatchResult, match_result_of
from asp.app.pgn import write_pgn
from asp.app.run import RunDir
from asp.app.run_config import RunConfig
from asp.app.writer import Writer
from asp.errors import ConfigError, ShardFailed
from asp.pipeline import IterationReport, Pipeline
from asp.selfplay import SelfPlay
from asp.shield import finish_in_thread, finish_thread_call, wait_out
from asp.tinychess.engine import EngineFailed, EngineNotFound, EngineOpponent
from asp.tinychess.model import TinyChess
from asp.tinychess.opponents import GreedyMover, RandomMover
from asp.tinychess.records import GameRecord
from asp.tinychess.train import Trainer

__all__ = [
    "check_resumable",
    "endings",
    "evaluate_vs_engine",
    "evaluate_vs_greedy",
    "evaluate_vs_random",
    "train_session",
]

log = structlog.get_logger("asp.train")

Progress = Callable[[str, dict[str, Any]], None]
T = TypeVar("T")
"""``progress(kind, fields)``: kind is ``games`` (iteration, done, total) or ``iteration``
(the metrics line) — how a display follows the run."""


EVAL_PRIORITY = 1
"""Evaluation games go to free workers before self-play's: an iteration's metrics line and
checkpoint wait for its evaluation, not for the next iteration's games."""


async def evaluate_vs_random(
    selfplay: SelfPlay, model: torch.nn.Module, cfg: RunConfig, version: int
) -> dict[str, Any]:
    """Score of ``model`` against a uniformly random mover over ``cfg.eval_games`` games."""
    return await _evaluate(selfplay, model, RandomMover(), cfg.eval_cfg(version), "eval")


async def evaluate_vs_greedy(
    selfplay: SelfPlay, model: torch.nn.Module, cfg: RunConfig, version: int
) -> dict[str, Any]:
    """Score of ``model`` against the one-ply material-greedy mover over ``cfg.eval_games``
    games from the bundled openings, each with both colours: ``eval_greedy/...`` metrics."""
    return await _evaluate(selfplay, model, GreedyMover(), cfg.engine_eval_cfg(version), "eval_greedy")


async def _evaluate(
    selfplay: SelfPlay, model: torch.nn.Module, opponent: torch.nn.Module, play_cfg: Any, prefix: str
) -> dict[str, Any]:
    """A match of ``model`` against ``opponent``: its ``prefix/...`` score, endings and seconds."""
    records, stats = await selfplay.play(model, opponent, play_cfg, priority=EVAL_PRIORITY)
    return {
        **_match_metrics(prefix, match_result_of(records)),
        f"{prefix}/endings": endings(records),
        f"{prefix}/seconds": stats["seconds"],
    }


async def evaluate_vs_engine(
    selfplay: SelfPlay, model: torch.nn.Module, cfg: RunConfig, version: int, engine: EngineOpponent
) -> dict[str, Any]:
    """Score of ``model`` against ``engine`` over ``cfg.eval_games`` games from the bundled
    openings: ``eval_sf/...`` metrics. An engine that keeps failing, or a match with no
    finished game, is logged and reported as ``eval_sf/error``: it never stops training."""
    started = time.perf_counter()
    try:
        records, _ = await selfplay.play(model, engine, cfg.engine_eval_cfg(version), priority=EVAL_PRIORITY)
        result = match_result_of(records)
    except (ShardFailed, EngineFailed, ConfigError) as e:
        log.warning("engine_eval_failed", engine=engine.opponent_name, error=repr(e))
        return {"eval_sf/error": repr(e)[:300]}
    return {
        "eval_sf/engine": engine.opponent_name,
        **_match_metrics("eval_sf", result),
        "eval_sf/endings": endings(records),
        "eval_sf/engine_failures": result.engine_failures,
        "eval_sf/seconds": time.perf_counter() - started,
    }


def endings(records: Sequence[GameRecord]) -> dict[str, int]:
    """How the scored games against an opponent ended, from the model's side: counts keyed
    ``outcome/termination``. A win or loss by ``max_plies`` is an adjudication by material at
    the ply cap, not a mate; games that ended by engine failure are left out, as in the score.

    >>> from asp.tinychess import GameRecord
    >>> game = lambda result, termination: GameRecord(0, [], result, termination, "", "model", "random", 0)
    >>> endings([game("1-0", "max_plies"), game("0-1", "checkmate"), game("1-0", "max_plies")])
    {'loss/checkmate': 1, 'win/max_plies': 2}
    """
    names = {1.0: "win", 0.5: "draw", 0.0: "loss"}
    counts = Counter(
        f"{names[points]}/{record.termination}"
        for record in records
        if record.termination != "engine_failure" and (points := record.model_score()) is not None
    )
    return dict(sorted(counts.items()))


def _match_metrics(prefix: str, result: MatchResult) -> dict[str, Any]:
    """A match's score, W/D/L and Elo with its 95% interval, as ``prefix/...`` metrics."""
    elo = result.elo
    return {
        f"{prefix}/score": result.score,
        f"{prefix}/games": result.games,
        f"{prefix}/wins": result.wins,
        f"{prefix}/draws": result.draws,
        f"{prefix}/losses": result.losses,
        f"{prefix}/elo": round(elo.elo, 1),
        f"{prefix}/elo_low": round(elo.elo_low, 1),
        f"{prefix}/elo_high": round(elo.elo_high, 1),
    }


def _metrics_line(report: IterationReport, cfg: RunConfig, worker_threads: int, trainer_threads: int) -> dict[str, Any]:
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
        line["play/search_occupancy"] = per_call / cfg.play_batch
    workers = stats.get("workers")
    if workers and report.wall_seconds > 0:
        # The share of the iteration's wall time the workers spent inside shards (any shard:
        # self-play of whichever iteration, evaluation), and the cores left idle.
        line["time/workers_busy"] = 1.0 - report.worker_idle_seconds / (workers * report.wall_seconds)
        line["time/worker_idle_core_s"] = report.worker_idle_seconds * worker_threads
        line["time/trainer_idle_core_s"] = report.trainer_idle_seconds * trainer_threads
    line.update(report.train_metrics)
    return {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in line.items()}


async def train_session(
    run: RunDir,
    cfg: RunConfig,
    *,
    resume: bool,
    workers: int | None = None,
    threads_per_worker: int = 1,
    progress: Progress | None = None,
    backend: str = "local",
    address: str | None = None,
    trainer_threads: int | None = None,
    engine_path: str | None = None,
) -> list[dict[str, Any]]:
    """Run (or resume) a training run in ``run``; return every iteration's metrics line.

    Files are written in threads, so the workers' shards keep being collected meanwhile; once
    this returns (or raises, or is cancelled) no thread of it writes anything any more.
    ``backend`` and ``address`` choose where the workers run (see :class:`asp.SelfPlay`);
    ``trainer_threads`` sets torch's thread count in this process for the session;
    ``engine_path`` is where the engine of ``cfg.eval_engine`` is (None: look for Stockfish).
    Without an engine, the run trains and evaluates against the random mover only, and says so.
    """
    notify = progress or (lambda kind, fields: None)
    threads = torch.get_num_threads()
    if trainer_threads is not None:
        torch.set_num_threads(trainer_threads)
    try:
        return await _session(run, cfg, resume, workers, threads_per_worker, notify, backend, address, engine_path)
    finally:
        torch.set_num_threads(threads)


async def _session(
    run: RunDir,
    cfg: RunConfig,
    resume: bool,
    workers: int | None,
    threads_per_worker: int,
    notify: Progress,
    backend: str,
    address: str | None,
    engine_path: str | None,
) -> list[dict[str, Any]]:
    torch.manual_seed(cfg.seed)
    model = TinyChess(cfg.model)
    trainer = Trainer(model, cfg.train)
    start, version = 0, 0
    first_plays: list[tuple[int, torch.nn.Module]] = []
    if resume:
        restored = _restore(run, cfg, model, trainer)  # changes no file
        start, version, first_plays = restored.next_iteration, restored.version, restored.pending_plays
        history = run.truncate_metrics(start)
        if run.checkpoint.exists():
            log.info("run_resumed", run=str(run.path), next_iteration=start, version=version)
        else:  # started, but stopped before its first checkpoint
            log.info("run_restarted", run=str(run.path))
    else:
        run.create(cfg)
        history = []
        log.info("run_started", run=str(run.path), config=cfg.to_dict())
    if start >= cfg.iterations:
        return history
    engine, note = None, None
    if cfg.eval_engine is not None:
        try:  # finds the executable only: each worker starts its own engine when it first plays
            engine = EngineOpponent(dataclasses.replace(cfg.eval_engine, path=engine_path))
        except EngineNotFound as e:
            note = f"no evaluation against {cfg.eval_engine.describe()}: {e}"
            log.warning("engine_eval_skipped", reason=str(e))
    notify("started", {"iteration": start, "note": note})

    def on_shard(iteration: int, done: int, total: int) -> None:
        notify("games", {"iteration": iteration, "done": done, "total": total})

    writer = Writer()
    try:
        async with (
            SelfPlay(
                workers=workers, threads_per_worker=threads_per_worker, backend=backend, address=address
            ) as selfplay,
            LoopWatch() as watch,
        ):
            # What exists now (torch, python-chess, the model...) lives as long as the session:
            # out of the collector's way. A full collection otherwise walks it all, stopping the
            # event loop and every thread (time/gc_pause_max).
            gc.freeze()
            pipeline = Pipeline(
                selfplay,
                model,
                train=trainer.train,
                play_cfg=cfg.play_cfg,
                overlap=cfg.overlap,
                max_staleness=cfg.max_staleness,
                on_shard=on_shard,
            )
            reports = pipeline.run(cfg.iterations - start, start=start, version=version, first_plays=first_plays)
            # Each iteration's artefacts (games, evaluation, curves, metrics line, checkpoint)
            # are written by a task while training goes on with the next iteration; the saves
            # follow one another in order.
            saving: asyncio.Task[dict[str, Any]] | None = None
            try:
                async with contextlib.aclosing(reports):
                    async for report in reports:
                        # Nothing trains until the next report is asked for: this is the state
                        # after training on this iteration, copied before any thread writes it.
                        # (The weights of plays that had begun are snapshots: nothing writes them.)
                        pending = [(v, weights.state_dict()) for v, weights in report.pending_plays]
                        # Copied in a thread (tens of megabytes: the model, the optimizer's
                        # moments, the weights of pending plays) while the loop collects shards.
                        checkpoint = await finish_in_thread(
                            checkpoint_state,
                            trainer,
                            cfg,
                            next_iteration=report.iteration + 1,
                            version=report.version_trained + 1,
                            play_weights=pending[0][1] if pending else None,
                            pending_plays=pending,
                        )
                        report.extra["time/loop_stall_max"] = watch.take()
                        report.extra["time/gc_pause_max"] = watch.gc_pause()
                        evaluated = None
                        if _evaluation_due(cfg, report.iteration):
                            evaluated = report.trained_weights
                            if evaluated is None:  # sequential: the model itself trains on next
                                evaluated = await finish_in_thread(copy.deepcopy, model)
                        if saving is not None:
                            notify("iteration", await saving)
                        save = _write_iteration(
                            run,
                            report,
                            checkpoint,
                            cfg=cfg,
                            history=history,
                            selfplay=selfplay,
                            evaluated=evaluated,
                            engine=engine,
                            notify=notify,
                            writer=writer,
                        )
                        saving = asyncio.create_task(save, name=f"asp-save-{report.iteration}")
                if saving is not None:
                    notify("iteration", await saving)
            finally:
                if saving is not None and not saving.done():  # stopped early: its files stay whole
                    saving.cancel()
                    await wait_out(saving)
    finally:
        await finish_in_thread(writer.shutdown)
    return history


async def _write_iteration(
    run: RunDir,
    report: IterationReport,
    checkpoint: dict[str, Any],
    *,
    cfg: RunConfig,
    history: list[dict[str, Any]],
    selfplay: SelfPlay,
    evaluated: torch.nn.Module | None,
    engine: EngineOpponent | None,
    notify: Progress,
    writer: Writer,
) -> dict[str, Any]:
    """Write an iteration's games, curves, metrics line and ``checkpoint`` (evaluating
    ``evaluated``, the weights it trained, first when given); append the line to ``history``
    and return it."""
    started = time.perf_counter()
    plain = [record.plain() for record in report.records]  # the PlyData is the trainer's, not the PGN's
    await finish_thread_call(functools.partial(writer.call, write_pgn, plain, run.games(report.iteration)))
    games_seconds = time.perf_counter() - started
    line = _metrics_line(report, cfg, selfplay.threads_per_worker, torch.get_num_threads())
    line.update(report.extra)
    if evaluated is not None:
        notify("evaluating", {"iteration": report.iteration})
        line.update(await evaluate_vs_random(selfplay, evaluated, cfg, report.version_trained + 1))
        line.update(await evaluate_vs_greedy(selfplay, evaluated, cfg, report.version_trained + 1))
        if engine is not None:
            line.update(await evaluate_vs_engine(selfplay, evaluated, cfg, report.version_trained + 1, engine))
    started = time.perf_counter()
    failure = await finish_thread_call(functools.partial(writer.call, _plot, [*history, line], run.curves))
    if failure is not None:  # a plot must never stop training
        log.warning("curves_failed", error=failure)
    # What the games and curves took: the artefacts written before the line itself.
    line["time/artefacts"] = round(games_seconds + time.perf_counter() - started, 6)
    checkpoint_seconds = await finish_in_thread(_commit, run, line, checkpoint)
    history.append(line)
    log.info("iteration_saved", iteration=report.iteration, checkpoint=str(run.checkpoint),
             checkpoint_seconds=round(checkpoint_seconds, 3), score=line.get("eval/score"))  # fmt: skip
    return line


def _evaluation_due(cfg: RunConfig, iteration: int) -> bool:
    return iteration + 1 == cfg.iterations or (iteration + 1) % cfg.eval_every == 0


class LoopWatch:
    """The event loop's longest stall: a task wakes every 10 ms and keeps the longest late wake-up.

    Anything slow on the loop (a file written, a model copied, a result unpickled) delays every
    shard's collection and every timeout; ``take()`` gives the worst delay since the last take,
    in seconds, as ``time/loop_stall_max`` of each iteration. It also keeps the longest pause
    of Python's garbage collector in this process (any thread's: a collection stops them all),
    ``gc_pause()``, as ``time/gc_pause_max``: a stall that matches one is the collector's.
    """

    PERIOD = 0.01

    def __init__(self) -> None:
        self._worst = 0.0
        self._gc_worst = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopWatch:
        self._task = asyncio.create_task(self._run(), name="asp-loop-watch")
        gc.callbacks.append(self._on_gc)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self._gc_worst = max(self._gc_worst, time.perf_counter() - self._gc_started)

    def gc_pause(self) -> float:
        """The longest garbage collection since the last call, in seconds."""
        worst, self._gc_worst = self._gc_worst, 0.0
        return round(worst, 6)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.PERIOD)
            self._worst = max(self._worst, loop.time() - before - self.PERIOD)

    def take(self) -> float:
        worst, self._worst = self._worst, 0.0
        return round(worst, 6)


def _commit(run: RunDir, line: dict[str, Any], checkpoint: dict[str, Any]) -> float:
    """Append the metrics line, then write the checkpoint; return the seconds the checkpoint took.

    The line goes first: a resumed run drops the lines past its checkpoint. One call, so that
    a cancellation waits for both rather than falling between them.
    """
    run.append_metrics(line)
    started = time.perf_counter()
    write_checkpoint(checkpoint, run.checkpoint)
    return time.perf_counter() - started


def check_resumable(run: RunDir, cfg: RunConfig) -> None:
    """Raise RunError if ``run`` cannot be resumed with ``cfg``; reads and changes no file but
    the checkpoint and metrics it reads (as :func:`train_session` with ``resume=True`` would)."""
    model = TinyChess(cfg.model)
    rng = torch.get_rng_state()
    try:
        _restore(run, cfg, model, Trainer(model, cfg.train))
    finally:
        torch.set_rng_state(rng)


def _restore(run: RunDir, cfg: RunConfig, model: TinyChess, trainer: Trainer) -> Restored:
    """Load ``run``'s checkpoint into ``model`` and ``trainer`` and return where it stopped (a
    run stopped before its first checkpoint starts again at iteration 0). Writes no file.

    :raises RunError: the checkpoint does not load, does not fit ``cfg``, or is missing while
        metrics.jsonl holds more than what a run stopped before its first checkpoint leaves
        (the line of iteration 0, written just before that checkpoint).
    """
    if not run.checkpoint.exists():
        lines = run.read_metrics()
        if len(lines) > 1 or any(line.get("iteration") != 0 for line in lines):
            raise RunError(
                f"{run.checkpoint}: missing, but {run.metrics} holds {len(lines)} iteration(s); "
                "restore the checkpoint or start a new run in another --run-dir"
            )
        return Restored(next_iteration=0, version=0, pending_plays=[])
    return restore_checkpoint(run.checkpoint, cfg, model, trainer)


def _plot(history: list[dict[str, Any]], path: Path) -> str | None:
    """Draw the curves (in the writer process); return what went wrong, if anything."""
    from asp.app.curves import plot_curves

    try:
        plot_curves(history, path)
    except Exception as e:  # noqa: BLE001 (reported by the caller, never raised)
        return repr(e)
    return None
