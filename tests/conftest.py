"""Shared fixtures: captured log events, live child processes, one torch thread, and the external
tools (Stockfish, pgn-extract) that some tests need. The helpers behind them are in helpers.py."""

from __future__ import annotations

import os

# Before anything imports Ray (it reads both at import): the Ray backend's tests start local
# instances that must listen on loopback only and send no usage reports outside.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest
import structlog
import torch
from duration_guard import DurationGuard
from helpers import external_tool, pid_alive
from structlog.testing import capture_logs


def pytest_configure(config: pytest.Config) -> None:
    """In the quick subset (``-m "not slow"``), a test not marked slow that takes over 3 s (on
    an idle reference machine) fails: duration_guard.py."""
    if "not slow" in (config.getoption("markexpr", "") or ""):
        config.pluginmanager.register(DurationGuard(), "duration_guard")


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every structlog event the coordinator logs during the test, debug level included.

    structlog is reset to its defaults first: ``configure_logging`` (the doctest of asp.util.log, an
    application) may have raised the level, which would filter the info and debug events out.
    The previous configuration is restored afterwards.
    """
    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        with capture_logs() as entries:
            yield entries
    finally:
        structlog.configure(**saved)


def _is_resource_tracker(process: psutil.Process) -> bool:
    try:
        return "resource_tracker" in " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return False


def live_children() -> list[int]:
    """Pids of this process's live descendants, except multiprocessing's resource tracker.

    The resource tracker is a stdlib singleton that the first spawn pool of a process starts and
    that lives as long as this process, whatever pool created it: it is no worker and never leaks.
    A zombie (exited, not yet reaped) counts as gone.
    """
    return sorted(
        p.pid for p in psutil.Process().children(recursive=True) if pid_alive(p.pid) and not _is_resource_tracker(p)
    )


@pytest.fixture
def children() -> Callable[[], list[int]]:
    """``children()``: pids of the live child processes of the test, resource tracker excluded."""
    return live_children


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Run a module's tests with one torch thread, and restore the count afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def stockfish() -> str:
    """The path of Stockfish, found where asp looks for it. Where it is missing the test is
    skipped with the command that installs it; with ``ASP_REQUIRE_TOOLS=1`` (CI) it fails."""
    return external_tool("stockfish")


@pytest.fixture(scope="session")
def pgn_extract() -> str:
    """The path of pgn-extract, on PATH or in /usr/games; missing: skipped, or with
    ``ASP_REQUIRE_TOOLS=1`` (CI) failed, as for :func:`stockfish`."""
    return external_tool("pgn-extract")
