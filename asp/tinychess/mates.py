"""Which legal moves mate at once: the labels of the trainer's mate loss.

:func:`mating_moves` tries only the moves that can give check (a piece that lands on a
square attacking the enemy king, a promotion to such a piece, a piece that uncovers a
slider's line to the king, castling, promotions, en passant) and confirms each with
python-chess. On boards from random play that is about two confirmations a board.

>>> board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
>>> legal = list(board.legal_moves)
>>> [legal[i].uci() for i in mating_moves(board, legal)]
['a1a8']
"""

from __future__ import annotations

from collections.abc import Sequence

import chess

__all__ = ["mating_moves"]


def mating_moves(board: chess.Board, legal: Sequence[chess.Move]) -> list[int]:
    """The positions in ``legal`` (``board``'s legal moves) of the moves that checkmate."""
    us = board.turn
    king = board.king(not us)
    if king is None:
        return []
    occupied = board.occupied
    own = board.occupied_co[us]
    # The squares from which each kind of piece would attack the enemy king.
    diag = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied]
    ortho = (
        chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
        | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied]
    )
    checks = {  # by the type of the piece on its origin
        chess.PAWN: chess.BB_PAWN_ATTACKS[not us][king],
        chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
        chess.BISHOP: diag,
        chess.ROOK: ortho,
        chess.QUEEN: diag | ortho,
        chess.KING: 0,
    }
    # Our pieces that alone stand between one of our sliders and the enemy king.
    snipers = own & (
        chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens)
        | (chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]) & (board.rooks | board.queens)
    )
    uncover = 0
    for sniper in chess.scan_reversed(snipers):
        between = chess.between(king, sniper) & occupied
        if between and not between & (between - 1):
            uncover |= between & own
    reach = diag | ortho | checks[chess.KNIGHT] | checks[chess.PAWN]
    found = []
    for i, move in enumerate(legal):
        origin = chess.BB_SQUARES[move.from_square]
        target = chess.BB_SQUARES[move.to_square]
        if move.promotion or origin & uncover or move.to_square == board.ep_square:
            pass  # rare: tried without a filter (a promoted piece's line may run through its origin)
        elif target & reach:
            if not target & checks[board.piece_type_at(move.from_square) or chess.KING]:
                continue
        elif not (origin & board.kings and abs(move.to_square - move.from_square) == 2):  # castling
            continue
        board.push(move)
        if board.is_checkmate():
            found.append(i)
        board.pop()
    return found
