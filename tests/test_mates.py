"""mating_moves and mates_in_one: exactly the legal moves after which python-chess sees checkmate."""

from __future__ import annotations

import random

import chess
import pytest

from asp.tinychess.mates import mates_in_one, mating_moves


def _every_move_tried(board: chess.Board) -> list[int]:
    found = []
    for i, move in enumerate(board.legal_moves):
        board.push(move)
        if board.is_checkmate():
            found.append(i)
        board.pop()
    return found


def _mates(fen: str) -> list[str]:
    board = chess.Board(fen)
    legal = list(board.legal_moves)
    found = sorted(legal[i].uci() for i in mating_moves(board, legal))
    assert sorted(m.uci() for m in mates_in_one(board)) == found
    return found


@pytest.mark.parametrize(
    ("fen", "mates"),
    [
        ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", ["a1a8"]),  # back rank
        # the promoted piece checks down the file its pawn stood on
        ("8/RP6/8/8/8/2K1B3/8/1k6 w - - 0 1", ["b7b8q", "b7b8r"]),
        # the knight uncovers the rook: a double check where it also checks, else blockable
        ("3qkb2/3p1p2/8/8/4N3/8/8/4R1K1 w - - 0 1", ["e4d6", "e4f6"]),
        ("6rk/6pp/8/6N1/8/8/8/6K1 w - - 0 1", ["g5f7"]),  # smothered
        ("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 0 1", ["f3f7"]),
        (chess.STARTING_FEN, []),
    ],
)
def test_the_mates_of_known_positions(fen: str, mates: list[str]) -> None:
    assert _mates(fen) == mates
    assert _mates(chess.Board(fen).mirror().fen()) == sorted(_mirror(m) for m in mates)  # the same for Black


def _mirror(uci: str) -> str:
    move = chess.Move.from_uci(uci)
    return chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion).uci()


@pytest.mark.slow
def test_the_mates_of_boards_from_random_games_are_those_of_trying_every_move() -> None:
    rng = random.Random(7)
    boards_with_mates = 0
    for _ in range(200):
        board = chess.Board()
        for _ in range(rng.randrange(250)):
            legal = list(board.legal_moves)
            if not legal:
                break
            mates = _every_move_tried(board)
            assert mating_moves(board, legal) == mates, board.fen()
            assert sorted(legal.index(m) for m in mates_in_one(board)) == mates, board.fen()
            boards_with_mates += bool(mates)
            board.push(rng.choice(legal))
    assert boards_with_mates > 20  # the comparison met mates, not only their absence
