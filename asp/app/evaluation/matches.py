"""A match played in rounds until its score is known closely enough: :func:`play_match`.

An evaluation does not need 100 games to tell that a model beats the random mover: after 40
games won of 40, the 95% interval of its score is already 0.91 to 1. A match is played in
rounds of :data:`ROUND_GAMES` games (half with each colour) and ends after the first round
at which that interval is at most ``± precision`` wide (:func:`settled`), or at its
``n_games``, or after the round that ends past its deadline (an evaluation's budget of
time). Its games are the first games of the whole match, with the same ids and seeds: a
match cut short is the start of the match played out.

>>> from asp.app.evaluation.elo import match_result
>>> settled(match_result(wins=40, draws=0, losses=0), 0.05)
True
>>> settled(match_result(wins=20, draws=0, losses=0), 0.05)  # 0.84 .. 1: not yet
False
>>> settled(match_result(wins=50, draws=0, losses=50), 0.05)  # an even match plays out
False
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio
import torch

from asp.app.evaluation.elo import MatchResult, match_result_of
from asp.app.run.metrics import match_metrics
from asp.selfplay import SelfPlay

__all__ = [
    "PAST_VERSION_GAMES",
    "ROUND_GAMES",
    "Match",
    "endings",
    "matches_metrics",
    "play_match",
    "play_matches",
    "score_interval",
    "settled",
]

ROUND_GAMES = 20
"""Games of a round: small enough to stop early, enough to keep a worker's batch busy."""

PAST_VERSION_GAMES = 20
"""The most games of an evaluation's match against a version the run keeps, one round: two
searching players' games cost three or four times a mover's (TinyChess), and the ladder pools
every match (:mod:`asp.app.evaluation.ladder`)."""

_Z95 = 1.96


@dataclasses.dataclass(frozen=True)
class Match:
    """What :func:`play_match` played."""

    records: list[Any]
    """The games, in the order the rounds played them."""
    seconds: float
    """Wall time of its rounds."""
    worker_seconds: float
    """Time the workers spent in its shards."""


def score_interval(result: MatchResult) -> tuple[float, float]:
    """The Wilson 95% interval of ``result``'s score (draws counted as half points, which
    makes it no narrower than it is).

    >>> from asp.app.evaluation.elo import match_result
    >>> [round(x, 3) for x in score_interval(match_result(wins=20, draws=0, losses=0))]
    [0.839, 1.0]
    """
    n, p, z2 = result.games, result.score, _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def settled(result: MatchResult, precision: float) -> bool:
    """Whether ``result``'s 95% score interval is at most ``± precision`` wide (never, for a
    precision of 0)."""
    low, high = score_interval(result)
    return precision > 0 and (high - low) / 2 <= precision


async def play_match(
    selfplay: SelfPlay,
    model: torch.nn.Module,
    opponent: Any,
    cfg: Any,
    *,
    precision: float,
    priority: int = 0,
    deadline: float | None = None,
) -> Match:
    """Play ``cfg`` (a play config of ``model`` against ``opponent``, ``cfg.n_games`` games
    from ``cfg.first_game``) in rounds, until its score is :func:`settled` to ``precision``
    or every game is played (``precision`` 0: all of them, in one call where there is no
    ``deadline``), or a round ends past ``deadline`` (:func:`time.monotonic`; the first round
    is always played)."""
    records: list[Any] = []
    seconds = worker_seconds = 0.0
    played = 0
    while played < cfg.n_games:
        n_games = cfg.n_games if precision == 0 and deadline is None else min(ROUND_GAMES, cfg.n_games - played)
        round_cfg = dataclasses.replace(cfg, first_game=cfg.first_game + played, n_games=n_games)
        games, stats = await selfplay.play(model, opponent, round_cfg, priority=priority)
        records += games
        played += n_games
        seconds += stats["seconds"]
        worker_seconds += stats["worker_seconds"]
        if played < cfg.n_games and (
            settled(match_result_of(records), precision) or (deadline is not None and time.monotonic() >= deadline)
        ):
            break
    return Match(records, seconds, worker_seconds)


async def play_matches(
    selfplay: SelfPlay,
    model: torch.nn.Module,
    matches: dict[str, tuple[Any, Any]],
    *,
    precision: float,
    priority: int = 0,
    deadline: float | None = None,
) -> dict[str, Match]:
    """:func:`play_match` of each ``name: (opponent, cfg)`` of ``matches``, all at once (the
    rounds of one fill the workers beside another's), by name in the same order; none starts
    a round past ``deadline``.

    Free workers take the matches' games in the order given: a match given first is shared
    between the workers that are free, so give the costliest first. (The last match's calls
    have ``priority``, each match before it one more.)"""
    played: dict[str, Match] = {}

    async def one(name: str, opponent: Any, cfg: Any, rank: int) -> None:
        played[name] = await play_match(
            selfplay, model, opponent, cfg, precision=precision, priority=rank, deadline=deadline
        )

    try:
        async with anyio.create_task_group() as group:
            for i, (name, (opponent, cfg)) in enumerate(matches.items()):
                group.start_soon(one, name, opponent, cfg, priority + len(matches) - 1 - i)
    except BaseExceptionGroup as failed:  # the first failure, as one match would raise it
        raise failed.exceptions[0] from None
    return {name: played[name] for name in matches}


def matches_metrics(played: dict[str, Match]) -> dict[str, Any]:
    """Each match of :func:`play_matches` as ``name/...`` metrics: its score, W/D/L and Elo
    (:func:`~asp.app.run.metrics.match_metrics`), how its games ended (:func:`endings`), its
    seconds and its workers' seconds."""
    line: dict[str, Any] = {}
    for prefix, match in played.items():
        line.update(match_metrics(prefix, match_result_of(match.records)))
        line[f"{prefix}/endings"] = endings(match.records)
        line[f"{prefix}/seconds"] = match.seconds
        line[f"{prefix}/worker_seconds"] = match.worker_seconds
    return line


def endings(records: Sequence[Any]) -> dict[str, int]:
    """How the scored games of a match ended, from the model's side: counts keyed
    ``outcome/termination`` (``rules``: the game's rules ended it; ``max_plies``: cut at the
    ply cap, and scored as the game adjudicates such a game, else drawn). Games that were not
    scored (a mover's failure) are left out, as in the score.

    >>> from asp.games import Record
    >>> game = lambda result, termination: Record(0, "", [], result, termination, "model", "random", 0)
    >>> endings([game(0.5, "max_plies"), game(0.0, "rules"), game(0.5, "max_plies"), game(0.5, "engine_failure")])
    {'draw/max_plies': 2, 'loss/rules': 1}
    """
    names = {1.0: "win", 0.5: "draw", 0.0: "loss"}
    counts = Counter(
        f"{names[points]}/{record.termination}"
        for record in records
        if (points := record.model_score()) is not None  # None: self-play, or a mover failed
    )
    return dict(sorted(counts.items()))
