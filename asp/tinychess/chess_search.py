"""TinyChess's adapter to the search: chess positions as :class:`~asp.search.SearchGame` states.

python-chess stays the rules engine: a :class:`Position` is a board and, once the search goes
through it, its legal moves with their policy indices (the search's actions). Values are
exact where the game is decided: checkmate (-1 for the side to move), stalemate,
insufficient material and the 75-move rule (0); a position whose mover has a mate in one
(:func:`~asp.tinychess.mates.mates_in_one`) is won (+1), so a mate in one is never missed
and a mate threat two plies deep is seen on a single visit. A position inside the tree that
repeats one before it (on its path from the root, or in the game's ``history``) is scored as
a draw (0), as chess engines score a repetition: a side ahead has to make progress rather
than shuffle, and a side behind may seek the repetition. The network sees the root's own
repetition count; inside the tree positions are taken as new.

>>> import random, chess
>>> from asp.search import SearchConfig, search
>>> from asp.tinychess.model import TinyChess
>>> board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8 mates
>>> (result,) = search(ChessSearch(TinyChess()), [Position(board)], SearchConfig(), [random.Random(0)])
>>> ChessSearch.move(Position(board), result.action).uci()
'a1a8'
"""

from __future__ import annotations

import functools
from collections.abc import Container, Sequence
from dataclasses import dataclass, field

import chess
import numpy as np
import torch
from torch import nn

from asp.search import Status
from asp.tinychess.features import pack_boards, placement_key, unpack_boards
from asp.tinychess.mates import mates_in_one
from asp.tinychess.moves import legal_move_indices, move_index

__all__ = ["ChessSearch", "Position"]


@dataclass(eq=False)
class Position:
    """A search state: a board (not changed by the search) and its legal moves once expanded."""

    board: chess.Board
    repetitions: int = 0
    """Times the position was seen before in its game (the network's repetition planes)."""
    history: Container[tuple[int, ...]] = ()
    """The :func:`~asp.tinychess.features.placement_key` of every position of the game so far."""
    parent: Position | None = None
    """The position before, inside the search tree (None at the root)."""
    legal: list[chess.Move] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)

    def listed(self) -> list[int]:
        """The policy indices of its legal moves (``legal``, in the same order), listed on first use."""
        if not self.indices:
            self.legal, self.indices = legal_move_indices(self.board)
        return self.indices

    @functools.cached_property
    def key(self) -> tuple[int, ...]:
        """Its :func:`~asp.tinychess.features.placement_key`, computed once."""
        return placement_key(self.board)


class ChessSearch:
    """The search protocol over chess positions, evaluated by a TinyChess network.

    ``evaluations`` and ``boards`` count the network calls and the boards they carried: the
    batch occupancy of searches capped at ``batch`` boards a call
    (:class:`~asp.search.Searches`) is ``boards / (evaluations * batch)``.
    """

    def __init__(self, net: nn.Module) -> None:
        self.net = net
        self.evaluations = 0
        self.boards = 0

    def status(self, state: Position) -> Status:
        board = state.board
        if not any(board.generate_legal_moves()):
            return Status(value=-1.0 if board.is_check() else 0.0)
        if board.is_insufficient_material() or board.halfmove_clock >= 150 or _repeats(state):
            return Status(value=0.0)
        return Status(winning=tuple(move_index(move, board.turn) for move in mates_in_one(board)))

    def actions(self, state: Position) -> list[int]:
        return state.listed()

    def apply(self, state: Position, action: int) -> Position:
        board = state.board.copy(stack=False)
        board.push(self.move(state, action))
        return Position(board, history=state.history, parent=state)

    @staticmethod
    def move(state: Position, action: int) -> chess.Move:
        """The move of ``action`` in the expanded ``state``."""
        position = state.listed().index(action)
        return state.legal[position]

    def evaluate(self, states: Sequence[Position]) -> tuple[list[np.ndarray], list[float]]:
        bitboards, scalars = pack_boards([s.board for s in states], [s.repetitions for s in states])
        with torch.inference_mode():
            logits, values = self.net(unpack_boards(bitboards, scalars))
        self.evaluations += 1
        self.boards += len(states)
        return list(logits.float().numpy()), values.float().tolist()


def _repeats(state: Position) -> bool:
    """Whether ``state`` (inside the tree) repeats a position of its path or of the game."""
    if state.parent is None:
        return False  # the root is searched whatever its count
    key = state.key
    if key in state.history:
        return True
    # Only positions with the same side to move can repeat: every other ancestor.
    ancestor = state.parent.parent
    while ancestor is not None:
        if ancestor.key == key:
            return True
        ancestor = ancestor.parent.parent if ancestor.parent is not None else None
    return False
