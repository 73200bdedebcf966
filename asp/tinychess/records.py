"""Game records as plain data, their summary, and PGN export.

A :class:`GameRecord` holds ints, strings, floats and lists of them, so it pickles cheaply
between processes and can be written as JSON (``dataclasses.asdict(record.plain())``); and,
from self-play, :class:`PlyData`: what the model saw and chose at each of its plies, in
compact numpy arrays, so that the trainer need not replay the game.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.pgn
import numpy as np

from asp.errors import ConfigError

__all__ = ["MODEL", "OPPONENT", "PGN_TERMINATION", "GameRecord", "PlyData", "summarise", "to_pgn"]

MODEL = "model"
"""Name of the player that is the model being trained, in :attr:`GameRecord.white`/``black``."""
OPPONENT = "opponent"
"""Name of the opponent player, in :attr:`GameRecord.white`/``black``."""


@dataclass(eq=False)
class PlyData:
    """The model's plies of one game as play encoded them: the trainer's samples, no replay.

    About 110 bytes of board and 2 bytes per legal move a ply (the default game: about 180).
    ``k`` is the number of plies the model played, ``n`` the number of plies of the game.
    """

    plies: np.ndarray
    """(k,) int16: the index within the game of each ply the model played."""
    bitboards: np.ndarray
    """(k, 13) uint64: the board before the ply, from the mover's side (:func:`pack_boards`)."""
    scalars: np.ndarray
    """(k, 2) uint16: castling and repetition flags, half-move clock (:func:`pack_boards`)."""
    actions: np.ndarray
    """(k,) int16: policy index of the move played."""
    legal: np.ndarray
    """(sum of legal_counts,) int16: policy indices of the legal moves, ply after ply."""
    legal_counts: np.ndarray
    """(k,) uint8: legal moves at each ply."""
    leads: np.ndarray
    """(n + 1,) int8: White's material lead before each ply of the game and after the last."""
    policy: np.ndarray | None = None
    """(sum of legal_counts,) float16, beside ``legal``: the search's improved policy at each
    ply (the policy's training target), or None when the model played without search."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlyData):
            return NotImplemented
        names = ("plies", "bitboards", "scalars", "actions", "legal", "legal_counts", "leads")
        if (self.policy is None) != (other.policy is None):
            return False
        same_policy = self.policy is None or other.policy is None or np.array_equal(self.policy, other.policy)
        return same_policy and all(np.array_equal(getattr(self, n), getattr(other, n)) for n in names)

    @property
    def nbytes(self) -> int:
        """Bytes of array data."""
        arrays = (self.plies, self.bitboards, self.scalars, self.actions, self.legal, self.legal_counts, self.leads)
        return sum(a.nbytes for a in arrays) + (self.policy.nbytes if self.policy is not None else 0)


@dataclass
class GameRecord:
    """One finished game."""

    game_id: int
    """Unique id of the game within a call: ``cfg.first_game + k``."""

    moves: list[str]
    """The moves in UCI notation, from :attr:`start_fen`."""

    result: str
    """``"1-0"``, ``"0-1"``, ``"1/2-1/2"``, or ``"*"`` for a game that could not be finished
    (termination ``"engine_failure"``: the engine opponent failed)."""

    termination: str
    """Why the game ended: ``checkmate``, ``stalemate``, ``insufficient_material``,
    ``seventyfive_moves``, ``fivefold_repetition`` or ``max_plies`` (adjudicated)."""

    start_fen: str
    """The position the game started from."""

    white: str
    """Who played White: :data:`MODEL` or :data:`OPPONENT`."""

    black: str
    """Who played Black: :data:`MODEL` or :data:`OPPONENT`."""

    model_version: int
    """Version of the model's weights that played this game."""

    logprobs: list[float] = field(default_factory=list)
    """Per ply, the natural log-probability of the chosen move under the (tempered)
    distribution it was drawn from; 0.0 for a greedy move."""

    illegal_attempts: int = 0
    """Illegal moves picked (and resampled) in this game when ``mask_illegal`` was off."""

    opponent_version: int | None = None
    """Version of the opponent's weights, or ``None`` in self-play."""

    samples: PlyData | None = field(default=None, repr=False)
    """What the model saw and chose at each of its plies (``PlayConfig.samples``), or None."""

    opponent_name: str | None = None
    """Who the opponent was, in words (``"random"``, ``"stockfish skill 0 nodes 100"``,
    ``"asp model v3"``), for the PGN; ``None``: self-play, or an opponent known only by
    :attr:`opponent_version`."""

    def plain(self) -> GameRecord:
        """This record without :attr:`samples`: ints, strings, floats and lists only (JSON)."""
        return dataclasses.replace(self, samples=None)

    @property
    def failed(self) -> bool:
        """Whether the game is unfinished (result ``"*"``: its engine failed): unscored."""
        return self.result == "*"

    def model_score(self) -> float | None:
        """Points the model scored (1, 0.5 or 0), or ``None`` in self-play and in an unfinished
        game (result ``"*"``), which counts for neither side."""
        if self.white == self.black or self.result == "*":
            return None
        if self.result == "1/2-1/2":
            return 0.5
        white_won = self.result == "1-0"
        return 1.0 if white_won == (self.white == MODEL) else 0.0


def summarise(records: Sequence[GameRecord]) -> dict[str, Any]:
    """Counts and rates over ``records``.

    ``score`` is the model's mean points per game against the opponent (``None`` in
    self-play or with no games), over its finished games: an unfinished one (result ``"*"``)
    is left out.

    >>> summarise([])["games"]
    0
    """
    lengths = [len(r.moves) for r in records]
    scores = [s for s in (r.model_score() for r in records) if s is not None]
    return {
        "games": len(records),
        "plies": sum(lengths),
        "length_min": min(lengths, default=0),
        "length_mean": sum(lengths) / len(lengths) if lengths else 0.0,
        "length_max": max(lengths, default=0),
        "results": dict(Counter(r.result for r in records)),
        "terminations": dict(Counter(r.termination for r in records)),
        "score": sum(scores) / len(scores) if scores else None,
        "illegal_attempts": sum(r.illegal_attempts for r in records),
    }


PGN_TERMINATION: dict[str, str] = {
    "checkmate": "normal",
    "stalemate": "normal",
    "insufficient_material": "normal",
    "seventyfive_moves": "normal",
    "fivefold_repetition": "normal",
    "max_plies": "adjudication",
    "engine_failure": "emergency",
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


def _opponent(record: GameRecord, opponent: str | None) -> tuple[str, str]:
    """``(field name, description)`` of the opponent: the argument, the record's, or derived."""
    if opponent is not None:
        return "opponent", opponent
    if record.opponent_name is not None:
        return "GameRecord.opponent_name", record.opponent_name
    if record.white == record.black:
        return "opponent", "self"
    if record.opponent_version is None:
        return "opponent", OPPONENT
    return "opponent", f"asp opponent v{record.opponent_version}"


def to_pgn(record: GameRecord, *, event: str = "asp self-play", opponent: str | None = None) -> str:
    """The game as PGN text, with the standard headers and asp's own.

    The seven standard tags, ``Termination`` (a standard value, :data:`PGN_TERMINATION`),
    ``PlyCount``, then asp's: ``GameId``, ``ModelVersion``, ``Opponent`` (who the model
    played: ``opponent``, else :attr:`GameRecord.opponent_name`, else ``self`` in self-play),
    ``OpponentVersion`` (when known) and ``AspTermination`` (:attr:`GameRecord.termination`).
    The opponent's description is also its name in ``White`` or ``Black``.

    python-chess reads the moves back identically:

    >>> import io
    >>> r = GameRecord(0, ["e2e4", "e7e5"], "1/2-1/2", "max_plies", chess.STARTING_FEN,
    ...                "model", "model", 3)
    >>> game = chess.pgn.read_game(io.StringIO(to_pgn(r)))
    >>> [m.uci() for m in game.mainline_moves()]
    ['e2e4', 'e7e5']
    >>> [game.headers[t] for t in ("Termination", "AspTermination", "ModelVersion", "Opponent")]
    ['adjudication', 'max_plies', '3', 'self']

    :raises ConfigError: ``event`` or the opponent's description is empty, longer than 200
        characters, or holds a quote, a backslash or a control character.
    """
    field_name, description = _opponent(record, opponent)
    description = _tag_value(field_name, description)
    names = {MODEL: f"asp model v{record.model_version}", OPPONENT: description}
    game = chess.pgn.Game()
    game.headers["Event"] = _tag_value("event", event)
    game.headers["Site"] = "asp"
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(record.game_id)
    game.headers["White"] = _tag_value("GameRecord.white", names.get(record.white, record.white))
    game.headers["Black"] = _tag_value("GameRecord.black", names.get(record.black, record.black))
    game.headers["Result"] = record.result
    game.headers["Termination"] = PGN_TERMINATION.get(record.termination, "adjudication")
    game.headers["PlyCount"] = str(len(record.moves))
    game.headers["GameId"] = str(record.game_id)
    game.headers["ModelVersion"] = str(record.model_version)
    game.headers["Opponent"] = description
    if record.opponent_version is not None:
        game.headers["OpponentVersion"] = str(record.opponent_version)
    game.headers["AspTermination"] = record.termination
    if record.start_fen != chess.STARTING_FEN:
        game.setup(chess.Board(record.start_fen))
    node: chess.pgn.GameNode = game
    for uci in record.moves:
        move = chess.Move.from_uci(uci)
        node = node.add_variation(move)
    # PGN's export format: movetext wrapped at 80 columns (str(game) would write one long line,
    # over the standard's 255-character limit in any game of ~40 moves or more).
    return game.accept(chess.pgn.StringExporter(columns=80)) + "\n"
