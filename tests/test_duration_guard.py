"""The guard of the quick subset (duration_guard.py), on tests of its own run by pytester."""

from __future__ import annotations

import pytest
from duration_guard import REFERENCE_RATE, DurationGuard

TESTS = """
import time
import pytest

def test_quick():
    pass

def test_long():
    time.sleep(0.15)

@pytest.mark.slow
def test_long_marked():
    time.sleep(0.15)

@pytest.fixture(scope="module")
def shared():
    time.sleep(0.15)

def test_shared_set_up_is_not_counted(shared):
    pass
"""


def _run(pytester: pytest.Pytester, rate: float, load: float = 0.0) -> pytest.RunResult:
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(TESTS)
    return pytester.runpytest_inprocess(plugins=[DurationGuard(limit=0.1, rate=rate, load=load)])


def test_an_unmarked_test_over_the_limit_fails_and_says_to_mark_it(pytester: pytest.Pytester) -> None:
    result = _run(pytester, rate=REFERENCE_RATE)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_long took 0.* s, over the 0.1 s an unmarked test may take*mark it*slow*"])


@pytest.mark.parametrize(("rate", "load"), [(REFERENCE_RATE / 2, 0.0), (REFERENCE_RATE, 2.0)], ids=["slower", "busier"])
def test_a_slower_or_busier_machine_gives_tests_more_time(pytester: pytest.Pytester, rate: float, load: float) -> None:
    _run(pytester, rate=rate, load=load).assert_outcomes(passed=4)
