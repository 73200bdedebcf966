"""tests/helpers.py itself. The lookup of external tools: a missing Stockfish or pgn-extract
skips the tests that need it with the command that installs it, and fails them under
``ASP_REQUIRE_TOOLS=1``, as in CI, where both are installed and no such test may be skipped.
The waits and the runner of the ``asp`` command: none waits past its deadline."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

import helpers
import pytest
from helpers import INSTALL_TOOLS, REQUIRE_TOOLS, external_tool, finish, left_after, poll_until

TOOLS = ("stockfish", "pgn-extract")


@pytest.fixture
def no_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Neither tool on PATH nor in the directories where Debian installs them; the new PATH."""
    games = str(tmp_path / "games")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(helpers, "ENGINE_DIRS", (games,))
    monkeypatch.setattr("asp.tinychess.engine.ENGINE_DIRS", (games,))
    return tmp_path


@pytest.mark.parametrize("name", TOOLS)
def test_a_missing_tool_skips_the_test_with_the_command_that_installs_it(
    name: str, no_tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_TOOLS, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{name} is not installed.*`{INSTALL_TOOLS}`"):
        external_tool(name)


@pytest.mark.parametrize("name", TOOLS)
def test_a_missing_tool_fails_the_test_under_asp_require_tools(
    name: str, no_tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_TOOLS, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{name} is not installed.*{REQUIRE_TOOLS}=1"):
        external_tool(name)


@pytest.mark.parametrize("name", TOOLS)
def test_a_tool_on_path_is_found(name: str, no_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_TOOLS, "1")
    tool = no_tools / name
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    assert external_tool(name) == str(tool)


def test_poll_until_returns_the_first_true_value_and_fails_at_its_deadline() -> None:
    values = iter([0, [], "ready", "later"])
    assert poll_until(lambda: next(values), interval=0.001) == "ready"
    began = time.monotonic()
    with pytest.raises(AssertionError, match=r"waited 0.1 s for the file in vain:\nits log"):
        poll_until(lambda: False, seconds=0.1, interval=0.01, what="the file", output=lambda: "its log")
    assert time.monotonic() - began < 5


def test_poll_until_fails_at_once_when_the_process_that_would_bring_the_state_about_exits() -> None:
    with subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"]) as proc:
        began = time.monotonic()
        with pytest.raises(AssertionError, match="the process exited 3 before the lock"):
            poll_until(lambda: False, seconds=60, process=proc, what="the lock")
    assert time.monotonic() - began < 30


def test_left_after_returns_what_is_left_at_its_deadline_or_nothing() -> None:
    left = [3, 2, 1]
    assert left_after(lambda: left.pop() and left, seconds=5, interval=0.001) == []
    assert left_after(lambda: ["stuck"], seconds=0.05, interval=0.01) == ["stuck"]


def test_finish_kills_a_command_past_its_deadline_and_fails_with_its_output() -> None:
    code = "import sys, time; print('begun', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with pytest.raises(AssertionError, match=r"did not finish in 2 s:\nbegun"):
        finish(proc, seconds=2)
    assert proc.returncode is not None
