"""structlog set-up for applications (the ``asp`` CLI, scripts) and for asp's workers.

Library code only calls ``structlog.get_logger()`` and binds context; the application calls
:func:`configure_logging` once.

>>> configure_logging(fmt="json", level="warning")
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

from asp.errors import ConfigError

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "configure_logging", "log_settings"]

LOG_FORMATS = ("console", "json")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

LogFormat = Literal["console", "json"]

# What configure_logging was last asked for: workers configure themselves the same way.
_settings: tuple[LogFormat, str] = ("console", "warning")


def log_settings() -> tuple[LogFormat, str]:
    """The (format, level) of the last :func:`configure_logging` call (default console, warning)."""
    return _settings


def configure_logging(
    *, fmt: LogFormat = "console", level: str = "info", stream: TextIO | None = None
) -> None:
    """Configure structlog: human-readable ``console`` lines or ``json`` lines, at ``level``.

    Events go to ``stream`` (standard error by default) and carry an ISO timestamp, the log
    level and the process id.

    :raises ConfigError: for an unknown format or level.
    """
    if fmt not in LOG_FORMATS:
        raise ConfigError(f"log format must be one of {LOG_FORMATS}, got {fmt!r}")
    if level not in LOG_LEVELS:
        raise ConfigError(f"log level must be one of {LOG_LEVELS}, got {level!r}")
    global _settings
    _settings = (fmt, level)
    renderer: structlog.typing.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.CallsiteParameterAdder([structlog.processors.CallsiteParameter.PROCESS]),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(stream if stream is not None else sys.stderr),
        cache_logger_on_first_use=False,
    )
