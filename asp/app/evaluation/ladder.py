"""A rating ladder: one Elo scale for every player a run has met, fitted to all their games.

Each evaluation adds matches: the model against the game's movers and against versions the
run keeps. :func:`fit_ratings` fits one Bradley-Terry model to every game so far (a draw is
half a win for each side), anchored at the random mover (Elo 0), with 95% intervals from the
curvature of its likelihood. Each pair of players that met also counts one virtual draw, so
that a player who won every game gets a large finite rating rather than an infinite one.

>>> ratings = fit_ratings([
...     Pairing("v1", "random", wins=30, draws=0, losses=10),
...     Pairing("v2", "v1", wins=30, draws=0, losses=10),
... ])
>>> [(name, round(r.elo), r.games) for name, r in ratings.items()]
[('v2', 370, 40), ('v1', 185, 80), ('random', 0, 40)]
>>> ratings["v2"].text(), ratings["v1"].games
('+370 [95%: +198, +543]', 80)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asp.errors import ConfigError

__all__ = [
    "ANCHOR",
    "Ladder",
    "Pairing",
    "Rating",
    "fit_ladder",
    "fit_ratings",
    "ladder_metrics",
    "ladder_table",
    "ladder_text",
    "pairings_of",
    "past_versions",
    "version_of",
]

ANCHOR = "random"
"""The player rated 0: the uniformly random mover, which every game has."""

_ELO_PER_NAT = 400.0 / math.log(10.0)
_Z95 = 1.96


@dataclass(frozen=True)
class Pairing:
    """Games between two players, from ``player``'s side."""

    player: str
    opponent: str
    wins: int
    draws: int
    losses: int


@dataclass(frozen=True)
class Rating:
    """A player's place on the ladder."""

    elo: float
    """Elo above the anchor."""
    low: float
    """Lower end of the 95% interval (the anchor's is 0: it is not estimated)."""
    high: float
    """Upper end of the 95% interval."""
    games: int
    """Games the player played, virtual draws left out."""

    def text(self) -> str:
        """``+186 [95%: +120, +252]``."""
        return f"{self.elo:+.0f} [95%: {self.low:+.0f}, {self.high:+.0f}]"


@dataclass(frozen=True)
class Ladder:
    """A fit of :func:`fit_ladder`: the ratings, and the differences between two players."""

    ratings: dict[str, Rating]
    """Every player connected to the anchor by games, best first."""
    _index: dict[str, int]
    _theta: np.ndarray
    _covariance: np.ndarray

    def difference(self, player: str, other: str) -> Rating:
        """How much ``player`` is above ``other``, with the 95% interval of the difference
        itself: narrower than the two ratings' intervals together where both are measured
        through the same games (a match between them, the same anchor). ``games``: 0."""
        i, j = self._index[player], self._index[other]
        c = self._covariance
        spread = _Z95 * math.sqrt(max(float(c[i, i] + c[j, j] - 2 * c[i, j]), 0.0)) * _ELO_PER_NAT
        elo = float(self._theta[i] - self._theta[j]) * _ELO_PER_NAT
        return Rating(elo, elo - spread, elo + spread, 0)


def fit_ratings(pairings: Iterable[Pairing], *, anchor: str = ANCHOR) -> dict[str, Rating]:
    """:attr:`Ladder.ratings` of :func:`fit_ladder`."""
    return fit_ladder(pairings, anchor=anchor).ratings


def fit_ladder(pairings: Iterable[Pairing], *, anchor: str = ANCHOR) -> Ladder:
    """The ratings of every player connected to ``anchor`` by games, best first; the players
    no chain of games links to the anchor are left out (nothing places them on its scale).

    :raises ConfigError: no game of ``anchor``'s among ``pairings``.
    """
    pairings = list(pairings)
    players = sorted({p.player for p in pairings} | {p.opponent for p in pairings})
    if anchor not in players:
        raise ConfigError(f"a ladder needs games of {anchor!r}, the player rated 0")
    index = {name: k for k, name in enumerate(players)}
    games, points = np.zeros((len(players),) * 2), np.zeros((len(players),) * 2)
    for p in pairings:
        i, j = index[p.player], index[p.opponent]
        n = p.wins + p.draws + p.losses
        games[i, j] += n
        games[j, i] += n
        points[i, j] += p.wins + p.draws / 2
        points[j, i] += p.losses + p.draws / 2
    played = games.sum(axis=1)
    met = games > 0
    games, points = games + met, points + met / 2  # one virtual draw a pair
    keep = _connected(met, index[anchor])
    games, points = games[np.ix_(keep, keep)], points[np.ix_(keep, keep)]
    theta, covariance = _fit(games, points, keep.index(index[anchor]))
    ratings = {}
    for k, player in enumerate(keep):
        spread = _Z95 * math.sqrt(max(float(covariance[k, k]), 0.0)) * _ELO_PER_NAT
        elo = float(theta[k]) * _ELO_PER_NAT
        ratings[players[player]] = Rating(elo, elo - spread, elo + spread, int(played[player]))
    ordered = dict(sorted(ratings.items(), key=lambda item: -item[1].elo))
    return Ladder(ordered, {players[player]: k for k, player in enumerate(keep)}, theta, covariance)


def _connected(met: np.ndarray, start: int) -> list[int]:
    """The players that a chain of games links to ``start``, in order."""
    seen, todo = {start}, [start]
    while todo:
        for other in np.flatnonzero(met[todo.pop()]):
            if int(other) not in seen:
                seen.add(int(other))
                todo.append(int(other))
    return sorted(seen)


def _fit(games: np.ndarray, points: np.ndarray, anchor: int) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood strengths (nats; the anchor's 0) by Newton's method, and their
    covariance (the inverse of the information; the anchor's row and column 0)."""
    size = len(games)
    free = [k for k in range(size) if k != anchor]
    theta = np.zeros(size)
    information = np.zeros((size, size))
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i scores against j
        gradient = (points - games * p).sum(axis=1)
        weight = games * p * p.T
        information = np.diag(weight.sum(axis=1)) - weight
        step = np.linalg.solve(information[np.ix_(free, free)], gradient[free]) if free else np.zeros(0)
        theta[free] += step
        if not free or np.max(np.abs(step)) < 1e-10:
            break
    covariance = np.zeros((size, size))
    if free:
        covariance[np.ix_(free, free)] = np.linalg.inv(information[np.ix_(free, free)])
    return theta, covariance


def version_of(name: str) -> int | None:
    """The version a ladder's player name stands for (``v8``: 8), or None for a mover or an
    engine.

    >>> version_of("v8"), version_of("winblock"), version_of("v")
    (8, None, None)
    """
    return int(name[1:]) if name.startswith("v") and name[1:].isdigit() else None


def past_versions(kept: Sequence[int], version: int) -> list[int]:
    """The kept versions that an evaluation of ``version`` also plays: the latest one before
    it (version 0 at the first evaluation). Each version meets the one before, and the movers:
    one scale links them all, at the cost of one match more an evaluation.

    >>> past_versions([0, 10, 20], 20), past_versions([0, 10], 10), past_versions([0], 0)
    ([10], [0], [])
    """
    earlier = [v for v in kept if v < version]
    return earlier[-1:]


def pairings_of(lines: Iterable[dict[str, Any]]) -> list[Pairing]:
    """Every match of a run's metrics lines (``metrics.jsonl``), from the evaluated version's
    side (``v<N>``): against the random mover (``eval/...``), the game's other movers
    (``eval_<name>/...``), an engine (``eval_sf/...``, by its name) and kept versions
    (``eval_v<N>/...``). Lines of an asp before the ladder (no ``eval/version``) have none.

    >>> line = {"eval/version": 4, "eval/wins": 9, "eval/draws": 1, "eval/losses": 0,
    ...         "eval_v0/wins": 7, "eval_v0/draws": 0, "eval_v0/losses": 3}
    >>> [(p.player, p.opponent, p.wins, p.draws, p.losses) for p in pairings_of([line])]
    [('v4', 'random', 9, 1, 0), ('v4', 'v0', 7, 0, 3)]
    """
    pairings = []
    for line in lines:
        if "eval/version" not in line:
            continue
        for key in line:
            if not (key.startswith("eval") and key.endswith("/wins")):
                continue
            prefix = key[: -len("/wins")]
            opponent = {"eval": ANCHOR, "eval_sf": str(line.get("eval_sf/engine", "engine"))}.get(prefix, prefix[5:])
            counts = (int(line[f"{prefix}/{n}"]) for n in ("wins", "draws", "losses"))
            pairings.append(Pairing(f"v{line['eval/version']}", opponent, *counts))
    return pairings


def ladder_metrics(lines: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ladder after the last of ``lines`` (an evaluated one): ``ladder`` (every player's
    ``[elo, low, high, games]``, best first), the evaluated version's ``ladder/elo``,
    ``ladder/elo_low`` and ``ladder/elo_high``, and how far it is above version 0,
    ``ladder/above_v0`` ``[elo, low, high]`` (:meth:`Ladder.difference`); ``{}`` without any
    match."""
    pairings = pairings_of(lines)
    if not pairings:
        return {}
    ladder = fit_ladder(pairings)
    metrics: dict[str, Any] = {
        "ladder": {
            name: [round(r.elo, 1), round(r.low, 1), round(r.high, 1), r.games] for name, r in ladder.ratings.items()
        }  # fmt: skip
    }
    name = f"v{lines[-1].get('eval/version')}"
    current = ladder.ratings.get(name)
    if current is not None:
        metrics |= {"ladder/elo": round(current.elo, 1), "ladder/elo_low": round(current.low, 1),
                    "ladder/elo_high": round(current.high, 1)}  # fmt: skip
        if name != "v0" and "v0" in ladder.ratings:
            above = ladder.difference(name, "v0")
            metrics["ladder/above_v0"] = [round(above.elo, 1), round(above.low, 1), round(above.high, 1)]
    return metrics


def ladder_text(line: dict[str, Any]) -> str | None:
    """What a metrics line's ladder says of its version: its rating, and whether it is above
    version 0, by the 95% interval of the difference (``ladder/above_v0``), or that it cannot
    tell yet; None without a ladder.

    >>> ladder_text({"eval/version": 8, "ladder": {"v8": [412, 50, 774, 90]}, "ladder/above_v0": [391, 150, 632]})
    'v8 +412 [95%: +50, +774], above v0 by +391 [95%: +150, +632]'
    >>> ladder_text({"eval/version": 2, "ladder": {"v2": [50, -20, 120, 60]}, "ladder/above_v0": [29, -40, 98]})
    'v2 +50 [95%: -20, +120], cannot tell yet from v0: +29 [95%: -40, +98]'
    """
    ladder = line.get("ladder")
    name = f"v{line.get('eval/version')}"
    if not ladder or name not in ladder:
        return None
    text = f"{name} {Rating(*ladder[name]).text()}"
    if "ladder/above_v0" in line:
        elo, low, high = line["ladder/above_v0"]
        above = Rating(elo, low, high, 0)
        if above.low > 0:
            text += f", above v0 by {above.text()}"
        elif above.high < 0:
            text += f", below v0 by {Rating(-above.elo, -above.high, -above.low, 0).text()}"
        else:
            text += f", cannot tell yet from v0: {above.text()}"
    return text


def ladder_table(lines: Sequence[dict[str, Any]], run: str) -> str:
    """``asp eval RUN --ladder``: every player of the run's evaluations on one scale, best
    first, from all the games of ``lines`` (its ``metrics.jsonl``).

    >>> print(ladder_table([{"eval/version": 4, "eval/wins": 30, "eval/draws": 0, "eval/losses": 10}], "runs/x"))
    ladder of runs/x: Bradley-Terry over 40 games, the random mover = 0 (95% intervals)
      v4      +185 [95%: +63, +307]  40 games
      random  +0                     40 games

    :raises ConfigError: the run has evaluated nothing yet.
    """
    pairings = pairings_of(lines)
    if not pairings:
        raise ConfigError(
            f"{run}: no evaluation to rate yet (it evaluates every --eval-every iterations, and after the last)"
        )
    ratings = fit_ratings(pairings)
    total = sum(p.wins + p.draws + p.losses for p in pairings)
    width = max(len(name) for name in ratings)
    rows = [(name, "+0" if name == ANCHOR else r.text(), r.games) for name, r in ratings.items()]
    column = max(len(text) for _, text, _ in rows)
    return "\n".join(
        [f"ladder of {run}: Bradley-Terry over {total} games, the {ANCHOR} mover = 0 (95% intervals)"]
        + [f"  {name:<{width}}  {text:<{column}}  {games} games" for name, text, games in rows]
    )
