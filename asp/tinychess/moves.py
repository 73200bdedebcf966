"""The move vocabulary: one fixed policy index for every chess move that can ever be legal.

Moves are encoded from the point of view of the side to move: for Black, every square is
mirrored vertically (``square ^ 56``), so that a move forward is the same index for both
colours and the network can share what it learns between them.

In that frame the vocabulary holds :data:`POLICY_SIZE` = 1858 indices:

* ``0 .. 1791``: every (from, to) pair that a queen or a knight could travel on an empty
  board, ordered by from-square, then to-square (a1 = 0 ... h8 = 63). This covers every
  piece move, pawn pushes and captures, promotions to a queen (a pawn arriving on the last
  rank with a plain from/to index promotes to a queen) and castling, which python-chess
  writes as the king's two-square move (``e1g1``, ``e1c1``).
* ``1792 .. 1857``: under-promotions, from the seventh rank to the eighth: for each of the
  22 (from, to) pawn steps (8 straight ahead, 14 diagonal captures) the knight, bishop and
  rook promotions, in that order.

>>> import chess
>>> board = chess.Board()
>>> i = move_index(chess.Move.from_uci("e2e4"), board.turn)
>>> index_move(i, board)
Move.from_uci('e2e4')
"""

from __future__ import annotations

import chess

__all__ = ["POLICY_SIZE", "index_move", "legal_move_indices", "move_index"]

Index = int
"""A position in the policy vector, ``0 <= index < POLICY_SIZE``."""

_UNDERPROMOTIONS = (chess.KNIGHT, chess.BISHOP, chess.ROOK)


def _is_queen_or_knight_step(from_sq: int, to_sq: int) -> bool:
    df = abs(chess.square_file(to_sq) - chess.square_file(from_sq))
    dr = abs(chess.square_rank(to_sq) - chess.square_rank(from_sq))
    if from_sq == to_sq:
        return False
    return df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}


def _build_tables() -> tuple[list[int], dict[tuple[int, int, int], int], list[tuple[int, int, int]]]:
    from_to = [-1] * (64 * 64)
    under: dict[tuple[int, int, int], int] = {}
    decode: list[tuple[int, int, int]] = []  # (from, to, promotion or 0), in the mover's frame
    for from_sq in chess.SQUARES:
        for to_sq in chess.SQUARES:
            if _is_queen_or_knight_step(from_sq, to_sq):
                from_to[from_sq * 64 + to_sq] = len(decode)
                decode.append((from_sq, to_sq, 0))
    for from_sq in chess.SquareSet(chess.BB_RANK_7):
        for df in (0, -1, 1):
            file = chess.square_file(from_sq) + df
            if not 0 <= file < 8:
                continue
            to_sq = chess.square(file, 7)
            for piece in _UNDERPROMOTIONS:
                under[(from_sq, to_sq, piece)] = len(decode)
                decode.append((from_sq, to_sq, piece))
    return from_to, under, decode


_FROM_TO, _UNDER, _DECODE = _build_tables()
POLICY_SIZE = len(_DECODE)
"""Number of policy indices (1858)."""


def move_index(move: chess.Move, turn: chess.Color) -> Index:
    """The policy index of ``move`` played by the side ``turn``.

    :raises ValueError: if the move can never be legal in standard chess.
    """
    flip = 0 if turn == chess.WHITE else 56
    from_sq, to_sq = move.from_square ^ flip, move.to_square ^ flip
    if move.promotion is not None and move.promotion != chess.QUEEN:
        index = _UNDER.get((from_sq, to_sq, move.promotion), -1)
    else:
        index = _FROM_TO[from_sq * 64 + to_sq]
    if index < 0:
        raise ValueError(f"move {move.uci()} has no policy index: it can never be legal")
    return index


def index_move(index: Index, board: chess.Board) -> chess.Move:
    """The move that ``index`` stands for on ``board``, for the side to move.

    A pawn reaching the last rank through a plain from/to index promotes to a queen. The
    move is not checked for legality: test ``move in board.legal_moves`` where it matters.

    :raises ValueError: if ``index`` is outside ``0 .. POLICY_SIZE - 1``.
    """
    if not 0 <= index < POLICY_SIZE:
        raise ValueError(f"policy index {index} is outside 0..{POLICY_SIZE - 1}")
    flip = 0 if board.turn == chess.WHITE else 56
    from_sq, to_sq, promotion = _DECODE[index]
    from_sq, to_sq = from_sq ^ flip, to_sq ^ flip
    if not promotion and board.pawns & chess.BB_SQUARES[from_sq] and chess.square_rank(to_sq) in (0, 7):
        promotion = chess.QUEEN
    return chess.Move(from_sq, to_sq, promotion or None)


def legal_move_indices(board: chess.Board) -> tuple[list[chess.Move], list[Index]]:
    """The legal moves of ``board`` and, in the same order, their policy indices."""
    flip = 0 if board.turn == chess.WHITE else 56
    from_to, under = _FROM_TO, _UNDER
    moves = list(board.generate_legal_moves())
    indices = []
    for move in moves:
        promotion = move.promotion
        if promotion is not None and promotion != chess.QUEEN:
            indices.append(under[(move.from_square ^ flip, move.to_square ^ flip, promotion)])
        else:
            indices.append(from_to[(move.from_square ^ flip) * 64 + (move.to_square ^ flip)])
    return moves, indices
