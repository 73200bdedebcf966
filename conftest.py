"""Session set-up for the tests and the doctests of asp/.

Logs go to standard error at debug level, so that doctests (which compare standard output)
are not disturbed, and `structlog.testing.capture_logs` still sees every event.
"""

import pytest

from asp.log import configure_logging


def pytest_configure(config: pytest.Config) -> None:
    configure_logging(fmt="console", level="debug")
