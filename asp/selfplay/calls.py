"""One call on a SelfPlay (a ``play`` or a ``stream``): its shards of game ids, and what it yields.

A call of ``cfg.n_games`` games is cut into shards of contiguous game ids (:func:`plan_shards`).
A :class:`Call` owns its queue of shards, its results, its counters and its logger; the
dispatcher (:mod:`asp.selfplay.dispatch`) hands a free worker a full play batch of shards at once
as a flight (:class:`~asp.selfplay.dispatch.Flight`), and offers it more while it plays
(:func:`asp.more_games`). The first batch of each worker is dealt (:func:`deal`): shard by
shard, round-robin, so that a block of costly games of neighbouring ids is spread over the
workers; the later ones are contiguous (:func:`take_batch`). What comes back goes into the call's results,
where the caller's task reads them. Every game has an id; whatever a worker returns is checked
against the ids of the shards it held (:func:`id_mismatch`), so a game can be neither lost nor
invented. Calls do not wait for one another: they share the workers, the first come (or the
highest priority) first served.

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

import asyncio
import dataclasses
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from asp import progress
from asp.backends.weights import WeightRef
from asp.backends.worker import ShardOutput
from asp.errors import AspError

__all__ = [
    "Call",
    "CallFigures",
    "Shard",
    "ShardResult",
    "call_stats",
    "collect_games",
    "deal",
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


def deal(shards: Sequence[Shard], workers: int, target: int) -> tuple[list[list[Shard]], list[Shard]]:
    """A call's first round: its first shards dealt round-robin, one at a time, into a batch
    for each worker of as many shards as :func:`take_batch` would send it (``target`` games,
    rounded up to whole shards; with several workers, at most :data:`asp.progress.OFFER_RING`
    shards); and the shards left, in order.

    Neighbouring game ids often cost alike (a block of long games, a pair of games from one
    opening): dealt, each worker's first batch holds its part of every block. The worker is
    sent the batch's first shard and offered the others before it starts, so that it takes
    them as it fills its batch (:func:`asp.more_games`): what it plays at once depends on the
    call alone, not on when the offers arrive.

    >>> from types import SimpleNamespace
    >>> shards = [Shard(i, SimpleNamespace(first_game=2 * i, n_games=2)) for i in range(7)]
    >>> groups, rest = deal(shards, workers=2, target=3)
    >>> [[s.index for s in g] for g in groups], [s.index for s in rest]
    ([[0, 2], [1, 3]], [4, 5, 6])
    """
    if not shards:
        return [], []
    per_worker = math.ceil(target / shards[0].games)  # as many as take_batch takes
    if workers > 1:  # all but the first shard of a batch are offered: they must fit the ring
        per_worker = min(progress.OFFER_RING, per_worker)
    dealt = list(shards[: per_worker * workers])
    return [dealt[k::workers] for k in range(min(workers, len(dealt)))], list(shards[per_worker * workers :])


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


@dataclass(frozen=True, kw_only=True)
class ShardResult(ShardOutput):
    """What one worker played in one go (a shard, or several), as :meth:`SelfPlay.stream`
    yields it: what the worker sent back (its ``records`` and ``stats`` as ``play_fn``
    returned them, its ``pid``, ``seconds`` and ``node``) and where it sits in its call."""

    shard: int
    """Index of its first shard within its call (0-based)."""
    attempt: int
    """Which attempt produced it: 0 for the first run, 1 for the first retry... (the highest of
    its shards)."""
    first_game: int
    """Id of the first game of its first shard."""
    n_games: int
    """Games in all its shards."""
    shards: tuple[int, ...]
    """Every shard whose games it holds: with the default ``shard_games`` a worker plays several
    at once in one batch (see :class:`SelfPlay`, "balancing"); else just ``(shard,)``."""


@dataclass
class CallFigures:
    """A call's counters, reported in ``play``'s stats."""

    shards: int = 0
    retries: int = 0
    respawns: int = 0
    """Workers replaced while the call was open (whichever call's shard they lost)."""
    started: float = field(default_factory=time.perf_counter)


_DONE = None  # in a call's results: every shard has been yielded


class Call:
    """The state of one call: what is left to play, what has come back, and how it ends.

    The dispatcher takes shards from ``dealt`` (its workers' first batches, :func:`deal`),
    then from ``queue``, and writes ``results``; the caller's task reads ``results`` through
    :meth:`next`. A call *ends* when its last shard came back
    (:meth:`finish`), when it failed (:meth:`fail`) or when its caller left; after that
    nothing of it is dispatched, and its running shards are cancelled.
    """

    def __init__(
        self,
        number: int,
        what: str,
        shards: list[Shard],
        target: int,
        refs: tuple[WeightRef, WeightRef | None],
        *,
        workers: int,
        priority: int,
        offers: bool,
        log: Any,
    ) -> None:
        self.number = number
        self.what = what
        groups, rest = deal(shards, workers, target) if offers else ([], shards)
        self.dealt = deque(groups)
        """The first batch of each worker, not yet sent: its first shard the task, the others offered."""
        self.queue = deque(rest)
        """The shards after those, in order of game ids."""
        self.target = target
        """Games to send a free worker at once."""
        self.model_ref, self.opp_ref = refs
        self.priority = priority
        self.offers = offers
        """Its running shards may be offered more of its games (:func:`asp.more_games`)."""
        self.log = log
        self.figures = CallFigures(shards=len(shards))
        self.flights = 0
        """Its shards running in workers now."""
        self.ended = False
        self.left = False
        """Its caller has left (finished reading, failed, cancelled or broke off)."""
        self.drained = asyncio.Event()
        """Set once it has ended and none of its shards runs any more."""
        self._results: asyncio.Queue[ShardResult | BaseException | None] = asyncio.Queue()

    @property
    def waiting(self) -> bool:
        """Shards of it wait to be sent."""
        return bool(self.dealt or self.queue)

    def requeue(self, shards: Sequence[Shard]) -> None:
        """Queue ``shards`` again (lost, or offered and never taken), every shard in order of
        game ids: contiguous shards go out together again."""
        if shards:  # most flights took every offer: nothing to sort in
            self.queue = deque(sorted((*shards, *self.queue), key=lambda s: s.index))

    @property
    def order(self) -> tuple[int, int]:
        """Dispatch order: the highest priority first, then the first come."""
        return (-self.priority, self.number)

    def deliver(self, result: ShardResult) -> None:
        self._results.put_nowait(result)

    def finish(self) -> None:
        """Every shard came back: the caller reads to the end."""
        if not self.ended:
            self.ended = True
            self._results.put_nowait(_DONE)

    def fail(self, error: BaseException) -> None:
        """End the call with ``error``: its caller raises it after the results that came before."""
        if not self.ended:
            self.ended = True
            self.dealt.clear()
            self.queue.clear()
            self._results.put_nowait(error)

    def leave(self) -> None:
        """Its caller is gone: nothing more is dispatched or kept."""
        self.left = True
        self.ended = True
        self.dealt.clear()
        self.queue.clear()

    async def next(self) -> ShardResult | None:
        """The next result, None at the end; raises what ended the call."""
        item = await self._results.get()
        if isinstance(item, BaseException):
            self._results.put_nowait(item)  # raised again if asked again
            raise item
        if item is _DONE:
            self._results.put_nowait(item)
        return item
