"""The record of a game of any :class:`~asp.games.Game`, and what training reads from it.

A :class:`Record` holds ints, strings, floats and lists of them (and, from self-play,
:class:`Samples`: numpy arrays), so it pickles cheaply between processes; :meth:`Record.plain`
is its JSON-ready form, with the moves in the game's notation. The result is written as
points of the game's first player: 1 won, 0.5 drawn, 0 lost.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MODEL", "OPPONENT", "RESULTS", "Record", "Samples", "summarise"]

MODEL = "model"
"""Name of the player that is the model being trained, in :attr:`Record.first`/``second``."""
OPPONENT = "opponent"
"""Name of the opponent, in :attr:`Record.first`/``second``."""
RESULTS = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}
"""A :attr:`Record.result` (the first player's points) in the words of chess and PGN."""


@dataclass(eq=False)
class Samples:
    """What the model saw and chose at each of its plies of one game, as play encoded it:
    the trainer's samples, with no replay. ``k`` is the number of plies the model played."""

    plies: np.ndarray
    """(k,) int32: the index within the game of each ply the model played."""
    movers: np.ndarray
    """(k,) int8: who made each of those plies: 0 the game's first player, 1 the second
    (:meth:`Game.to_move`)."""
    features: np.ndarray
    """(k, ...): the position before the ply, as :meth:`Game.encode` gave it, in the game's
    compact form where it has one (:func:`asp.games.protocol.packed`)."""
    legal: np.ndarray
    """(sum of legal_counts,) int32: the legal actions, ply after ply."""
    legal_counts: np.ndarray
    """(k,) int32: legal actions at each ply."""
    policy: np.ndarray
    """(sum of legal_counts,) float32, beside ``legal``: the policy target at each ply: the
    search's improved policy, or, for a ply played without search, the action played (1 for
    it, 0 for the others)."""
    values: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.float32))
    """(k,) float32: the search's value of the position before each kept ply, for its mover
    (:attr:`asp.search.SearchResult.value`), NaN where the ply was played without a search
    (empty: none was)."""
    heuristic: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.float32))
    """(plies + 1,) float32: the game's heuristic (:func:`asp.games.protocol.heuristic`) of the
    position before each ply of the game, and after the last, for the game's first player;
    empty where the game has none."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Samples):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name), equal_nan=True)  # values: NaN unsearched
            for f in dataclasses.fields(Samples)
        )


@dataclass
class Record:
    """One game: who played it, its moves and its result."""

    game_id: int
    """The game's id within its call (:class:`asp.SelfPlay` returns one record per id)."""
    start: str
    """The starting position in the game's notation (:meth:`Game.state_text`)."""
    actions: list[int]
    """The actions played, in order."""
    result: float
    """Points of the game's first player (the one :meth:`Game.to_move` calls 0): 1 won, 0.5
    drawn, 0 lost; a game cut at ``max_plies`` is scored as the game adjudicates it (TinyChess:
    by material), else drawn."""
    termination: str
    """Why it ended: ``rules`` (the game's own end), ``max_plies`` (cut at the cap), or
    a mover's failure (:class:`~asp.games.MoveFailed`: ``mover_failure``, ``engine_failure``;
    result 0.5, unscored)."""
    first: str
    """Who was the game's first player: :data:`MODEL` or :data:`OPPONENT`."""
    second: str
    """Who was the second player."""
    model_version: int
    """Version of the model's weights that played it."""
    opponent_version: int | None = None
    """Version of the opponent's weights, when it had an opponent."""
    opponent_name: str | None = None
    """The opponent's name (``random``, ``winblock``), when it has one."""
    moves: list[str] = dataclasses.field(default_factory=list)
    """The actions in the game's notation (:meth:`Game.action_text`), beside ``actions``."""
    samples: Samples | None = None
    """The model's plies as training samples (self-play's default), or None."""

    @property
    def failed(self) -> bool:
        """Whether a mover failed in it (:class:`~asp.games.MoveFailed`): no result, unscored."""
        return self.termination not in ("rules", "max_plies")

    def model_score(self) -> float | None:
        """The model's points (1, 0.5, 0) in a game against an opponent; None in self-play and
        in a game a mover failed in."""
        if self.first == self.second or self.failed:
            return None
        return self.result if self.first == MODEL else 1.0 - self.result

    def plain(self) -> dict[str, Any]:
        """The record as JSON-ready data, without its samples."""
        data = dataclasses.asdict(dataclasses.replace(self, samples=None))
        data.pop("samples")
        return data


def summarise(records: Sequence[Record]) -> dict[str, Any]:
    """Counts of a call's records: games, plies, lengths, results and terminations, and the
    model's mean score where it had an opponent.

    >>> game = Record(0, "", [3, 3, 2], 1.0, "rules", MODEL, OPPONENT, 0)
    >>> summarise([game])["score"], summarise([game])["results"]
    (1.0, {'1-0': 1})
    """
    lengths = [len(r.actions) for r in records]
    scores = [s for r in records if (s := r.model_score()) is not None]
    return {
        "games": len(records),
        "plies": sum(lengths),
        "length_min": min(lengths, default=0),
        "length_mean": sum(lengths) / len(lengths) if lengths else 0.0,
        "length_max": max(lengths, default=0),
        "results": dict(Counter("*" if r.failed else RESULTS.get(r.result, str(r.result)) for r in records)),
        "terminations": dict(Counter(r.termination for r in records)),
        "score": sum(scores) / len(scores) if scores else None,
    }
