"""Connect Four rules (7 columns, 6 rows) on bitboards held in plain Python ints.

The layout is Pascal Pons': the cell of ``column`` and ``row`` (row 0 at the bottom) is bit
``column * 7 + row``; each column has one spare bit above its top cell, so that a shift never
carries a line of stones from one column into the next. A :class:`Board` holds the stones of the
side to move and the stones of both sides; the side that just moved owns ``mask ^ current``.

Columns are 0-based in the API (``play(board, 3)`` drops a stone in the centre) and 1-based in
the text notation of :func:`from_columns` and :func:`to_columns`, the notation of the published
Connect Four test sets.

>>> board = from_columns("4453")
>>> legal_columns(board)
[0, 1, 2, 3, 4, 5, 6]
>>> board.to_move, won(board)
(0, False)
>>> board = play(play(play(board, 5), 2), 6)
>>> to_columns(board), won(board), value(board)
('4453637', True, -1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

__all__ = [
    "EMPTY",
    "HEIGHT",
    "WIDTH",
    "Board",
    "cell",
    "from_columns",
    "is_over",
    "legal_columns",
    "mirror",
    "play",
    "stones",
    "svg",
    "text",
    "to_columns",
    "value",
    "winning_columns",
    "won",
]

WIDTH = 7
"""The number of columns."""

HEIGHT = 6
"""The number of rows."""

_STRIDE = HEIGHT + 1  # bits a column takes, its spare top bit included
_CELLS = WIDTH * HEIGHT
_COLUMN = (1 << HEIGHT) - 1  # the six cells of column 0
_BOTTOM = sum(1 << (c * _STRIDE) for c in range(WIDTH))  # the bottom cell of every column
_FULL = _BOTTOM * _COLUMN  # every cell of the board, no spare bit
_TOPS = tuple(1 << (HEIGHT - 1 + c * _STRIDE) for c in range(WIDTH))
_BOTTOMS = tuple(1 << (c * _STRIDE) for c in range(WIDTH))
_COLUMN_CELLS = tuple(_COLUMN << (c * _STRIDE) for c in range(WIDTH))  # the six cells of each column
_CENTRE_FIRST = (3, 2, 4, 1, 5, 0, 6)  # the columns in the order a search best tries them


@dataclass(frozen=True, slots=True)
class Board:
    """A Connect Four position and the columns played to reach it.

    Make boards with :data:`EMPTY`, :func:`play` and :func:`from_columns`: nothing checks that
    the three fields of a board built by hand agree.
    """

    current: int
    """The bitboard of the stones of the side to move."""

    mask: int
    """The bitboard of every stone on the board."""

    moves: tuple[int, ...] = ()
    """The columns played from the empty board, 0-based, in order."""

    @property
    def plies(self) -> int:
        """The number of moves played (the number of stones on the board).

        >>> from_columns("4453").plies
        4
        """
        return len(self.moves)

    @property
    def to_move(self) -> int:
        """The side to move: 0 the first player, 1 the second.

        >>> EMPTY.to_move, play(EMPTY, 3).to_move
        (0, 1)
        """
        return len(self.moves) & 1


EMPTY = Board(0, 0)
"""The empty board, the first player to move."""


def _aligned(stones: int) -> bool:
    """True if ``stones`` hold four in a row in any direction."""
    pairs = stones & (stones >> _STRIDE)  # horizontal
    if pairs & (pairs >> (2 * _STRIDE)):
        return True
    pairs = stones & (stones >> (_STRIDE - 1))  # diagonal, down to the right
    if pairs & (pairs >> (2 * (_STRIDE - 1))):
        return True
    pairs = stones & (stones >> (_STRIDE + 1))  # diagonal, up to the right
    if pairs & (pairs >> (2 * (_STRIDE + 1))):
        return True
    pairs = stones & (stones >> 1)  # vertical
    return bool(pairs & (pairs >> 2))


def _winning_cells(stones: int, mask: int) -> int:
    """The empty cells (playable now or not) that would give ``stones`` four in a row."""
    # Unrolled (shifts 7: horizontal, 6 and 8: the diagonals): the solver calls this at every node.
    cells = (stones << 1) & (stones << 2) & (stones << 3)  # three stones right below
    pair = (stones << 7) & (stones << 14)
    cells |= pair & ((stones << 21) | (stones >> 7))
    pair = (stones >> 7) & (stones >> 14)
    cells |= pair & ((stones << 7) | (stones >> 21))
    pair = (stones << 6) & (stones << 12)
    cells |= pair & ((stones << 18) | (stones >> 6))
    pair = (stones >> 6) & (stones >> 12)
    cells |= pair & ((stones << 6) | (stones >> 18))
    pair = (stones << 8) & (stones << 16)
    cells |= pair & ((stones << 24) | (stones >> 8))
    pair = (stones >> 8) & (stones >> 16)
    cells |= pair & ((stones << 8) | (stones >> 24))
    return cells & (_FULL ^ mask)


def _columns_of(cells: int) -> list[int]:
    """The columns holding at least one cell of ``cells``, ascending."""
    return [c for c in range(WIDTH) if cells & _COLUMN_CELLS[c]]


def won(board: Board) -> bool:
    """True if the player who made the last move has four in a row.

    >>> won(from_columns("4455667")), won(from_columns("445566"))
    (True, False)
    """
    return _aligned(board.current ^ board.mask)


def is_over(board: Board) -> bool:
    """True if the game has ended: the last mover has four in a row, or the board is full.

    >>> is_over(from_columns("1212121")), is_over(EMPTY)
    (True, False)
    """
    return board.mask == _FULL or _aligned(board.current ^ board.mask)


def legal_columns(board: Board) -> list[int]:
    """The 0-based columns that are not full, ascending; ``[]`` once the game is over.

    >>> legal_columns(from_columns("111111"))
    [1, 2, 3, 4, 5, 6]
    """
    mask = board.mask
    if mask == _FULL or _aligned(board.current ^ mask):
        return []
    return [c for c in range(WIDTH) if not mask & _TOPS[c]]


def play(board: Board, column: int) -> Board:
    """The board after the side to move drops a stone in ``column`` (0-based).

    :raises ValueError: if ``column`` is not 0-6, the column is full, or the game is over.

    >>> play(EMPTY, 3).moves
    (3,)
    >>> play(EMPTY, 7)
    Traceback (most recent call last):
    ...
    ValueError: column 7 is out of range: columns are 0-6
    """
    if not 0 <= column < WIDTH:
        raise ValueError(f"column {column} is out of range: columns are 0-{WIDTH - 1}")
    mask = board.mask
    if mask & _TOPS[column]:
        raise ValueError(f"column {column} is full")
    if _aligned(board.current ^ mask):
        raise ValueError("the game is already over: the last move made four in a row")
    return Board(board.current ^ mask, mask | (mask + _BOTTOMS[column]), (*board.moves, column))


def winning_columns(board: Board) -> list[int]:
    """The columns where the side to move makes four in a row at once, ascending; ``[]`` once
    the game is over.

    >>> winning_columns(from_columns("454545"))
    [3]
    """
    mask = board.mask
    if mask == _FULL or _aligned(board.current ^ mask):
        return []
    playable = (mask + _BOTTOM) & _FULL
    return _columns_of(_winning_cells(board.current, mask) & playable)


def value(board: Board) -> float | None:
    """The result for the side to move: -1.0 if the last mover made four in a row, 0.0 if the
    board is full without one, ``None`` while the game goes on.

    >>> value(from_columns("4455667")), value(EMPTY)
    (-1.0, None)
    """
    if _aligned(board.current ^ board.mask):
        return -1.0
    if board.mask == _FULL:
        return 0.0
    return None


def stones(board: Board) -> tuple[int, int]:
    """The bitboards of the first player's stones and of the second player's.

    >>> stones(from_columns("12"))
    (1, 128)
    """
    other = board.current ^ board.mask
    return (board.current, other) if board.to_move == 0 else (other, board.current)


def cell(board: Board, column: int, row: int) -> int:
    """What fills the cell at 0-based ``column`` and ``row`` (row 0 at the bottom): 0 nothing,
    1 a stone of the first player, 2 a stone of the second.

    >>> [cell(from_columns("44"), 3, row) for row in range(3)]
    [1, 2, 0]
    """
    if not (0 <= column < WIDTH and 0 <= row < HEIGHT):
        raise ValueError(f"no cell at column {column}, row {row}: columns are 0-{WIDTH - 1}, rows 0-{HEIGHT - 1}")
    bit = 1 << (column * _STRIDE + row)
    if not board.mask & bit:
        return 0
    first, _ = stones(board)
    return 1 if first & bit else 2


def from_columns(text: str) -> Board:
    """The board reached by playing the 1-based columns of ``text`` from the empty board.

    ``""`` is the empty board.

    :raises ValueError: naming the move (counted from 1) that is not a column 1-7, falls in a
        full column, or comes after the game ended.

    >>> from_columns("4453").moves
    (3, 3, 4, 2)
    >>> from_columns("1111111")
    Traceback (most recent call last):
    ...
    ValueError: move 7: column 1 is full
    """
    board = EMPTY
    for number, char in enumerate(text, 1):
        if char not in "1234567":
            raise ValueError(f"move {number}: {char!r} is not a column 1-{WIDTH}")
        column = int(char) - 1
        if board.mask & _TOPS[column]:
            raise ValueError(f"move {number}: column {char} is full")
        if is_over(board):
            raise ValueError(f"move {number}: the game is already over")
        board = play(board, column)
    return board


def to_columns(board: Board) -> str:
    """The moves of ``board`` as 1-based columns, the inverse of :func:`from_columns`.

    >>> to_columns(play(play(EMPTY, 3), 0))
    '41'
    """
    return "".join(str(c + 1) for c in board.moves)


def text(board: Board) -> str:
    """The board as six lines of cells, the top row first (``X`` the first player, ``O`` the
    second, ``.`` empty, one space between cells), then a line of the column numbers 1-7.

    >>> print(text(from_columns("4453")))
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . O . . .
    . . O X X . .
    1 2 3 4 5 6 7
    """
    marks = ".XO"
    lines = [" ".join(marks[cell(board, c, row)] for c in range(WIDTH)) for row in reversed(range(HEIGHT))]
    lines.append(" ".join(str(c + 1) for c in range(WIDTH)))
    return "\n".join(lines)


_FRAME = "#1f5fbf"
_HOLE = "#ffffff"
_DISCS = ("#d62828", "#f4c430")  # the first player's red, the second's yellow
_RING = "#111111"


def svg(board: Board, *, size: int = 280, last: bool = True) -> str:
    """A standalone SVG image of the board, ``size`` pixels wide: a blue frame, red discs for
    the first player, yellow for the second, white holes, and with ``last`` a dark ring
    around the disc of the last move (if any).

    >>> image = svg(from_columns("44"), size=70)
    >>> image.startswith("<svg") and image.count("<circle") == 43
    True
    """
    if size <= 0:
        raise ValueError(f"size must be a positive number of pixels, not {size}")
    unit = size / WIDTH
    height = unit * HEIGHT

    def px(x: float) -> str:
        return f"{round(x, 2):g}"

    def centre(column: int, row: int) -> str:
        return f'cx="{px((column + 0.5) * unit)}" cy="{px((HEIGHT - row - 0.5) * unit)}"'

    title = escape(to_columns(board) or "empty board")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{px(height)}" '
        f'viewBox="0 0 {size} {px(height)}">',
        f"<title>Connect Four: {title}</title>",
        f'<rect x="0" y="0" width="{size}" height="{px(height)}" rx="{px(unit / 5)}" fill="{_FRAME}"/>',
    ]
    for column in range(WIDTH):
        for row in range(HEIGHT):
            owner = cell(board, column, row)
            fill = _HOLE if owner == 0 else _DISCS[owner - 1]
            parts.append(f'<circle {centre(column, row)} r="{px(unit * 0.4)}" fill="{fill}"/>')
    if last and board.moves:
        column = board.moves[-1]
        row = (board.mask >> (column * _STRIDE)).bit_length() - 1
        parts.append(
            f'<circle {centre(column, row)} r="{px(unit * 0.3)}" fill="none" '
            f'stroke="{_RING}" stroke-width="{px(unit * 0.06)}"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def mirror(board: Board) -> Board:
    """The left-right mirror image of ``board``: column ``c`` becomes column ``6 - c``, in the
    stones and in the moves.

    >>> to_columns(mirror(from_columns("1234")))
    '7654'
    """

    def flip(bits: int) -> int:
        out = 0
        for c in range(WIDTH):
            out |= ((bits >> (c * _STRIDE)) & _COLUMN) << ((WIDTH - 1 - c) * _STRIDE)
        return out

    return Board(flip(board.current), flip(board.mask), tuple(WIDTH - 1 - c for c in board.moves))
