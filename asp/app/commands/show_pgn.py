"""``asp show``: a position of a game in a PGN file, drawn as an SVG board.

The board is python-chess's :func:`chess.svg.board`, with the last move and a king in check
highlighted, so that a person can look at what the model plays:

>>> import pathlib, tempfile
>>> pgn = pathlib.Path(tempfile.mkdtemp()) / "mate.pgn"
>>> _ = pgn.write_text('[Result "0-1"]\\n\\n1. f3 e5 2. g4 Qh4# 0-1\\n')
>>> svg = render(pgn, game=1)
>>> svg.startswith("<svg") and 'class="check"' in svg and "lastmove" in svg
True
>>> boards = write_boards(pgn, f"{pgn.parent}/boards/")
>>> [p.name for p in boards.paths][:2], len(boards.paths)
(['ply-000.svg', 'ply-001.svg'], 5)
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

import chess
import chess.pgn
import chess.svg

from asp.app.outputs import check_output_directory, check_output_file
from asp.errors import ConfigError
from asp.util.atomic import write_text_atomic

__all__ = ["Boards", "is_directory", "ply_paths", "read_game", "render", "svg_board", "write_boards"]

SIZE = 400
"""Width and height of a board, in pixels."""


class _QuietBuilder(chess.pgn.GameBuilder[chess.pgn.Game]):
    """A GameBuilder that keeps parse errors in ``game.errors`` without logging them: the
    caller reports the error of the one game it was asked for. ``tags`` counts the tag pairs
    read: python-chess reads any text as a game, and one with no tag pair and no move was no
    PGN game."""

    tags = 0

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.tags += 1
        super().visit_header(tagname, tagvalue)

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


_LINE_LIMIT = 1 << 20
"""The longest line read from a PGN file, in characters: a longer one is no PGN."""


class _Lines:
    """A PGN file as python-chess reads it (``readline``), a bounded line at a time."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path

    def readline(self) -> str:
        line = self.handle.readline(_LINE_LIMIT)
        if len(line) >= _LINE_LIMIT and not line.endswith("\n"):
            raise ConfigError(f"GAMES.pgn: {self.path} is not a PGN file (a line over {_LINE_LIMIT} characters)")
        return line

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


def _open(path: Path) -> TextIO:
    """``path`` opened for python-chess: a regular file of text (NUL bytes say it is not)."""
    try:
        with path.open("rb") as raw:
            if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
                raise ConfigError(f"GAMES.pgn: {path} is not a regular file")
            if b"\0" in raw.read(1 << 16):
                raise ConfigError(f"GAMES.pgn: {path} is not a PGN file (binary data)")
        return cast(TextIO, _Lines(path.open(encoding="utf-8-sig", errors="replace"), path))
    except FileNotFoundError:
        raise ConfigError(f"GAMES.pgn: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"GAMES.pgn: {path} is a directory") from None
    except OSError as e:
        raise ConfigError(f"GAMES.pgn: cannot read {path}: {e.strerror}") from None


def _count_games(path: Path) -> int:
    with _open(path) as handle:
        count = 0
        while chess.pgn.skip_game(handle):
            count += 1
        return count


def read_game(pgn_path: str | os.PathLike[str], *, game: int = 1) -> chess.pgn.Game:
    """The ``game``-th game of the PGN file (counting from 1).

    :raises ConfigError: no such file, ``game`` out of range (the message names ``--game`` and
        the games the file holds), or a game whose moves do not parse.
    """
    path = Path(pgn_path)
    if game >= 1:
        with _open(path) as handle:
            skipped = all(chess.pgn.skip_game(handle) for _ in range(game - 1))
            builder = _QuietBuilder()
            found = chess.pgn.read_game(handle, Visitor=lambda: builder) if skipped else None
        if found is not None:
            if builder.tags == 0 and found.next() is None:
                raise ConfigError(f"GAMES.pgn: {path} is not a PGN file (game {game} has no tag pair and no move)")
            if found.errors:
                raise ConfigError(f"--game {game}: game {game} of {path} does not parse: {found.errors[0]}")
            return found
    total = _count_games(path)
    if total == 0:
        raise ConfigError(f"--game: {path} holds no PGN games")
    raise ConfigError(f"--game must be in 1..{total} ({path} holds {total} game(s)), got {game}")


def _positions(game: chess.pgn.Game) -> list[tuple[chess.Board, chess.Move | None]]:
    """Each position of the game's main line from its start (a SetUp/FEN start too), with the
    move that led to it."""
    board = game.board()
    positions: list[tuple[chess.Board, chess.Move | None]] = [(board.copy(), None)]
    for move in game.mainline_moves():
        board.push(move)
        positions.append((board.copy(), move))
    return positions


def svg_board(board: chess.Board, *, lastmove: chess.Move | None = None, size: int = SIZE) -> str:
    """``board`` as SVG text, ``lastmove`` highlighted and the king of the side to move marked
    when it is in check."""
    check = board.king(board.turn) if board.is_check() else None
    return chess.svg.board(board, lastmove=lastmove, check=check, size=size)


def _check_ply(ply: int, plies: int, game: int, path: Path) -> None:
    if not 0 <= ply <= plies:
        raise ConfigError(f"--ply must be in 0..{plies} (game {game} of {path} has {plies} plies), got {ply}")


def render(pgn_path: str | os.PathLike[str], *, game: int = 1, ply: int | None = None, size: int = SIZE) -> str:
    """The position after ``ply`` plies of the ``game``-th game (from 1) as SVG text.

    ``ply`` 0 is the start position (a custom one from the SetUp/FEN headers too); ``None``,
    the final position.

    :raises ConfigError: as :func:`read_game`, or ``ply`` outside 0..plies of the game.
    """
    positions = _positions(read_game(pgn_path, game=game))
    plies = len(positions) - 1
    chosen = plies if ply is None else ply
    _check_ply(chosen, plies, game, Path(pgn_path))
    board, lastmove = positions[chosen]
    return svg_board(board, lastmove=lastmove, size=size)


@dataclass(frozen=True)
class Boards:
    """What :func:`write_boards` wrote."""

    source: Path
    """The PGN file."""
    game: int
    """The game drawn, counting from 1."""
    plies: int
    """Plies in that game."""
    drawn: tuple[int, ...]
    """The ply of each file written: the position after that many plies."""
    paths: tuple[Path, ...]
    """The SVG files written, in the order of :attr:`drawn`."""

    def describe(self) -> str:
        """One line for people: what was written, from which game and ply."""
        where = f"game {self.game} of {self.source} ({self.plies} {'ply' if self.plies == 1 else 'plies'})"
        if len(self.paths) == 1:
            position = "the start position" if self.drawn[0] == 0 else f"the position after ply {self.drawn[0]}"
            return f"wrote {self.paths[0]}: {position} of {where}"
        return (
            f"wrote {len(self.paths)} boards to {self.paths[0].parent}: "
            f"{self.paths[0].name} (start) to {self.paths[-1].name} (final position) of {where}"
        )


def is_directory(out: str) -> bool:
    """Whether ``--out`` names a directory: an existing one, or a path ending in a separator."""
    return out.endswith(("/", os.sep)) or Path(out).is_dir()


def ply_paths(directory: str | os.PathLike[str], plies: int) -> tuple[Path, ...]:
    """The files of a game's boards in ``directory``, one per position: ``ply-000.svg`` (the
    start) to ``ply-NNN.svg`` (after the last of ``plies``)."""
    digits = max(3, len(str(plies)))
    return tuple(Path(directory) / f"ply-{k:0{digits}d}.svg" for k in range(plies + 1))


def write_boards(
    pgn_path: str | os.PathLike[str],
    out: str | os.PathLike[str] = "board.svg",
    *,
    game: int = 1,
    ply: int | None = None,
    size: int = SIZE,
) -> Boards:
    """Draw the ``game``-th game of the file (from 1) into ``out``, each file written atomically.

    ``out`` a file: the position after ``ply`` plies (``None``: the final position). ``out`` a
    directory (an existing one, or a string ending in ``/``, created; a :class:`~pathlib.Path`
    drops a trailing slash): one SVG per position,
    ``ply-000.svg`` (the start) to ``ply-NNN.svg`` (the final position), and ``ply`` must be None.

    :raises ConfigError: as :func:`render`, ``ply`` given with a directory, or ``out`` where
        no file can be written (named ``--out``).
    """
    source, target = Path(pgn_path), os.fspath(out)
    directory = is_directory(target)
    if directory and ply is not None:
        raise ConfigError(f"--ply picks one position, but --out {target} is a directory (one SVG per ply): drop one")
    positions = _positions(read_game(source, game=game))
    plies = len(positions) - 1
    if directory:
        drawn = tuple(range(plies + 1))
        paths = ply_paths(target, plies)
    else:
        drawn = (plies if ply is None else ply,)
        _check_ply(drawn[0], plies, game, source)
        paths = (Path(target),)
    check_output_directory("--out", paths[0].parent)  # created if needed
    if not directory:
        check_output_file("--out", target)
    for k, path in zip(drawn, paths, strict=True):
        board, lastmove = positions[k]
        write_text_atomic(path, svg_board(board, lastmove=lastmove, size=size) + "\n")
    return Boards(source, game, plies, drawn, paths)
