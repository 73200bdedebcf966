"""asp: an async self-play orchestrator for reinforcement learning on board games.

The public API; everything else is an implementation module. Every name is imported on first
use: a program that needs none of those that need torch or structlog (``asp --help``) does
not wait for them to load, and the ``asp`` command's handling of Ctrl-C (:func:`asp.app.cli.script`)
begins before any of asp's own imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asp.errors import AspError, ClosedError, ConfigError, LoopError, ShardCancelled, ShardFailed
    from asp.pipeline import IterationReport, Pipeline
    from asp.progress import heartbeat, more_games
    from asp.selfplay import PlayFn, SelfPlay, ShardResult
    from asp.selfplay.sync import SyncSelfPlay, play_games_parallel
    from asp.util.log import configure_logging

__all__ = [
    "AspError",
    "ClosedError",
    "ConfigError",
    "IterationReport",
    "LoopError",
    "Pipeline",
    "PlayFn",
    "SelfPlay",
    "ShardCancelled",
    "ShardFailed",
    "ShardResult",
    "SyncSelfPlay",
    "configure_logging",
    "heartbeat",
    "more_games",
    "play_games_parallel",
]
__version__ = "0.1.0"

_LAZY = {
    "AspError": "asp.errors",
    "ClosedError": "asp.errors",
    "ConfigError": "asp.errors",
    "LoopError": "asp.errors",
    "ShardCancelled": "asp.errors",
    "ShardFailed": "asp.errors",
    "heartbeat": "asp.progress",
    "more_games": "asp.progress",
    "IterationReport": "asp.pipeline",
    "Pipeline": "asp.pipeline",
    "PlayFn": "asp.selfplay",
    "SelfPlay": "asp.selfplay",
    "ShardResult": "asp.selfplay",
    "SyncSelfPlay": "asp.selfplay.sync",
    "configure_logging": "asp.util.log",
    "play_games_parallel": "asp.selfplay.sync",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'asp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
