"""Games of TinyChess as PGN: :func:`to_pgn` writes an :class:`asp.games.Record` of chess
with the standard headers and asp's own (what :meth:`TinyChessGame.records_text
<asp.tinychess.game.TinyChessGame.records_text>` writes, and ``asp play`` and ``asp eval
--pgn`` save); :func:`read_pgn_game` reads one game of a PGN file back as its start and
actions (what ``asp show`` draws).
"""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path
from typing import Any, TextIO, cast

import chess
import chess.pgn

from asp.errors import ConfigError
from asp.games.records import MODEL, OPPONENT, RESULTS, Record
from asp.tinychess.moves import index_move, move_index

__all__ = ["PGN_TERMINATION", "read_pgn_game", "to_pgn"]

PGN_TERMINATION: dict[str, str] = {
    "checkmate": "normal",
    "stalemate": "normal",
    "insufficient_material": "normal",
    "seventyfive_moves": "normal",
    "fivefold_repetition": "normal",
    "max_plies": "adjudication",
    "engine_failure": "emergency",
    "mover_failure": "emergency",
}
"""asp's termination words as the PGN standard's ``Termination`` values (section 9.8.1);
a word not listed here is written as ``adjudication``: asp, not the rules, ended the game.
asp's own word is kept in the ``AspTermination`` tag."""

_TAG_VALUE_MAX = 200  # a tag line, name and value, must stay within PGN's 255-character line limit


def _tag_value(field_name: str, value: str) -> str:
    # python-chess writes header values as they are: a quote, a backslash or a line break
    # would end the tag early and make the file unreadable.
    if not value or len(value) > _TAG_VALUE_MAX or not value.isprintable() or '"' in value or "\\" in value:
        raise ConfigError(
            f"{field_name} must be 1..{_TAG_VALUE_MAX} printable characters without '\"' or '\\', got {value!r}"
        )
    return value


def _opponent(record: Record, opponent: str | None) -> tuple[str, str]:
    """``(field name, description)`` of the opponent: the argument, the record's, or derived."""
    if opponent is not None:
        return "opponent", opponent
    if record.opponent_name is not None:
        return "Record.opponent_name", record.opponent_name
    if record.first == record.second:
        return "opponent", "self"
    if record.opponent_version is None:
        return "opponent", OPPONENT
    return "opponent", f"asp opponent v{record.opponent_version}"


def _replay(record: Record) -> tuple[list[chess.Move], chess.Board]:
    """The game's moves (its UCI moves as play wrote them, else its actions: policy indices)
    and the board they end on."""
    board, moves = chess.Board(record.start), []
    from_actions = not record.moves and bool(record.actions)
    for step in record.actions if from_actions else record.moves:
        move = index_move(int(step), board) if from_actions else chess.Move.from_uci(str(step))
        board.push(move)
        moves.append(move)
    return moves, board


def _termination(record: Record, end: chess.Board) -> str:
    """How the game ended: python-chess's word for an end by the rules (``checkmate``,
    ``stalemate``, ``insufficient_material``, ``seventyfive_moves``, ``fivefold_repetition``),
    else the record's own (``max_plies``, ``engine_failure``)."""
    outcome = end.outcome() if record.termination == "rules" else None
    return outcome.termination.name.lower() if outcome is not None else record.termination


def to_pgn(record: Record, *, event: str | None = None, opponent: str | None = None) -> str:
    """The game of chess ``record`` as PGN text, with the standard headers and asp's own;
    White is the game's first player.

    The seven standard tags (``Event``: ``event``, else ``asp self-play`` or ``asp match``),
    ``Termination`` (a standard value, :data:`PGN_TERMINATION`), ``PlyCount``, then asp's:
    ``GameId``, ``ModelVersion``, ``Opponent`` (who the model played: ``opponent``, else
    :attr:`Record.opponent_name <asp.games.Record.opponent_name>`, else ``self`` in
    self-play), ``OpponentVersion`` (when known) and ``AspTermination`` (how it ended:
    ``checkmate``, ``stalemate``... for a game the rules ended, else the record's
    ``max_plies`` or ``engine_failure``). The opponent's description is also its name in
    ``White`` or ``Black``. A game a mover failed in has result ``*``.

    python-chess reads the moves back identically:

    >>> import io
    >>> r = Record(0, chess.STARTING_FEN, [], 0.5, "max_plies", "model", "model", 3, moves=["e2e4", "e7e5"])
    >>> game = chess.pgn.read_game(io.StringIO(to_pgn(r)))
    >>> [m.uci() for m in game.mainline_moves()]
    ['e2e4', 'e7e5']
    >>> [game.headers[t] for t in ("Termination", "AspTermination", "ModelVersion", "Opponent")]
    ['adjudication', 'max_plies', '3', 'self']

    :raises ConfigError: ``event`` or the opponent's description is empty, longer than 200
        characters, or holds a quote, a backslash or a control character.
    """
    moves, end = _replay(record)
    termination = _termination(record, end)
    field_name, description = _opponent(record, opponent)
    description = _tag_value(field_name, description)
    names = {MODEL: f"asp model v{record.model_version}", OPPONENT: description}
    if event is None:
        event = "asp self-play" if record.first == record.second else "asp match"
    game = chess.pgn.Game()
    game.headers["Event"] = _tag_value("event", event)
    game.headers["Site"] = "asp"
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(record.game_id)
    game.headers["White"] = _tag_value("Record.first", names.get(record.first, record.first))
    game.headers["Black"] = _tag_value("Record.second", names.get(record.second, record.second))
    game.headers["Result"] = "*" if record.failed else RESULTS[record.result]
    game.headers["Termination"] = PGN_TERMINATION.get(termination, "adjudication")
    game.headers["PlyCount"] = str(len(moves))
    game.headers["GameId"] = str(record.game_id)
    game.headers["ModelVersion"] = str(record.model_version)
    game.headers["Opponent"] = description
    if record.opponent_version is not None:
        game.headers["OpponentVersion"] = str(record.opponent_version)
    game.headers["AspTermination"] = termination
    if record.start != chess.STARTING_FEN:
        game.setup(chess.Board(record.start))
    node: chess.pgn.GameNode = game
    for move in moves:
        node = node.add_variation(move)
    # PGN's export format: movetext wrapped at 80 columns (str(game) would write one long line,
    # over the standard's 255-character limit in any game of ~40 moves or more).
    return game.accept(chess.pgn.StringExporter(columns=80)) + "\n"


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
            raise ValueError(f"{self.path} is not a PGN file (a line over {_LINE_LIMIT} characters)")
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
                raise ValueError(f"{path} is not a regular file")
            if b"\0" in raw.read(1 << 16):
                raise ValueError(f"{path} is not a PGN file (binary data)")
        return cast(TextIO, _Lines(path.open(encoding="utf-8-sig", errors="replace"), path))
    except FileNotFoundError:
        raise ValueError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory") from None
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None


def _count_games(path: Path) -> int:
    with _open(path) as handle:
        count = 0
        while chess.pgn.skip_game(handle):
            count += 1
        return count


def read_pgn_game(path: str | os.PathLike[str], number: int) -> dict[str, Any]:
    """The ``number``-th game (from 1) of the PGN file at ``path`` as ``{"start": FEN, or ""
    for the standard start, "actions": [...]}``, its main line's moves as TinyChess's actions
    (what :meth:`TinyChessGame.read_record <asp.tinychess.game.TinyChessGame.read_record>` gives).

    :raises ValueError: a file that is missing, unreadable or no PGN, or a game whose moves do
        not parse (its message names the game).
    :raises LookupError: the file holds fewer games; ``args[0]`` is how many it holds.
    """
    source = Path(path)
    if number >= 1:
        with _open(source) as handle:
            skipped = all(chess.pgn.skip_game(handle) for _ in range(number - 1))
            builder = _QuietBuilder()
            found = chess.pgn.read_game(handle, Visitor=lambda: builder) if skipped else None
        if found is not None:
            if builder.tags == 0 and found.next() is None:
                raise ValueError(f"{source} is not a PGN file (game {number} has no tag pair and no move)")
            if found.errors:
                raise ValueError(f"game {number} of {source} does not parse: {found.errors[0]}")
            board, actions = found.board(), []
            for move in found.mainline_moves():
                actions.append(move_index(move, board.turn))
                board.push(move)
            start = found.board()
            return {"start": "" if start == chess.Board() else start.fen(), "actions": actions}
    raise LookupError(_count_games(source))
