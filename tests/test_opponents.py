"""TinyChess's one-ply material-greedy mover and two-ply material searcher
(asp.tinychess.opponents), the rungs between the random mover and a chess engine."""

from __future__ import annotations

import random

import chess
import pytest
import torch

from asp.games import PlayConfig, play_games
from asp.tinychess import ModelConfig, TinyChess
from asp.tinychess.game import TinyChessGame
from asp.tinychess.opponents import GreedyChessMover, MaterialSearchMover, material_gain

GAME = TinyChessGame()


def greedy_move(fen: str) -> str:
    state = GAME.parse_state(fen)
    return GAME.action_text(state, GreedyChessMover().choose(GAME, state, random.Random(0)))


@pytest.mark.parametrize(
    "fen",
    [
        "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",  # Ra8 mates
        "6k1/5ppp/8/8/3n4/8/8/R2Q2K1 w - - 0 1",  # Qxd4 wins a knight; Ra8 mates
    ],
)
def test_the_greedy_mover_mates_before_it_takes_material(fen: str) -> None:
    assert greedy_move(fen) == "a1a8"


@pytest.mark.parametrize(
    ("fen", "move"),
    [
        ("4k3/8/8/3q4/8/2n5/3P4/4K2R w K - 0 1", "d2c3"),  # dxc3 wins a knight, nothing takes the queen
        ("4k3/8/8/3q4/4P3/2n5/8/4K3 w - - 0 1", "e4d5"),  # exd5 wins the queen over the knight
    ],
)
def test_the_greedy_mover_takes_the_most_material(fen: str, move: str) -> None:
    assert greedy_move(fen) == move


def test_material_gain_counts_captures_en_passant_and_promotions() -> None:
    board = chess.Board("4k3/1P6/8/3pP3/8/8/8/4K3 w - d6 0 1")
    assert material_gain(board, chess.Move.from_uci("e5d6")) == 1  # en passant
    assert material_gain(board, chess.Move.from_uci("b7b8q")) == 8
    assert material_gain(board, chess.Move.from_uci("b7b8n")) == 2
    assert material_gain(board, chess.Move.from_uci("e1e2")) == 0


def test_games_against_the_greedy_mover_replay_exactly_and_it_wins_against_a_raw_network() -> None:
    cfg = PlayConfig(GAME, n_games=6, max_plies=60, samples=False)
    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=16, blocks=0))
    first, stats = play_games(model, GreedyChessMover(), cfg)
    again, _ = play_games(model, GreedyChessMover(), cfg)
    assert [r.moves for r in first] == [r.moves for r in again]
    assert {r.opponent_name for r in first} == {"greedy"}
    assert stats["score"] < 0.5  # an untrained network loses material to it


def searcher_move(fen: str) -> str:
    state = GAME.parse_state(fen)
    return GAME.action_text(state, MaterialSearchMover().choose(GAME, state, random.Random(0)))


@pytest.mark.parametrize(
    ("fen", "move"),
    [
        ("6k1/5ppp/8/8/3n4/8/8/R2Q2K1 w - - 0 1", "a1a8"),  # a mate before a knight
        ("4k3/8/8/3q4/4P3/2n5/8/4K3 w - - 0 1", "e4d5"),  # the queen, not the knight
    ],
)
def test_the_material_searcher_finds_what_the_greedy_mover_finds(fen: str, move: str) -> None:
    assert searcher_move(fen) == greedy_move(fen) == move


@pytest.mark.parametrize(
    ("fen", "greedy"),
    [
        ("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1", "d1d5"),  # Qxd5 takes a pawn that c6 defends
        ("3r2k1/1p3ppp/8/8/8/8/5PPP/1Q4K1 w - - 0 1", "b1b7"),  # Qxb7 takes a pawn and leaves Rd1 mate
    ],
)
def test_the_material_searcher_sees_the_reply_the_greedy_mover_does_not(fen: str, greedy: str) -> None:
    assert greedy_move(fen) == greedy
    assert searcher_move(fen) != greedy


@pytest.mark.slow  # six whole games of a two-ply search: seconds
def test_the_material_searcher_beats_the_greedy_mover() -> None:
    openings = tuple(fen for fen in GAME.openings()[:3] for _ in range(2))
    cfg = PlayConfig(GAME, n_games=6, max_plies=120, openings=openings, samples=False)
    records, stats = play_games(MaterialSearchMover(), GreedyChessMover(), cfg)
    assert len(records) == 6 and stats["score"] >= 0.75
