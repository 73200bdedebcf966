"""Helpers that tests of many modules share: processes, waiting, external tools, PGN checks.

pytest puts this directory on ``sys.path`` (the test modules import ``helpers``), and so do
spawn workers, which inherit it. The fixtures built on these helpers are in conftest.py.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import chess.pgn
import psutil
import pytest

from asp.tinychess.engine import ENGINE_DIRS, EngineNotFound, find_engine

REQUIRE_TOOLS = "ASP_REQUIRE_TOOLS"
"""The environment variable that, set to 1 (as CI sets it), makes a missing tool a failure."""

INSTALL_TOOLS = "apt-get install -y stockfish pgn-extract"
"""The command that installs both tools (Debian and Ubuntu put them in /usr/games)."""

PGN_LINE_LIMIT = 255
"""The PGN standard's longest line, newline included."""


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (exited, not yet reaped)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:  # ZombieProcess is one too
        return False


def survivors(pids: Iterable[int], *, seconds: float) -> list[int]:
    """Wait up to ``seconds`` for every process of ``pids`` to be gone; those still alive then."""
    pids = list(pids)
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if pid_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def process_group(pgid: int) -> list[int]:
    """Live processes (zombies excepted) of process group ``pgid``."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
        except (OSError, psutil.Error):
            pass
    return members


async def wait_until(predicate: Callable[[], object], *, seconds: float = 30.0) -> None:
    """Return once ``predicate()`` is true, polled every 20 ms; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def _find_tool(name: str) -> str | None:
    if name == "stockfish":  # where asp itself looks, so that a test runs exactly when asp finds it
        try:
            return find_engine()
        except EngineNotFound:
            return None
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(ENGINE_DIRS))


def external_tool(name: str) -> str:
    """The path of the program ``name`` (``stockfish`` or ``pgn-extract``), on PATH or in
    ``/usr/games``; where it is missing, skip the test, or fail it when ``ASP_REQUIRE_TOOLS=1``."""
    found = _find_tool(name)
    if found is not None:
        return found
    message = (
        f"{name} is not installed (neither on PATH nor in {' or '.join(ENGINE_DIRS)}): "
        f"`{INSTALL_TOOLS}` installs both tools (Debian puts them in /usr/games)"
    )
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(f"{message}; {REQUIRE_TOOLS}=1 requires every tool", pytrace=False)
    pytest.skip(message)


def pgn_games(pgn: str | Path) -> list[chess.pgn.Game]:
    """Every game of a PGN text (or of the PGN file at a path), as python-chess reads it;
    fails on a game python-chess reads with errors."""
    stream = io.StringIO(pgn.read_text(encoding="utf-8") if isinstance(pgn, Path) else pgn)
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


def assert_pgn_extract_accepts(path: Path, *, games: int, pgn_extract: str) -> None:
    """Fail unless the pgn-extract program at ``pgn_extract`` reads all ``games`` games of
    ``path`` without a diagnostic, and reads each with the tags and moves python-chess reads."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    too_long = [n for n, line in enumerate(lines, 1) if len(line) > PGN_LINE_LIMIT]
    assert not too_long, f"{path}: lines over {PGN_LINE_LIMIT} characters: {too_long[:5]}"
    work = path.parent / f"{path.stem}.pgn-extract"
    work.mkdir(exist_ok=True)
    log, out = work / "log.txt", work / "out.pgn"
    # -s: no line per game; --nobadresults: drop (and report) a game whose Result contradicts a
    # mate or stalemate on the board; -l: every diagnostic into the log; -o: the games it kept.
    result = subprocess.run(
        [pgn_extract, "-s", "--nobadresults", "-l", str(log), "-o", str(out), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = f"{path}: pgn-extract exited {result.returncode}\n{result.stdout}{result.stderr}" + (
        log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no log)"
    )
    assert result.returncode == 0, report
    assert not result.stdout.strip() and not result.stderr.strip(), report
    assert log.exists() and not log.read_text(encoding="utf-8", errors="replace").strip(), report
    ours, theirs = pgn_games(path), pgn_games(out)
    assert len(ours) == games, f"{path}: python-chess read {len(ours)} games, expected {games}"
    assert len(theirs) == games, f"{path}: pgn-extract kept {len(theirs)} of {games} games\n{report}"
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert dict(a.headers) == dict(b.headers), f"game {k}: tags differ after pgn-extract"
        assert list(a.mainline_moves()) == list(b.mainline_moves()), f"game {k}: moves differ after pgn-extract"


def read_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the TensorBoard event files in ``logdir``, as TensorBoard loads them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
