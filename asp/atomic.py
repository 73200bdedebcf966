"""Files written whole or not at all: a temporary name beside the target, fsync, rename.

A reader (or a crash) never sees half a file: it sees the old one or the new one.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
>>> write_text_atomic(path, "hello\\n")
>>> path.read_text()
'hello\\n'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import torch

__all__ = ["save_atomic", "write_text_atomic"]


def _write_atomic(path: str | os.PathLike[str], binary: bool, write: Callable[[IO[Any]], object]) -> None:
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    _write_atomic(path, False, lambda f: f.write(text))


def save_atomic(obj: object, path: str | os.PathLike[str]) -> None:
    """``torch.save`` ``obj`` to ``path`` atomically."""
    _write_atomic(path, True, lambda f: torch.save(obj, f))
