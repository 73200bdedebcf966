"""Clean-up that finishes under cancellation, however often the task is cancelled.

anyio's ``CancelScope(shield=True)`` only stops anyio's own cancellations: a native
``task.cancel()`` (a second Ctrl-C, a second SIGTERM, ``asyncio.Runner`` cancelling every task
at shutdown) still breaks into the shielded code. :func:`finish` runs the clean-up as a task of
its own and keeps waiting for it through any number of cancellations, then re-raises the
cancellation. If the clean-up task itself is cancelled (the event loop shutting down), the
caller's ``finally`` must still leave nothing behind: pair :func:`finish` with a synchronous
fallback that is fast (SIGKILL, removing a directory).

>>> import asyncio
>>> async def main():
...     done = []
...     async def cleanup():
...         await asyncio.sleep(0.05)
...         done.append(True)
...     task = asyncio.create_task(finish(cleanup()))
...     await asyncio.sleep(0.01)
...     task.cancel(); await asyncio.sleep(0.01); task.cancel()   # twice, as two Ctrl-C would
...     try:
...         await task
...     except asyncio.CancelledError:
...         return done
>>> asyncio.run(main())
[True]
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import anyio
import structlog

__all__ = ["finish", "finish_in_thread", "thread_call", "wait_out"]

log = structlog.get_logger("asp.util.cleanup")

P = ParamSpec("P")
T = TypeVar("T")


async def wait_out(fut: asyncio.Future[Any], on_cancel: Callable[[], object] | None = None) -> bool:
    """Wait until ``fut`` is done, whatever cancellation arrives meanwhile; True if some did.

    ``fut`` itself is never cancelled by this wait; ``on_cancel`` is called at the first
    cancellation. Every cancellation of the current task is absorbed (a second native
    ``Task.cancel()`` breaks into anyio shields, so a shield alone is not enough); the anyio
    shield keeps an anyio cancel scope outside from re-delivering its cancellation at every
    turn of the loop while the wait goes on.
    """
    cancelled = False
    with anyio.CancelScope(shield=True):
        while not fut.done():
            try:
                await asyncio.wait({fut})
            except asyncio.CancelledError:
                if not cancelled and on_cancel is not None:
                    on_cancel()
                cancelled = True
    return cancelled


async def finish(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end even if the calling task is cancelled meanwhile; then re-raise.

    If the clean-up task itself is cancelled (the event loop shutting down), that
    CancelledError is raised at once.
    """
    task = asyncio.ensure_future(coro)
    if await wait_out(task):
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation says why the caller stops
        raise asyncio.CancelledError
    return task.result()


async def thread_call(
    call: Callable[[], T], *, on_cancel: Callable[[], object] | None = None
) -> tuple[asyncio.Future[T], bool]:
    """Run ``call()`` in a thread and wait for it to return, whatever cancellation arrives
    meanwhile: its future (done) and whether a cancellation came (``on_cancel`` is called at
    the first). For a caller that must act on what the call did before it stops
    (:class:`asp.Pipeline` reports the iteration it trained); others use :func:`finish_in_thread`."""
    fut = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, call)
    return fut, await wait_out(fut, on_cancel)


async def finish_in_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``await asyncio.to_thread(func, ...)``, except that it always waits for ``func`` to return.

    A thread cannot be interrupted: a caller that left while it ran would believe everything
    had stopped while the thread went on changing a model or writing files. A cancellation
    that arrives meanwhile (repeated, too) is re-raised once ``func`` has returned; an error
    ``func`` raised after the cancellation is logged, since the cancellation came first.
    """
    fut, cancelled = await thread_call(functools.partial(func, *args, **kwargs))
    if cancelled:
        if (error := fut.exception()) is not None:
            log.warning("thread_failed_after_cancel", function=getattr(func, "__qualname__", "?"), error=repr(error))
        raise asyncio.CancelledError
    return fut.result()
