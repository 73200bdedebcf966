"""The train/play pipeline: self-play runs ahead of training, within a staleness bound.

Game-agnostic: it needs a :class:`~asp.SelfPlay`, the model being trained, a ``train``
function that learns from one iteration's records (synchronous: it runs in a thread, so the
event loop keeps dispatching shards meanwhile) and a ``play_cfg`` function that says what to
play in each iteration.

Versions: training on iteration k's games makes the model's next version, so iteration k is
trained by version ``version + k`` (counting from the run's first iteration). Self-play runs
in its own task, one iteration after another, each with a snapshot of the newest weights
that training has finished; it starts iteration k only once the newest version is at most
``max_staleness`` versions older than the one that will train on k. So no game is ever more
than ``max_staleness`` versions stale when it is trained on (nothing needs dropping), and:

* ``max_staleness=0`` (or ``overlap=False``): sequential, every game played by the latest
  weights; workers wait while the trainer trains, and the trainer while they play;
* ``max_staleness=1`` (the default): iteration k+1 is played while training on k, one version
  stale; workers that finish k+1 before training on k is done wait for it;
* ``max_staleness=N >= 2``: continuous self-play: workers go on to k+2, k+3 ... while training
  is slow, so they wait for the trainer only when self-play is N iterations ahead.

Each report says which version played its games, how stale they were, and the idle
time of the workers and the trainer during the iteration.

Training and copying weights run in threads. However :meth:`Pipeline.run` is left
(exhausted, an error, cancellation, ``aclose()``), it first waits for the train call in
progress and for the self-play in flight to stop: once it is left, nothing of it changes the
model or plays. A cancellation that arrives while a train call runs waits for the call to
return; the iteration it trained is then reported (yielded) as usual, so the caller can save
what the model learnt, and the cancellation is raised when the caller asks for the next
report. A cancellation that arrives during that clean-up is re-raised after it, unless an
error is already on its way out: as with :class:`asyncio.TaskGroup`, the error wins.

>>> import asyncio
>>> from asp import SelfPlay
>>> from asp.games import PlayConfig
>>> from asp.tinychess.game import TinyChessGame
>>> from asp.tinychess.model import ModelConfig
>>> chess = TinyChessGame()
>>> model = chess.network(ModelConfig(hidden=16, blocks=0))
>>> def cfg(iteration, version):
...     return PlayConfig(chess, n_games=2, max_plies=4, first_game=2 * iteration, model_version=version)
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

from asp.errors import AspError, IterationFailed, NotRetried, ShardFailed
from asp.selfplay import SelfPlay, ShardResult
from asp.selfplay.calls import collect_games
from asp.util.checks import check_int
from asp.util.cleanup import finish_in_thread, thread_call, wait_out

__all__ = ["MAX_STALENESS", "IterationReport", "Pipeline"]

log = structlog.get_logger("asp.pipeline")

TrainFn = Callable[[list[Any]], dict[str, Any]]
PlayCfgFn = Callable[[int, int], Any]


MAX_STALENESS = 16
"""The largest ``max_staleness`` a Pipeline (and ``asp train --max-staleness``) accepts."""


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
    """Time during which this iteration's training and self-play (of later iterations) ran together."""
    wall_seconds: float
    """Wall time of the iteration, from the previous report (so including what the caller did
    with it) to the end of training: the walls of a run add up to its wall time."""
    trained_weights: nn.Module | None = None
    """Overlapped runs: a snapshot of the weights training on this iteration made (version
    ``version_trained + 1``), which nothing changes (the model itself trains on). None when
    sequential."""
    pending_plays: list[tuple[int, nn.Module]] = field(default_factory=list)
    """Overlapped runs: ``(version, weights)`` of every later iteration whose self-play has
    begun, in order (with the next one's after the last iteration). Their games are lost if
    the run stops here; a checkpoint that keeps these lets a resumed run play those iterations
    again with the same weights (``Pipeline.run(first_plays=...)``)."""
    worker_idle_seconds: float = 0.0
    """Worker-seconds, summed over the workers, spent outside any shard during ``wall_seconds``
    (shards of any call of the SelfPlay count as busy, an evaluation's too; a shard counts for
    the time it ran within ``wall_seconds``, see :attr:`SelfPlay.busy_seconds`)."""
    trainer_idle_seconds: float = 0.0
    """Seconds of ``wall_seconds`` during which the trainer was not training."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for the caller (evaluation results, paths of artefacts)."""


@dataclass
class _Played:
    """One iteration's self-play: begun, then done."""

    iteration: int
    version: int
    weights: nn.Module
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None
    records: list[Any] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Run:
    """What the trainer and the player task of one :meth:`Pipeline.run` share."""

    start: int
    end: int
    first_version: int
    latest: tuple[int, nn.Module]
    """The newest version that training has finished, and weights that hold it unchanging."""
    resumed: list[tuple[int, nn.Module]]
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    begun: list[_Played] = field(default_factory=list)
    """Iterations whose self-play has begun and that are not trained yet, in order."""
    done: asyncio.Queue[_Played] = field(default_factory=asyncio.Queue)
    after_last: tuple[int, nn.Module] | None = None
    """The weights that would play the iteration after the last."""

    def trained_by(self, iteration: int) -> int:
        return self.first_version + iteration - self.start


class _Task:
    """The player task, cancelled once only: a second cancel would break into the play's
    shielded clean-up."""

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task
        self.cancelled = False

    def cancel(self) -> None:
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
        overlap: bool = True,
        max_staleness: int = 1,
        on_shard: Callable[[int, int, int], None] | None = None,
    ) -> None:
        """
        :param train: learns from one iteration's records, in place on ``model``; returns metrics.
        :param play_cfg: ``play_cfg(iteration, version)`` -> the play_fn config of an iteration;
            its ``model_version`` should be ``version``.
        :param overlap: play later iterations while training (False: ``max_staleness=0``).
        :param max_staleness: the most versions a game may lag behind the weights that train
            on it (0 to 16; 0 turns overlap off).
        :param on_shard: called as ``on_shard(iteration, games_done, games_total)`` each time a
            shard of games arrives (progress displays).
        """
        check_int("Pipeline.max_staleness", max_staleness, 0, MAX_STALENESS)
        self.selfplay = selfplay
        self.model = model
        self.train = train
        self.play_cfg = play_cfg
        self.max_staleness = max_staleness if overlap else 0
        self.overlap = self.max_staleness >= 1
        self.on_shard = on_shard

    async def _play(self, iteration: int, version: int, weights: nn.Module) -> tuple[list[Any], dict[str, Any]]:
        cfg = self.play_cfg(iteration, version)
        shards: list[ShardResult] = []
        games = 0
        async with contextlib.aclosing(self.selfplay.stream(weights, None, cfg)) as results:
            async for shard in results:
                shards.append(shard)
                games += shard.n_games
                if self.on_shard is not None:
                    self.on_shard(iteration, games, cfg.n_games)
        records = collect_games((r for shard in shards for r in shard.records), cfg, f"iteration {iteration}")
        worker_seconds = sum(shard.seconds for shard in shards)
        stats = self.selfplay.summarise(records, cfg, (shard.stats for shard in shards))
        stats.update(workers=self.selfplay.workers, worker_seconds=worker_seconds)
        return records, stats

    async def _player(self, run: _Run) -> None:
        """Self-play of iterations ``run.start ..`` one after the other, within the staleness bound."""
        for iteration in range(run.start, run.end + 1):
            index = iteration - run.start
            if index < len(run.resumed):
                version, weights = run.resumed[index]  # begun before the run stopped: the same weights
            else:
                while run.trained_by(iteration) - run.latest[0] > self.max_staleness:
                    run.changed.clear()
                    await run.changed.wait()
                version, weights = run.latest
            if iteration == run.end:
                run.after_last = (version, weights)
                return
            task = asyncio.current_task()
            if task is not None:
                task.set_name(f"asp-play-{iteration}")
            played = _Played(iteration, version, weights)
            run.begun.append(played)
            try:
                played.records, played.stats = await self._play(iteration, version, weights)
            except ShardFailed as e:
                if isinstance(e.error, NotRetried):  # a broken game, a network that outputs NaN
                    raise IterationFailed(iteration, e.error) from e
                raise
            played.ended = time.perf_counter()
            run.done.put_nowait(played)

    async def _next_done(self, run: _Run, player: _Task) -> _Played:
        """The next iteration's finished self-play (or the error that ended the player)."""
        get = asyncio.ensure_future(run.done.get())
        try:
            await asyncio.wait({get, player.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not get.done():
                get.cancel()
        if get.done() and not get.cancelled():
            return get.result()
        player.task.result()  # raises what ended it
        raise AspError("self-play stopped before the iteration was played")  # pragma: no cover

    async def run(
        self,
        iterations: int,
        *,
        start: int = 0,
        version: int | None = None,
        first_plays: list[tuple[int, nn.Module]] | None = None,
    ) -> AsyncGenerator[IterationReport, None]:
        """Run iterations ``start .. start + iterations - 1``, yielding a report after each.

        ``version`` is the model's version now (default ``start``). To resume an overlapped
        run exactly, pass as ``first_plays`` the ``(version, weights)`` of the iterations whose
        self-play had begun when the run stopped (:attr:`IterationReport.pending_plays` of the
        last report); they are played again with those weights. How it stops: see the module's
        docstring.

        :raises AspError: when an iteration's games lack an id of ``cfg.first_game ..
            cfg.first_game + cfg.n_games - 1`` or have one outside it (of an id that comes
            twice, the first record is kept).
        :raises IterationFailed: when an iteration's self-play or training fails in a way that
            another attempt would only repeat (:class:`~asp.errors.NotRetried`: a game that
            breaks the protocol, a network that outputs NaN); its report is never yielded.
        """
        version = start if version is None else version
        resumed = list(first_plays or [])
        end = start + iterations
        # Sequential: plays use the model itself (nothing trains while they play); overlapped:
        # a snapshot per version, since training changes the model while later iterations play.
        weights = await finish_in_thread(copy.deepcopy, self.model) if self.overlap else self.model
        run = _Run(start, end, version, (version, weights), resumed)
        player = _Task(asyncio.create_task(self._player(run), name=f"asp-play-{start}"))
        error: BaseException | None = None
        try:
            boundary, busy_before = time.perf_counter(), self.selfplay.busy_seconds
            for iteration in range(start, end):
                done = await self._next_done(run, player)
                assert done.iteration == iteration and done.ended is not None
                train_started = time.perf_counter()
                metrics, interrupted = await self._train(done, player)
                train_ended = time.perf_counter()
                version += 1
                latest = await self._publish(run, done, version)
                pending = await self._pending(run, player, last=iteration + 1 == end and not interrupted)
                overlap = sum(_overlap(p, train_started, train_ended) for p in run.begun)
                times = (boundary, train_started, train_ended, overlap)
                report = self._report(iteration, done, version - 1, metrics, times, busy_before, latest, pending)
                # The next iteration's time runs from here: what the caller does with this report
                # (evaluating, writing files) is part of it, so the walls add up to the run's.
                boundary, busy_before = time.perf_counter(), self.selfplay.busy_seconds
                yield report
                if interrupted:
                    raise asyncio.CancelledError
        except BaseException as e:
            error = e
            raise
        finally:
            cancelled = await self._stop(player, error)
            if cancelled and (error is None or isinstance(error, GeneratorExit)):
                raise asyncio.CancelledError

    async def _train(self, done: _Played, player: _Task) -> tuple[dict[str, Any], bool]:
        """Train on ``done``'s games in a thread: ``(metrics, interrupted)``. Cancelled while
        training, self-play stops while the train call ends, and ``interrupted`` is True: the
        iteration it trained is reported before the cancellation goes on."""
        training, interrupted = await thread_call(functools.partial(self.train, done.records), on_cancel=player.cancel)
        try:
            return training.result(), interrupted
        except NotRetried as e:
            raise IterationFailed(done.iteration, e) from e

    async def _publish(self, run: _Run, done: _Played, version: int) -> nn.Module:
        """Make the model, just trained on ``done``, the newest weights that self-play takes,
        as ``version``: a snapshot when plays overlap training, else the model itself."""
        run.begun.remove(done)
        latest = await finish_in_thread(copy.deepcopy, self.model) if self.overlap else self.model
        run.latest = (version, latest)
        run.changed.set()
        return latest

    async def _pending(self, run: _Run, player: _Task, *, last: bool) -> list[tuple[int, nn.Module]]:
        """The ``(version, weights)`` of the plays that have begun; after the ``last`` iteration
        of an overlapped run, with the weights the iteration after it would play."""
        pending = [(p.version, p.weights) for p in run.begun]
        if last and self.overlap:
            await asyncio.wait({player.task})  # it notes the weights of the iteration after
            player.task.result()
            if run.after_last is not None:
                pending.append(run.after_last)
        return pending

    def _report(
        self,
        iteration: int,
        done: _Played,
        trained: int,
        metrics: dict[str, Any],
        times: tuple[float, float, float, float],
        busy_before: float,
        latest: nn.Module,
        pending: list[tuple[int, nn.Module]],
    ) -> IterationReport:
        """The report of ``iteration``, played as ``done`` and trained into version ``trained``;
        ``times`` are the iteration's start, the train call's start and end, and the seconds
        self-play overlapped it. Logged as ``iteration_done``."""
        boundary, train_started, train_ended, overlap = times
        assert done.ended is not None
        wall = train_ended - boundary
        busy = self.selfplay.busy_seconds - busy_before
        report = IterationReport(
            iteration=iteration,
            version_played=done.version,
            version_trained=trained,
            staleness=trained - done.version,
            records=done.records,
            play_stats=done.stats,
            train_metrics=metrics,
            play_seconds=done.ended - done.started,
            train_seconds=train_ended - train_started,
            overlap_seconds=overlap,
            wall_seconds=wall,
            trained_weights=latest if self.overlap else None,
            pending_plays=pending,
            worker_idle_seconds=max(0.0, self.selfplay.workers * wall - busy),
            trainer_idle_seconds=max(0.0, wall - (train_ended - train_started)),
        )
        log.info("iteration_done", iteration=iteration, version_played=done.version,
                 staleness=report.staleness, games=len(done.records),
                 play_seconds=round(report.play_seconds, 3),
                 train_seconds=round(report.train_seconds, 3),
                 overlap_seconds=round(overlap, 3), pending=len(pending),
                 worker_idle_seconds=round(report.worker_idle_seconds, 3),
                 trainer_idle_seconds=round(report.trainer_idle_seconds, 3))  # fmt: skip
        return report

    async def _stop(self, player: _Task, error: BaseException | None) -> bool:
        """Cancel the self-play in flight and wait until it has stopped; True if we were cancelled meanwhile."""
        cancelled = False
        if not player.task.done():
            player.cancel()
            cancelled = await wait_out(player.task)
        failure = None if player.task.cancelled() else player.task.exception()
        if failure is not None and failure is not error:
            # Never raised: the error or cancellation that ended the run says why it ended.
            log.warning("play_failed_while_stopping", error=repr(failure))
        return cancelled


def _overlap(played: _Played, start: float, end: float) -> float:
    """Seconds of [start, end] during which ``played`` was being played."""
    played_end = played.ended if played.ended is not None else end
    return max(0.0, min(end, played_end) - max(start, played.started))
