"""Games of TinyChess as PGN: :func:`to_pgn` writes an :class:`asp.games.Record` of chess
with the standard headers and asp's own (what :meth:`TinyChessGame.records_text
<asp.tinychess.game.TinyChessGame.records_text>` writes, and ``asp play`` and ``asp eval
--pgn`` save).
"""

from __future__ import annotations

import datetime

import chess
import chess.pgn

from asp.errors import ConfigError
from asp.games.records import MODEL, OPPONENT, RESULTS, Record
from asp.tinychess.moves import index_move

__all__ = ["PGN_TERMINATION", "to_pgn"]

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
