"""One owner per run directory: an OS lock on ``<run>/.lock``, holding the owner's pid.

The lock is ``fcntl.flock`` on a file inside the run directory, so the kernel releases it
when the owner's process ends, however it ends (a SIGKILLed run never blocks the next one).
The owner writes its pid into the file, so that a refused caller can name it; a clean
release empties the file again. A lock taken on a file that its owner has removed since
(:meth:`RunLock.discard`) is no lock: :meth:`RunLock.acquire` takes the file that is there.

>>> import tempfile, pathlib
>>> run = pathlib.Path(tempfile.mkdtemp())
>>> with RunLock(run):
...     RunLock(run).acquire()
Traceback (most recent call last):
...
asp.app.run.lock.RunDirInUse: run directory ... is in use by pid ...
>>> with RunLock(run):
...     pass
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from asp.errors import AspError

__all__ = ["LOCK_FILE", "RunDirInUse", "RunLock"]

LOCK_FILE = ".lock"
"""The lock's file name inside the run directory; it holds the owner's pid."""


class RunDirInUse(AspError):
    """Another process holds the lock of the run directory."""

    def __init__(self, path: Path, pid: int | None) -> None:
        holder = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"run directory {path} is in use by {holder}")
        self.path = path
        self.pid = pid


class RunLock:
    """The lock of the run directory ``path`` (which must exist): :meth:`acquire` it or use
    ``with``. Held by this open file, so a second RunLock of the same directory in the same
    process is refused too."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def file(self) -> Path:
        return self.path / LOCK_FILE

    def acquire(self) -> None:
        """Take the lock and write this process's pid into the lock file.

        :raises RunDirInUse: another process (or another RunLock) holds it.
        :raises OSError: the lock file cannot be created (not a directory, read-only, full).
        """
        while True:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder(fd)
                os.close(fd)
                raise RunDirInUse(self.path, pid) from None
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, self.file):
                break
            os.close(fd)  # its owner removed it while this one waited to lock it: take the new one
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)  # closing releases the lock
            raise
        self._fd = fd

    def release(self) -> None:
        """Empty the lock file and let go of the lock (nothing when not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)

    def discard(self) -> None:
        """Remove the lock file, then let go of the lock: for a command that was refused
        before it used a run directory, so that it leaves no file behind."""
        if self._fd is not None:
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()
        self.release()

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is still the file at ``path``."""
    try:
        there = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _holder(fd: int, wait: float = 0.5) -> int | None:
    """The pid the holder wrote into the lock file; it may be writing it right now: wait a little."""
    deadline = time.monotonic() + wait
    while True:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if text.isdigit():
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
