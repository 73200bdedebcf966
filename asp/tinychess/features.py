"""Batched board encoding: many boards in, one float tensor out.

Every board is seen from the side to move (for Black the board is mirrored vertically,
matching :mod:`asp.tinychess.moves`). A board becomes :data:`N_FEATURES` numbers:

* 13 planes of 64 squares (a1 first): the mover's pawns, knights, bishops, rooks, queens
  and king, then the opponent's, then the en-passant target square;
* 7 scalars: castling rights (mover king side, mover queen side, opponent king side,
  opponent queen side), the half-move clock / 100 (the 50- and 75-move rules), and two
  flags for how often the position's piece placement with this side to move was already
  seen in the game (at least once, at least twice), so that the network can see
  repetitions coming.

The bit unpacking is vectorised with numpy; per board only 13 integers are read from
python-chess.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import torch

__all__ = ["N_FEATURES", "N_PLANES", "N_SCALARS", "encode_boards"]

N_PLANES = 13
N_SCALARS = 7
N_FEATURES = N_PLANES * 64 + N_SCALARS


def encode_boards(boards: Sequence[chess.Board], repetitions: Sequence[int] | None = None) -> torch.Tensor:
    """Encode ``boards`` as a ``(len(boards), N_FEATURES)`` float32 tensor.

    ``repetitions[i]`` is how many times board ``i``'s position was seen before in its game
    (0 for a new position); omitted, it counts as 0.

    >>> encode_boards([chess.Board()]).shape
    torch.Size([1, 839])
    """
    n = len(boards)
    bitboards = np.empty((n, N_PLANES), dtype=np.uint64)
    scalars = np.zeros((n, N_SCALARS), dtype=np.float32)
    black = np.zeros(n, dtype=bool)
    for i, board in enumerate(boards):
        white_to_move = board.turn == chess.WHITE
        own = board.occupied_co[board.turn]
        opp = board.occupied_co[not board.turn]
        ep = board.ep_square
        bitboards[i] = (
            board.pawns & own, board.knights & own, board.bishops & own,
            board.rooks & own, board.queens & own, board.kings & own,
            board.pawns & opp, board.knights & opp, board.bishops & opp,
            board.rooks & opp, board.queens & opp, board.kings & opp,
            0 if ep is None else chess.BB_SQUARES[ep],
        )  # fmt: skip
        rights = board.castling_rights
        white_k, white_q = bool(rights & chess.BB_H1), bool(rights & chess.BB_A1)
        black_k, black_q = bool(rights & chess.BB_H8), bool(rights & chess.BB_A8)
        row = scalars[i]
        if white_to_move:
            row[0], row[1], row[2], row[3] = white_k, white_q, black_k, black_q
        else:
            row[0], row[1], row[2], row[3] = black_k, black_q, white_k, white_q
            black[i] = True
        row[4] = board.halfmove_clock / 100.0
        seen = 0 if repetitions is None else repetitions[i]
        row[5], row[6] = seen >= 1, seen >= 2
    # Mirroring a board vertically reverses the order of its eight rank bytes.
    bitboards[black] = bitboards[black].byteswap()
    # Little-endian bytes put a1..h1 first, so bit k of the unpacked row is square k.
    little = bitboards.astype("<u8", copy=False)
    bits = np.unpackbits(little.view(np.uint8), axis=1, bitorder="little")
    features = np.concatenate([bits.astype(np.float32), scalars], axis=1)
    return torch.from_numpy(features)
