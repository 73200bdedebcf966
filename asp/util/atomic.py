"""Files written whole or not at all: a temporary name beside the target, fsync, rename.

A reader (or a crash) never sees half a file: it sees the old one or the new one. Atomic
replacement is for regular files only: when the target is a device (``/dev/null``), a named
pipe or a socket, the data is written straight into it, since renaming a temporary file over
it would replace the device with a regular file. A symbolic link is followed: the file it
points to is replaced and the link stays.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
>>> write_text_atomic(path, "hello\\n")
>>> path.read_text()
'hello\\n'
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

__all__ = ["is_special_file", "save_atomic", "write_bytes_atomic", "write_text_atomic"]


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` exists and is not a regular file or directory (a device, a FIFO, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry is: fsync the directory too.
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory; the rename is done anyway
        pass
    finally:
        os.close(fd)


def _write_atomic(path: str | os.PathLike[str], binary: bool, write: Callable[[IO[Any]], object]) -> None:
    target = Path(os.path.realpath(path))
    if is_special_file(target):
        with open(target, "wb") if binary else open(target, "w", encoding="utf-8") as f:
            write(f)
        return
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_directory(target.parent)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (directly into a device or a FIFO)."""
    _write_atomic(path, False, lambda f: f.write(text))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (directly into a device or a FIFO)."""
    _write_atomic(path, True, lambda f: f.write(data))


def save_atomic(obj: object, path: str | os.PathLike[str]) -> None:
    """``torch.save`` ``obj`` to ``path`` atomically (directly into a device or a FIFO).

    The bytes go to the file as ``torch.save`` makes them, not into memory first (a checkpoint
    is tens of megabytes). Where the file cannot be written (a full disk), ``torch.save``
    raises a RuntimeError without the cause: the OSError that says it (``ENOSPC``) is raised
    instead."""
    import torch  # here: what imports this module for text files need not wait for torch

    def write(f: IO[bytes]) -> None:
        sink = _Sink(f)
        try:
            torch.save(obj, cast(IO[bytes], sink))  # what torch.save calls of it: write, flush
        except RuntimeError:
            if sink.error is not None:
                raise sink.error from None
            raise

    _write_atomic(path, True, write)


class _Sink:
    """A binary file that keeps the OSError its write raised, which torch.save hides."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self.file.write(data)
        except OSError as e:
            self.error = e
            raise

    def flush(self) -> None:
        self.file.flush()
