"""A weak Connect Four solver: win, draw or loss with perfect play, not the distance to it.

Negamax with alpha-beta, after Pascal Pons' solver: two null-window searches per position (can
the side to move win? if not, can it hold a draw?), a transposition table keyed by
``current + mask`` (unique per position) holding a lower and an upper bound, moves ordered by
the number of winning cells they create and then centre first, and only non-losing moves
searched (a forced block when the opponent threatens to win; a loss when it threatens twice;
never a move right under an opponent's winning cell). It is meant for positions of 14 or more
stones, as random play reaches them; the empty board and early openings are out of its reach.

>>> from asp.connect4.rules import from_columns
>>> board = from_columns("737756367426666555133224175742")
>>> solve(board), move_results(board)
(1, {0: 1, 1: 0, 2: 0, 3: -1, 4: -1})
"""

from __future__ import annotations

from asp.connect4.rules import (
    _BOTTOM,
    _BOTTOMS,
    _CENTRE_FIRST,
    _COLUMN_CELLS,
    _FULL,
    Board,
    _winning_cells,
    is_over,
    legal_columns,
)

__all__ = ["move_results", "solve"]

_WIN, _DRAW, _LOSS = 1, 0, -1

_TABLE_ENTRIES = 1 << 20
"""The transposition table is cleared when it grows past this many positions (about 80 MiB)."""

_LAST_PLIES = 40  # with two cells left and no immediate win for either side, the game is a draw


class _Search:
    """One search's transposition table; its positions are raw bitboards, not :class:`Board`."""

    __slots__ = ("nodes", "table")

    def __init__(self) -> None:
        self.table: dict[int, int] = {}  # key -> 3 * (lower + 1) + (upper + 1)
        self.nodes = 0

    def result(self, current: int, mask: int, plies: int) -> int:
        """The result for the side to move, which must have no winning move at once."""
        if self.negamax(current, mask, plies, _DRAW, _WIN) > _DRAW:
            return _WIN
        return _DRAW if self.negamax(current, mask, plies, _LOSS, _DRAW) >= _DRAW else _LOSS

    def negamax(self, current: int, mask: int, plies: int, alpha: int, beta: int) -> int:
        """The result if it lies in ``(alpha, beta)``; else a bound on the same side of the window.

        The side to move has no winning move at once, and the game is not over.
        """
        self.nodes += 1
        playable = (mask + _BOTTOM) & _FULL
        threats = _winning_cells(current ^ mask, mask)
        forced = playable & threats
        if forced:
            if forced & (forced - 1):
                return _LOSS  # two cells to block
            playable = forced
        playable &= ~(threats >> 1)  # a stone right under the opponent's winning cell loses
        if not playable:
            return _LOSS
        if plies >= _LAST_PLIES:
            return _DRAW

        key = current + mask
        entry = self.table.get(key)
        if entry is not None:
            lower, upper = entry // 3 - 1, entry % 3 - 1
            if lower >= beta:
                return lower
            if upper <= alpha:
                return upper
            alpha = max(alpha, lower)
            beta = min(beta, upper)
            if alpha >= beta:
                return alpha

        if playable & (playable - 1):
            scored = []
            for column in _CENTRE_FIRST:
                move = playable & _COLUMN_CELLS[column]
                if move:
                    scored.append((_winning_cells(current | move, mask | move).bit_count(), move))
            scored.sort(key=_first, reverse=True)  # stable: ties stay centre first
            moves = [move for _, move in scored]
        else:
            moves = [playable]  # a forced block, or the one move that does not lose at once

        opponent = current ^ mask
        start = alpha
        for move in moves:
            score = -self.negamax(opponent, mask | move, plies + 1, -beta, -alpha)
            if score >= beta:
                self._store(key, entry, score, _WIN)
                return score
            if score > alpha:
                alpha = score
        self._store(key, entry, alpha if alpha > start else _LOSS, alpha)
        return alpha

    def _store(self, key: int, entry: int | None, lower: int, upper: int) -> None:
        if entry is not None:
            lower = max(lower, entry // 3 - 1)
            upper = min(upper, entry % 3 - 1)
        elif len(self.table) >= _TABLE_ENTRIES:
            self.table.clear()
        self.table[key] = 3 * (lower + 1) + (upper + 1)


def _first(item: tuple[int, int]) -> int:
    return item[0]


def _after(board: Board, column: int) -> tuple[int, int]:
    """The bitboards ``(current, mask)`` after the side to move plays ``column``."""
    mask = board.mask
    return board.current ^ mask, mask | (mask + _BOTTOMS[column])


def _immediate_win(current: int, mask: int) -> bool:
    return bool(_winning_cells(current, mask) & (mask + _BOTTOM) & _FULL)


def _result(search: _Search, current: int, mask: int, plies: int) -> int:
    """The result for the side to move of a position that is not over."""
    if _immediate_win(current, mask):
        return _WIN
    return search.result(current, mask, plies)


def solve(board: Board) -> int:
    """The result for the side to move with perfect play from both sides: 1 a win, 0 a draw,
    -1 a loss.

    :raises ValueError: if the game is over.

    >>> from asp.connect4.rules import from_columns
    >>> solve(from_columns("4455"))  # the first player can make an open three on the bottom row
    1
    """
    if is_over(board):
        raise ValueError("the game is over: there is nothing to solve")
    return _result(_Search(), board.current, board.mask, board.mask.bit_count())


def move_results(board: Board) -> dict[int, int]:
    """The result for the side to move of each legal column (0-based, ascending), with perfect
    play afterwards: 1 a win (a move that makes four in a row at once among them), 0 a draw,
    -1 a loss. ``{}`` once the game is over.

    >>> from asp.connect4.rules import from_columns
    >>> move_results(from_columns("153261443614766311743762"))  # column 2 wins at once
    {0: -1, 1: 1, 2: -1, 3: 0, 4: -1, 5: -1, 6: -1}
    """
    search = _Search()  # one table for all the moves: their subtrees share many positions
    wins = _winning_cells(board.current, board.mask)
    results = {}
    for column in legal_columns(board):
        current, mask = _after(board, column)
        if wins & (mask ^ board.mask):
            results[column] = _WIN
        elif mask == _FULL:
            results[column] = _DRAW
        else:
            results[column] = -_result(search, current, mask, mask.bit_count())
    return results
