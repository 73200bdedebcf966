"""The train/play pipeline: self-play of iteration k+1 overlaps training on iteration k.

Game-agnostic: it needs a :class:`~asp.SelfPlay`, the model being trained, a ``train``
function that learns from one iteration's records (synchronous: it runs in a thread, so the
event loop keeps dispatching shards meanwhile) and a ``play_cfg`` function that says what to
play in each iteration.

Versions: the weights that played iteration k are version k; training on iteration k's games
makes version k+1. With ``overlap=True`` iteration k+1 is played by a snapshot of version k
while training on k produces k+1, so its games are one version stale when they are trained
on; the report of every iteration says so. ``max_staleness=0`` or ``overlap=False`` runs the
same loop sequentially: every game is played by the latest weights.

>>> import asyncio
>>> from asp import SelfPlay
>>> from asp.tinychess import ModelConfig, PlayConfig, TinyChess
>>> model = TinyChess(ModelConfig(hidden=16, blocks=0))
>>> def cfg(iteration, version):
...     return PlayConfig(n_games=2, max_plies=4, first_game=2 * iteration, model_version=version)
>>> async def main():
...     async with SelfPlay(workers=1) as selfplay:
...         pipeline = Pipeline(selfplay, model, train=lambda records: {"n": len(records)}, play_cfg=cfg)
...         return [(r.iteration, r.version_played, r.staleness) async for r in pipeline.run(3)]
>>> asyncio.run(main())
[(0, 0, 0), (1, 0, 1), (2, 1, 1)]
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from torch import nn

from asp.errors import AspError, ConfigError
from asp.selfplay import SelfPlay
from asp.shield import finish_in_thread, finish_thread_call, wait_out

__all__ = ["IterationReport", "Pipeline"]

log = structlog.get_logger("asp.pipeline")

TrainFn = Callable[[list[Any]], dict[str, Any]]
PlayCfgFn = Callable[[int, int], Any]


@dataclass
class IterationReport:
    """What happened in one iteration of :meth:`Pipeline.run`."""

    iteration: int
    """Index of the iteration (0-based, counting from the run's first iteration)."""
    version_played: int
    """Version of the weights that played this iteration's games."""
    version_trained: int
    """Version of the weights that trained on them (the model's version before training)."""
    staleness: int
    """``version_trained - version_played``: versions between playing and training."""
    records: list[Any]
    """This iteration's games."""
    play_stats: dict[str, Any]
    """SelfPlay's stats of this iteration's games."""
    train_metrics: dict[str, Any]
    """What ``train`` returned."""
    play_seconds: float
    """Wall time of this iteration's self-play."""
    train_seconds: float
    """Wall time of training on this iteration."""
    overlap_seconds: float
    """Time during which this iteration's training and the next iteration's play ran together."""
    wall_seconds: float
    """Wall time of the iteration, from the end of the previous report to the end of training."""
    next_play_weights: nn.Module | None = None
    """Overlapped runs: a snapshot of the weights that play the next iteration (also after the
    last iteration, for a run extended later); a checkpoint that keeps them lets a resumed run
    replay that iteration exactly. None when sequential."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for the caller (evaluation results, paths of artefacts)."""


@dataclass
class _Play:
    """One iteration's self-play, running as a task."""

    task: asyncio.Task[tuple[list[Any], dict[str, Any]]]
    version: int
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        # Once only: a second cancel would break into the play's shielded clean-up.
        if not self.cancelled:
            self.cancelled = True
            self.task.cancel()


class Pipeline:
    """Drives self-play and training, overlapped or not (see the module docstring)."""

    def __init__(
        self,
        selfplay: SelfPlay,
        model: nn.Module,
        *,
        train: TrainFn,
        play_cfg: PlayCfgFn,
        opponent: nn.Module | None = None,
        overlap: bool = True,
        max_staleness: int = 1,
        on_shard: Callable[[int, int, int], None] | None = None,
    ) -> None:
        """
        :param train: learns from one iteration's records, in place on ``model``; returns metrics.
        :param play_cfg: ``play_cfg(iteration, version)`` -> the play_fn config of an iteration;
            its ``model_version`` should be ``version``.
        :param opponent: the opponent network of every game (None: self-play).
        :param overlap: play iteration k+1 while training on k.
        :param max_staleness: the most versions a game may lag behind the weights that train
            on it (0 or 1; 0 turns overlap off).
        :param on_shard: called as ``on_shard(iteration, games_done, games_total)`` each time a
            shard of games arrives (progress displays).
        """
        if not isinstance(max_staleness, int) or isinstance(max_staleness, bool) or not 0 <= max_staleness <= 1:
            raise ConfigError(f"Pipeline max_staleness must be 0 or 1, got {max_staleness!r}")
        self.selfplay = selfplay
        self.model = model
        self.train = train
        self.play_cfg = play_cfg
        self.opponent = opponent
        self.overlap = overlap and max_staleness >= 1
        self.on_shard = on_shard

    async def _play(self, iteration: int, version: int, weights: nn.Module) -> tuple[list[Any], dict[str, Any]]:
        cfg = self.play_cfg(iteration, version)
        # Keyed by game id: a shard run twice (execution is at-least-once) counts once.
        by_id: dict[int, Any] = {}
        worker_seconds = 0.0
        async with contextlib.aclosing(self.selfplay.stream(weights, self.opponent, cfg)) as shards:
            async for shard in shards:
                worker_seconds += shard.seconds
                for record in shard.records:
                    by_id.setdefault(record.game_id, record)
                if self.on_shard is not None:
                    self.on_shard(iteration, len(by_id), cfg.n_games)
        expected = range(cfg.first_game, cfg.first_game + cfg.n_games)
        missing = [i for i in expected if i not in by_id]
        extra = sorted(i for i in by_id if i not in expected)
        if missing or extra:
            raise AspError(
                f"iteration {iteration}: the play_fn's games do not match the ids {expected.start}.."
                f"{expected.stop - 1}: missing {_some(missing)}, unexpected {_some(extra)}"
            )
        records = [by_id[i] for i in expected]
        stats = self.selfplay.summarise(records)
        stats.update(workers=self.selfplay.workers, worker_seconds=worker_seconds)
        return records, stats

    def _start_play(self, iteration: int, version: int, weights: nn.Module) -> _Play:
        # ``weights`` must not change while the games are played: a play that overlaps training
        # is handed a snapshot; the others are awaited before anything trains.
        task = asyncio.create_task(self._play(iteration, version, weights), name=f"asp-play-{iteration}")
        play = _Play(task, version)
        task.add_done_callback(lambda _: setattr(play, "ended", time.perf_counter()))
        return play

    async def run(
        self,
        iterations: int,
        *,
        start: int = 0,
        version: int | None = None,
        first_play: nn.Module | None = None,
    ) -> AsyncGenerator[IterationReport, None]:
        """Run iterations ``start .. start + iterations - 1``, yielding a report after each.

        ``version`` is the model's version now (default ``start``). To resume an overlapped
        run exactly, pass as ``first_play`` the weights that were playing iteration ``start``
        when the run stopped (:attr:`IterationReport.next_play_weights` of the last report,
        one version older than ``version``).

        Training and copying weights run in threads. However ``run`` is left (exhausted, an
        error, cancellation, ``aclose()``), it first waits for the train call in progress and
        for the play in flight to stop: once it is left, nothing of it changes the model or
        plays. A cancellation that arrives during that clean-up is re-raised after it, unless
        an error is already on its way out: as with :class:`asyncio.TaskGroup`, the error wins.

        :raises AspError: when an iteration's games lack an id of ``cfg.first_game ..
            cfg.first_game + cfg.n_games - 1`` or have one outside it (of an id that comes
            twice, the first record is kept).
        """
        version = start if version is None else version
        end = start + iterations
        play: _Play | None = None
        if first_play is not None:
            play = self._start_play(start, version - 1, first_play)
        error: BaseException | None = None
        try:
            boundary = time.perf_counter()
            for iteration in range(start, end):
                if play is None:
                    play = self._start_play(iteration, version, self.model)
                # Not ``await play.task``: our cancellations would reach into the play's clean-up;
                # ``_stop`` cancels it once.
                await asyncio.wait({play.task})
                records, play_stats = play.task.result()
                done = play
                play = None
                snapshot = None
                if self.overlap:
                    # The weights that play (or, after the last iteration, would play) the next
                    # iteration: a run extended later replays it with exactly these.
                    snapshot = await finish_in_thread(copy.deepcopy, self.model)
                    if iteration + 1 < end:
                        play = self._start_play(iteration + 1, version, snapshot)
                train_started = time.perf_counter()
                # Cancelled while training: the play in flight stops while the train call ends.
                metrics = await finish_thread_call(
                    functools.partial(self.train, records), on_cancel=play.cancel if play is not None else None
                )
                train_ended = time.perf_counter()
                overlap = 0.0
                if play is not None:
                    play_end = play.ended if play.ended is not None else train_ended
                    overlap = max(0.0, min(train_ended, play_end) - max(train_started, play.started))
                assert done.ended is not None
                report = IterationReport(
                    iteration=iteration,
                    version_played=done.version,
                    version_trained=version,
                    staleness=version - done.version,
                    records=records,
                    play_stats=play_stats,
                    train_metrics=metrics,
                    play_seconds=done.ended - done.started,
                    train_seconds=train_ended - train_started,
                    overlap_seconds=overlap,
                    wall_seconds=train_ended - boundary,
                    next_play_weights=snapshot,
                )
                version += 1
                log.info("iteration_done", iteration=iteration, version_played=done.version,
                         staleness=report.staleness, games=len(records),
                         play_seconds=round(report.play_seconds, 3),
                         train_seconds=round(report.train_seconds, 3),
                         overlap_seconds=round(overlap, 3))  # fmt: skip
                yield report
                boundary = time.perf_counter()
        except BaseException as e:
            error = e
            raise
        finally:
            cancelled = await self._stop(play, error)
            if cancelled and (error is None or isinstance(error, GeneratorExit)):
                raise asyncio.CancelledError

    async def _stop(self, play: _Play | None, error: BaseException | None) -> bool:
        """Cancel the play in flight and wait until it has stopped; True if we were cancelled meanwhile."""
        if play is None:
            return False
        play.cancel()
        cancelled = await wait_out(play.task)
        failure = None if play.task.cancelled() else play.task.exception()
        if failure is not None and failure is not error:
            # Never raised: the error or cancellation that ended the run says why it ended.
            log.warning("play_failed_while_stopping", error=repr(failure))
        return cancelled


def _some(ids: list[int]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(map(str, ids[:10]))
    return f"[{shown}]" if len(ids) <= 10 else f"[{shown}, ...] ({len(ids)} in all)"
