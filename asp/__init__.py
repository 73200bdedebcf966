"""asp: an async self-play orchestrator for reinforcement learning on board games.

The public API; everything else is an implementation module.
"""

from asp.errors import AspError, ClosedError, ConfigError, LoopError, ShardCancelled, ShardFailed
from asp.log import configure_logging
from asp.pipeline import IterationReport, Pipeline
from asp.progress import heartbeat, more_games
from asp.selfplay import PlayFn, SelfPlay, ShardResult
from asp.sync import SyncSelfPlay, play_games_parallel

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
