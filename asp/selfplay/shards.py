"""Shards and games, without processes: planning a call, batching shards, checking game ids.

A call of ``cfg.n_games`` games is cut into shards of contiguous game ids. A free worker is
sent several contiguous shards at once (a full play batch), and is offered more while it
plays (:func:`asp.more_games`). Every game has an id; whatever a worker returns is checked
against the ids of the shards it held, so a game can be neither lost nor invented.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Cfg:
...     n_games: int
...     first_game: int = 0
...     seed: int = 0
...     model_version: int = 0
>>> shards, target = plan_shards(Cfg(n_games=10, first_game=100), workers=2, shard_games=4)
>>> [(s.first_game, s.games) for s in shards], target
([(100, 4), (104, 4), (108, 2)], 4)
>>> id_mismatch(range(104, 107), shards[1:2])
'missing [107]'
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from asp.errors import AspError

__all__ = [
    "Shard",
    "call_stats",
    "collect_games",
    "default_shard_games",
    "id_mismatch",
    "merge_stats",
    "plan_shards",
    "take_batch",
]


@dataclass
class Shard:
    """A block of contiguous games of one call; ``attempt`` counts its runs that failed."""

    index: int
    """Its place within its call (0-based)."""
    cfg: Any
    """The call's cfg with this shard's ``first_game`` and ``n_games``."""
    attempt: int = 0

    @property
    def first_game(self) -> int:
        return int(self.cfg.first_game)

    @property
    def games(self) -> int:
        return int(self.cfg.n_games)


def default_shard_games(n_games: int, workers: int, batch_size: int = 1) -> int:
    """Games per shard when ``shard_games`` is not given: small blocks, the unit of balancing.

    A free worker is sent several contiguous shards at once, enough for a full batch (at most
    its share of the call), and is offered more, a shard at a time, as its games end
    (:func:`asp.more_games`). So shards are small: an eighth of the batch, and at least eight
    per worker.

    >>> default_shard_games(192, 2, 64), default_shard_games(1024, 2, 64), default_shard_games(8, 2)
    (8, 8, 1)
    """
    return max(1, min(math.ceil(batch_size / 8), math.ceil(n_games / (workers * 8))))


def plan_shards(cfg: Any, *, workers: int, shard_games: int | None) -> tuple[list[Shard], int]:
    """The call's shards, and how many games to send a free worker at once.

    With an explicit ``shard_games`` every task is one shard (the target is its size). Else
    shards are :func:`default_shard_games` and the target is a play batch
    (``cfg.batch_size``; a quarter of a worker's share when the cfg has none), at most a
    worker's share of the call.
    """
    batch = getattr(cfg, "batch_size", None) or None  # 0: a play_fn that plays one game at a time
    size = shard_games or default_shard_games(cfg.n_games, workers, batch or 1)
    shards = [
        Shard(i, dataclasses.replace(cfg, first_game=cfg.first_game + start, n_games=min(size, cfg.n_games - start)))
        for i, start in enumerate(range(0, cfg.n_games, size))
    ]
    if shard_games is not None:
        return shards, size
    share = math.ceil(cfg.n_games / workers)
    return shards, max(size, min(share, batch if batch is not None else math.ceil(share / 4)))


def take_batch(queue: deque[Shard], target: int) -> list[Shard]:
    """Pop the next shard and the contiguous ones after it, up to ``target`` games in all.

    >>> from types import SimpleNamespace
    >>> q = deque(Shard(i, SimpleNamespace(first_game=2 * i, n_games=2)) for i in range(5))
    >>> [s.index for s in take_batch(q, 5)], [s.index for s in q]
    ([0, 1, 2], [3, 4])
    """
    shards = [queue.popleft()]
    games = shards[0].games
    while queue and games < target and queue[0].first_game == shards[0].first_game + games:
        games += queue[0].games
        shards.append(queue.popleft())
    return shards


def id_mismatch(ids: Iterable[int], shards: Sequence[Shard]) -> str | None:
    """None when ``ids`` (of returned records) are exactly the games of ``shards``, each once;
    else what is wrong, for an error message."""
    expected = {g for s in shards for g in range(s.first_game, s.first_game + s.games)}
    seen: set[int] = set()
    twice, extra = [], []
    for game in ids:
        if game in seen:
            twice.append(game)
        elif game not in expected:
            extra.append(game)
        seen.add(game)
    missing = sorted(expected - seen)
    found = {"missing": missing, "unexpected": extra, "twice": twice}
    return ", ".join(f"{word} {_some(games)}" for word, games in found.items() if games) or None


def collect_games(records: Iterable[Any], cfg: Any, what: str) -> list[Any]:
    """The records of one call, one per game id from ``cfg.first_game``, sorted by id.

    Of an id that comes twice (a shard run again after a crash) the first record is kept.

    :raises AspError: when an id of the call is missing, or one outside it is present.
    """
    by_id: dict[int, Any] = {}
    for record in records:
        by_id.setdefault(record.game_id, record)
    expected = range(cfg.first_game, cfg.first_game + cfg.n_games)
    missing = [i for i in expected if i not in by_id]
    extra = sorted(i for i in by_id if i not in expected)
    if missing or extra:
        raise AspError(
            f"{what}: the play_fn's games do not match the ids {expected.start}..{expected.stop - 1}: "
            f"missing {_some(missing)}, unexpected {_some(extra)}"
        )
    return [by_id[i] for i in expected]


def merge_stats(shard_stats: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The sum of every numeric stat over shards (booleans and other values are left out)."""
    merged: dict[str, Any] = {}
    for stats in shard_stats:
        for key, value in stats.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
    return merged


def call_stats(
    records: list[Any], shard_stats: Iterable[dict[str, Any]], summary: Callable[[list[Any]], dict[str, Any]] | None
) -> dict[str, Any]:
    """The stats of a call: ``summary(records)``, and the shards' numeric stats that it lacks,
    summed over shards (but ``seconds`` and rates, ``*_per_s``, which do not add up).

    >>> call_stats([1, 2], [{"plies": 3, "evals": 2, "seconds": 1.0}, {"plies": 4, "evals": 5}], lambda r: {"games": 2})
    {'games': 2, 'plies': 7, 'evals': 7}
    """
    merged = merge_stats(shard_stats)
    stats = summary(records) if summary is not None else {"games": len(records)}
    for key, value in merged.items():
        if key not in stats and key != "seconds" and not key.endswith("_per_s"):
            stats[key] = value
    return stats


def _some(ids: Sequence[int]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(map(str, ids[:10]))
    return f"[{shown}]" if len(ids) <= 10 else f"[{shown}, ...] ({len(ids)} in all)"
