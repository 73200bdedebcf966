"""One call on a SelfPlay (a ``play`` or a ``stream``), and what it yields.

A :class:`Call` owns its queue of shards, its results, its counters and its logger; the
dispatcher (:mod:`asp.selfplay.dispatch`) hands its shards to free workers as flights
(:mod:`asp.selfplay.running`), which put what comes back into its results, where the caller's task
reads them. Calls do not wait for one another: they share the workers, the first come (or
the highest priority) first served.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from asp.backends.weights import WeightRef
from asp.backends.worker import ShardOutput
from asp.selfplay.shards import Shard

__all__ = ["Call", "CallFigures", "ShardResult"]


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

    The dispatcher reads ``queue`` and writes ``results``; the caller's task reads
    ``results`` through :meth:`next`. A call *ends* when its last shard came back
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
        priority: int,
        offers: bool,
        log: Any,
    ) -> None:
        self.number = number
        self.what = what
        self.queue = deque(shards)
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
            self.queue.clear()
            self._results.put_nowait(error)

    def leave(self) -> None:
        """Its caller is gone: nothing more is dispatched or kept."""
        self.left = True
        self.ended = True
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
