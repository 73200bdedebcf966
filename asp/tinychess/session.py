"""The TinyChess training session behind ``asp train``: pipeline + trainer + run directory.

:func:`train_session` is the main job of asp: it plays and trains with :class:`asp.Pipeline`,
evaluates against a uniformly random mover, and after every iteration writes the
iteration's games, a metrics line, an atomic checkpoint and the curves.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import structlog
import torch

from asp.pipeline import IterationReport, Pipeline
from asp.selfplay import SelfPlay
from asp.tinychess.evaluate import elo_from_score
from asp.tinychess.model import TinyChess
from asp.tinychess.opponents import RandomMover
from asp.tinychess.records import write_pgn
from asp.tinychess.run import RunConfig, RunDir, RunError, load_checkpoint
from asp.tinychess.train import Trainer

__all__ = ["evaluate_vs_random", "train_session"]

log = structlog.get_logger("asp.train")

Progress = Callable[[str, dict[str, Any]], None]
"""``progress(kind, fields)``: kind is ``games`` (iteration, done, total) or ``iteration``
(the metrics line) — how a display follows the run."""


async def evaluate_vs_random(
    selfplay: SelfPlay, model: torch.nn.Module, cfg: RunConfig, version: int
) -> dict[str, Any]:
    """Score of ``model`` against a uniformly random mover over ``cfg.eval_games`` games."""
    records, stats = await selfplay.play(model, RandomMover(), cfg.eval_cfg(version))
    draws = sum(1 for r in records if r.result == "1/2-1/2")
    score = float(stats["score"])
    elo = elo_from_score(score, n_games=len(records), draw_ratio=draws / len(records))
    wins = sum(1 for r in records if r.model_score() == 1.0)
    return {
        "eval/score": score,
        "eval/games": len(records),
        "eval/wins": wins,
        "eval/draws": draws,
        "eval/losses": len(records) - wins - draws,
        "eval/elo": round(elo.elo, 1),
        "eval/elo_low": round(elo.elo_low, 1),
        "eval/elo_high": round(elo.elo_high, 1),
        "eval/seconds": stats["seconds"],
    }


def _metrics_line(report: IterationReport) -> dict[str, Any]:
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
) -> list[dict[str, Any]]:
    """Run (or resume) a training run in ``run``; return every iteration's metrics line."""
    notify = progress or (lambda kind, fields: None)
    torch.manual_seed(cfg.seed)
    model = TinyChess(cfg.model)
    trainer = Trainer(model, cfg.train)
    start, version, first_play = 0, 0, None
    if resume and run.checkpoint.exists():
        state = load_checkpoint(run.checkpoint)
        try:
            model.load_state_dict(state["model"])
            trainer.optimizer.load_state_dict(state["optimizer"])
            trainer.rng.setstate(_as_rng_state(state["trainer_rng"]))
            trainer.steps = state["trainer_steps"]
            torch.set_rng_state(state["torch_rng"])
            if state["play_weights"] is not None:
                first_play = TinyChess(cfg.model)
                first_play.load_state_dict(state["play_weights"])
        except (KeyError, RuntimeError, ValueError, TypeError) as e:
            raise RunError(f"{run.checkpoint}: checkpoint does not match its config ({e})") from None
        start, version = state["next_iteration"], state["version"]
        history = run.truncate_metrics(start)
        log.info("run_resumed", run=str(run.path), next_iteration=start, version=version)
    elif resume:
        history = run.truncate_metrics(0)  # started, but stopped before its first checkpoint
        log.info("run_restarted", run=str(run.path))
    else:
        run.create(cfg)
        history = []
        log.info("run_started", run=str(run.path), config=cfg.to_dict())
    if start >= cfg.iterations:
        return history

    def on_shard(iteration: int, done: int, total: int) -> None:
        notify("games", {"iteration": iteration, "done": done, "total": total})

    async with SelfPlay(workers=workers, threads_per_worker=threads_per_worker) as selfplay:
        pipeline = Pipeline(
            selfplay, model, train=trainer.train, play_cfg=cfg.play_cfg, overlap=cfg.overlap, on_shard=on_shard
        )
        async for report in pipeline.run(cfg.iterations - start, start=start, version=version, first_play=first_play):
            started = time.perf_counter()
            write_pgn(report.records, run.games(report.iteration))
            line = _metrics_line(report)
            last = report.iteration + 1 == cfg.iterations
            if last or (report.iteration + 1) % cfg.eval_every == 0:
                notify("evaluating", {"iteration": report.iteration})
                line.update(await evaluate_vs_random(selfplay, model, cfg, report.version_trained + 1))
            run.append_metrics(line)
            next_weights = report.next_play_weights
            run.save(
                trainer,
                cfg,
                next_iteration=report.iteration + 1,
                version=report.version_trained + 1,
                play_weights=next_weights.state_dict() if next_weights is not None else None,
            )
            history.append(line)
            _plot_safely(run, history)
            line["time/artefacts"] = round(time.perf_counter() - started, 3)
            log.info("iteration_saved", iteration=report.iteration, checkpoint=str(run.checkpoint),
                     score=line.get("eval/score"))  # fmt: skip
            notify("iteration", line)
    return history


def _as_rng_state(state: Any) -> tuple[Any, ...]:
    # torch.load gives the tuple back as it was saved; lists only if a tool rewrote it.
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


def _plot_safely(run: RunDir, history: list[dict[str, Any]]) -> None:
    from asp.tinychess.curves import plot_curves

    try:
        plot_curves(history, run.curves)
    except Exception as e:  # a plot must never stop training
        log.warning("curves_failed", error=repr(e))
