"""Helpers the SelfPlay tests share (test_selfplay, test_faults, test_backends, test_ray).

A module of its own, as pipeline_helpers: pytest puts this directory on ``sys.path``, and spawn
workers that import a test module's play function import this one with it.
"""

from __future__ import annotations

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
