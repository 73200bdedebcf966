"""Helpers the SelfPlay tests share (test_selfplay, test_faults, test_backends, test_ray).

A module of its own, as pipeline_helpers: pytest puts this directory on ``sys.path``, and spawn
workers that import a test module's play function import this one with it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from asp.tinychess import ModelConfig, TinyChess

Logs = list[dict[str, Any]]
"""What the ``logs`` fixture captures: structlog events as dicts."""

TINY = ModelConfig(hidden=8, blocks=0)


def tiny() -> TinyChess:
    """A TinyChess small enough that building and publishing it costs nothing."""
    return TinyChess(TINY)


def events(logs: Logs, name: str) -> list[dict[str, Any]]:
    """The captured events called ``name``, in order."""
    return [e for e in logs if e["event"] == name]


def ids(records: list[Any]) -> list[int]:
    return [r.game_id for r in records]


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (exited, not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone between the kill(0) and the read
        return False


async def wait_until(predicate: Callable[[], bool], *, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
