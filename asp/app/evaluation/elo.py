"""Scores and Elo differences, both ways: the one place asp converts between them.

A match's result, its score and the Elo difference it implies, with a 95% interval:

>>> m = match_result(wins=140, draws=20, losses=40)
>>> m.score, round(m.elo.elo), m.elo.elo_low < m.elo.elo < m.elo.elo_high
(0.75, 191, True)
>>> round(score_from_elo(m.elo.elo), 6)
0.75
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from asp.errors import ConfigError
from asp.games.records import Record

__all__ = [
    "EloEstimate",
    "MatchResult",
    "elo_from_score",
    "match_result",
    "match_result_of",
    "score_from_elo",
]

_Z95 = 1.96
"""Standard normal quantile of a two-sided 95% interval."""


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
    bound: str = ""
    """``""``: a two-sided interval. ``">"``: the player scored every game, which implies no
    finite difference: ``elo_low`` is the one-sided 95% lower bound (the difference at which
    a score this good had a 5% chance), and ``elo`` and ``elo_high`` the score clamped to
    half a point from the end (for curves: it grows with the games won); or it scored half a
    point less, and ``elo_low`` is its interval's lower end. ``"<"``: it scored no point, or
    half a point, and ``elo_high`` is the upper bound."""

    def text(self) -> str:
        """The difference for people: ``+191 [95%: +150, +240]``, or ``> +317 (95%)`` for a
        one-sided bound."""
        if self.bound:
            return f"{self.bound} {self.elo_low if self.bound == '>' else self.elo_high:+.0f} (95%)"
        return f"{self.elo:+.0f} [95%: {self.elo_low:+.0f}, {self.elo_high:+.0f}]"


@dataclass(frozen=True)
class MatchResult:
    """A match from one player's side: wins, draws, losses, score and Elo difference."""

    wins: int
    """Games won."""
    draws: int
    """Games drawn."""
    losses: int
    """Games lost."""
    score: float
    """Points per game, 0 to 1: ``(wins + draws / 2) / games``."""
    elo: EloEstimate
    """The Elo difference the score implies, with its 95% interval (draws narrow it)."""
    engine_failures: int = 0
    """Games left out of the score: they ended by engine failure (result ``*``), see
    :mod:`asp.tinychess.engine`."""

    @property
    def games(self) -> int:
        """Games scored."""
        return self.wins + self.draws + self.losses

    def describe(self, *, failures: bool = False) -> str:
        """One line for people; the games lost to engine failures when there were some, or
        always with ``failures``.

        >>> match_result(wins=169, draws=22, losses=9).describe()
        'score 0.900 (+169 =22 -9 of 200), Elo +382 [95%: +323, +462]'
        >>> match_result(wins=1, draws=2, losses=3, engine_failures=1).describe()
        'score 0.333 (+1 =2 -3 of 6), Elo -120 [95%: -417, +94]; engine failures: 1 (not scored)'
        >>> match_result(wins=20, draws=0, losses=0).describe()
        'score 1.000 (+20 =0 -0 of 20), Elo > +317 (95%)'
        """
        line = (
            f"score {self.score:.3f} (+{self.wins} ={self.draws} -{self.losses} of {self.games}), Elo {self.elo.text()}"
        )
        if failures or self.engine_failures:
            line += f"; engine failures: {self.engine_failures}" + (" (not scored)" if self.engine_failures else "")
        return line


def score_from_elo(elo: float) -> float:
    """The expected score per game of a player ``elo`` points stronger (the logistic Elo curve).

    Finite for any finite ``elo``, however large:

    >>> score_from_elo(0.0), round(score_from_elo(400.0), 4), score_from_elo(-1e6)
    (0.5, 0.9091, 0.0)
    """
    # 1 / (1 + 10^(-elo/400)) written with tanh, which cannot overflow.
    return 0.5 * (1.0 + math.tanh(elo * math.log(10.0) / 800.0))


def _elo(score: float) -> float:
    return 400.0 * math.log10(score / (1.0 - score))


def elo_from_score(score: float, *, n_games: int, draw_ratio: float | None = None) -> EloEstimate:
    """Elo difference from a mean score, with a normal-approximation 95% interval.

    The standard error of the score is ``sqrt(var / n)`` with the per-game variance of the
    points (``s(1-s) - d/4`` with draw ratio ``d``; ``s(1-s)`` when ``d`` is unknown). A
    score of exactly 1 has no finite Elo: ``elo_low`` is then the one-sided 95% lower bound
    (the score ``p`` with ``p ** n = 0.05``; :attr:`EloEstimate.bound` is ``">"``), and a
    score of 0 is its mirror image. Scores are clamped to half a point from the ends
    (``0.5 / n``), the estimate of a perfect score included; a score half a point from
    perfect (19.5 of 20) is at that clamp, and so would be its interval's top: it gets the
    lower bound alone (``">"``), and half a point from nothing, the upper bound alone.

    >>> r = elo_from_score(0.75, n_games=200)
    >>> round(r.elo), r.elo_low < r.elo < r.elo_high
    (191, True)
    >>> r = elo_from_score(1.0, n_games=20)
    >>> r.bound, round(r.elo_low), r.text()
    ('>', 317, '> +317 (95%)')
    >>> elo_from_score(0.975, n_games=20).text()  # 19.5 of 20
    '> +395 (95%)'

    :raises ConfigError: ``n_games`` below 1, or ``score`` or ``draw_ratio`` outside 0..1.
    """
    if isinstance(n_games, bool) or not isinstance(n_games, int) or n_games < 1:
        raise ConfigError(f"n_games must be an int of at least 1, got {n_games!r}")
    if not 0.0 <= score <= 1.0:
        raise ConfigError(f"score must be in 0..1, got {score!r}")
    if draw_ratio is not None and not 0.0 <= draw_ratio <= 1.0:
        raise ConfigError(f"draw_ratio must be in 0..1 or None, got {draw_ratio!r}")
    half = 0.5 / n_games
    if min(score, 1.0 - score) < 0.25 / n_games:  # every game won, or none (scores come in half points)
        top, bound = _elo(1.0 - half), _elo(0.05 ** (1.0 / n_games))
        if score > 0.5:
            return EloEstimate(score, n_games, top, bound, top, ">")
        return EloEstimate(score, n_games, -top, -top, -bound, "<")
    clamped = min(max(score, half), 1.0 - half)
    variance = clamped * (1.0 - clamped) - (draw_ratio or 0.0) / 4.0
    se = math.sqrt(max(variance, 1e-12) / n_games)
    low = min(max(clamped - _Z95 * se, half), 1.0 - half)
    high = min(max(clamped + _Z95 * se, half), 1.0 - half)
    elo = _elo(clamped)
    if clamped == 1.0 - half:  # half a point from every game: the interval's top would be the estimate
        return EloEstimate(score, n_games, elo, _elo(low), elo, ">")
    if clamped == half:
        return EloEstimate(score, n_games, elo, elo, _elo(high), "<")
    return EloEstimate(score, n_games, elo, _elo(low), _elo(high))


def match_result(*, wins: int, draws: int, losses: int, engine_failures: int = 0) -> MatchResult:
    """Score, W/D/L and Elo difference (95% interval) of a match, from one player's side;
    ``engine_failures`` games are reported, not scored.

    >>> match_result(wins=0, draws=10, losses=0).elo.elo
    0.0

    :raises ConfigError: a count that is negative or not an int, or no games scored.
    """
    counts = (("wins", wins), ("draws", draws), ("losses", losses), ("engine_failures", engine_failures))
    for name, count in counts:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"{name} must be an int of at least 0, got {count!r}")
    games = wins + draws + losses
    if games == 0:
        failed = f" (all {engine_failures} ended by engine failure)" if engine_failures else ""
        raise ConfigError(f"wins + draws + losses must be at least 1, got 0 games scored{failed}")
    score = (wins + 0.5 * draws) / games
    elo = elo_from_score(score, n_games=games, draw_ratio=draws / games)
    return MatchResult(wins, draws, losses, score, elo, engine_failures)


def match_result_of(records: Iterable[Record]) -> MatchResult:
    """The model's match result over games against an opponent (:meth:`Record.model_score
    <asp.games.Record.model_score>`).

    Games a player failed in (:attr:`Record.failed <asp.games.Record.failed>`: a mover raised
    :class:`asp.games.MoveFailed`, such as a chess engine's failure) are counted in
    :attr:`MatchResult.engine_failures`, not scored.

    :raises ConfigError: a self-play game among ``records`` (it has no side to score), or no
        game scored.
    """
    records = list(records)
    scored = [r for r in records if not r.failed]
    points = [record.model_score() for record in scored]
    if any(p is None for p in points):
        raise ConfigError("records must all be games against an opponent; self-play games have no score")
    return match_result(
        wins=points.count(1.0),
        draws=points.count(0.5),
        losses=points.count(0.0),
        engine_failures=len(records) - len(scored),
    )
