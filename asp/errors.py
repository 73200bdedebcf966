"""Errors raised by asp.

The hierarchy::

    AspError
     +-- ConfigError (also a ValueError)   an option or config field is out of range
"""

from __future__ import annotations

__all__ = ["AspError", "ConfigError"]


class AspError(Exception):
    """Base class of every error asp raises on purpose."""


class ConfigError(AspError, ValueError):
    """A config field or option has a value outside its allowed range.

    The message names the field and the values it allows.
    """
