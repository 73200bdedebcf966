"""asp: an async self-play orchestrator for reinforcement learning on board games."""

from asp.errors import AspError, ConfigError
from asp.log import configure_logging

__all__ = ["AspError", "ConfigError", "configure_logging"]
__version__ = "0.1.0"
