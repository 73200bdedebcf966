"""Progress reports from inside a worker: the coordinator's view of a shard that is alive.

A ``play_fn`` calls :func:`heartbeat` between moves. In a worker of :class:`asp.SelfPlay`
it adds to the shard's counter in shared memory (the coordinator calls a worker whose counter
stops moving for ``stall_timeout`` seconds stalled) and raises
:class:`~asp.errors.ShardCancelled` once the coordinator has cancelled the shard. Anywhere
else it does nothing, so play functions stay usable on their own.

>>> heartbeat(8)  # outside a worker: a no-op
"""

from __future__ import annotations

import os
from collections.abc import MutableSequence

from asp.errors import ShardCancelled

__all__ = ["heartbeat"]

_progress: MutableSequence[int] | None = None
_cancel: MutableSequence[int] | None = None
_pids: MutableSequence[int] | None = None
_slot = -1


def heartbeat(plies: int = 1) -> None:
    """Report ``plies`` more plies played; raise ShardCancelled if the shard was cancelled."""
    if _progress is None or _cancel is None:
        return
    _progress[_slot] += plies
    if _cancel[_slot]:
        raise ShardCancelled(f"shard in slot {_slot} was cancelled by the coordinator")


def attach(progress: MutableSequence[int], cancel: MutableSequence[int], pids: MutableSequence[int]) -> None:
    """Connect this process to the shared arrays (called by the worker initializer)."""
    global _progress, _cancel, _pids
    _progress, _cancel, _pids = progress, cancel, pids


def set_slot(slot: int) -> None:
    """Select the slot of the shard this process runs now, and record our pid in it."""
    global _slot
    _slot = slot
    if _pids is not None:
        _pids[slot] = os.getpid()
