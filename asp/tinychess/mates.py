"""Which legal moves mate at once: what the model plays under ``PlayConfig.mate_in_one``.

:func:`mating_moves` looks only at the moves that can give check: a piece that lands on a
square from which it attacks the enemy king, a piece that uncovers one of our sliders' lines
to the king, castling, promotions and en passant. A plain move that checks is no mate when
the king can then step to a square nothing attacks, which a few bitboard lookups tell; the
other candidates are pushed and confirmed by python-chess. About 23 us a board from random
games on a 2-core Xeon (68 us with every candidate pushed); exactly python-chess's answer
(tests/test_mates.py compares them on every position of 200 random games).

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
    # The moves worth a closer look go to a checking, promotion or en passant square, or come
    # from an uncovering piece or from the king (castling); the others are skipped at once.
    hot_to = reach
    if board.pawns & own & (chess.BB_RANK_7 if us == chess.WHITE else chess.BB_RANK_2):
        hot_to |= chess.BB_BACKRANKS
    if board.ep_square is not None:
        hot_to |= chess.BB_SQUARES[board.ep_square]
    hot_from = uncover | (board.kings & own if board.has_castling_rights(us) else 0)
    found = []
    for i, move in enumerate(legal):
        origin = chess.BB_SQUARES[move.from_square]
        target = chess.BB_SQUARES[move.to_square]
        if not (target & hot_to or origin & hot_from):
            continue
        if move.promotion or origin & uncover or move.to_square == board.ep_square:
            pass  # rare: tried without a filter (a promoted piece's line may run through its origin)
        elif target & reach:
            piece = board.piece_type_at(move.from_square) or chess.KING
            if not target & checks[piece] or _king_steps_out(board, king, move, piece):
                continue
        elif not (origin & board.kings and abs(move.to_square - move.from_square) == 2):  # castling
            continue
        board.push(move)
        if board.is_checkmate():
            found.append(i)
        board.pop()
    return found


def _king_steps_out(board: chess.Board, king: int, move: chess.Move, piece: int) -> bool:
    """Whether, after ``move`` (a plain move of a ``piece`` that then checks the king on
    ``king``), the king has a square to step to: no mate then, and no need to push the move."""
    origin = chess.BB_SQUARES[move.from_square]
    to = move.to_square
    # The board after the move, without the king (a slider's line runs on through its square).
    occupied = (board.occupied & ~origin | chess.BB_SQUARES[to]) & ~chess.BB_SQUARES[king]
    if piece == chess.PAWN:
        covered = chess.BB_PAWN_ATTACKS[board.turn][to]
    elif piece == chess.KNIGHT:
        covered = chess.BB_KNIGHT_ATTACKS[to]
    else:
        covered = 0
        if piece in (chess.BISHOP, chess.QUEEN):
            covered |= chess.BB_DIAG_ATTACKS[to][chess.BB_DIAG_MASKS[to] & occupied]
        if piece in (chess.ROOK, chess.QUEEN):
            covered |= (
                chess.BB_RANK_ATTACKS[to][chess.BB_RANK_MASKS[to] & occupied]
                | chess.BB_FILE_ATTACKS[to][chess.BB_FILE_MASKS[to] & occupied]
            )
    flights = chess.BB_KING_ATTACKS[king] & ~board.occupied_co[not board.turn] & ~covered
    # Our other pieces, from where they stand, with the moved piece gone from its origin.
    return any(
        not board.attackers_mask(board.turn, square, occupied) & ~origin for square in chess.scan_reversed(flights)
    )
