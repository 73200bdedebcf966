"""The reserve of offered shards, without processes: how many of its call's next shards each
running worker is offered.

A worker whose games end early takes more games into the batch it is playing
(:func:`asp.more_games`) instead of its flight ending with a half-empty batch while another
worker still plays. For that it needs shards on offer before it asks again. At each look at
the workers' counters the dispatcher (:mod:`asp.selfplay.dispatch`) describes every flight of the call
as plain numbers (:class:`FlightCounts`), asks :func:`plan_offers` how many of the queued
shards to offer each, and sends them (:meth:`~asp.backends.base.Backend.offer`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from asp import progress

__all__ = ["FlightCounts", "TopUp", "plan_offers"]


@dataclass(frozen=True)
class FlightCounts:
    """One flight of a call, as the offer arithmetic sees it: its worker's counters and what it holds."""

    running: bool
    """Its worker plays its shards now (it has begun them, and its result is not in yet)."""
    asked: int
    """Times its worker asked for more games when none was on offer."""
    taken: int
    """Offers its worker has taken."""
    taken_seen: int
    """Offers its worker had taken at the last top-up (the rate since then sizes the reserve)."""
    offered: int
    """Offers made to it so far, taken or not."""
    untaken_games: int
    """Games of the offers it has not taken yet."""
    games: int
    """Games it holds in all: the shards it was sent and every offer."""
    cap: int
    """Games it may hold in all (offers stop there)."""


@dataclass(frozen=True)
class TopUp:
    """What :func:`plan_offers` decides for one flight."""

    shards: int
    """How many queued shards to offer it: the next ones after those offered to the flights before it."""
    taken_seen: int
    """Its ``taken_seen`` from now on: its ``taken`` when it was topped up, else unchanged."""


def plan_offers(
    flights: Sequence[FlightCounts], queue: Sequence[int], *, workers: int, ring: int = progress.OFFER_RING
) -> list[TopUp]:
    """How many of ``queue``'s shards (their numbers of games, in queue order) to offer each flight.

    ``flights`` are the call's flights, in the order they are served: the first takes the first
    shards of the queue, the next the shards after those, and so on. A flight gets offers only
    while it runs and once its worker has asked for more games (a play_fn that never asks holds
    no reserve). Its reserve, the offers it holds untaken, is topped up to twice what it took
    since the last top-up, at least one shard and at most ``ring - 1`` (the cells an offer
    is written to). Offers stop earlier when the next shard would take it past its ``cap`` of
    games, or, once it holds untaken games, past its share of the call's games not yet begun
    (the queue's and every flight's untaken ones, over ``workers``): what a worker holds
    untaken it must play itself, so near the end of a call the last games go to the workers as
    they free up.

    The result has one :class:`TopUp` per flight, in order; their ``shards`` add up to at most
    ``len(queue)``.

    >>> worker = FlightCounts(running=True, asked=1, taken=3, taken_seen=1, offered=3, untaken_games=0, games=9, cap=32)
    >>> never_asked = FlightCounts(
    ...     running=True, asked=0, taken=0, taken_seen=0, offered=0, untaken_games=0, games=8, cap=32
    ... )
    >>> plan_offers([worker, never_asked], [2] * 8, workers=2)  # took 2 since the last look: 4 more
    [TopUp(shards=4, taken_seen=3), TopUp(shards=0, taken_seen=0)]
    """
    waiting = sum(queue) + sum(flight.untaken_games for flight in flights)
    share = math.ceil(waiting / workers)
    plan = []
    first = 0  # the first shard of the queue not yet offered
    for flight in flights:
        if not flight.running or (flight.asked == 0 and flight.taken == 0):
            plan.append(TopUp(0, flight.taken_seen))
            continue
        reserve = min(ring - 1, max(1, 2 * (flight.taken - flight.taken_seen)))
        offered, games, held = flight.offered, flight.games, flight.untaken_games
        end = first
        while end < len(queue) and offered - flight.taken < reserve:
            size = queue[end]
            if games + size > flight.cap or (held and held + size > share):
                break
            end += 1
            offered += 1
            games += size
            held += size
        plan.append(TopUp(end - first, flight.taken))
        first = end
    return plan
