"""Temporary directories named for the process that owns them, and removal of abandoned ones.

A backend keeps its files (weight publications, stack dumps, a private Ray instance) in a
directory ``asp-<pid>-<kind><random>`` under the system's temporary directory. The owner
holds an exclusive ``flock`` on the ``.owner`` file inside for as long as it uses the
directory. A process that is killed (SIGKILL, OOM) cannot remove its directory; the next
:func:`owned_dir` call of any asp process on the machine does: it removes every
``asp-<pid>-*`` directory whose pid is not alive and whose lock nobody holds. The lock is
what makes this safe where pids are not (another pid namespace sharing ``/tmp``, a reused
pid): a directory is removed only while its remover holds the lock, which a live owner never
lets go of.

>>> d = owned_dir("doc-")
>>> d.name.startswith(f"asp-{os.getpid()}-doc-"), (d / ".owner").exists()
(True, True)
>>> release(d); d.exists()
False
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import structlog

__all__ = ["owned_dir", "release", "remove_abandoned"]

log = structlog.get_logger("asp.tempdirs")

_NAME = re.compile(r"asp-(\d+)-[\w-]+\Z")
_LOCK = ".owner"
_held: dict[Path, int] = {}  # owned directory -> descriptor of its locked .owner file
_held_lock = threading.Lock()


def owned_dir(kind: str = "") -> Path:
    """Remove abandoned directories, then make and lock a new ``asp-<pid>-<kind>*`` directory."""
    remove_abandoned()
    path = Path(tempfile.mkdtemp(prefix=f"asp-{os.getpid()}-{kind}"))
    fd = os.open(path / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a fresh file: nobody else can hold it
    with _held_lock:
        _held[path] = fd
    return path


def release(path: Path) -> None:
    """Remove a directory made by :func:`owned_dir` and let go of its lock. Safe to repeat."""
    shutil.rmtree(path, ignore_errors=True)
    with _held_lock:
        fd = _held.pop(path, None)
    if fd is not None:
        os.close(fd)


def remove_abandoned(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the ``asp-<pid>-*`` directories in ``root`` (the temporary directory) whose owner
    is gone: pid not alive and lock free. Only directories of this user; returns those removed."""
    base = Path(tempfile.gettempdir() if root is None else root)
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or int(match[1]) == os.getpid() or _pid_alive(int(match[1])):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue  # removed meanwhile
        if _remove_if_free(Path(entry.path)):
            removed.append(Path(entry.path))
            log.info("abandoned_dir_removed", path=entry.path, pid=int(match[1]))
    return removed


def _remove_if_free(path: Path) -> bool:
    """Remove ``path`` if nobody holds its lock (a directory without a lock file counts as free)."""
    try:
        fd = os.open(path / _LOCK, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        fd = None  # its owner died before it made the lock file, or another remover is at work
    except OSError:
        return False
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a live owner (a pid this process cannot see)
        shutil.rmtree(path, ignore_errors=True)
        return True
    finally:
        if fd is not None:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
