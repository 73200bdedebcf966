"""The weak Connect Four solver of asp.connect4.solver: known results, agreement with a plain
minimax on late positions, and the same answers with a tiny transposition table."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from asp.connect4 import solver
from asp.connect4.rules import EMPTY, HEIGHT, WIDTH, Board, from_columns, is_over, legal_columns, play, to_columns, won
from asp.connect4.solver import move_results, solve

POSITIONS = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "connect4_positions.txt"
"""The committed set of positions with every legal move labelled W, D, L (or - for a full column)."""
DRAWN = "121212" + "343434" + "565656" + "212121" + "434343" + "656565" + "777777"
"""A full board without four in a row."""


def minimax(board: Board) -> int:
    """The result for the side to move by searching every move to the end, no pruning."""
    if won(board):
        return -1
    columns = legal_columns(board)
    if not columns:
        return 0
    return max(-minimax(play(board, c)) for c in columns)


def random_positions(rng: random.Random, count: int, stones: range) -> list[Board]:
    """``count`` positions of random games, each with a stone count drawn from ``stones``, not over."""
    found = []
    while len(found) < count:
        target, board = rng.choice(stones), EMPTY
        while board.plies < target and (columns := legal_columns(board)):
            board = play(board, rng.choice(columns))
        if board.plies == target and not is_over(board):
            found.append(board)
    return found


def test_a_move_that_wins_at_once_is_a_win() -> None:
    assert solve(from_columns("454545")) == 1
    board = from_columns("1416754676115414655455267")  # columns 3 and 4 win at once
    assert solve(board) == 1
    assert move_results(board) == {0: -1, 1: -1, 2: 1, 3: 1, 5: -1, 6: -1}


def test_two_threats_of_the_opponent_are_a_loss_whatever_is_played() -> None:
    board = from_columns("44556")  # X's open three on the bottom row, O to move
    assert solve(board) == -1
    assert move_results(board) == dict.fromkeys(range(WIDTH), -1)


def test_an_open_three_made_now_wins() -> None:
    board = from_columns("4455")
    assert solve(board) == 1
    assert solve(play(board, 2)) == solve(play(board, 5)) == -1


def test_a_late_position_has_wins_draws_and_losses() -> None:
    board = from_columns("616346651456516227473114")
    assert move_results(board) == {0: -1, 1: 1, 2: 1, 3: 0, 4: 1, 6: 0}
    assert solve(board) == 1


def test_the_last_cells_of_a_drawn_board_are_a_draw() -> None:
    board = from_columns(DRAWN[:-2])
    assert solve(board) == 0
    assert move_results(board) == {6: 0}
    assert move_results(from_columns(DRAWN[:-1])) == {6: 0}  # the move that fills the board


def test_a_finished_game_is_refused_and_has_no_moves() -> None:
    for columns in ("1212121", DRAWN):
        board = from_columns(columns)
        with pytest.raises(ValueError, match="the game is over"):
            solve(board)
        assert move_results(board) == {}


def test_late_positions_agree_with_a_plain_minimax() -> None:
    boards = random_positions(random.Random(34), 50, range(34, WIDTH * HEIGHT))
    for board in boards:
        expected = {c: -minimax(play(board, c)) for c in legal_columns(board)}
        assert move_results(board) == expected, to_columns(board)
        assert solve(board) == max(expected.values()), to_columns(board)


def test_the_result_is_the_best_move_result_in_the_middle_game() -> None:
    boards = random_positions(random.Random(20), 8, range(18, 24))
    results = [move_results(board) for board in boards]
    assert [solve(board) for board in boards] == [max(r.values()) for r in results]
    assert {value for r in results for value in r.values()} == {-1, 0, 1}, [to_columns(b) for b in boards]


def test_a_tiny_transposition_table_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    boards = random_positions(random.Random(7), 6, range(20, 26))
    expected = [move_results(board) for board in boards]
    monkeypatch.setattr(solver, "_TABLE_ENTRIES", 64)
    assert [move_results(board) for board in boards] == expected


def test_the_late_positions_of_the_committed_set_carry_the_solver_s_results() -> None:
    lines = [line.split() for line in POSITIONS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert len(lines) >= 200
    late = [(columns, fields) for columns, fields in lines if len(columns) >= 26]
    assert len(late) >= 20
    letters = {1: "W", 0: "D", -1: "L"}
    for columns, fields in late:
        results = move_results(from_columns(columns))
        assert "".join(letters[results[c]] if c in results else "-" for c in range(WIDTH)) == fields, columns
        assert max(results.values()) > min(results.values()), columns
