"""Progress reports from inside a worker: the coordinator's view of a shard that is alive.

A ``play_fn`` calls :func:`heartbeat` between moves. In a worker of :class:`asp.SelfPlay`
it adds to the shard's counter in shared memory (the coordinator calls a worker whose counter
stops moving for ``stall_timeout`` seconds stalled) and raises
:class:`~asp.errors.ShardCancelled` once the coordinator has cancelled the shard. Anywhere
else it does nothing, so play functions stay usable on their own.

A ``play_fn`` that keeps a batch of games in flight may also call :func:`more_games` when a
batch place frees up and its own games have all begun: the coordinator offers further blocks
of games of the same call that way, so a worker whose games end early takes on more instead
of waiting with a half-empty batch (see :class:`asp.SelfPlay`, "balancing"). The games it
takes belong to the shard: ``play_fn`` returns their records with its own.

>>> heartbeat(8)  # outside a worker: a no-op
>>> more_games() is None  # outside a worker: nothing is offered
True
"""

from __future__ import annotations

import os
from collections.abc import MutableSequence
from dataclasses import dataclass

from asp.errors import ShardCancelled

__all__ = ["IDLE", "OFFER_RING", "RETURNING", "RUNNING", "OfferCells", "heartbeat", "more_games"]

IDLE = 0
"""Phase of a slot whose shard has been sent but not started by its worker (or no shard)."""
RUNNING = 1
"""Phase of a slot whose worker runs the shard: the stall clock applies."""
RETURNING = 2
"""Phase of a slot whose shard has finished and whose result is being pickled and sent back."""

_progress: MutableSequence[int] | None = None
_cancel: MutableSequence[int] | None = None
_pids: MutableSequence[int] | None = None
_phase: MutableSequence[int] | None = None
_offers: OfferCells | None = None
_slot = -1

OFFER_RING = 16
"""Offers one slot can hold that its worker has not taken yet."""


@dataclass(frozen=True)
class OfferCells:
    """Where the coordinator offers a running shard more games, and the worker takes them.

    Every sequence is indexed by slot, except ``first`` and ``games`` (``slot * OFFER_RING + i``
    for the i-th offer of the shard, modulo the ring). Each cell has one writer, so no lock is
    needed (a lock held by a worker that is killed would never be released): the coordinator
    writes an offer's ``first`` and ``games`` and then raises ``posted``; the worker reads them
    once ``posted`` is above ``taken``, then raises ``taken``. Every count restarts at 0 with
    each shard, so after the shard the coordinator knows exactly which offers it took: the
    first ``taken``.
    """

    posted: MutableSequence[int]
    """Offers the coordinator has made to the slot's shard (written by the coordinator)."""
    taken: MutableSequence[int]
    """Offers the worker has taken (written by the worker)."""
    asked: MutableSequence[int]
    """Times the worker asked for more games and none was there (written by the worker)."""
    first: MutableSequence[int]
    """Id of the first game of each offer."""
    games: MutableSequence[int]
    """Number of games of each offer."""

    def reset(self, slot: int) -> None:
        """Zero the slot's counts (before a shard is sent: its worker is idle)."""
        self.posted[slot] = self.taken[slot] = self.asked[slot] = 0


def heartbeat(plies: int = 1) -> None:
    """Report ``plies`` more plies played; raise ShardCancelled if the shard was cancelled."""
    if _progress is None or _cancel is None:
        return
    _progress[_slot] += plies
    if _cancel[_slot]:
        raise ShardCancelled(f"shard in slot {_slot} was cancelled by the coordinator")


def more_games() -> tuple[int, int] | None:
    """The next block of games the coordinator offers this shard: ``(first_game, n_games)``.

    None when nothing is on offer now (ask again later: offers arrive while the shard runs)
    and always outside a worker. Games taken this way are part of the shard: ``play_fn`` must
    play them with the shard's cfg (only their ids differ) and return their records.
    """
    offers, slot = _offers, _slot
    if offers is None:
        return None
    taken = offers.taken[slot]
    if offers.posted[slot] <= taken:
        offers.asked[slot] += 1
        return None
    cell = slot * OFFER_RING + taken % OFFER_RING
    block = int(offers.first[cell]), int(offers.games[cell])
    offers.taken[slot] = taken + 1
    return block


def offers_taken() -> int:
    """How many offers this process's current shard has taken with :func:`more_games`."""
    return int(_offers.taken[_slot]) if _offers is not None else 0


def attach(
    slot: int,
    progress: MutableSequence[int],
    cancel: MutableSequence[int],
    pids: MutableSequence[int],
    phase: MutableSequence[int],
    offers: OfferCells,
) -> None:
    """Connect this process to its slot of the shared arrays (called by the worker initializer)."""
    global _progress, _cancel, _pids, _phase, _offers, _slot
    _progress, _cancel, _pids, _phase, _offers, _slot = progress, cancel, pids, phase, offers, slot


def begin_shard() -> None:
    """Tell the coordinator this process has started the slot's shard (its stall clock starts)."""
    if _pids is not None and _phase is not None:
        _pids[_slot] = os.getpid()
        _phase[_slot] = RUNNING


def end_shard() -> None:
    """Tell the coordinator the shard is over: pickling and sending its result is no stall."""
    if _phase is not None:
        _phase[_slot] = RETURNING
