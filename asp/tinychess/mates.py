"""Which legal moves mate at once: what TinyChessGame lists as a position's winning actions
(its ``winning``, the search's :attr:`asp.search.Status.winning`), so that a search counts the position as won and a
network with ``take_wins`` plays the mate; where they land is a plane of the network's input
(:mod:`asp.tinychess.features`).

Only the moves that can give check are looked at: a piece that lands on a square from which
it attacks the enemy king, a piece that uncovers one of our sliders' lines to the king,
castling, promotions and en passant. A plain move that checks is no mate when the king can
then step to a square nothing attacks, which a few bitboard lookups tell; the other
candidates are pushed and confirmed by python-chess. :func:`mating_moves` filters a list of
legal moves; :func:`mates_in_one` generates the candidates alone. Both give exactly
python-chess's answer (tests/test_mates.py compares them on every position of 200 random
games).

>>> board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
>>> legal = list(board.legal_moves)
>>> [legal[i].uci() for i in mating_moves(board, legal)]
['a1a8']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import chess

__all__ = ["mates_in_one", "mating_moves"]


def mating_moves(board: chess.Board, legal: Sequence[chess.Move]) -> list[int]:
    """The positions in ``legal`` (``board``'s legal moves) of the moves that checkmate."""
    mates = _MateTest(board)
    return [i for i, move in enumerate(legal) if mates.test(move)] if mates.king is not None else []


def mates_in_one(board: chess.Board) -> list[chess.Move]:
    """The moves that checkmate on ``board``, without listing its other legal moves: only
    the moves to or from the squares that can give check are generated.

    >>> [m.uci() for m in mates_in_one(chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"))]
    ['a1a8']
    """
    mates = _MateTest(board)
    if mates.king is None:
        return []
    return [move for move in mates.candidates() if mates.test(move, pseudo_legal=True)]


class _MateTest:
    """Whether a legal move of ``board`` mates: cheap bitboard filters first, python-chess's
    own test for the few candidates left."""

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        us = board.turn
        self.king = king = board.king(not us)
        if king is None:
            return
        occupied = board.occupied
        own = board.occupied_co[us]
        # The squares from which each kind of piece would attack the enemy king.
        diag = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied]
        ortho = (
            chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
            | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied]
        )
        self.checks = {  # by the type of the piece on its origin
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
        self.uncover = uncover
        self.reach = reach = diag | ortho | self.checks[chess.KNIGHT] | self.checks[chess.PAWN]
        # The moves worth a closer look go to a checking, promotion or en passant square, or
        # come from an uncovering piece or from the king (castling); the others are skipped.
        hot_to = reach
        if board.pawns & own & (chess.BB_RANK_7 if us == chess.WHITE else chess.BB_RANK_2):
            hot_to |= chess.BB_BACKRANKS
        if board.ep_square is not None:
            hot_to |= chess.BB_SQUARES[board.ep_square]
        self.hot_to = hot_to
        self.hot_from = uncover | (board.kings & own if board.has_castling_rights(us) else 0)

    def candidates(self) -> Iterator[chess.Move]:
        """The pseudo-legal moves that may mate: each kind of piece to the squares from which
        it would check, pawns also to promote or take en passant, castling, and any move of a
        piece that uncovers a line to the king."""
        board, checks = self.board, self.checks
        own = board.occupied_co[board.turn] & ~self.uncover
        for pieces, kind in ((board.knights, chess.KNIGHT), (board.bishops, chess.BISHOP),
                             (board.rooks, chess.ROOK), (board.queens, chess.QUEEN)):  # fmt: skip
            if pieces & own:
                yield from board.generate_pseudo_legal_moves(pieces & own, checks[kind])
        pawns = board.pawns & own
        if pawns:
            promotions = chess.BB_BACKRANKS if pawns & (chess.BB_RANK_7 | chess.BB_RANK_2) else 0
            passant = chess.BB_SQUARES[board.ep_square] if board.ep_square is not None else 0
            yield from board.generate_pseudo_legal_moves(pawns, checks[chess.PAWN] | promotions | passant)
        if self.uncover:
            yield from board.generate_pseudo_legal_moves(self.uncover, chess.BB_ALL)  # castling too, for a king
        if self.hot_from & board.kings & ~self.uncover:
            yield from board.generate_castling_moves()

    def test(self, move: chess.Move, *, pseudo_legal: bool = False) -> bool:
        """Whether ``move`` (legal, or pseudo-legal if so said) mates."""
        board, king = self.board, self.king
        assert king is not None
        origin = chess.BB_SQUARES[move.from_square]
        target = chess.BB_SQUARES[move.to_square]
        if not (target & self.hot_to or origin & self.hot_from):
            return False
        if move.promotion or origin & self.uncover or move.to_square == board.ep_square:
            pass  # rare: tried without a filter (a promoted piece's line may run through its origin)
        elif target & self.reach:
            piece = board.piece_type_at(move.from_square) or chess.KING
            if not target & self.checks[piece] or _king_steps_out(board, king, move, piece):
                return False
        elif not (origin & board.kings and abs(move.to_square - move.from_square) == 2):  # castling
            return False
        if pseudo_legal and not board.is_legal(move):
            return False
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        return mate


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
