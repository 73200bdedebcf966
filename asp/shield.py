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
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["finish"]

T = TypeVar("T")


async def finish(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end even if the calling task is cancelled meanwhile; then re-raise."""
    task = asyncio.ensure_future(coro)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as e:
            if task.done() and task.cancelled():
                raise  # the clean-up itself was cancelled: the loop is going away
            cancelled = cancelled or e
    result = task.result()
    if cancelled is not None:
        raise cancelled
    return result
