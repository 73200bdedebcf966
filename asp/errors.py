"""Errors raised by asp.

The hierarchy::

    AspError
     +-- ConfigError (also a ValueError)     an option or config field is out of range
     +-- ShardFailed                         a shard failed on every attempt it was allowed
     +-- ShardCancelled                      raised inside a worker when its shard is cancelled
     +-- ClosedError (also a RuntimeError)   a SelfPlay was used after it was closed
     +-- LoopError (also a RuntimeError)     a SelfPlay was called from another event loop than its own
"""

from __future__ import annotations

__all__ = [
    "AspError",
    "ClosedError",
    "ConfigError",
    "LoopError",
    "NotRetried",
    "PlayExited",
    "ShardCancelled",
    "ShardFailed",
]


class AspError(Exception):
    """Base class of every error asp raises on purpose."""


class ConfigError(AspError, ValueError):
    """A config field or option has a value outside its allowed range.

    The message names the field and the values it allows (:func:`asp.checks.check_int` and
    its siblings write it).
    """


class ShardFailed(AspError):
    """A shard of games failed on its first attempt and on every retry.

    ``traceback`` holds the worker's traceback text of the last attempt (or the reason the
    worker died).
    """

    def __init__(
        self, shard: int, attempts: int, reason: str, traceback: str, error: BaseException | None = None
    ) -> None:
        super().__init__(f"shard {shard} failed after {attempts} attempt(s): {reason}")
        self.shard = shard
        self.attempts = attempts
        self.reason = reason
        self.traceback = traceback
        self.error = error
        """The exception the play function raised in the last attempt (None: its worker died)."""

    def __reduce__(self) -> tuple[type[ShardFailed], tuple[int, int, str, str, BaseException | None]]:
        return type(self), (self.shard, self.attempts, self.reason, self.traceback, self.error)


class NotRetried(AspError):
    """A failure of a play function that another attempt would only repeat (an engine that
    cannot start, a file that is missing): raised in a worker, it fails its call at once
    with :class:`ShardFailed` (``error`` is this exception), without retries."""


class ShardCancelled(AspError):
    """Raised by :func:`asp.heartbeat` inside a worker whose shard the coordinator cancelled."""


class ClosedError(AspError, RuntimeError):
    """A :class:`asp.SelfPlay` was used after ``aclose()`` or outside its ``async with``."""


class LoopError(AspError, RuntimeError):
    """A call on a :class:`asp.SelfPlay` from another event loop than the one that started it.

    Calls from every task of that loop share the workers; a call from another loop (another
    thread's ``asyncio.run``) could only be served by a loop that is not running it.
    """


class PlayExited(AspError, RuntimeError):
    """A play function raised SystemExit or KeyboardInterrupt in a worker (``sys.exit()`` in
    a game's code): a failure of its shard, retried as any other, never an exit of the
    coordinator's program."""
