"""The one-ply material-greedy mover: TinyChess's rung between the random mover and a chess
engine (its :meth:`~asp.tinychess.game.TinyChessGame.movers` ``greedy``).

>>> import random
>>> from asp.tinychess.game import TinyChessGame
>>> game = TinyChessGame()
>>> state = game.parse_state("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
>>> game.action_text(state, GreedyChessMover().choose(game, state, random.Random(0)))
'a1a8'
"""

from __future__ import annotations

import random
from typing import Any

import chess

from asp.games.movers import BaseMover
from asp.tinychess.mates import mating_moves
from asp.tinychess.moves import legal_move_indices

__all__ = ["GreedyChessMover", "material_gain"]

_VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


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


class GreedyChessMover(BaseMover):
    """The one-ply material-greedy mover (an :class:`asp.games.Mover`): it mates in one if it
    can, else makes the move that wins the most material at once, else a random move (ties
    broken at random)."""

    opponent_name = "greedy"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        """Its move at ``state``, a :class:`~asp.tinychess.game.ChessState`, as the game's action."""
        moves, indices = legal_move_indices(state.board)
        mates = mating_moves(state.board, moves)
        if mates:
            return int(indices[mates[0]])
        gains = [material_gain(state.board, move) for move in moves]
        best = max(gains)
        return int(rng.choice([index for index, gain in zip(indices, gains, strict=True) if gain == best]))
