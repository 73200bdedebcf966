"""Errors raised by asp.

The hierarchy::

    AspError
     +-- ConfigError (also a ValueError)     an option or config field is out of range
     +-- ShardFailed                         a shard failed on every attempt it was allowed
     +-- NotRetried                          a failure that another attempt would only repeat
     |    +-- GameError (also a ValueError)  a game broke a rule of the protocol (asp.games.Game)
     |    +-- NonFiniteError (also an ArithmeticError)
     |                                       a network's output, or a training loss, is NaN or infinite
     +-- IterationFailed                     an iteration of a run stopped on a NotRetried failure
     +-- ShardCancelled                      raised inside a worker when its shard is cancelled
     +-- ClosedError (also a RuntimeError)   a SelfPlay was used after it was closed
     +-- LoopError (also a RuntimeError)     a SelfPlay was called from another event loop than its own
"""

from __future__ import annotations

__all__ = [
    "AspError",
    "ClosedError",
    "ConfigError",
    "GameError",
    "IterationFailed",
    "LoopError",
    "NonFiniteError",
    "NotRetried",
    "PlayExited",
    "ShardCancelled",
    "ShardFailed",
]


class AspError(Exception):
    """Base class of every error asp raises on purpose."""


class ConfigError(AspError, ValueError):
    """A config field or option has a value outside its allowed range.

    The message names the field and the values it allows (:func:`asp.util.checks.check_int` and
    its siblings write it).
    """


class OpponentNotFound(ConfigError):
    """An outside program that a game plays against (TinyChess: a UCI engine) is not
    installed where its config says, or where the game looks for it."""


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


class GameError(NotRetried, ValueError):
    """A game broke a rule of the protocol (:class:`asp.games.Game`) that asp relies on: an
    action outside ``range(action_size)``, no legal action at a position whose game goes on, a
    network output of the wrong shape. The message is one line that names the game, the method
    and the rule broken (:mod:`asp.games.protocol` checks them)."""


class NonFiniteError(NotRetried, ArithmeticError):
    """A network gave a NaN or infinite output, or training a non-finite loss or gradient: the
    message is one line that names the game and where (the model's version in play; training
    raises it before the optimizer's step)."""


class IterationFailed(AspError):
    """An iteration of a run stopped on a failure that another attempt would only repeat
    (:class:`NotRetried`: a game that breaks the protocol, a network that outputs NaN), in its
    self-play, its training or its evaluation: ``iteration K: `` and that failure's message."""

    def __init__(self, iteration: int, error: NotRetried) -> None:
        super().__init__(f"iteration {iteration}: {error}")
        self.iteration = iteration
        """The iteration that stopped (counted from the run's first, 0)."""
        self.error = error
        """The failure."""

    def __reduce__(self) -> tuple[type[IterationFailed], tuple[int, NotRetried]]:
        return type(self), (self.iteration, self.error)


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
