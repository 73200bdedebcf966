"""Checks of the files a command will write, made before it does any work.

A command that plays for minutes and then cannot write its result has lost that work: each
output path is checked first, the way :func:`asp.util.atomic.write_text_atomic` will write it (a
temporary file beside the target, then a rename; straight into a device or a FIFO).

>>> import tempfile
>>> directory = tempfile.mkdtemp()
>>> check_output_file("--out", directory)
Traceback (most recent call last):
...
asp.errors.ConfigError: --out ...: is a directory, not a file
>>> check_output_file("--out", directory + "/games.pgn")
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from asp.errors import ConfigError
from asp.util.atomic import is_special_file

__all__ = ["check_output_directory", "check_output_file", "writing"]


def check_output_file(option: str, path: str | os.PathLike[str]) -> None:
    """ConfigError naming ``option`` unless a file can be written at ``path``: not a directory,
    in an existing directory where this process can create files (or a device it can open)."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise ConfigError(f"{option} {os.fspath(path)}: is a directory, not a file")
    if is_special_file(target):
        try:
            os.close(os.open(target, os.O_WRONLY))
        except OSError as e:
            raise ConfigError(f"{option} {os.fspath(path)}: cannot be written ({e.strerror})") from None
        return
    if not target.parent.is_dir():
        raise ConfigError(f"{option} {os.fspath(path)}: no directory {target.parent}")
    _probe(option, os.fspath(path), target.parent)


def check_output_directory(option: str, path: str | os.PathLike[str]) -> None:
    """Create the directory ``path`` (and its parents) if needed; ConfigError naming ``option``
    unless this process can create files in it."""
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{option} {os.fspath(path)}: is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{option} {os.fspath(path)}: cannot create the directory ({e.strerror})") from None
    _probe(option, os.fspath(path), directory)


def _probe(option: str, given: str, directory: Path) -> None:
    """Create and remove a file in ``directory``: the permission, a read-only file system or a
    pseudo file system (/proc, /sys) refuses it now rather than after the work."""
    try:
        fd, name = tempfile.mkstemp(dir=directory, prefix=".asp-probe-")
    except OSError as e:
        raise ConfigError(f"{option} {given}: cannot write in {directory} ({e.strerror})") from None
    os.close(fd)
    os.unlink(name)


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError inside (a full disk: ENOSPC has no file name) names ``path``."""
    try:
        yield
    except OSError as e:
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror or str(e), os.fspath(path)) from None
