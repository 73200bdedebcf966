"""The writer of a run's games and curves: a process of its own, replaced when it dies.

PGN export and the curves are pure-Python CPU work: in a thread of the coordinator they would
hold the GIL for long stretches while the workers and the trainer keep the cores busy, and
the event loop would stall as long; in a spawn process of their own they do not touch it.

That process must not be a single point of failure: when it dies (the OOM killer, a SIGKILL),
:meth:`Writer.call` logs ``writer_replaced`` with its pid and the reason, starts another and
runs the call again. Every call must therefore be idempotent (the run's files are written by
atomic rename: a second write replaces the first whole).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import structlog

from asp.errors import AspError
from asp.util.die_with_parent import die_with_parent
from asp.util.interrupts import ctrl_c_held, ignore_ctrl_c

__all__ = ["Writer", "WriterFailed"]

log = structlog.get_logger("asp.train")

T = TypeVar("T")


class WriterFailed(AspError):
    """The writer process died on every attempt of one call."""


class Writer:
    """One spawn process that runs calls for a thread of the coordinator, one at a time.

    :meth:`call` blocks (call it from a thread, not the event loop); :meth:`shutdown` waits
    for the call in progress, then stops the process.
    """

    ATTEMPTS = 3
    """Processes one call may use up: the first, and the replacements after it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = self._start()
        self._process: Any = None  # the multiprocessing Process that runs the calls

    @staticmethod
    def _start() -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_writer_started,
            initargs=(os.getpid(),),
        )

    @property
    def pid(self) -> int | None:
        """The pid of the writer process, once it has started (None before)."""
        return None if self._process is None else int(self._process.pid)

    def call(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in the writer process; a replacement runs it again if the writer dies.

        :raises WriterFailed: the writer died on each of :attr:`ATTEMPTS` attempts.
        """
        for attempt in range(1, self.ATTEMPTS + 1):
            with self._lock:
                pool = self._pool
                try:  # a writer that died between calls breaks the pool: submit says so
                    with ctrl_c_held():  # submit starts the process on first use
                        future = pool.submit(func, *args)
                except BrokenProcessPool as e:
                    future, broken = None, e
                if future is not None and self._process is None:
                    self._process = _process_of(pool)
                    log.info("writer_started", pid=self.pid)
            if future is not None:
                try:
                    return future.result()
                except BrokenProcessPool as e:
                    broken = e
            self._replace(pool, broken, attempt)
        raise WriterFailed(f"the writer of games and curves died on each of {self.ATTEMPTS} attempts")

    def _replace(self, broken: concurrent.futures.ProcessPoolExecutor, error: BaseException, attempt: int) -> None:
        with self._lock:
            if self._pool is not broken:  # another thread replaced it already
                return
            pid, reason = self.pid, _death_of(self._process) or repr(error)
            broken.shutdown(wait=True, cancel_futures=True)
            self._pool, self._process = self._start(), None
        log.warning("writer_replaced", pid=pid, reason=reason, attempt=attempt)

    def shutdown(self) -> None:
        """Wait for the call in progress, then stop the process."""
        with self._lock:
            self._pool.shutdown(wait=True)


def _process_of(pool: concurrent.futures.ProcessPoolExecutor) -> Any:
    processes = getattr(pool, "_processes", None) or {}  # the executor's own: no public way
    return next(iter(processes.values()), None)


def _death_of(process: Any, *, seconds: float = 1.0) -> str | None:
    """How the writer process ended, in words (``killed by SIGKILL``), if known within ``seconds``.

    The pool's own thread reaps a dead process too. Where it wins the race, this thread's
    ``waitpid`` finds no child and reads no status, until that thread has stored the status it
    read; so the status is read again until then.
    """
    if process is None:
        return None
    deadline = time.monotonic() + seconds
    process.join(timeout=seconds)
    while (code := process.exitcode) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if code is None:
        return None
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code}"


def _writer_started(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group: the coordinator stops the run, and the write in
    # progress must finish, so the writer ignores it.
    ignore_ctrl_c()
    die_with_parent(parent_pid)
