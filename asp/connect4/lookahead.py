"""The lookahead mover: a depth-limited alpha-beta search of Connect Four, the rung above the
one-ply win/block mover (:meth:`asp.connect4.ConnectFour.movers` ``lookahead``).

It searches :data:`DEPTH` plies (negamax with alpha-beta, centre columns first): a win it can
force within them is taken, the quickest first; a loss it can see coming is put off as long as
it can be; beyond them a position scores the empty cells that would complete four for the side
to move, less those of its opponent. Ties between its best columns are broken at random. It
knows Connect Four's forced replies: a winning cell of the opponent's that can be played must
be blocked, and two of them lose.

>>> import random
>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> state = game.parse_state("4455")  # three in a row on the bottom row, open at both ends, is a win
>>> game.action_text(state, LookaheadMover().choose(game, state, random.Random(0))) in ("3", "6")
True
"""

from __future__ import annotations

import random
from typing import Any

from asp.connect4.rules import (
    _BOTTOM,
    _BOTTOMS,
    _CENTRE_FIRST,
    _COLUMN_CELLS,
    _FULL,
    Board,
    _winning_cells,
    legal_columns,
)
from asp.games.movers import BaseMover

__all__ = ["DEPTH", "LookaheadMover"]

DEPTH = 4
"""Plies the lookahead mover searches: its own move, the reply, its next move and the reply."""

_WIN = 1000


class LookaheadMover(BaseMover):
    """Chooses by a :data:`DEPTH`-ply alpha-beta search (see the module's docstring)."""

    opponent_name = "lookahead"

    def choose(self, game: Any, state: Board, rng: random.Random) -> int:
        best, chosen = -_WIN - 1, []
        for column in legal_columns(state):
            current, mask = state.current, state.mask
            moved = mask | (mask + _BOTTOMS[column])
            if _winning_cells(current, mask) & (moved ^ mask):
                score = _WIN  # four in a row at once
            else:
                # a window just below the best so far: scores equal to it are exact, for the tie-break
                score = -_negamax(current ^ mask, moved, DEPTH - 1, -_WIN - 1, -(best - 1), 1)
            if score > best:
                best, chosen = score, [column]
            elif score == best:
                chosen.append(column)
        return chosen[rng.randrange(len(chosen))]


def _negamax(current: int, mask: int, depth: int, alpha: int, beta: int, ply: int) -> int:
    """The score of the position for the side to move (whose stones are ``current``), searched
    ``depth`` more plies; ``ply``: plies from the root, so that a quicker win scores more."""
    playable = (mask + _BOTTOM) & _FULL
    if not playable:
        return 0  # the board is full: a draw
    own = _winning_cells(current, mask)
    if own & playable:
        return _WIN - ply
    theirs = _winning_cells(current ^ mask, mask)
    forced = theirs & playable
    if forced:
        if forced & (forced - 1):
            return -(_WIN - ply - 1)  # two cells to block: the next move wins
        playable = forced
    if depth == 0:
        return (own & ~mask).bit_count() - (theirs & ~mask).bit_count()
    for column in _CENTRE_FIRST:
        cell = playable & _COLUMN_CELLS[column]
        if not cell:
            continue
        score = -_negamax(current ^ mask, mask | cell, depth - 1, -beta, -alpha, ply + 1)
        if score >= beta:
            return score
        alpha = max(alpha, score)
    return alpha
