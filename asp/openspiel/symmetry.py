"""The board symmetries of the OpenSpiel games whose rules and start asp knows to be symmetric.

OpenSpiel does not say which of its games are symmetric, nor how a symmetry maps its action
numbers, so asp lists them per game (by the game's short name), each checked by the tests
against pyspiel itself: the image of a game, its moves mapped, is a game of the same rules
with the observation mapped, the legal actions mapped and the same returns at every ply.

* ``connect_four``: the left-right mirror (a column's action is its column).
* ``tic_tac_toe``: the eight symmetries of the square (an action is a cell).
* ``othello``: the three symmetries of the square that keep its start (the 180-degree turn
  and the two diagonal reflections; an action is a cell, or OpenSpiel's pass).
* ``breakthrough`` (any size): the left-right mirror (an action is a square, a direction
  and whether it captures).

Any other game has none: the trainer learns each sample as it is.

>>> from asp.openspiel import OpenSpielGame
>>> [s.name for s in OpenSpielGame("connect_four").symmetries()]
['mirror']
>>> OpenSpielGame("connect_four").symmetries()[0].actions[:7]
(6, 5, 4, 3, 2, 1, 0)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from asp.games.protocol import Symmetry

__all__ = ["permute_cells", "symmetries_of"]

Cell = tuple[int, int]
CellMap = Callable[[int, int], Cell]


def permute_cells(features: torch.Tensor, *, channels: int, source: tuple[int, ...]) -> torch.Tensor:
    """The encodings of the images of the positions ``features`` encodes, as planes of
    ``channels`` over the board's cells: cell ``i`` of each image is cell ``source[i]`` of
    the position."""
    planes = features.reshape(features.shape[0], channels, len(source))
    return planes[:, :, list(source)].reshape(features.shape)


def _cell_maps(rows: int, columns: int, names: tuple[str, ...]) -> dict[str, CellMap]:
    """Where each symmetry named takes the cell ``(row, column)``."""
    maps: dict[str, CellMap] = {
        "mirror": lambda r, c: (r, columns - 1 - c),
        "flip": lambda r, c: (rows - 1 - r, c),
        "rotate180": lambda r, c: (rows - 1 - r, columns - 1 - c),
        "transpose": lambda r, c: (c, r),
        "antitranspose": lambda r, c: (columns - 1 - c, rows - 1 - r),
        "rotate90": lambda r, c: (c, rows - 1 - r),
        "rotate270": lambda r, c: (columns - 1 - c, r),
    }
    return {name: maps[name] for name in names}


def _symmetry(
    name: str, where: CellMap, shape: tuple[int, int, int], actions: int, image: Callable[[int], int]
) -> Symmetry:
    """The symmetry that takes each cell where ``where`` says, on planes of ``shape``
    ``(channels, rows, columns)``, and each of the ``actions`` to ``image(action)``."""
    channels, rows, columns = shape
    source = [0] * (rows * columns)
    for r in range(rows):
        for c in range(columns):
            to_r, to_c = where(r, c)
            source[to_r * columns + to_c] = r * columns + c
    features = functools.partial(permute_cells, channels=channels, source=tuple(source))
    return Symmetry(name, features, tuple(image(a) for a in range(actions)))


def symmetries_of(short_name: str, shape: tuple[int, int, int], actions: int) -> list[Symmetry]:
    """The symmetries of the OpenSpiel game ``short_name`` whose encoding is planes of
    ``shape`` ``(channels, rows, columns)`` (the observation and asp's own planes) and whose
    actions number ``actions`` (asp's forced pass among them, its own image); none for a game
    this module does not list."""
    _, rows, columns = shape
    mirror = _cell_maps(rows, columns, ("mirror",))["mirror"]

    def on_cells(names: tuple[str, ...]) -> list[Symmetry]:
        listed = []
        for name, where in _cell_maps(rows, columns, names).items():

            def image(a: int, where: CellMap = where) -> int:
                if a >= rows * columns:
                    return a  # a pass
                to_r, to_c = where(*divmod(a, columns))
                return to_r * columns + to_c

            listed.append(_symmetry(name, where, shape, actions, image))
        return listed

    if short_name == "connect_four":
        return [_symmetry("mirror", mirror, shape, actions, lambda a: columns - 1 - a if a < columns else a)]
    if short_name == "tic_tac_toe":
        return on_cells(("mirror", "flip", "rotate180", "transpose", "antitranspose", "rotate90", "rotate270"))
    if short_name == "othello":
        return on_cells(("rotate180", "transpose", "antitranspose"))
    if short_name == "breakthrough":
        directions, captures = 6, 2
        moves = rows * columns * directions * captures

        def mirrored(a: int) -> int:
            if a >= moves:
                return a
            square, rest = divmod(a, directions * captures)
            direction, capture = divmod(rest, captures)
            r, c = divmod(square, columns)
            side, sideways = divmod(direction, 3)  # sideways: 0 left, 1 ahead, 2 right
            return ((r * columns + columns - 1 - c) * directions + side * 3 + 2 - sideways) * captures + capture

        return [_symmetry("mirror", mirror, shape, actions, mirrored)]
    return []
