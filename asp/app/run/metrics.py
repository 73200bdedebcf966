"""What an iteration's metrics line and a match's metrics hold (``metrics.jsonl``)."""

from __future__ import annotations

import math
from typing import Any

from asp.app.evaluation.elo import MatchResult
from asp.app.evaluation.ladder import version_of
from asp.pipeline import IterationReport

__all__ = ["match_metrics", "metrics_line", "metrics_problem", "mover_scores", "version_scores"]

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


def metrics_line(report: IterationReport, play_batch: int, worker_threads: int, trainer_threads: int) -> dict[str, Any]:
    """An iteration's metrics line: its games, times, search occupancy (against ``play_batch``
    positions a call), the workers' share of the wall time, and the trainer's metrics."""
    stats = report.play_stats
    line: dict[str, Any] = {
        "iteration": report.iteration,
        "version_played": report.version_played,
        "version_trained": report.version_trained,
        "staleness": report.staleness,
        "play/games": stats["games"],
        "play/plies": stats["plies"],
        "play/plies_per_s": stats["plies"] / report.play_seconds if report.play_seconds > 0 else 0.0,
        "play/length_mean": stats["length_mean"],
        "play/results": stats["results"],
        "play/terminations": stats["terminations"],
        "time/play": report.play_seconds,
        "time/train": report.train_seconds,
        "time/overlap": report.overlap_seconds,
        "time/wall": report.wall_seconds,
    }
    if stats.get("search/evaluations"):
        # Boards per network call of the searches, against the play batch: how full the
        # batched search keeps the network.
        per_call = stats["search/boards"] / stats["search/evaluations"]
        line["play/search_boards_per_call"] = per_call
        line["play/search_occupancy"] = per_call / play_batch
    workers = stats.get("workers")
    if workers and report.wall_seconds > 0:
        # The share of the iteration's wall time the workers spent inside shards (any shard:
        # self-play of whichever iteration, evaluation), and the cores left idle.
        line["time/workers_busy"] = 1.0 - report.worker_idle_seconds / (workers * report.wall_seconds)
        line["time/worker_idle_core_s"] = report.worker_idle_seconds * worker_threads
        line["time/trainer_idle_core_s"] = report.trainer_idle_seconds * trainer_threads
    line.update(report.train_metrics)
    return {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in line.items()}
