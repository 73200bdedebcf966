"""The writer of games and curves is replaced when it dies (``asp.app.session``), in a run too."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import chess.pgn
import psutil
import pytest
from helpers import RUN_LIMIT, poll_until, start, survivors
from run_helpers import TINY_TRAIN, read_metrics
from structlog.testing import capture_logs

from asp.app.session import Writer, _death_of


def _sleep_forever() -> None:
    time.sleep(3600)


def test_the_reason_is_read_when_the_pools_thread_reaps_the_writer_first() -> None:
    # The race of a CI run: the pool's thread reaped the dead writer and had not yet stored its
    # status when the writer asked for it; waitpid found no child then, and the reason was lost.
    process = multiprocessing.get_context("spawn").Process(target=_sleep_forever, daemon=True)
    process.start()
    os.kill(process.pid, signal.SIGKILL)
    os.waitpid(process.pid, 0)  # as the pool's thread does, which then stores the status:
    store = threading.Timer(0.05, setattr, (process._popen, "returncode", -signal.SIGKILL))
    store.start()
    try:
        assert _death_of(process) == "killed by SIGKILL"
    finally:
        store.join()


@pytest.mark.slow
def test_a_killed_writer_is_replaced_and_the_call_runs_again() -> None:
    writer = Writer()
    try:
        with capture_logs() as logs:
            first = writer.call(os.getpid)
            assert first == writer.pid and first != os.getpid()
            os.kill(first, signal.SIGKILL)
            assert not survivors([first], seconds=10)  # not psutil's wait, which would reap it first
            second = writer.call(os.getpid)
        assert second not in (first, os.getpid())
        replaced = [e for e in logs if e["event"] == "writer_replaced"]
        assert len(replaced) == 1 and replaced[0]["pid"] == first, logs
        assert replaced[0]["reason"] == "killed by SIGKILL"
    finally:
        writer.shutdown()


def _events(log: Path, name: str) -> list[dict[str, object]]:
    if not log.exists():
        return []
    found = []
    for text in log.read_text().splitlines():
        try:
            event = json.loads(text)
        except ValueError:
            continue  # a line being written
        if event.get("event") == name:
            found.append(event)
    return found


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_a_run_whose_writer_is_killed_completes_with_every_iterations_files_once(tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "out.txt"
    iterations = 6
    with open(out, "wb") as sink:
        proc = start("train", "--iterations", str(iterations), "--games", "8", "--run-dir", str(run), *TINY_TRAIN,
                     cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            # mid-run: the writer has written an iteration, and more are to come
            poll_until(lambda: _events(run / "log.jsonl", "writer_started") and _lines(run / "metrics.jsonl") >= 1,
                       seconds=RUN_LIMIT, process=proc, what="the writer and a metrics line",
                       output=out.read_text)  # fmt: skip
            pid = int(str(_events(run / "log.jsonl", "writer_started")[0]["pid"]))
            assert pid in [p.pid for p in psutil.Process(proc.pid).children()], pid
            assert _lines(run / "metrics.jsonl") < iterations, "the run ended before the writer was killed"
            os.kill(pid, signal.SIGKILL)
            code = proc.wait(timeout=RUN_LIMIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 0, out.read_text()
    assert "Traceback" not in out.read_text()
    replaced = _events(run / "log.jsonl", "writer_replaced")
    assert [(e["pid"], e["reason"]) for e in replaced] == [(pid, "killed by SIGKILL")], replaced
    lines = read_metrics(run)
    assert [line["iteration"] for line in lines] == list(range(iterations)), (run / "log.jsonl").read_text()[-3000:]
    for iteration in range(iterations):
        stream = io.StringIO((run / "games" / f"iter-{iteration:04d}.pgn").read_text())
        games = 0
        while chess.pgn.read_game(stream) is not None:
            games += 1
        assert games == 8, iteration
