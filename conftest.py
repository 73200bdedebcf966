"""Session set-up for the tests and the doctests of asp/.

Logs go to standard error at debug level, so that doctests (which compare standard output)
are not disturbed, and `structlog.testing.capture_logs` still sees every event. The files a
doctest's example makes with `tempfile` go in a directory removed after it.
"""

import shutil
import tempfile
from collections.abc import Iterator

import pytest
from _pytest.doctest import DoctestItem

from asp.util.log import configure_logging

pytest_plugins = ["pytester"]  # tests/test_duration_guard.py runs pytest on tests of its own

SLOW_DOCTESTS = ("asp.pipeline", "asp.selfplay.coordinator", "asp.selfplay.sync")
"""Modules whose doctests start worker processes (seconds each): left out of ``-m "not slow"``."""


def pytest_configure(config: pytest.Config) -> None:
    configure_logging(fmt="console", level="debug")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, DoctestItem) and item.name.startswith(SLOW_DOCTESTS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def doctest_temporary_directory(request: pytest.FixtureRequest) -> Iterator[None]:
    """A doctest's ``tempfile.mkdtemp()`` and the like make their files in a directory of
    its own, removed after it; other tests keep the usual temporary directory."""
    if not isinstance(request.node, DoctestItem):
        yield
        return
    directory = tempfile.mkdtemp(prefix="asp-doctest-")
    before = tempfile.tempdir
    tempfile.tempdir = directory
    try:
        yield
    finally:
        tempfile.tempdir = before
        shutil.rmtree(directory, ignore_errors=True)
