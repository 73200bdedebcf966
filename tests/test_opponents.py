"""The fixed opponents of the ladder: the random mover and the one-ply material-greedy mover."""

from __future__ import annotations

import chess

from asp.tinychess import ModelConfig, PlayConfig, TinyChess, play_games
from asp.tinychess.opponents import GreedyMover, material_gain


def test_the_greedy_mover_mates_before_it_takes_material() -> None:
    board = chess.Board("q5k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Rxa8 wins a queen, but Ra8 is no mate
    assert GreedyMover().play_board(board, game_id=0) == chess.Move.from_uci("a1a8")  # takes: mate
    board = chess.Board("6k1/5ppp/8/8/3n4/8/8/R2Q2K1 w - - 0 1")  # Qxd4 wins a knight; Ra8 mates
    assert GreedyMover().play_board(board, game_id=0) == chess.Move.from_uci("a1a8")


def test_the_greedy_mover_takes_the_most_material() -> None:
    board = chess.Board("4k3/8/8/3q4/8/2n5/3P4/4K2R w K - 0 1")  # dxc3 wins a knight, nothing takes the queen
    assert GreedyMover().play_board(board, game_id=0) == chess.Move.from_uci("d2c3")
    board = chess.Board("4k3/8/8/3q4/4P3/2n5/8/4K3 w - - 0 1")  # exd5 wins the queen over nothing else
    assert GreedyMover().play_board(board, game_id=0) == chess.Move.from_uci("e4d5")


def test_material_gain_counts_captures_en_passant_and_promotions() -> None:
    board = chess.Board("4k3/1P6/8/3pP3/8/8/8/4K3 w - d6 0 1")
    assert material_gain(board, chess.Move.from_uci("e5d6")) == 1  # en passant
    assert material_gain(board, chess.Move.from_uci("b7b8q")) == 8
    assert material_gain(board, chess.Move.from_uci("b7b8n")) == 2
    assert material_gain(board, chess.Move.from_uci("e1e2")) == 0


def test_games_against_the_greedy_mover_replay_exactly_and_it_wins_against_a_raw_network() -> None:
    cfg = PlayConfig(n_games=6, max_plies=60, samples=False)
    model = TinyChess(ModelConfig(hidden=16, blocks=0))
    first, stats = play_games(model, GreedyMover(), cfg)
    again, _ = play_games(model, GreedyMover(), cfg)
    assert [r.moves for r in first] == [r.moves for r in again]
    assert {r.opponent_name for r in first} == {"greedy"}
    assert stats["score"] < 0.5  # an untrained network loses material to it
