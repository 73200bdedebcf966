"""TinyChess's rungs between the random mover and a chess engine: the one-ply material-greedy
mover (its :meth:`~asp.tinychess.game.TinyChessGame.movers` ``greedy``) and a two-ply material
searcher with a quiescence search (``material2``).

>>> import random
>>> from asp.tinychess.game import TinyChessGame
>>> game = TinyChessGame()
>>> state = game.parse_state("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
>>> game.action_text(state, GreedyChessMover().choose(game, state, random.Random(0)))
'a1a8'

The greedy mover takes a defended pawn with its queen; the searcher sees the recapture:

>>> state = game.parse_state("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1")
>>> game.action_text(state, GreedyChessMover().choose(game, state, random.Random(0)))
'd1d5'
>>> game.action_text(state, MaterialSearchMover().choose(game, state, random.Random(0))) != 'd1d5'
True
"""

from __future__ import annotations

import random
from typing import Any

import chess

from asp.games.movers import BaseMover
from asp.tinychess.mates import mating_moves
from asp.tinychess.moves import legal_move_indices

__all__ = ["GreedyChessMover", "MaterialSearchMover", "material_gain"]

_VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
_MATE = 1000
"""The score of a mate, above any material balance."""
_QUIESCENCE_PLIES = 8
"""The longest sequence of captures the quiescence search follows past the two plies."""


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


class MaterialSearchMover(BaseMover):
    """The two-ply material searcher (an :class:`asp.games.Mover`): a negamax search of its
    move and the reply (alpha-beta), then captures and promotions until the position is quiet
    (a quiescence search of at most eight plies, where the side to move may also stand pat),
    scoring material (pawn 1, knight and bishop 3, rook 5, queen 9), a mate (given or suffered
    within the two plies) above any material,
    stalemate and insufficient material as draws; ties between its best moves are broken at
    random. It sees mates in one and two-move material tactics (a defended piece is not
    taken); it knows nothing of position."""

    opponent_name = "material2"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        """Its move at ``state``, a :class:`~asp.tinychess.game.ChessState`, as the game's action."""
        board = state.board.copy(stack=False)
        moves, indices = legal_move_indices(board)
        best, chosen = -_MATE - 1, []
        for move, index in zip(moves, indices, strict=True):
            board.push(move)
            # A window just below the best so far: scores equal to it are exact, for the tie-break.
            score = -_negamax(board, 1, -_MATE - 1, -(best - 1))
            board.pop()
            if score > best:
                best, chosen = score, [index]
            elif score == best:
                chosen.append(index)
        return int(rng.choice(chosen))


def _material(board: chess.Board) -> int:
    """The side to move's material minus the opponent's."""
    white = board.occupied_co[chess.WHITE]
    lead = 0
    for pieces, value in ((board.pawns, 1), (board.knights | board.bishops, 3), (board.rooks, 5), (board.queens, 9)):
        lead += value * (2 * (pieces & white).bit_count() - pieces.bit_count())
    return lead if board.turn == chess.WHITE else -lead


def _negamax(board: chess.Board, depth: int, alpha: int, beta: int) -> int:
    """The value of ``board`` for the side to move, searched ``depth`` more plies, then quiescence."""
    if board.is_insufficient_material():
        return 0
    if depth == 0:
        if board.is_check() and not any(board.generate_legal_moves()):
            return -_MATE
        return _quiescence(board, alpha, beta, _QUIESCENCE_PLIES)
    moves = sorted(board.legal_moves, key=lambda m: -_capture_order(board, m))
    if not moves:
        return -_MATE if board.is_check() else 0
    for move in moves:
        board.push(move)
        score = -_negamax(board, depth - 1, -beta, -alpha)
        board.pop()
        if score >= beta:
            return score
        alpha = max(alpha, score)
    return alpha


def _quiescence(board: chess.Board, alpha: int, beta: int, plies: int) -> int:
    """Captures and promotions until the position is quiet, the side to move free to stand pat."""
    stand = _material(board)
    if stand >= beta or plies == 0:
        return stand
    alpha = max(alpha, stand)
    noisy = [m for m in board.generate_legal_moves() if m.promotion or board.is_capture(m)]
    for move in sorted(noisy, key=lambda m: -_capture_order(board, m)):
        board.push(move)
        score = -_quiescence(board, -beta, -alpha, plies - 1)
        board.pop()
        if score >= beta:
            return score
        alpha = max(alpha, score)
    return alpha


def _capture_order(board: chess.Board, move: chess.Move) -> int:
    """Most valuable victim, then least valuable attacker, first: the order that cuts the search most."""
    gain = material_gain(board, move)
    attacker = board.piece_type_at(move.from_square)
    return 10 * gain - (_VALUE[attacker] if attacker is not None else 0) if gain else -100
