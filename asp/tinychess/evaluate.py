"""Scores and Elo differences: how strong is a model against a fixed opponent?

>>> r = elo_from_score(0.75, n_games=200)
>>> round(r.elo), r.elo_low < r.elo < r.elo_high
(191, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EloEstimate", "elo_from_score"]


@dataclass(frozen=True)
class EloEstimate:
    """Elo difference of a player that scored ``score`` per game, with a 95% interval."""

    score: float
    """Points per game, 0 to 1."""
    n_games: int
    """Games played."""
    elo: float
    """Elo difference implied by the score."""
    elo_low: float
    """Lower end of the 95% interval."""
    elo_high: float
    """Upper end of the 95% interval."""


def _elo(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_from_score(score: float, *, n_games: int, draw_ratio: float | None = None) -> EloEstimate:
    """Elo difference from a mean score, with a normal-approximation 95% interval.

    The standard error of the score is ``sqrt(var / n)`` with the per-game variance of the
    points (``s(1-s) - d/4`` with draw ratio ``d``; ``s(1-s)`` when ``d`` is unknown). A
    score of exactly 0 or 1 has no finite Elo: it is clamped to half a point from the end
    (``0.5 / n``), and the interval is reported from there.
    """
    if n_games < 1:
        raise ValueError(f"n_games must be at least 1, got {n_games}")
    half = 0.5 / n_games
    clamped = min(max(score, half), 1.0 - half)
    variance = clamped * (1.0 - clamped) - (draw_ratio or 0.0) / 4.0
    se = math.sqrt(max(variance, 1e-12) / n_games)
    low = min(max(clamped - 1.96 * se, half), 1.0 - half)
    high = min(max(clamped + 1.96 * se, half), 1.0 - half)
    return EloEstimate(score, n_games, _elo(clamped), _elo(low), _elo(high))
