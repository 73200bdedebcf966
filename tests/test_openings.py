"""The bundled openings: legal, what their names say, and each played with both colours in a match."""

from __future__ import annotations

from collections import Counter

import chess
import pytest
import torch

from asp.tinychess import MODEL, ModelConfig, PlayConfig, TinyChess, play_games
from asp.tinychess.openings import OPENING_LINES, OPENINGS, match_openings
from asp.tinychess.opponents import RandomMover


def test_every_opening_is_a_legal_position_with_a_game_ahead() -> None:
    assert 8 <= len(OPENINGS) <= 16 and len(set(OPENINGS)) == len(OPENINGS)
    for fen in OPENINGS:
        board = chess.Board(fen)
        assert board.is_valid(), (fen, board.status())
        assert not board.is_game_over() and board.fen() == fen
    PlayConfig(openings=OPENINGS)  # play_games' own check agrees


@pytest.mark.parametrize(("line", "fen"), list(zip(OPENING_LINES, OPENINGS, strict=True)), ids=lambda x: str(x)[:30])
def test_each_fen_is_the_position_after_its_named_line(line: tuple[str, str], fen: str) -> None:
    name, moves = line
    board = chess.Board()
    for san in moves.split():
        board.push_san(san)
    assert board.fen() == fen, name


def test_the_model_plays_each_opening_once_with_each_colour_in_a_match() -> None:
    """Without the pairing, ten openings would each meet the model with one colour only."""
    torch.manual_seed(0)
    n = 2 * len(OPENINGS)
    cfg = PlayConfig(n_games=n, max_plies=2, openings=match_openings(), opponent_temperature=1.0, samples=False)
    records, _ = play_games(TinyChess(ModelConfig(hidden=16, blocks=0)), RandomMover(), cfg)
    colours = Counter((r.start_fen, r.white == MODEL) for r in records)
    assert colours == Counter({(fen, white): 1 for fen in OPENINGS for white in (True, False)})
    # The naive mapping, for contrast: openings[i % 10] and White in even ids never mix colours.
    naive = Counter((OPENINGS[i % len(OPENINGS)], i % 2 == 0) for i in range(n))
    assert len(naive) == len(OPENINGS)


def test_pairs_hold_for_any_number_of_openings_and_any_first_game() -> None:
    for k in (1, 2, 3, 4):
        openings = OPENINGS[:k]
        paired = match_openings(openings)
        for first in (0, 1, 7):
            seen = {(paired[i % len(paired)], i % 2 == 0) for i in range(first, first + 2 * k)}
            assert seen == {(fen, white) for fen in openings for white in (True, False)}, (k, first)
