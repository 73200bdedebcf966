"""Helpers that tests of many modules share: the ``asp`` command, processes, waiting, external
tools, PGN checks.

pytest puts this directory on ``sys.path`` (the test modules import ``helpers``), and so do
spawn workers, which inherit it. The fixtures built on these helpers are in conftest.py.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

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

RUN_LIMIT = 150
"""Seconds one ``asp`` command of a test may take (the usual run takes a tenth of that)."""

T = TypeVar("T")


# -- the asp command, as a user runs it ------------------------------------------------------


def command(*args: str) -> list[str]:
    """The argv of ``asp ARGS`` run by this interpreter (``python -m asp.app ARGS``)."""
    return [sys.executable, "-m", "asp.app", *args]


def start(*args: str, cwd: Path | None = None, **popen: Any) -> subprocess.Popen[str]:
    """``asp ARGS`` started in ``cwd`` (default: this process's), its output piped as text;
    ``popen`` adds to or replaces the arguments of :class:`subprocess.Popen` (``env``,
    ``stdout``, ``preexec_fn``...)."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    return subprocess.Popen(command(*args), cwd=cwd, **options)


def finish(proc: subprocess.Popen[str], *, seconds: float = RUN_LIMIT) -> subprocess.CompletedProcess[str]:
    """Wait for ``proc`` to end; past ``seconds`` it is killed and the test fails with its output."""
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"{proc.args} did not finish in {seconds} s:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def asp(
    *args: str, cwd: Path | None = None, seconds: float = RUN_LIMIT, **popen: Any
) -> subprocess.CompletedProcess[str]:
    """Run ``asp ARGS`` in ``cwd`` to its end (see :func:`start` and :func:`finish`)."""
    return finish(start(*args, cwd=cwd, **popen), seconds=seconds)


def output_of(proc: subprocess.Popen[str]) -> str:
    """What ``proc`` wrote to its pipes, once it has exited; while it runs, a line saying so
    (reading its pipes would wait for its end): for the message of a failed wait."""
    if proc.poll() is None:
        return f"({proc.args} still running)"
    out, err = proc.communicate()
    return f"{out or ''}\n{err or ''}"


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """``result``, after failing the test unless its command exited 0."""
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


# -- processes and waiting -------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (exited, not yet reaped)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:  # ZombieProcess is one too
        return False


def survivors(pids: Iterable[int], *, seconds: float) -> list[int]:
    """Wait up to ``seconds`` for every process of ``pids`` to be gone; those still alive then."""
    pids = list(pids)
    return left_after(lambda: [pid for pid in pids if pid_alive(pid)], seconds=seconds)


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


def poll_until(
    predicate: Callable[[], T],
    *,
    seconds: float = 30.0,
    interval: float = 0.05,
    process: subprocess.Popen[Any] | None = None,
    what: str = "the condition to hold",
    output: Callable[[], str] = lambda: "",
) -> T:
    """The first true value of ``predicate()``, polled every ``interval`` seconds (blocking: for a
    test that is no coroutine). Fails after ``seconds``, or once ``process`` has exited (it
    would never bring the state about); the message names ``what`` and adds ``output()``."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process exited {process.returncode} before {what}:\n{output()}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {seconds} s for {what} in vain:\n{output()}")
        time.sleep(interval)
    return value


def left_after(check: Callable[[], T], *, seconds: float, interval: float = 0.05) -> T:
    """Poll ``check()`` until it returns something false (nothing left) or ``seconds`` pass; its
    last value, for the test to assert empty (and show what is left when it is not)."""
    deadline = time.monotonic() + seconds
    while (value := check()) and time.monotonic() < deadline:
        time.sleep(interval)
    return value


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
