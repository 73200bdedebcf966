"""A play function for tests/test_pipeline.py whose game ids can be wrong on purpose.

It lives in a module of its own, not in the test module: spawn workers import a play_fn by
its module name, and pytest puts this directory on ``sys.path`` (workers inherit it), so
``pipeline_helpers`` imports in them while importing a test module there would run its
fixtures' imports for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

ID_MODES = ("right", "shifted", "doubled")
"""What :func:`id_play` returns: the ids it was asked for; each shifted up by one (the first
missing, one past the end unexpected); or every record twice."""


@dataclass(frozen=True)
class IdConfig:
    """Config of :func:`id_play`; has the fields every asp play_fn config has."""

    n_games: int = 4
    seed: int = 0
    first_game: int = 0
    model_version: int = 0
    ids: str = "right"
    """One of :data:`ID_MODES`."""


@dataclass
class IdRecord:
    game_id: int
    model_version: int


def id_play(model: nn.Module, opp: nn.Module | None, cfg: IdConfig) -> tuple[list[IdRecord], dict[str, Any]]:
    """Play no game at all: return records whose ids ``cfg.ids`` says."""
    if cfg.ids not in ID_MODES:
        raise ValueError(f"IdConfig.ids must be one of {ID_MODES}, got {cfg.ids!r}")
    ids = list(range(cfg.first_game, cfg.first_game + cfg.n_games))
    if cfg.ids == "shifted":
        ids = [i + 1 for i in ids]
    elif cfg.ids == "doubled":
        ids = [i for i in ids for _ in range(2)]
    records = [IdRecord(i, cfg.model_version) for i in ids]
    return records, {"games": len(records)}
