"""A test not marked ``slow`` that takes too long fails, and says to mark it.

``python -m pytest -m "not slow"`` is the quick subset, run after every change; it stays quick
only if a test that grows slow (a process pool started, a training run) is marked. A test's
time is its set-up and its call, less the set-up of the fixtures it shares with other tests
(module or session scope: paid once, by whichever test comes first).

The limit, :data:`LIMIT` seconds, is for an idle machine of this project's kind at
:data:`REFERENCE_RATE`; machines of that kind differ 3x in speed, and a test on a slower or a
busier one takes longer for nothing it did. So a test over the limit is judged again: it fails
when over ``LIMIT`` times how much slower the machine is than the reference (python-chess
random playouts, the calibration of ``benchmarks/``, timed once a session) times how much more
work than cores it has (the load average over the last minute, per core), each at least 1.
Tests that take over 2 s on a reference machine are marked slow, which leaves every unmarked
one half again under the limit.

conftest.py registers the guard for the quick subset only (``-m`` leaving ``slow`` out): the
subset it keeps quick. The full suite, as CI runs it, runs the slow tests anyway.
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import chess
import pytest

LIMIT = 3.0
"""Seconds an unmarked test may take on a machine at :data:`REFERENCE_RATE`."""
REFERENCE_RATE = 12_000.0
"""python-chess random-playout plies a second on one core of the reference machine."""


def playout_rate(seconds: float = 0.5) -> float:
    """Plies a second of python-chess random playouts on this core, timed for ``seconds``."""
    rng = random.Random(0)
    plies = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        board = chess.Board()
        for _ in range(200):
            board.push(rng.choice(list(board.generate_legal_moves())))
            plies += 1
            if board.is_game_over():
                break
    return plies / elapsed


class DurationGuard:
    """The pytest plugin (registered by conftest.py); ``limit``, ``rate`` and ``load`` (per
    core) are for tests of it: by default, the rate is timed and the load read when needed."""

    def __init__(self, limit: float = LIMIT, rate: float | None = None, load: float | None = None) -> None:
        self.limit = limit
        self.rate = rate
        self.load = load
        self.shared: defaultdict[str, float] = defaultdict(float)
        self.setup: dict[str, float] = {}
        self._item: str | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, None]:
        self._item = item.nodeid
        yield
        self._item = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, None]:
        started = time.perf_counter()
        yield
        if self._item is not None and fixturedef.scope != "function":
            self.shared[self._item] += time.perf_counter() - started

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if call.when == "setup":
            self.setup[item.nodeid] = report.duration
            return
        if call.when != "call" or not report.passed or item.get_closest_marker("slow"):
            return
        seconds = self.setup.pop(item.nodeid, 0.0) + report.duration - self.shared.pop(item.nodeid, 0.0)
        if seconds <= self.limit:
            return
        if self.rate is None:
            self.rate = playout_rate()
        load = self.load if self.load is not None else os.getloadavg()[0] / (os.cpu_count() or 1)
        allowed = self.limit * max(1.0, REFERENCE_RATE / self.rate) * max(1.0, load)
        if seconds > allowed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} took {seconds:.1f} s, over the {allowed:.1f} s an unmarked test may take on this "
                f"machine ({self.rate:,.0f} random-playout plies/s, load {load:.1f} a core; {self.limit:.1f} s at "
                f"{REFERENCE_RATE:,.0f} on an idle one): mark it @pytest.mark.slow, or make it quicker"
            )
