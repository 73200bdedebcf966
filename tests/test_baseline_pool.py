"""benchmarks/baseline_pool.py's uneven workload: its long and short games end at their caps,
in the play loop and in the search alike (the workload bench_selfplay.py compares asp with)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from baseline_pool import UnevenChess, uneven_config  # noqa: E402

from asp.games import play_games
from asp.games.protocol import status


def test_long_and_short_games_end_at_their_caps() -> None:
    cfg = uneven_config(0, 6, long_plies=9, short_plies=3)
    torch.manual_seed(0)
    records, _ = play_games(cfg.game.network(), None, cfg)
    assert [len(r.actions) for r in records] == [9, 9, 9, 3, 3, 3]
    assert {r.termination for r in records} == {"rules"}  # the game's own end, scored by material


def test_status_follows_the_cap_too() -> None:
    game = UnevenChess(long_plies=9, short_plies=2)
    state = game.start()
    for _ in range(2):
        assert status(game, state).value is None
        state = game.apply(state, game.actions(state)[0])
    assert game.outcome(state) == status(game, state).value == game.adjudicate(state)
