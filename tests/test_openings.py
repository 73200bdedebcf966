"""The bundled openings: legal, what their names say, and each played with both colours in a match."""

from __future__ import annotations

from collections import Counter

import chess
import pytest
import torch

from asp.app.run_config import match_starts
from asp.games import MODEL, PlayConfig, RandomMover, play_games
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame
from asp.tinychess.openings import OPENING_LINES, OPENINGS


def test_every_opening_is_a_legal_position_with_a_game_ahead() -> None:
    assert 8 <= len(OPENINGS) <= 16 and len(set(OPENINGS)) == len(OPENINGS)
    for fen in OPENINGS:
        board = chess.Board(fen)
        assert board.is_valid(), (fen, board.status())
        assert not board.is_game_over() and board.fen() == fen
    PlayConfig(TinyChessGame(), openings=OPENINGS)  # play_games' own check agrees


@pytest.mark.parametrize(("line", "fen"), list(zip(OPENING_LINES, OPENINGS, strict=True)), ids=lambda x: str(x)[:30])
def test_each_fen_is_the_position_after_its_named_line(line: tuple[str, str], fen: str) -> None:
    name, moves = line
    board = chess.Board()
    for san in moves.split():
        board.push_san(san)
    assert board.fen() == fen, name


@pytest.mark.parametrize("first_game", [0, 7])
def test_the_model_plays_each_opening_once_with_each_colour_in_a_match(first_game: int) -> None:
    """Without the pairing, ten openings would each meet the model with one colour only; any
    run of twenty game ids, even or odd first, plays all twenty (opening, colour) pairs."""
    torch.manual_seed(0)
    game = TinyChessGame()
    n = 2 * len(OPENINGS)
    starts = match_starts(game, between_networks=False)
    cfg = PlayConfig(game, n_games=n, first_game=first_game, max_plies=2, samples=False, **starts)
    records, _ = play_games(TinyChess(ModelConfig(hidden=16, blocks=0)), RandomMover(), cfg)
    colours = Counter((r.start, r.first == MODEL) for r in records)
    assert colours == Counter({(fen, first): 1 for fen in OPENINGS for first in (True, False)})
    # The naive mapping, for contrast: openings[i % 10] and the model first in even ids never mix colours.
    naive = Counter((OPENINGS[i % len(OPENINGS)], i % 2 == 0) for i in range(first_game, first_game + n))
    assert len(naive) == len(OPENINGS)
