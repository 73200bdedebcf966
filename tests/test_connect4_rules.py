"""The Connect Four rules of asp.connect4.rules: wins in every direction, the draw, the column
notation and its errors, the text and SVG pictures, the mirror, agreement with OpenSpiel's
``connect_four`` on thousands of random games, and ``won`` against a naive scan of the cells."""

from __future__ import annotations

import importlib
import os
import random
import xml.etree.ElementTree as ElementTree
from types import ModuleType

import pytest
from helpers import REQUIRE_TOOLS
from hypothesis import given, settings
from hypothesis import strategies as st

from asp.connect4.rules import (
    EMPTY,
    HEIGHT,
    WIDTH,
    Board,
    cell,
    from_columns,
    is_over,
    legal_columns,
    mirror,
    play,
    stones,
    svg,
    text,
    to_columns,
    value,
    winning_columns,
    won,
)

SVG = "{http://www.w3.org/2000/svg}"
OPENSPIEL_GAMES = 3000
DRAWN = "121212" + "343434" + "565656" + "212121" + "434343" + "656565" + "777777"
"""A full board without four in a row: column pairs in blocks of three, alternating, column 7 last."""


def python_module(name: str, *, install: str) -> ModuleType:
    """The module ``name``; where it is missing, skip the test with the command ``install`` that
    installs it, or fail it when ``ASP_REQUIRE_TOOLS=1`` (as ``helpers.external_tool`` does for
    programs)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        message = f"{name} is not installed: `{install}` installs it"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{message}; {REQUIRE_TOOLS}=1 requires every tool", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="module")
def pyspiel() -> ModuleType:
    return python_module("pyspiel", install="pip install open-spiel")


def test_a_missing_module_skips_the_test_or_fails_it_under_asp_require_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_TOOLS, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module is not installed: `pip install x`"):
        python_module("no_such_module", install="pip install x")
    monkeypatch.setenv(REQUIRE_TOOLS, "1")
    with pytest.raises(pytest.fail.Exception, match=f"no_such_module is not installed.*{REQUIRE_TOOLS}=1"):
        python_module("no_such_module", install="pip install x")


def naive_won(board: Board, player: int) -> bool:
    """Four cells of ``player`` (1 or 2) in a row, found by looking at every cell."""
    grid = {(c, r): cell(board, c, r) for c in range(WIDTH) for r in range(HEIGHT)}
    return any(
        all(grid.get((c + k * dc, r + k * dr)) == player for k in range(4))
        for c, r in grid
        for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1))
    )


@pytest.mark.parametrize(
    ("columns", "direction"),
    [
        ("1212121", "vertical"),
        ("1122334", "horizontal"),
        ("12234334544", "diagonal up to the right"),
        ("76654554344", "diagonal down to the right"),
        ("12137475", "the second player, horizontal"),
    ],
)
def test_four_in_a_row_wins_in_every_direction(columns: str, direction: str) -> None:
    board = from_columns(columns)
    assert won(board), direction
    assert is_over(board) and value(board) == -1.0
    assert legal_columns(board) == [] and winning_columns(board) == []
    assert not won(from_columns(columns[:-1]))
    with pytest.raises(ValueError, match="the game is already over"):
        play(board, 0)


def test_a_full_board_without_four_in_a_row_is_a_draw() -> None:
    board = from_columns(DRAWN)
    assert board.plies == WIDTH * HEIGHT and not won(board)
    assert is_over(board) and value(board) == 0.0 and legal_columns(board) == []
    first, second = stones(board)
    assert first.bit_count() == second.bit_count() == 21 and first & second == 0
    assert value(from_columns(DRAWN[:-1])) is None


def test_the_side_to_move_alternates_and_the_moves_are_kept() -> None:
    board = from_columns("4453")
    assert board.moves == (3, 3, 4, 2) and board.plies == 4 and board.to_move == 0
    assert play(board, 0).to_move == 1
    assert [cell(board, c, 0) for c in range(WIDTH)] == [0, 0, 2, 1, 1, 0, 0]
    assert cell(board, 3, 1) == 2 and cell(board, 3, 2) == 0


def test_winning_columns_are_the_immediate_wins_of_the_side_to_move() -> None:
    assert winning_columns(from_columns("445566")) == [2, 6]  # X's open three on the bottom row
    assert winning_columns(from_columns("4455661")) == []  # O's three on the second row: no cell under its ends
    assert winning_columns(from_columns("12" * 3)) == [0]
    assert winning_columns(EMPTY) == []


@pytest.mark.parametrize("columns", ["", "4", "4453", DRAWN, "1122334"])
def test_the_column_notation_round_trips(columns: str) -> None:
    assert to_columns(from_columns(columns)) == columns


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("4480", r"move 3: '8' is not a column 1-7"),
        ("40", r"move 2: '0' is not a column 1-7"),
        ("4 4", r"move 2: ' ' is not a column 1-7"),
        ("1111111", "move 7: column 1 is full"),
        ("12121211", "move 8: the game is already over"),
    ],
)
def test_a_bad_column_text_names_the_move(columns: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_columns(columns)


@pytest.mark.parametrize(("column", "message"), [(-1, "out of range"), (7, "out of range")])
def test_play_refuses_a_column_out_of_range(column: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        play(EMPTY, column)


def test_play_refuses_a_full_column() -> None:
    with pytest.raises(ValueError, match="column 0 is full"):
        play(from_columns("111111"), 0)


def test_text_draws_the_board_top_row_first_with_column_numbers() -> None:
    assert text(from_columns("44535")) == (
        ". . . . . . .\n. . . . . . .\n. . . . . . .\n. . . . . . .\n. . . O X . .\n. . O X X . .\n1 2 3 4 5 6 7"
    )


def test_svg_is_a_standalone_image_with_a_hole_or_disc_per_cell() -> None:
    board = from_columns("44535")
    root = ElementTree.fromstring(svg(board, size=140))
    assert root.tag == f"{SVG}svg" and root.get("width") == "140" and root.get("height") == "120"
    circles = root.findall(f"{SVG}circle")
    fills = [c.get("fill") for c in circles]
    assert len(circles) == 43 and fills[-1] == "none"  # 42 cells, then the ring of the last move
    assert fills.count("#ffffff") == 37 and fills.count("#d62828") == 3 and fills.count("#f4c430") == 2
    ring = circles[-1]
    assert (ring.get("cx"), ring.get("cy")) == ("90", "90")  # column 5, second row
    plain = ElementTree.fromstring(svg(board, last=False))
    assert len(plain.findall(f"{SVG}circle")) == 42
    assert len(ElementTree.fromstring(svg(EMPTY)).findall(f"{SVG}circle")) == 42


def test_mirror_flips_the_columns_of_the_stones_and_the_moves() -> None:
    board = from_columns("44535")
    flipped = mirror(board)
    assert to_columns(flipped) == "44353"
    assert flipped == from_columns("44353")
    assert all(cell(flipped, WIDTH - 1 - c, r) == cell(board, c, r) for c in range(WIDTH) for r in range(HEIGHT))
    assert mirror(flipped) == board


def test_every_ply_of_random_games_agrees_with_openspiel(pyspiel: ModuleType) -> None:
    game = pyspiel.load_game("connect_four")
    rng = random.Random(20240611)
    endings = {1.0: 0, -1.0: 0, 0.0: 0}
    for _ in range(OPENSPIEL_GAMES):
        board, state = EMPTY, game.new_initial_state()
        while True:
            columns = legal_columns(board)
            assert columns == state.legal_actions(), to_columns(board)
            assert is_over(board) == state.is_terminal(), to_columns(board)
            if not columns:
                break
            column = rng.choice(columns)
            board = play(board, column)
            state.apply_action(column)
        outcome = value(board)
        assert outcome is not None
        # value() is for the side to move; OpenSpiel's returns are [first player, second player].
        first = outcome if board.to_move == 0 else -outcome
        assert state.returns() == [first, -first], to_columns(board)
        assert won(board) == (first != 0.0)
        endings[first] += 1
    assert min(endings.values()) > 0, endings  # both players won some games, and some were drawn


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=WIDTH - 1), max_size=60))
def test_won_after_play_matches_a_naive_scan_of_the_cells(choices: list[int]) -> None:
    board = EMPTY
    for choice in choices:
        columns = legal_columns(board)
        if not columns:
            break
        board = play(board, columns[choice % len(columns)])
        assert won(board) == naive_won(board, 2 - board.to_move)  # the last mover's stones
        assert not naive_won(board, 1 + board.to_move)
        wins = [c for c in legal_columns(board) if won(play(board, c))]
        assert winning_columns(board) == wins
