"""Pipeline: overlapped and sequential train/play loops over real SelfPlay pools.

Pools serve the whole module (starting spawn workers is the slow part): one plays TinyChess,
one :func:`asp.testing.fault_play`, whose records say which weights played them
(``weight_sum``) and whose slow games keep a play in flight long enough to cancel it, and
one :func:`pipeline_helpers.id_play`, whose game ids are wrong on purpose. The ``train``
functions are fakes: they count calls, set every parameter to a constant, or keep changing
the weights for a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
import torch
from helpers import wait_until
from pipeline_helpers import IdConfig, id_play
from torch import nn

from asp import AspError, ConfigError, IterationReport, Pipeline, SelfPlay
from asp.errors import IterationFailed, NonFiniteError
from asp.games import PlayConfig
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

TINY = ModelConfig(hidden=16, blocks=0)
CHESS = TinyChessGame()
N = 4  # games per iteration
module_loop = pytest.mark.asyncio(loop_scope="module")


def tiny() -> TinyChess:
    return TinyChess(TINY)


def chess_cfg(iteration: int, version: int) -> PlayConfig:
    return PlayConfig(CHESS, n_games=N, max_plies=4, first_game=N * iteration, seed=iteration, model_version=version)


def echo_cfg(iteration: int, version: int) -> FaultConfig:
    return FaultConfig(n_games=N, plies=2, first_game=N * iteration, model_version=version)


def slow_cfg(iteration: int, version: int) -> FaultConfig:
    """Games of 100 heartbeats 10 ms apart: about a second each, cancellable at every ply."""
    return FaultConfig(n_games=N, plies=100, delay=0.01, first_game=N * iteration, model_version=version)


def weight_sum(model: nn.Module) -> float:
    with torch.no_grad():
        return float(sum(p.sum() for p in model.parameters()))


def play_tasks() -> list[asyncio.Task[Any]]:
    """The pipeline's play tasks that have not finished."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("asp-play-") and not t.done()]


class CountingTrain:
    """A fake ``train``: remembers the game ids of every call, changes nothing."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, records: list[Any]) -> dict[str, Any]:
        self.calls.append([r.game_id for r in records])
        return {"games": len(records), "call": len(self.calls)}


class FillTrain:
    """A fake ``train`` that sets every parameter of ``model`` to the number of the call (1, 2...)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.calls = 0

    def __call__(self, records: list[Any]) -> dict[str, Any]:
        self.calls += 1
        with torch.no_grad():
            for p in self.model.parameters():
                p.fill_(float(self.calls))
        return {"filled": self.calls}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chess_pool() -> AsyncIterator[SelfPlay]:
    async with SelfPlay(workers=2) as selfplay:
        yield selfplay


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def echo_pool() -> AsyncIterator[SelfPlay]:
    async with SelfPlay(workers=2, play_fn=fault_play) as selfplay:
        yield selfplay


async def run_all(pipeline: Pipeline, iterations: int, **kwargs: Any) -> list[IterationReport]:
    return [report async for report in pipeline.run(iterations, **kwargs)]


def ids(records: list[Any]) -> list[int]:
    return [r.game_id for r in records]


# -- versions and staleness ------------------------------------------------------------------


@pytest.mark.timeout(120)
@module_loop
@pytest.mark.slow
async def test_overlapped_iterations_are_one_version_stale_after_the_first(chess_pool: SelfPlay) -> None:
    train = CountingTrain()
    shards: list[tuple[int, int, int]] = []
    pipeline = Pipeline(chess_pool, tiny(), train=train, play_cfg=chess_cfg, on_shard=lambda *a: shards.append(a))
    reports = await run_all(pipeline, 3)

    assert [(r.iteration, r.version_played, r.version_trained, r.staleness) for r in reports] == [
        (0, 0, 0, 0),
        (1, 0, 1, 1),
        (2, 1, 2, 1),
    ]
    for r in reports:
        assert ids(r.records) == list(range(N * r.iteration, N * (r.iteration + 1)))
        assert {rec.model_version for rec in r.records} == {r.version_played}
        assert r.train_metrics == {"games": N, "call": r.iteration + 1}
        assert r.play_stats["games"] == N
        # overlap is a part of training, training a part of the iteration's wall time
        assert 0 < r.play_seconds and 0 <= r.overlap_seconds <= r.train_seconds <= r.wall_seconds
    assert train.calls == [list(range(N * i, N * (i + 1))) for i in range(3)]
    # The snapshot of the next iteration's weights, after the last one too (a run extended later).
    assert [[v for v, _ in r.pending_plays] for r in reports] == [[0], [1], [2]]

    # on_shard: per iteration, games done rise to n_games, out of n_games.
    for iteration in range(3):
        done = [d for i, d, _ in shards if i == iteration]
        assert done == sorted(set(done)) and done[-1] == N, shards
        assert {t for i, _, t in shards if i == iteration} == {N}
    assert not play_tasks()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("options", [{"overlap": False}, {"max_staleness": 0}], ids=["overlap=False", "staleness=0"])
@module_loop
async def test_sequential_runs_play_every_iteration_with_the_latest_weights(
    chess_pool: SelfPlay, options: dict[str, Any]
) -> None:
    train = CountingTrain()
    reports = await run_all(Pipeline(chess_pool, tiny(), train=train, play_cfg=chess_cfg, **options), 3)
    assert [(r.iteration, r.version_played, r.version_trained, r.staleness) for r in reports] == [
        (i, i, i, 0) for i in range(3)
    ]
    assert all(r.pending_plays == [] and r.overlap_seconds == 0.0 for r in reports)
    for r in reports:
        assert ids(r.records) == list(range(N * r.iteration, N * (r.iteration + 1)))
        assert {rec.model_version for rec in r.records} == {r.iteration}
    assert train.calls == [list(range(N * i, N * (i + 1))) for i in range(3)]


@pytest.mark.timeout(120)
@module_loop
async def test_both_modes_play_the_same_games_and_train_as_often(chess_pool: SelfPlay) -> None:
    results = {}
    for overlap in (True, False):
        train = CountingTrain()
        reports = await run_all(Pipeline(chess_pool, tiny(), train=train, play_cfg=chess_cfg, overlap=overlap), 4)
        results[overlap] = ([ids(r.records) for r in reports], train.calls)
    assert results[True] == results[False]
    games, calls = results[True]
    assert sum(len(g) for g in games) == 4 * N and len(calls) == 4


@pytest.mark.timeout(120)
@module_loop
async def test_start_and_version_name_the_iterations_and_no_iterations_is_nothing(chess_pool: SelfPlay) -> None:
    pipeline = Pipeline(chess_pool, tiny(), train=CountingTrain(), play_cfg=chess_cfg)
    reports = await run_all(pipeline, 2, start=5, version=7)
    assert [(r.iteration, r.version_played, r.version_trained) for r in reports] == [(5, 7, 7), (6, 7, 8)]
    assert ids(reports[0].records) == list(range(5 * N, 6 * N))
    assert await run_all(pipeline, 0) == []


# -- continuous self-play (max_staleness >= 2) -----------------------------------------------


class SlowFillTrain(FillTrain):
    """FillTrain that takes ``seconds`` per call: self-play gets ahead of it."""

    def __init__(self, model: nn.Module, seconds: float) -> None:
        super().__init__(model)
        self.seconds = seconds

    def __call__(self, records: list[Any]) -> dict[str, Any]:
        time.sleep(self.seconds)
        return super().__call__(records)


def filled(version: int, initial: float, n_params: int) -> float:
    """weight_sum of the weights of ``version`` under FillTrain: version v > 0 is all v."""
    return initial if version == 0 else float(version * n_params)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("max_staleness", [2, 3])
@module_loop
@pytest.mark.slow
async def test_continuous_self_play_runs_ahead_of_a_slow_trainer_within_the_bound(
    echo_pool: SelfPlay, max_staleness: int
) -> None:
    torch.manual_seed(0)
    model = tiny()
    initial, n_params = weight_sum(model), sum(p.numel() for p in model.parameters())
    # Playing an iteration takes a few ms, training one 0.4 s: self-play is as far ahead as allowed.
    pipeline = Pipeline(
        echo_pool, model, train=SlowFillTrain(model, 0.4), play_cfg=echo_cfg, max_staleness=max_staleness
    )
    reports = await run_all(pipeline, 6)
    played = [r.version_played for r in reports]
    assert [r.version_trained for r in reports] == list(range(6))
    assert [r.staleness for r in reports] == [t - p for t, p in zip(range(6), played, strict=True)]
    # Iteration k starts once version k - max_staleness exists, with the newest version there is.
    assert played == [max(0, k - max_staleness) for k in range(6)]
    for r in reports:
        assert {rec.model_version for rec in r.records} == {r.version_played}
        expected = filled(r.version_played, initial, n_params)
        assert all(rec.weight_sum == pytest.approx(expected) for rec in r.records)
        # The plays begun for later iterations: at most max_staleness of them, in order, and
        # each with the version it was started with.
        later = [v for v, _ in r.pending_plays]
        assert later == played[r.iteration + 1 : r.iteration + 1 + len(later)] or r.iteration == 5
        assert len(later) <= max_staleness
        for version, weights in r.pending_plays:
            assert weight_sum(weights) == pytest.approx(filled(version, initial, n_params))
        assert 0 <= r.trainer_idle_seconds <= r.wall_seconds
        assert 0 <= r.worker_idle_seconds <= echo_pool.workers * r.wall_seconds
    # After the first iteration the trainer never waits for games: they are ready before it is.
    assert all(r.trainer_idle_seconds < 0.2 for r in reports[1:])


@pytest.mark.timeout(120)
@module_loop
@pytest.mark.slow
async def test_a_continuous_run_resumed_from_its_pending_plays_plays_them_with_the_same_weights(
    echo_pool: SelfPlay,
) -> None:
    torch.manual_seed(0)
    model = tiny()
    initial, n_params = weight_sum(model), sum(p.numel() for p in model.parameters())
    pipeline = Pipeline(echo_pool, model, train=SlowFillTrain(model, 0.3), play_cfg=echo_cfg, max_staleness=3)
    async with contextlib.aclosing(pipeline.run(6)) as reports:
        async for report in reports:
            if report.iteration == 1:
                pending = [(v, copy.deepcopy(w)) for v, w in report.pending_plays]
                break  # the run stops after iteration 1: the plays of 2, 3 and 4 had begun
    assert [v for v, _ in pending] == [0, 0, 1]  # iteration 4 began once version 1 was there
    resumed = Pipeline(echo_pool, model, train=SlowFillTrain(model, 0.3), play_cfg=echo_cfg, max_staleness=3)
    reports = await run_all(resumed, 3, start=2, version=2, first_plays=pending)
    assert [(r.iteration, r.version_played, r.version_trained) for r in reports] == [(2, 0, 2), (3, 0, 3), (4, 1, 4)]
    for r in reports:
        expected = filled(r.version_played, initial, n_params)
        assert all(rec.weight_sum == pytest.approx(expected) for rec in r.records)


# -- snapshots -------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@module_loop
async def test_the_weights_playing_the_next_iteration_are_a_snapshot_training_does_not_touch(
    echo_pool: SelfPlay,
) -> None:
    torch.manual_seed(0)
    model = tiny()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    n_params = sum(p.numel() for p in model.parameters())
    train = FillTrain(model)
    pipeline = Pipeline(echo_pool, model, train=train, play_cfg=echo_cfg)
    played: list[float] = []
    async for report in pipeline.run(3):
        played.append(report.records[0].weight_sum)
        assert len({r.weight_sum for r in report.records}) == 1  # every game of an iteration, one set of weights
        if report.pending_plays:
            snapshot = report.pending_plays[0][1]
            # Training on this iteration set the model to a constant; the snapshot kept version k.
            assert all(torch.all(p == train.calls) for p in model.parameters())
            assert weight_sum(snapshot) != pytest.approx(weight_sum(model))
            if report.iteration == 0:
                assert all(torch.equal(v, initial[k]) for k, v in snapshot.state_dict().items())
    # Iterations 0 and 1 were played by version 0 (the initial weights), iteration 2 by version 1:
    # the weights training on iteration 0 wrote (all ones) never reached iteration 1's games.
    initial_sum = float(sum(v.sum() for k, v in initial.items() if k in dict(model.named_parameters())))
    assert played[0] == pytest.approx(initial_sum, rel=1e-5)
    assert played[1] == pytest.approx(initial_sum, rel=1e-5)
    assert played[2] == pytest.approx(1.0 * n_params, rel=1e-6)


@pytest.mark.timeout(120)
@module_loop
async def test_first_plays_resume_an_overlapped_run_with_the_weights_that_were_playing(echo_pool: SelfPlay) -> None:
    torch.manual_seed(1)
    model, older = tiny(), tiny()  # the model at version 5, the snapshot of version 4
    pipeline = Pipeline(echo_pool, model, train=FillTrain(model), play_cfg=echo_cfg)
    reports = await run_all(pipeline, 2, start=3, version=5, first_plays=[(4, older)])
    assert [(r.iteration, r.version_played, r.version_trained, r.staleness) for r in reports] == [
        (3, 4, 5, 1),
        (4, 5, 6, 1),
    ]
    assert ids(reports[0].records) == list(range(3 * N, 4 * N))
    assert reports[0].records[0].weight_sum == pytest.approx(weight_sum(older), rel=1e-5)
    assert reports[0].records[0].model_version == 4


# -- cancellation and errors -----------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("phase", ["playing", "training"])
@module_loop
@pytest.mark.slow
async def test_cancelling_the_consumer_stops_the_play_and_leaves_the_selfplay_usable(
    echo_pool: SelfPlay, phase: str
) -> None:
    model = tiny()
    training, release = threading.Event(), threading.Event()

    def train(records: list[Any]) -> dict[str, Any]:
        training.set()
        release.wait(timeout=30)
        return {}

    pipeline = Pipeline(echo_pool, model, train=train, play_cfg=slow_cfg)
    got: list[IterationReport] = []

    async def consume() -> None:
        async for report in pipeline.run(5):
            got.append(report)

    consumer = asyncio.create_task(consume())
    try:
        if phase == "playing":
            await wait_until(lambda: any(t.get_name() == "asp-play-0" for t in play_tasks()))
            await asyncio.sleep(0.3)  # games in flight in the workers
        else:
            await wait_until(training.is_set)  # training on iteration 0 while iteration 1 is played
            assert [t.get_name() for t in play_tasks()] == ["asp-play-1"]
        consumer.cancel()
        if phase == "training":
            await asyncio.sleep(0.3)
            assert not consumer.done()  # it waits for the train call: a thread cannot be stopped
            release.set()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        assert play_tasks() == []
        # the iteration trained while the cancel waited is reported; nothing else is
        assert [r.iteration for r in got] == ([0] if phase == "training" else [])
    finally:
        release.set()

    records, stats = await echo_pool.play(model, None, FaultConfig(n_games=3, first_game=500, plies=2))
    assert ids(records) == [500, 501, 502]
    reports = await run_all(Pipeline(echo_pool, model, train=CountingTrain(), play_cfg=echo_cfg), 1)
    assert ids(reports[0].records) == list(range(N))


@pytest.mark.timeout(120)
@module_loop
async def test_an_error_in_train_stops_the_run_and_the_play_in_flight(chess_pool: SelfPlay) -> None:
    def train(records: list[Any]) -> dict[str, Any]:
        raise RuntimeError("trainer exploded")

    pipeline = Pipeline(chess_pool, tiny(), train=train, play_cfg=chess_cfg)
    with pytest.raises(RuntimeError, match="trainer exploded"):
        await run_all(pipeline, 3)
    assert play_tasks() == []
    records, _ = await chess_pool.play(tiny(), None, chess_cfg(9, 0))
    assert ids(records) == list(range(9 * N, 10 * N))


@pytest.mark.timeout(120)
@module_loop
async def test_a_training_failure_that_another_attempt_would_repeat_names_its_iteration(echo_pool: SelfPlay) -> None:
    def train(records: list[Any]) -> dict[str, Any]:
        if min(ids(records)) >= N:  # iteration 1's games
            raise NonFiniteError("tictactoe: network: training gave a non-finite loss")
        return {}

    reported: list[int] = []
    with pytest.raises(IterationFailed) as error:
        async for report in Pipeline(echo_pool, tiny(), train=train, play_cfg=echo_cfg).run(3):
            reported.append(report.iteration)
    assert str(error.value) == "iteration 1: tictactoe: network: training gave a non-finite loss"
    assert reported == [0] and error.value.iteration == 1 and isinstance(error.value.error, NonFiniteError)
    assert play_tasks() == []


def faulty_from_1(fault: str) -> Callable[[int, int], FaultConfig]:
    """A play_cfg whose iterations from 1 on hold a game that does ``fault`` (iteration 0 is fine)."""

    def cfg(iteration: int, version: int) -> FaultConfig:
        return FaultConfig(
            n_games=N,
            plies=2,
            first_game=N * iteration,
            model_version=version,
            fault=fault if iteration >= 1 else "none",
            fault_game=N * iteration,
        )

    return cfg


def logged(logs: list[dict[str, Any]], event: str, **fields: Any) -> bool:
    return any(e["event"] == event and all(e.get(k) == v for k, v in fields.items()) for e in logs)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["cancel", "timeout"])
@module_loop
@pytest.mark.slow
async def test_cancelling_while_the_pipeline_cleans_up_reaches_the_caller(
    echo_pool: SelfPlay, logs: list[dict[str, Any]], how: str
) -> None:
    # Iteration 1's first game hangs and ignores the request to stop: leaving the loop after
    # iteration 0 cleans up for the SelfPlay's whole cancel_grace, and the cancel lands then.
    pipeline = Pipeline(echo_pool, tiny(), train=CountingTrain(), play_cfg=faulty_from_1("hang"))
    deadlines: list[asyncio.Timeout] = []

    async def consume() -> None:
        async with asyncio.timeout(None) as deadline:
            deadlines.append(deadline)
            async with contextlib.aclosing(pipeline.run(3)) as reports:
                async for _ in reports:
                    await wait_until(lambda: logged(logs, "shard_dispatched", first_game=N))
                    await asyncio.sleep(0.3)  # begun and hung (a shard cancelled before it begins just stops)
                    break

    consumer = asyncio.create_task(consume())
    await wait_until(lambda: logged(logs, "shard_cancelled"))  # clean-up under way
    assert not consumer.done()
    if how == "cancel":
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
    else:
        deadlines[0].reschedule(asyncio.get_running_loop().time())
        with pytest.raises(TimeoutError):
            await consumer
    assert play_tasks() == []  # the clean-up was finished before the cancellation went on


@pytest.mark.timeout(120)
@module_loop
@pytest.mark.slow
async def test_the_trainers_error_reaches_the_caller_even_when_the_play_in_flight_failed_too(
    echo_pool: SelfPlay, logs: list[dict[str, Any]]
) -> None:
    class TrainerExploded(RuntimeError):
        pass

    fail_now = threading.Event()

    def train(records: list[Any]) -> dict[str, Any]:
        fail_now.wait(timeout=60)
        raise TrainerExploded("trainer exploded")

    pipeline = Pipeline(echo_pool, tiny(), train=train, play_cfg=faulty_from_1("raise"))
    consumer = asyncio.create_task(run_all(pipeline, 3))
    # Training on iteration 0 goes on until iteration 1's play has failed for good.
    await wait_until(lambda: logged(logs, "shard_failed"))
    await wait_until(lambda: play_tasks() == [])
    fail_now.set()
    with pytest.raises(TrainerExploded, match="trainer exploded"):
        await consumer
    # The play's failure is not lost: it is logged.
    failures = [e["error"] for e in logs if e["event"] == "play_failed_while_stopping"]
    assert len(failures) == 1 and failures[0].startswith("ShardFailed("), failures


@pytest.mark.timeout(120)
@module_loop
async def test_an_iteration_trained_while_the_run_is_cancelled_is_still_reported(echo_pool: SelfPlay) -> None:
    """A cancel that lands in a train call waits for it; the model it changed is reported, so a
    caller that saves every report never resumes from before an iteration the model has learnt."""
    training = threading.Event()

    def train(records: list[Any]) -> dict[str, Any]:
        training.set()
        time.sleep(0.5)
        return {"games": len(records)}

    reports: list[IterationReport] = []

    async def consume() -> None:
        async for report in Pipeline(echo_pool, tiny(), train=train, play_cfg=echo_cfg).run(3):
            reports.append(report)

    consumer = asyncio.create_task(consume())
    await wait_until(training.is_set)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert [(r.iteration, r.train_metrics) for r in reports] == [(0, {"games": len(reports[0].records)})]
    assert play_tasks() == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cancels", [1, 2])
@module_loop
@pytest.mark.slow
async def test_no_thread_changes_the_model_once_a_cancelled_run_is_left(echo_pool: SelfPlay, cancels: int) -> None:
    model = tiny()
    training, trained = threading.Event(), threading.Event()

    def train(records: list[Any]) -> dict[str, Any]:
        training.set()
        for _ in range(60):  # about 1.2 s of changing weights
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(1.0)
            time.sleep(0.02)
        trained.set()
        return {}

    consumer = asyncio.create_task(run_all(Pipeline(echo_pool, model, train=train, play_cfg=echo_cfg), 3))
    await wait_until(training.is_set)
    waiting = []
    for _ in range(cancels):
        consumer.cancel()
        await asyncio.sleep(0.1)
        waiting.append(not consumer.done())
    with pytest.raises(asyncio.CancelledError):
        await consumer
    left = {k: v.clone() for k, v in model.state_dict().items()}
    await asyncio.to_thread(trained.wait, 30)  # what a train call still running would have changed by now
    assert differing(model.state_dict(), left) == []
    assert waiting == [True] * cancels  # it waited for the train call, even when cancelled again
    assert play_tasks() == []


def differing(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[str]:
    return [k for k in a if not torch.equal(a[k], b[k])]


# -- game ids --------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def id_pool() -> AsyncIterator[SelfPlay]:
    """One worker, one shard per iteration: the ids of a whole iteration come from one call."""
    async with SelfPlay(workers=1, play_fn=id_play, shard_games=N) as selfplay:
        yield selfplay


def id_cfg(ids: str) -> Callable[[int, int], IdConfig]:
    return lambda iteration, version: IdConfig(n_games=N, first_game=N * iteration, model_version=version, ids=ids)


@pytest.mark.timeout(120)
@module_loop
async def test_games_with_missing_or_unexpected_ids_are_an_asp_error_naming_them(id_pool: SelfPlay) -> None:
    train = CountingTrain()
    pipeline = Pipeline(id_pool, tiny(), train=train, play_cfg=id_cfg("shifted"))
    # found as the shard comes back: the stream checks every result against its shards' ids
    expected = rf"shard 0: .* \({2 * N}\.\.{3 * N - 1}\): missing \[{2 * N}\], unexpected \[{3 * N}\]"
    with pytest.raises(AspError, match=expected):
        await run_all(pipeline, 2, start=2)
    assert train.calls == []
    assert play_tasks() == []


@pytest.mark.timeout(120)
@module_loop
async def test_a_shard_that_returns_a_game_twice_is_an_asp_error_naming_it(id_pool: SelfPlay) -> None:
    train = CountingTrain()
    pipeline = Pipeline(id_pool, tiny(), train=train, play_cfg=id_cfg("doubled"))
    with pytest.raises(AspError, match=rf"twice \[{', '.join(map(str, range(N)))}\]"):
        await run_all(pipeline, 2)
    assert train.calls == []


@pytest.mark.parametrize("max_staleness", [17, -1, True, 1.0, None])
def test_max_staleness_outside_0_to_16_is_a_config_error(max_staleness: object) -> None:
    selfplay = SelfPlay(workers=1)  # not started: no processes
    with pytest.raises(ConfigError, match="max_staleness"):
        Pipeline(selfplay, tiny(), train=CountingTrain(), play_cfg=chess_cfg, max_staleness=max_staleness)  # type: ignore[arg-type]
