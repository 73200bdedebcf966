"""Connect Four's lookahead mover (asp.connect4.lookahead): the tactics its four plies see, and
that it beats the one-ply win/block mover."""

from __future__ import annotations

import random

import pytest

from asp.connect4 import ConnectFour, WinBlockMover
from asp.connect4.lookahead import LookaheadMover
from asp.connect4.rules import from_columns, play, winning_columns
from asp.games import PlayConfig, play_games

GAME = ConnectFour()


def chosen(columns: str, seed: int = 0) -> str:
    state = GAME.parse_state(columns)
    return GAME.action_text(state, LookaheadMover().choose(GAME, state, random.Random(seed)))


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        ("445566", {"3", "7"}),  # four in a row at once
        ("4455", {"3", "6"}),  # an open three: two winning cells, one can be blocked
    ],
)
def test_the_lookahead_mover_wins_or_blocks_what_four_plies_show(columns: str, expected: set[str]) -> None:
    assert {chosen(columns, seed) for seed in range(8)} <= expected


def test_the_lookahead_mover_never_plays_under_the_opponent_s_winning_cell() -> None:
    # O has three on the second row, 1 to 3: a stone in column 4 now would let O win above it
    board = from_columns("11227373")
    assert not winning_columns(board) and winning_columns(play(board, 3)) == [3]
    assert "4" not in {chosen("11227373", seed) for seed in range(12)}


def test_the_lookahead_mover_beats_the_win_block_mover() -> None:
    cfg = PlayConfig(GAME, n_games=20, random_plies=2, samples=False)
    records, stats = play_games(LookaheadMover(), WinBlockMover(), cfg)
    assert len(records) == 20 and stats["score"] >= 0.8
