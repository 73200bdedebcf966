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

__all__ = ["IDLE", "RETURNING", "RUNNING", "heartbeat"]

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
_slot = -1


def heartbeat(plies: int = 1) -> None:
    """Report ``plies`` more plies played; raise ShardCancelled if the shard was cancelled."""
    if _progress is None or _cancel is None:
        return
    _progress[_slot] += plies
    if _cancel[_slot]:
        raise ShardCancelled(f"shard in slot {_slot} was cancelled by the coordinator")


def attach(
    slot: int,
    progress: MutableSequence[int],
    cancel: MutableSequence[int],
    pids: MutableSequence[int],
    phase: MutableSequence[int],
) -> None:
    """Connect this process to its slot of the shared arrays (called by the worker initializer)."""
    global _progress, _cancel, _pids, _phase, _slot
    _progress, _cancel, _pids, _phase, _slot = progress, cancel, pids, phase, slot


def begin_shard() -> None:
    """Tell the coordinator this process has started the slot's shard (its stall clock starts)."""
    if _pids is not None and _phase is not None:
        _pids[_slot] = os.getpid()
        _phase[_slot] = RUNNING


def end_shard() -> None:
    """Tell the coordinator the shard is over: pickling and sending its result is no stall."""
    if _phase is not None:
        _phase[_slot] = RETURNING
