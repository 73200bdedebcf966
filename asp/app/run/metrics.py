"""What asp reads of the metrics lines of ``metrics.jsonl`` (scores by opponent, the check of a
line read back), and a match's metrics in a line; :mod:`asp.app.session` makes an iteration's line."""

from __future__ import annotations

from typing import Any

from asp.app.evaluation.elo import MatchResult
from asp.app.evaluation.ladder import version_of

__all__ = ["match_metrics", "metrics_problem", "mover_scores", "version_scores"]

_COUNTS = ("wins", "draws", "losses")
"""A match's counts in a metrics line: ``PREFIX/wins``, ``PREFIX/draws``, ``PREFIX/losses``."""
_NUMBERS = ("time/wall", "time/workers_busy", "time/loop_stall_max")
"""The figures besides the scores that ``asp train`` sums up from every line of a run."""


def mover_scores(line: dict[str, Any]) -> dict[str, float]:
    """The scores of a metrics line against the game's movers other than the random one
    (``eval_winblock/score``, ...), by mover name; the engine's (``eval_sf/score``) and the
    kept versions' (``eval_v<N>/score``) aside.

    >>> mover_scores({"eval/score": 1.0, "eval_winblock/score": 0.9, "eval_sf/score": 0.1, "eval_v0/score": 0.8})
    {'winblock': 0.9}
    """
    return {name: value for name, value in _opponent_scores(line).items() if name != "sf" and version_of(name) is None}


def version_scores(line: dict[str, Any]) -> dict[int, float]:
    """The scores of a metrics line against the versions the run keeps, by version.

    >>> version_scores({"eval_winblock/score": 0.9, "eval_v16/score": 0.6, "eval_v0/score": 1.0})
    {0: 1.0, 16: 0.6}
    """
    versions = ((version_of(name), value) for name, value in _opponent_scores(line).items())
    return dict(sorted((version, value) for version, value in versions if version is not None))


def _opponent_scores(line: dict[str, Any]) -> dict[str, float]:
    """The ``eval_<name>/score`` of a metrics line, by name."""
    return {key[len("eval_") : -len("/score")]: value for key, value in line.items()
            if key.startswith("eval_") and key.endswith("/score")}  # fmt: skip


def metrics_problem(line: dict[str, Any]) -> str | None:
    """What makes a line read back from ``metrics.jsonl`` unfit for what asp reads of it (a
    resumed run's history, its final line and its ladder), naming the field; None where it is
    fit: ``iteration`` and, where there is one, ``eval/version`` ints >= 0; each match's
    ``wins``, ``draws`` and ``losses`` all three there, ints >= 0; its ``score`` and the time
    figures summed up, numbers.

    >>> metrics_problem({"iteration": 3, "eval/version": 4, "eval/wins": 1, "eval/draws": 0, "eval/losses": 2})
    >>> metrics_problem({"iteration": 3, "eval/version": 4, "eval_v0/wins": 1, "eval_v0/losses": 2})
    'field eval_v0/draws is missing (beside eval_v0/wins)'
    >>> metrics_problem({"iteration": 3, "eval/wins": 1, "eval/draws": 0, "eval/losses": -2})
    'field eval/losses must be an int >= 0, got -2'
    """
    counts = ["iteration", *(["eval/version"] if "eval/version" in line else [])]
    matches = sorted({key.rpartition("/")[0] for key in line if key.startswith("eval") and key.endswith("/wins")})
    numbers = [key for key in line if key in _NUMBERS or (key.startswith("eval") and key.endswith("/score"))]
    for prefix in matches:
        counts += [f"{prefix}/{count}" for count in _COUNTS]
    for name in counts:
        if name not in line:
            return f"field {name} is missing" + (f" (beside {name.rpartition('/')[0]}/wins)" if "/" in name else "")
        if type(line[name]) is not int or line[name] < 0:
            return f"field {name} must be an int >= 0, got {line[name]!r}"
    for name in numbers:
        if type(line[name]) not in (int, float):
            return f"field {name} must be a number, got {line[name]!r}"
    return None


def match_metrics(prefix: str, result: MatchResult) -> dict[str, Any]:
    """A match's score, W/D/L and Elo with its 95% interval, as ``prefix/...`` metrics (and
    ``prefix/elo_bound``, ``>`` or ``<``, where the Elo is a one-sided bound:
    :attr:`~asp.app.evaluation.elo.EloEstimate.bound`)."""
    elo = result.elo
    return {
        f"{prefix}/score": result.score,
        f"{prefix}/games": result.games,
        f"{prefix}/wins": result.wins,
        f"{prefix}/draws": result.draws,
        f"{prefix}/losses": result.losses,
        f"{prefix}/elo": round(elo.elo, 1),
        f"{prefix}/elo_low": round(elo.elo_low, 1),
        f"{prefix}/elo_high": round(elo.elo_high, 1),
    } | ({f"{prefix}/elo_bound": elo.bound} if elo.bound else {})
