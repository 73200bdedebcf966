"""The synchronous facade: play_games_parallel and SyncSelfPlay."""

from __future__ import annotations

import dataclasses
import gc
import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

from asp import ClosedError, SyncSelfPlay, play_games_parallel
from asp.games import PlayConfig, play_games
from asp.selfplay import default_shard_games
from asp.testing import FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

CFG = PlayConfig(TinyChessGame(), n_games=6, first_game=3, seed=11, max_plies=20, model_version=1)


def _models() -> tuple[TinyChess, TinyChess]:
    torch.manual_seed(1)
    return TinyChess(ModelConfig(hidden=16, blocks=0)), TinyChess(ModelConfig(hidden=16, blocks=0))


def test_one_worker_plays_in_process_exactly_like_play_games(children: Callable[[], list[int]]) -> None:
    model, opp = _models()
    for opponent in (None, opp):
        cfg = dataclasses.replace(CFG, opponent_version=4)
        records, stats = play_games_parallel(model, opponent, cfg, workers=1)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as a worker plays, and play_games_parallel in process too
        try:
            want, want_stats = play_games(model, opponent, cfg)
        finally:
            torch.set_num_threads(threads)
        assert records == want  # every field, samples included
        assert (stats["workers"], stats["shards"], stats["retries"], stats["respawns"]) == (1, 1, 0, 0)
        assert stats["games"] == want_stats["games"] and stats["results"] == want_stats["results"]
    assert children() == []  # no pool at all


def _threads_play(model: Any, opp: Any, cfg: Any) -> tuple[list[Any], dict[str, Any]]:
    return [], {"threads": torch.get_num_threads()}


def test_one_worker_plays_on_the_threads_a_worker_has_then_gives_the_count_back() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for threads in (1, 2):
            _, stats = play_games_parallel(None, None, CFG, workers=1, threads_per_worker=threads,  # type: ignore[arg-type]
                                           play_fn=_threads_play)  # fmt: skip
            assert stats["threads"] == threads and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_two_workers_play_the_same_games_as_play_games(children: Callable[[], list[int]]) -> None:
    model, opp = _models()
    records, stats = play_games_parallel(model, opp, CFG, workers=2)
    want, want_stats = play_games(model, opp, CFG)
    assert [r.game_id for r in records] == list(range(3, 9))
    assert len(records) == len(want)
    for got, expected in zip(records, want, strict=True):
        # other batch sizes: the same moves and samples
        assert got.plain() == expected.plain()
        assert got.samples == expected.samples
    # 6 games are fewer than a play batch per worker: shards of one game (the SelfPlay default).
    assert stats["workers"] == 2
    assert stats["shards"] == math.ceil(CFG.n_games / default_shard_games(CFG.n_games, 2, CFG.batch_size)) == 6
    for key in ("games", "plies", "results", "terminations", "score"):
        assert stats[key] == want_stats[key], key
    assert children() == []  # the pool of the call is gone


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_sync_selfplay_keeps_its_workers_across_calls(children: Callable[[], list[int]]) -> None:
    model = TinyChess(ModelConfig(hidden=8, blocks=0))
    cfg = FaultConfig(n_games=8, plies=5, delay=0.005)
    with SyncSelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
        assert selfplay.workers == 2
        workers = children()
        assert len(workers) == 2
        seen: set[int] = set()
        stats: dict[str, Any] = {}
        for first_game in (0, 8):
            records, stats = selfplay.play(model, None, dataclasses.replace(cfg, first_game=first_game))
            assert [r.game_id for r in records] == list(range(first_game, first_game + 8))
            assert stats["respawns"] == 0
            seen |= {r.pid for r in records}
        assert seen <= set(workers)  # every game of both calls played by the first two workers
        assert children() == workers
    assert children() == []


def _error_of(call: Callable[[], object]) -> BaseException | None:
    """What ``call()`` raises, with the RuntimeWarning of a coroutine it leaves un-awaited silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            call()
        except Exception as e:
            error: BaseException | None = e.with_traceback(None)
        else:
            error = None
        gc.collect()  # finalize the un-awaited coroutine while its warning is silenced
    return error


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_sync_selfplay_close_twice_is_safe() -> None:
    selfplay = SyncSelfPlay(workers=1, play_fn=fault_play)
    selfplay.close()
    assert _error_of(selfplay.close) is None


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_sync_selfplay_play_after_close_raises_closed_error() -> None:
    selfplay = SyncSelfPlay(workers=1, play_fn=fault_play)
    selfplay.close()
    model = TinyChess(ModelConfig(hidden=8, blocks=0))
    error = _error_of(lambda: selfplay.play(model, None, FaultConfig(n_games=2)))
    assert isinstance(error, ClosedError), repr(error)
