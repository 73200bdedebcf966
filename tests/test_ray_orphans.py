"""A private Ray instance leaves nothing behind: after SIGKILL of its owner, a cancelled start,
or a start refused for want of CPUs.

Each test starts one private instance (slow: seconds each on a small machine); run this file
alone with ``python -m pytest tests/test_ray_orphans.py``. Processes are found the way the
reaper finds them: by the files they hold in the instance's directory (``asp-<pid>-ray-*``).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from helpers import left_after, poll_until, survivors, wait_until

from asp import AspError, SelfPlay
from asp.testing import fault_play

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def ray_dirs(pid: int) -> list[Path]:
    """The private Ray directories of process ``pid``."""
    return sorted(Path(tempfile.gettempdir()).glob(f"asp-{pid}-ray-*"))


def users_of(directory: Path, *, spare: int | None = None) -> list[str]:
    """Live processes (``spare`` aside) that name ``directory`` on their command line or hold a file in it."""
    inside = str(directory.resolve()) + "/"
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.pid in (spare, os.getpid()):
            continue
        try:
            line = " ".join(p.info["cmdline"] or [])
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            if inside in line or any(f.path.startswith(inside) for f in p.open_files()):
                found.append(f"{p.pid} {p.name()} {line[:80]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


_OWNER = """
import asyncio, sys
from pathlib import Path
from asp import SelfPlay
from asp.testing import FaultConfig, fault_play
from selfplay_helpers import tiny

async def main():
    async with SelfPlay(workers=1, play_fn=fault_play, backend="ray") as selfplay:
        records, _ = await selfplay.play(tiny(), None, FaultConfig(n_games=2, plies=2))
        assert len(records) == 2
        Path(sys.argv[1]).write_text("ready")
        await asyncio.sleep(600)

if __name__ == "__main__":
    asyncio.run(main())
"""


def test_a_sigkilled_owner_leaves_no_ray_process_and_no_directory(tmp_path: Path) -> None:
    script, ready, output = tmp_path / "owner.py", tmp_path / "ready", tmp_path / "owner.log"
    script.write_text(textwrap.dedent(_OWNER))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    # Its output goes to a file, as a terminal's would stay open: Ray's processes that write to a
    # closed pipe die of it, which would hide what survives a SIGKILL otherwise.
    with output.open("w") as out:
        owner = subprocess.Popen(
            [sys.executable, str(script), str(ready)], stdout=out, stderr=out, cwd=tmp_path, env=env
        )
    descendants: list[int] = []
    directories: list[Path] = []
    try:
        poll_until(ready.exists, seconds=180, interval=0.2, process=owner, what="the owner's first games",
                   output=lambda: output.read_text()[-3000:])  # fmt: skip
        directories = ray_dirs(owner.pid)
        assert len(directories) == 1
        descendants = [p.pid for p in psutil.Process(owner.pid).children(recursive=True)]
        users = users_of(directories[0], spare=owner.pid)
        assert any("DashboardAgent" in u for u in users), users  # what used to outlive the owner
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
        if not directories:
            directories = ray_dirs(owner.pid)
    assert survivors(descendants, seconds=20) == []
    assert left_after(lambda: [u for d in directories for u in users_of(d)], seconds=10, interval=0.2) == []
    assert left_after(lambda: ray_dirs(owner.pid), seconds=10, interval=0.2) == []


@pytest.mark.asyncio
async def test_a_start_cancelled_while_ray_starts_leaves_no_ray_process(children: Callable[[], list[int]]) -> None:
    assert not ray.is_initialized()
    selfplay = SelfPlay(workers=1, play_fn=fault_play, backend="ray")
    start = asyncio.create_task(selfplay.start())
    # the directory is made just before ray.init, and Ray's processes inside it
    await wait_until(lambda: ray_dirs(os.getpid()) or start.done(), seconds=60)
    assert not start.done(), "Ray never began to start"
    directory = ray_dirs(os.getpid())[0]
    await wait_until(lambda: children() or start.done(), seconds=60)
    assert not start.done(), "ray.init ended before its processes were seen"
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    await selfplay.aclose()
    assert not ray.is_initialized()
    assert not directory.exists()
    assert await asyncio.to_thread(left_after, lambda: users_of(directory), seconds=10, interval=0.2) == []
    assert await asyncio.to_thread(left_after, children, seconds=10, interval=0.2) == []


@pytest.mark.asyncio
async def test_more_cpus_than_a_private_instance_has_fail_fast_naming_both(
    children: Callable[[], list[int]],
) -> None:
    assert not ray.is_initialized()
    cpus = os.cpu_count() or 1
    began = time.monotonic()
    with pytest.raises(AspError) as caught:
        async with SelfPlay(workers=cpus + 1, play_fn=fault_play, backend="ray", start_timeout=120):
            pass
    assert time.monotonic() - began < 60  # Ray's own start, not the start_timeout
    found = re.search(r"asked for (\d+) CPUs .* has (\d+)", str(caught.value))
    assert found is not None, str(caught.value)
    assert int(found[1]) == cpus + 1 and int(found[2]) < cpus + 1
    assert not ray.is_initialized()
    assert ray_dirs(os.getpid()) == []
    assert await asyncio.to_thread(left_after, children, seconds=10, interval=0.2) == []
