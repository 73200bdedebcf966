"""A run directory has one owner: a second ``asp train`` on it is refused while the first runs,
and a SIGKILLed owner leaves the directory free (``asp.app.run.lock``)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from helpers import RUN_LIMIT, asp, ok, poll_until, start
from run_helpers import TINY_TRAIN, read_checkpoint

from asp.app.run.lock import LOCK_FILE, RunDirInUse, RunLock


def test_a_second_lock_of_a_directory_is_refused_naming_the_holder(tmp_path: Path) -> None:
    with RunLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        with pytest.raises(RunDirInUse, match=f"run directory {tmp_path} is in use by pid {os.getpid()}$"):
            RunLock(tmp_path).acquire()
    assert (tmp_path / LOCK_FILE).read_text() == ""  # released: emptied
    with RunLock(tmp_path):
        pass


def test_a_discarded_lock_leaves_no_file_and_locks_of_its_removed_file_are_none(tmp_path: Path) -> None:
    first = RunLock(tmp_path)
    first.acquire()
    early = os.open(tmp_path / LOCK_FILE, os.O_RDWR)  # another process opened the file before it went
    try:
        first.discard()
        assert not (tmp_path / LOCK_FILE).exists()
        fcntl.flock(early, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the removed file's lock: no longer anyone's
        with RunLock(tmp_path):  # so the next owner locks the file that is there, not that one
            assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
            with pytest.raises(RunDirInUse):
                RunLock(tmp_path).acquire()
    finally:
        os.close(early)


def test_a_lock_held_by_a_killed_process_is_free(tmp_path: Path) -> None:
    hold = f"from asp.app.run.lock import RunLock; RunLock({str(tmp_path)!r}).acquire(); print(1, flush=True); input()"
    with subprocess.Popen(
        [sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "1\n"
            with pytest.raises(RunDirInUse, match=f"pid {holder.pid}$"):
                RunLock(tmp_path).acquire()
        finally:
            holder.kill()
            holder.wait()
    with RunLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"


@pytest.fixture
def first_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A long ``asp train`` in ``tmp_path/run``, once it holds the run directory's lock; killed
    with all its children at the end."""
    run = tmp_path / "run"
    log = open(tmp_path / "first.txt", "wb")  # noqa: SIM115 (closed below)
    proc = start("train", "--iterations", "50", "--games", "8", "--run-dir", str(run), *TINY_TRAIN,
                 cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        lock = run / LOCK_FILE
        poll_until(lambda: lock.exists() and lock.read_text().strip() == str(proc.pid), seconds=RUN_LIMIT,
                   process=proc, what="the run's lock", output=(tmp_path / "first.txt").read_text)  # fmt: skip
        yield proc, run
    finally:
        children = psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []
        proc.kill()
        proc.wait()
        for child in children:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        log.close()


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, f"{result.returncode}:\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr + result.stdout, result.stderr
    return lines[0]


@pytest.mark.timeout(3 * RUN_LIMIT)
@pytest.mark.slow
def test_a_second_train_on_a_run_directory_in_use_is_refused_and_a_killed_owner_frees_it(
    first_run: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, run = first_run
    metrics = run / "metrics.jsonl"
    poll_until(lambda: metrics.exists() and metrics.read_text(), seconds=RUN_LIMIT, interval=0.1, process=proc,
               what="the first run's metrics line")  # fmt: skip
    for second in (["--resume", str(run), "--workers", "1"], ["--run-dir", str(run), *TINY_TRAIN]):
        before = (run / "metrics.jsonl").read_text()
        line = _one_line(asp("train", *second, "--no-progress", cwd=run.parent))
        assert line == f"asp train: run directory {run} is in use by pid {proc.pid}"
        # the first run only appends: the second wrote nothing
        assert (run / "metrics.jsonl").read_text().startswith(before)
    assert proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    iterations = [json.loads(text)["iteration"] for text in (run / "metrics.jsonl").read_text().splitlines()]
    assert iterations == list(range(len(iterations)))
    # The kernel released the lock of the killed run: a resume takes it (and has nothing to play).
    done = read_checkpoint(run)["next_iteration"]
    assert len(iterations) in (done, done + 1)  # the line goes first, then the checkpoint
    result = ok(asp("train", "--resume", str(run), "--iterations", str(done), "--no-progress", cwd=run.parent))
    assert f"trained {done} iterations in {run}" in result.stdout
    assert (run / LOCK_FILE).read_text() == ""
