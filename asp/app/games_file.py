"""An asp games file: one game record a line, as JSON (:meth:`asp.games.Record.plain`, with
the name of its game), which ``asp train`` and ``asp play`` write and ``asp show`` reads back.

>>> import pathlib, tempfile
>>> from asp.connect4 import ConnectFour
>>> path = pathlib.Path(tempfile.mkdtemp()) / "games.jsonl"
>>> record = Record(0, "", [3, 3], 0.5, "max_plies", "model", "model", model_version=1)
>>> _ = write_records([record.plain()], path, game="connect4", loaded=ConnectFour())
>>> read_record(path, 1)["actions"]
[3, 3]
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from asp.app.game_loader import load_game
from asp.errors import ConfigError
from asp.games import Record
from asp.games.protocol import exported
from asp.util.atomic import write_text_atomic

__all__ = ["read_record", "write_records"]


def write_records(
    records: Iterable[dict[str, Any]], path: str | os.PathLike[str], *, game: str, loaded: Any = None
) -> Path:
    """Write plain records (:meth:`asp.games.Record.plain`) of ``game`` (its name or
    ``MODULE:ATTR``, which ``asp show`` loads; ``loaded``: the game itself, where the caller
    has it) to ``path`` as JSON lines, atomically; and, where the game has a file format of
    its own (:func:`asp.games.protocol.exported`), the same games in it beside them
    (TinyChess: ``iter-0001.pgn`` beside ``iter-0001.jsonl``)."""
    target = Path(path)
    plain = list(records)
    write_text_atomic(target, "".join(json.dumps({"game": game, **record}) + "\n" for record in plain))
    export = exported(load_game(game) if loaded is None else loaded, [Record(**record) for record in plain])
    if export is not None and target.with_suffix(export[0]) != target:  # the records are not overwritten
        write_text_atomic(target.with_suffix(export[0]), export[1])
    return target


_LINE_LIMIT = 1 << 20
"""The longest line ``asp show`` reads from a games file: a record is far shorter."""


def read_record(path: Path, number: int) -> dict[str, Any]:
    """The ``number``-th record (from 1) of a JSON-lines games file, read a bounded line at a time.

    :raises ConfigError: ``number`` below 1, no such file or record, or a line that is not a
        record of asp (naming the field: ``game`` a string, ``start`` a string where it is
        given, ``actions`` a list of ints).
    """
    if number < 1:
        raise ConfigError(f"--game must be 1 or more (the games of {path} count from 1), got {number}")
    try:
        with path.open("rb") as f:
            for count in range(1, number + 1):
                line = f.readline(_LINE_LIMIT)
                if not line:
                    raise ConfigError(f"{path}: holds {count - 1} game(s), not {number}")
                if len(line) >= _LINE_LIMIT and not line.endswith(b"\n"):
                    raise ConfigError(f"{path}: line {count} is over {_LINE_LIMIT} bytes: not an asp games file")
    except FileNotFoundError:
        raise ConfigError(f"GAMES: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"GAMES: {path} is a directory") from None
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"{path}: line {number} is not JSON: not an asp games file") from None
    not_record = f"{path}: line {number} is not a game record of asp"
    if not isinstance(record, dict):
        raise ConfigError(f"{not_record}: a JSON {type(record).__name__}, not an object")
    problem = _record_problem(record)
    if problem is not None:
        raise ConfigError(f"{not_record}: {problem}")
    return record


def _record_problem(record: dict[str, Any]) -> str | None:
    """What makes a line's JSON object no record that ``asp show`` replays, naming the field."""
    if not isinstance(record.get("game"), str):
        return f"field game must be the game's name (a string), got {_short(record.get('game'))}"
    if not isinstance(record.get("start", ""), str):
        return f"field start must be a position in the game's notation (a string), got {_short(record['start'])}"
    actions = record.get("actions")
    if not isinstance(actions, list):
        return f"field actions must be a list of ints, got {_short(actions)}"
    bad = next((k for k, action in enumerate(actions) if type(action) is not int), None)
    return None if bad is None else f"field actions must be a list of ints: actions[{bad}] is {_short(actions[bad])}"


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
