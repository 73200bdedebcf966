"""TinyChess's adapter to the search: chess positions as :class:`~asp.search.SearchGame` states.

python-chess stays the rules engine: a :class:`Position` is a board and, once expanded, its
legal moves with their policy indices (the search's actions). Values are exact where the
game is decided: checkmate (-1 for the side to move), stalemate, insufficient material and
the 75-move rule (0); a position whose mover has a mate in one
(:func:`~asp.tinychess.mates.mating_moves`) is won (+1), so a mate in one is never missed
and a mate threat two plies deep is seen on a single visit. Repetitions are counted at the
root only (the game's own history); inside the tree positions are taken as new.

>>> import random, chess
>>> from asp.search import SearchConfig, search
>>> from asp.tinychess.model import TinyChess
>>> board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8 mates
>>> (result,) = search(ChessSearch(TinyChess()), [Position(board)], SearchConfig(), [random.Random(0)])
>>> ChessSearch.move(Position(board), result.action).uci()
'a1a8'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import chess
import torch
from torch import nn

from asp.search import Expansion
from asp.tinychess.features import pack_boards, unpack_boards
from asp.tinychess.mates import mating_moves
from asp.tinychess.moves import legal_move_indices

__all__ = ["ChessSearch", "Position"]


@dataclass(eq=False)
class Position:
    """A search state: a board (not changed by the search) and its legal moves once expanded."""

    board: chess.Board
    repetitions: int = 0
    """Times the position was seen before in its game (the network's repetition planes)."""
    legal: list[chess.Move] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)


class ChessSearch:
    """The search protocol over chess positions, evaluated by a TinyChess network.

    ``evaluations`` and ``boards`` count the network calls and the boards they carried (the
    batch occupancy of a search is ``boards / evaluations`` against the batch it searched).
    """

    def __init__(self, net: nn.Module) -> None:
        self.net = net
        self.evaluations = 0
        self.boards = 0

    def expand(self, state: Position) -> Expansion:
        board = state.board
        state.legal, state.indices = legal_move_indices(board)
        actions = tuple(state.indices)
        if not state.legal:
            return Expansion((), value=-1.0 if board.is_check() else 0.0)
        if board.is_insufficient_material() or board.halfmove_clock >= 150:
            return Expansion(actions, value=0.0)
        mates = mating_moves(board, state.legal)
        return Expansion(actions, winning=tuple(state.indices[i] for i in mates))

    def apply(self, state: Position, action: int) -> Position:
        board = state.board.copy(stack=False)
        board.push(self.move(state, action))
        return Position(board)

    @staticmethod
    def move(state: Position, action: int) -> chess.Move:
        """The move of ``action`` in the expanded ``state``."""
        if not state.indices:
            state.legal, state.indices = legal_move_indices(state.board)
        return state.legal[state.indices.index(action)]

    def evaluate(
        self, states: Sequence[Position], actions: Sequence[Sequence[int]]
    ) -> tuple[list[list[float]], list[float]]:
        bitboards, scalars = pack_boards([s.board for s in states], [s.repetitions for s in states])
        with torch.inference_mode():
            logits, values = self.net(unpack_boards(bitboards, scalars))
        self.evaluations += 1
        self.boards += len(states)
        counts = [len(a) for a in actions]
        rows = torch.repeat_interleave(torch.arange(len(states)), torch.tensor(counts))
        flat = logits.float()[rows, torch.tensor([i for a in actions for i in a], dtype=torch.int64)].tolist()
        out, start = [], 0
        for n in counts:
            out.append(flat[start : start + n])
            start += n
        return out, values.float().tolist()
