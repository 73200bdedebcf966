"""PGN files of games: the application's side of :func:`asp.tinychess.records.to_pgn`.

>>> import tempfile, chess
>>> from asp.tinychess import GameRecord
>>> r = GameRecord(0, ["e2e4", "e7e5"], "1/2-1/2", "max_plies", chess.STARTING_FEN, "model", "model", 3)
>>> path = write_pgn([r], tempfile.mkdtemp() + "/games.pgn")
>>> path.read_text().count("[Event ")
1
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from asp.atomic import write_text_atomic
from asp.tinychess.records import GameRecord, to_pgn

__all__ = ["write_pgn"]


def write_pgn(
    records: Iterable[GameRecord],
    path: str | os.PathLike[str],
    *,
    event: str = "asp self-play",
    opponent: str | None = None,
) -> Path:
    """Write ``records`` to ``path`` as one PGN file, atomically (temp file + rename).

    ``event`` and ``opponent`` are passed to :func:`~asp.tinychess.records.to_pgn` for every
    game (evaluation games: ``event="asp evaluation", opponent="random"``).
    """
    target = Path(path)
    write_text_atomic(target, "\n".join(to_pgn(r, event=event, opponent=opponent) for r in records))
    return target
