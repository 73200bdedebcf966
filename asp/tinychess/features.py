"""Batched board encoding: many boards in, one float tensor out.

Every board is seen from the side to move (for Black the board is mirrored vertically,
matching :mod:`asp.tinychess.moves`). A board becomes :data:`N_FEATURES` numbers:

* 16 planes of 64 squares (a1 first): the mover's pawns, knights, bishops, rooks, queens
  and king, then the opponent's, the en-passant target square, the squares the mover
  and the opponent attack (what a small MLP cannot easily work out from the pieces: which
  pieces hang, whether a king is in check or has a free square), and the squares the
  mover's mating moves land on (:func:`~asp.tinychess.mates.mates_in_one`);
* 7 scalars: castling rights (mover king side, mover queen side, opponent king side,
  opponent queen side), the half-move clock / 100 (the 50- and 75-move rules), and two
  flags for how often the position's piece placement with this side to move was already
  seen in the game (at least once, at least twice), so that the network can see
  repetitions coming.

The bit unpacking is vectorised with numpy; per board only 13 integers are read from
python-chess, and the attacked squares are looked up in its attack tables.
:func:`pack_boards` keeps the compact form (16 bitboards and two small integers),
which self-play sends back with each game so that the trainer need not replay it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import chess
import numpy as np
import torch

from asp.tinychess.mates import mates_in_one

__all__ = ["N_FEATURES", "N_PLANES", "N_SCALARS", "encode_boards", "pack_boards", "unpack_boards"]

N_PLANES = 16
"""Planes of 64 squares in a board's encoding."""
N_SCALARS = 7
"""Scalars after the planes: castling rights, the half-move clock, two repetition flags."""
N_FEATURES = N_PLANES * 64 + N_SCALARS
"""Numbers per encoded board: the width of :func:`encode_boards`' output."""

# Bits of a packed board's flags (column 0 of pack_boards' second array).
_MOVER_K, _MOVER_Q, _OPP_K, _OPP_Q, _SEEN_ONCE, _SEEN_TWICE = (1 << i for i in range(6))


def encode_boards(boards: Sequence[chess.Board], repetitions: Sequence[int] | None = None) -> torch.Tensor:
    """Encode ``boards`` as a ``(len(boards), N_FEATURES)`` float32 tensor.

    ``repetitions[i]`` is how many times board ``i``'s position was seen before in its game
    (0 for a new position); omitted, it counts as 0.

    >>> encode_boards([chess.Board()]).shape
    torch.Size([1, 1031])
    """
    return unpack_boards(*pack_boards(boards, repetitions))


def pack_boards(
    boards: Sequence[chess.Board],
    repetitions: Sequence[int] | None = None,
    mates: Sequence[Sequence[chess.Move]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The compact form of :func:`encode_boards`: 132 bytes a board instead of 4,124.
    ``mates[i]``, where given, is :func:`~asp.tinychess.mates.mates_in_one` of board ``i``
    (a game's position keeps its own: ``ChessState.mates``, which its search asked for); omitted,
    it is computed.

    Returns ``(bitboards, scalars)``: ``(n, N_PLANES)`` uint64 planes from the mover's side
    (already mirrored for Black), and ``(n, 2)`` uint16: castling and repetition flags, and
    the half-move clock. :func:`unpack_boards` turns them into exactly ``encode_boards``'s
    tensor, so a worker can send what it encoded for play back for training.

    >>> bits, scalars = pack_boards([chess.Board()])
    >>> bits.dtype, bits.shape, scalars.tolist()
    (dtype('uint64'), (1, 16), [[15, 0]])
    """
    n = len(boards)
    bitboards = np.empty((n, N_PLANES), dtype=np.uint64)
    scalars = np.zeros((n, 2), dtype=np.uint16)
    black = np.zeros(n, dtype=bool)
    for i, board in enumerate(boards):
        own = board.occupied_co[board.turn]
        opp = board.occupied_co[not board.turn]
        ep = board.ep_square
        bitboards[i] = (
            board.pawns & own, board.knights & own, board.bishops & own,
            board.rooks & own, board.queens & own, board.kings & own,
            board.pawns & opp, board.knights & opp, board.bishops & opp,
            board.rooks & opp, board.queens & opp, board.kings & opp,
            0 if ep is None else chess.BB_SQUARES[ep],
            attacked(board, board.turn), attacked(board, not board.turn),
            _landings(mates_in_one(board) if mates is None else mates[i]),
        )  # fmt: skip
        rights = board.castling_rights
        white = (_MOVER_K if rights & chess.BB_H1 else 0) | (_MOVER_Q if rights & chess.BB_A1 else 0)
        black_ = (_MOVER_K if rights & chess.BB_H8 else 0) | (_MOVER_Q if rights & chess.BB_A8 else 0)
        if board.turn == chess.WHITE:
            flags = white | black_ << 2
        else:
            flags = black_ | white << 2
            black[i] = True
        seen = 0 if repetitions is None else repetitions[i]
        flags |= (_SEEN_ONCE if seen >= 1 else 0) | (_SEEN_TWICE if seen >= 2 else 0)
        scalars[i] = flags, min(board.halfmove_clock, 65535)
    # Mirroring a board vertically reverses the order of its eight rank bytes.
    bitboards[black] = bitboards[black].byteswap()
    return bitboards, scalars


def _landings(moves: Iterable[chess.Move]) -> int:
    """The squares ``moves`` land on, as a bitboard.

    >>> _landings([chess.Move.from_uci("a1a8"), chess.Move.from_uci("b7b8q")]) == chess.BB_A8 | chess.BB_B8
    True
    """
    squares = 0
    for move in moves:
        squares |= chess.BB_SQUARES[move.to_square]
    return squares


def attacked(board: chess.Board, color: chess.Color) -> int:
    """The squares ``color`` attacks, pinned pieces included, as a bitboard: python-chess's
    attack tables, a few microseconds a board (``board.attackers_mask`` square by square is
    the same set).

    >>> bin(attacked(chess.Board(), chess.WHITE)).count("1")  # rank 3, and b1..g1, a2..h2
    22
    """
    occupied = board.occupied
    own = board.occupied_co[color]
    pawns = board.pawns & own
    if color == chess.WHITE:
        mask = ((pawns << 7) & ~chess.BB_FILE_H | (pawns << 9) & ~chess.BB_FILE_A) & chess.BB_ALL
    else:
        mask = (pawns >> 9) & ~chess.BB_FILE_H | (pawns >> 7) & ~chess.BB_FILE_A
    for square in chess.scan_reversed(board.knights & own):
        mask |= chess.BB_KNIGHT_ATTACKS[square]
    for square in chess.scan_reversed(board.kings & own):
        mask |= chess.BB_KING_ATTACKS[square]
    for square in chess.scan_reversed((board.bishops | board.queens) & own):
        mask |= chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]
    for square in chess.scan_reversed((board.rooks | board.queens) & own):
        mask |= (
            chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
            | chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied]
        )
    return mask


def unpack_boards(bitboards: np.ndarray, scalars: np.ndarray) -> torch.Tensor:
    """The ``(n, N_FEATURES)`` float32 tensor of :func:`pack_boards`' arrays."""
    # Little-endian bytes put a1..h1 first, so bit k of the unpacked row is square k.
    little = np.ascontiguousarray(bitboards, dtype="<u8")
    bits = np.unpackbits(little.view(np.uint8), axis=1, bitorder="little")
    flags = scalars[:, 0]
    out = np.empty((len(bitboards), N_FEATURES), dtype=np.float32)
    out[:, : N_PLANES * 64] = bits
    for column, bit in enumerate((_MOVER_K, _MOVER_Q, _OPP_K, _OPP_Q)):
        out[:, N_PLANES * 64 + column] = (flags & bit) != 0
    out[:, N_PLANES * 64 + 4] = (scalars[:, 1].astype(np.float64) / 100.0).astype(np.float32)
    out[:, N_PLANES * 64 + 5] = (flags & _SEEN_ONCE) != 0
    out[:, N_PLANES * 64 + 6] = (flags & _SEEN_TWICE) != 0
    return torch.from_numpy(out)
