"""The lookup of external tools in tests/helpers.py: a missing Stockfish or pgn-extract skips
the tests that need it with the command that installs it, and fails them under
``ASP_REQUIRE_TOOLS=1``, as in CI, where both are installed and no such test may be skipped."""

from __future__ import annotations

import stat
from pathlib import Path

import helpers
import pytest
from helpers import INSTALL_TOOLS, REQUIRE_TOOLS, external_tool

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
