"""The event loop's longest stall and the garbage collector's longest pause, per iteration."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

__all__ = ["LoopWatch"]


class LoopWatch:
    """The event loop's longest stall: a task wakes every 10 ms and keeps the longest late wake-up.

    Anything slow on the loop (a file written, a model copied, a result unpickled) delays every
    shard's collection and every timeout; ``take()`` gives the worst delay since the last take,
    in seconds, as ``time/loop_stall_max`` of each iteration. It also keeps the longest pause
    of Python's garbage collector in this process (any thread's: a collection stops them all),
    ``gc_pause()``, as ``time/gc_pause_max``: a stall that matches one is the collector's.
    """

    PERIOD = 0.01

    def __init__(self) -> None:
        self._worst = 0.0
        self._gc_worst = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopWatch:
        self._task = asyncio.create_task(self._run(), name="asp-loop-watch")
        gc.callbacks.append(self._on_gc)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self._gc_worst = max(self._gc_worst, time.perf_counter() - self._gc_started)

    def gc_pause(self) -> float:
        """The longest garbage collection since the last call, in seconds."""
        worst, self._gc_worst = self._gc_worst, 0.0
        return round(worst, 6)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.PERIOD)
            self._worst = max(self._worst, loop.time() - before - self.PERIOD)

    def take(self) -> float:
        worst, self._worst = self._worst, 0.0
        return round(worst, 6)
