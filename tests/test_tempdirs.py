"""Temporary directories of the backends: named for their owner, removed when it is gone."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from helpers import left_after, survivors
from selfplay_helpers import tiny

from asp import SelfPlay, SyncSelfPlay
from asp.backends import tempdirs
from asp.testing import FaultConfig, fault_play


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def dirs_of(pid: int) -> list[Path]:
    return sorted(Path(tempfile.gettempdir()).glob(f"asp-{pid}-*"))


def test_remove_abandoned_removes_only_dead_owners_unlocked_directories(tmp_path: Path) -> None:
    dead = dead_pid()
    abandoned = tmp_path / f"asp-{dead}-abcd1234"
    abandoned.mkdir()
    (abandoned / ".owner").touch()
    (abandoned / "weights").mkdir()
    no_lock = tmp_path / f"asp-{dead}-nolock"  # its owner died before it made the lock file
    no_lock.mkdir()
    locked = tmp_path / f"asp-{dead}-locked"  # dead pid as seen here, but its lock is held
    locked.mkdir()
    (locked / ".owner").touch()
    live = tmp_path / f"asp-{os.getppid()}-live1234"
    live.mkdir()
    mine = tmp_path / f"asp-{os.getpid()}-mine1234"
    mine.mkdir()
    other = tmp_path / f"asp-{dead}"  # not the pattern
    other.mkdir()
    link = tmp_path / f"asp-{dead}-link"
    link.symlink_to(live)
    fd = os.open(locked / ".owner", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        removed = tempdirs.remove_abandoned(tmp_path)
    finally:
        os.close(fd)
    assert sorted(removed) == sorted([abandoned, no_lock])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (locked, live, mine, other, link))


def test_owned_dir_is_named_for_this_process_and_released() -> None:
    path = tempdirs.owned_dir("x-")
    try:
        assert path.name.startswith(f"asp-{os.getpid()}-x-")
        tempdirs.remove_abandoned()  # its own pid is alive: kept
        assert path.exists()
    finally:
        tempdirs.release(path)
    assert not path.exists()
    tempdirs.release(path)  # twice is safe


_HOLDER = """
import asyncio
from asp import SelfPlay
from asp.testing import fault_play

async def main():
    async with SelfPlay(workers=1, play_fn=fault_play) as selfplay:
        print("ready", flush=True)
        await asyncio.sleep(600)

if __name__ == "__main__":
    asyncio.run(main())
"""


async def play_two_games(watched: int) -> list[Path]:
    """Start a SelfPlay, play two games, and return the directories of ``watched`` left meanwhile."""
    async with SelfPlay(workers=1, play_fn=fault_play) as selfplay:
        records, _ = await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=2))
        assert len(records) == 2
        return dirs_of(watched)


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_a_sigkilled_coordinators_directory_is_removed_by_the_next_start(
    tmp_path: Path, children: Callable[[], list[int]]
) -> None:
    script = tmp_path / "holder.py"
    script.write_text(textwrap.dedent(_HOLDER))
    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        left = dirs_of(holder.pid)
        assert len(left) == 1 and (left[0] / "weights").is_dir()
        workers = [p.pid for p in psutil.Process(holder.pid).children(recursive=True)]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    # its worker dies with it (die_with_parent)
    assert survivors(workers, seconds=20) == [], "the killed coordinator's worker lives on"
    assert dirs_of(holder.pid) == left  # nobody could remove it yet
    assert asyncio.run(play_two_games(holder.pid)) == []
    assert dirs_of(os.getpid()) == []
    assert children() == []


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_a_dropped_sync_selfplay_stops_its_workers_and_removes_its_directory(
    children: Callable[[], list[int]],
) -> None:
    before = dirs_of(os.getpid())
    selfplay = SyncSelfPlay(workers=2, play_fn=fault_play)
    records, _ = selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=2))
    assert len(records) == 2
    assert len(children()) == 2 and len(dirs_of(os.getpid())) == len(before) + 1
    del selfplay
    gc.collect()
    assert dirs_of(os.getpid()) == before
    assert left_after(children, seconds=10) == [], "workers left"
