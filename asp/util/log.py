"""structlog set-up for applications (the ``asp`` CLI, scripts) and for asp's workers.

Library code only calls ``structlog.get_logger()`` and binds context; the application calls
:func:`configure_logging` once.

>>> configure_logging(fmt="json", level="debug")
>>> log_settings()
('json', 'debug')
>>> configure_logging(fmt="console", level="debug")
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Literal, TextIO, cast

import structlog
from structlog.typing import EventDict

from asp.errors import ConfigError

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "configure_logging", "log_settings", "quiet_unless_configured"]

LOG_FORMATS = ("console", "json")
"""The formats :func:`configure_logging` takes: console lines, or one JSON object a line."""
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
"""The levels :func:`configure_logging` takes, from the most verbose."""

LogFormat = Literal["console", "json"]

# What configure_logging was last asked for: workers configure themselves the same way.
_settings: tuple[LogFormat, str] = ("console", "warning")


def log_settings() -> tuple[LogFormat, str]:
    """The (format, level) of the last :func:`configure_logging` call (default console, warning)."""
    return _settings


class _JsonLinesTee:
    """A processor that appends every event, as one JSON line, to a file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (lives with the config)

    def __call__(self, logger: object, name: str, event_dict: EventDict) -> EventDict:
        self.file.write(json.dumps(event_dict, default=repr) + "\n")
        return event_dict


class _DropBelow:
    """A processor that drops events below ``level`` (for the console, when a file gets more)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __call__(self, logger: object, name: str, event_dict: EventDict) -> EventDict:
        if logging.getLevelNamesMapping()[event_dict.get("level", "info").upper()] < self.level:
            raise structlog.DropEvent
        return event_dict


class _Stderr:
    """Whatever ``sys.stderr`` is when an event is written, not when logging was configured: a
    test harness or an application that swaps standard error (and closes the old one) would
    otherwise make every later event fail with "I/O operation on closed file"."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(
    *,
    fmt: LogFormat = "console",
    level: str = "info",
    stream: TextIO | None = None,
    json_file: str | os.PathLike[str] | None = None,
) -> None:
    """Configure structlog: human-readable ``console`` lines or ``json`` lines, at ``level``.

    Events go to ``stream`` (standard error by default) and carry an ISO timestamp, the log
    level and the process id. With ``json_file``, every event at ``info`` or above (or
    ``level``, if lower) is also appended to that file as a JSON line (a run's ``log.jsonl``).

    :raises ConfigError: for an unknown format or level.
    """
    if fmt not in LOG_FORMATS:
        raise ConfigError(f"log format must be one of {LOG_FORMATS}, got {fmt!r}")
    if level not in LOG_LEVELS:
        raise ConfigError(f"log level must be one of {LOG_LEVELS}, got {level!r}")
    global _settings
    _settings = (fmt, level)
    console_level = logging.getLevelNamesMapping()[level.upper()]
    least = min(console_level, logging.INFO) if json_file is not None else console_level
    file_processors: list[structlog.typing.Processor] = []
    if json_file is not None:
        file_processors = [_JsonLinesTee(json_file), _DropBelow(console_level)]
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
            *file_processors,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(least),
        logger_factory=structlog.PrintLoggerFactory(stream if stream is not None else cast(TextIO, _Stderr())),
        cache_logger_on_first_use=False,
    )


def quiet_unless_configured() -> None:
    """Log at ``warning`` and above to standard error if the application has not configured structlog.

    structlog's own default prints every event, debug included, to standard output: a library
    must not flood the console of a program that never asked for its logs, nor print a line
    for every shard that went well. Faults (a worker that died, a shard retried) are warnings
    and still show. An application that configures structlog (or calls
    :func:`configure_logging`) keeps its configuration.
    """
    if not structlog.is_configured():
        configure_logging(fmt="console", level="warning")
