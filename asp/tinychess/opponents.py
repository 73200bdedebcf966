"""Fixed opponents for evaluation: the rungs of a ladder below a chess engine.

>>> import torch
>>> RandomMover()(torch.zeros(3, N_FEATURES))[0].abs().sum().item()
0.0
>>> import chess
>>> GreedyMover().play_board(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"), game_id=0).uci()
'a1a8'
"""

from __future__ import annotations

import random

import chess
import torch
from torch import nn

from asp.tinychess.features import N_FEATURES
from asp.tinychess.mates import mating_moves
from asp.tinychess.moves import POLICY_SIZE

__all__ = ["GreedyMover", "RandomMover", "material_gain"]

_VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


class RandomMover(nn.Module):
    """A uniformly random mover: equal logits for every move, so play samples uniformly
    among the legal moves (with ``mask_illegal=True``). It has no weights to train."""

    cfg = None
    opponent_name = "random"
    """Who it is, in the records of games against it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("_inputs", torch.tensor(N_FEATURES))  # documents the expected input width

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = features.shape[0]
        return torch.zeros(n, POLICY_SIZE, device=features.device), torch.zeros(n, device=features.device)


def material_gain(board: chess.Board, move: chess.Move) -> int:
    """Material ``move`` wins at once: the piece it takes, plus a promotion's gain over the pawn."""
    gain = 0
    if board.is_en_passant(move):
        gain = 1
    elif (captured := board.piece_type_at(move.to_square)) is not None:
        gain = _VALUE[captured]
    if move.promotion is not None:
        gain += _VALUE[move.promotion] - 1
    return gain


class GreedyMover(nn.Module):
    """A one-ply material-greedy mover: it mates in one if it can, else makes the move that
    wins the most material at once, else plays a random move (ties broken at random).

    A :class:`~asp.tinychess.play.BoardPlayer`: it moves from the board (a module with no
    weights, so that asp's workers rebuild it like any opponent). Its random choices are
    seeded by the game id and the ply, so a game against it replays exactly.
    """

    cfg = None
    opponent_name = "greedy"

    def __init__(self) -> None:
        super().__init__()

    def play_board(self, board: chess.Board, *, game_id: int) -> chess.Move | None:
        legal = list(board.legal_moves)
        if not legal:
            return None
        mates = mating_moves(board, legal)
        if mates:
            return legal[mates[0]]
        rng = random.Random(f"greedy:{game_id}:{board.ply()}")
        gains = [material_gain(board, move) for move in legal]
        best = max(gains)
        return rng.choice([move for move, gain in zip(legal, gains, strict=True) if gain == best])
