"""Ctrl-C at any moment of ``asp train``, from its first imports to its last clean-up: the
command ends with one line of its own and status 130, its children say nothing, no writer of
games and curves starts after the signal, and no process or temporary file is left.

The moments are spread evenly over the length of an uninterrupted run of the same command,
measured first: Python importing asp and torch, the workers and the writer being spawned and
importing, playing, training, evaluating, shutting down. Ctrl-C in a terminal reaches the whole
process group (the command and its children), so the tests signal the group.

Before the fix, a Ctrl-C while a child was still importing printed its KeyboardInterrupt
traceback (55-80 lines), one while the command imported argparse or torch a traceback of its
own and status -2; a writer killed that way was replaced during shutdown.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import left_after, process_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LIMIT = 120  # seconds for one run; the uninterrupted one takes a tenth of that
RUN = ("train", "--iterations", "2", "--games", "8", "--max-plies", "20", "--eval-games", "8", "--hidden", "16",
       "--workers", "2", "--no-progress")  # fmt: skip
MOMENTS = 10
OWN_LINE = re.compile(r"(asp( train)?: |iteration \d+/\d+: |trained \d+ iterations)")
"""The lines the command itself prints: the core budget, progress, the last line."""


STARTED = """
import os
from asp.util import memory
from asp.app.cli import script

lean_heap = memory.lean_heap


def started():
    os.write({write}, b".")
    os.close({write})
    return lean_heap()


memory.lean_heap = started
script()
"""


class Job:
    """``asp train`` started as a shell starts a job: a process group of its own, here in
    ``base`` with its own temporary directory, its output in ``base/out.txt``."""

    def __init__(self, base: Path) -> None:
        self.base, self.run, self.tmp, self.out = base, base / "run", base / "tmp", base / "out.txt"
        self.tmp.mkdir()
        # The console script's body (asp.app.cli.script), with a byte on a pipe that says its
        # ``try`` has begun: a signal during Python's own start-up, or before that ``try`` is
        # entered, is Python's, not asp's, to print. The byte is written by the first call inside
        # the ``try`` (asp.util.memory.lean_heap, wrapped); written before ``script()`` was called,
        # a Ctrl-C at once could land between the two and print a traceback.
        read, write = os.pipe()
        code = STARTED.format(write=write)
        with open(self.out, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, *RUN, "--run-dir", str(self.run)],
                cwd=base,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "TMPDIR": str(self.tmp)},
                pass_fds=(write,),
                start_new_session=True,
            )
        os.close(write)
        try:
            ready, _, _ = select.select([read], [], [], LIMIT)
            assert ready and os.read(read, 1) == b".", "the command did not start"
        finally:
            os.close(read)
        self.started = time.monotonic()

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {LIMIT} s:\n{self.output()}") from None

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def events(self, *names: str) -> list[dict[str, object]]:
        """The run log's events of those names."""
        log = self.run / "log.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") in names]

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in process_group(self.proc.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    started = Job(tmp_path)
    try:
        yield started
    finally:
        started.cleanup()


@pytest.fixture(scope="module")
def run_seconds(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The length of an uninterrupted run, from Python's start to the command's exit."""
    whole = Job(tmp_path_factory.mktemp("whole"))
    try:
        code = whole.wait()
        assert code == 0, whole.output()
        return time.monotonic() - whole.started
    finally:
        whole.cleanup()


TRIP = """
import os, signal, sys

class Trip:  # Ctrl-C, as the import of {module} begins
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)

sys.meta_path.insert(0, Trip())
from asp.app.cli import script
script()
"""


@pytest.mark.parametrize("module", ["numpy", "numpy.linalg", "torch.nn"])
def test_ctrl_c_while_numpy_or_torch_initialise_is_not_swallowed(module: str, tmp_path: Path) -> None:
    # Before the fix, numpy swallowed the KeyboardInterrupt: the run went on and finished (0).
    result = subprocess.run(
        [sys.executable, "-c", TRIP.format(module=module), *RUN, "--run-dir", str(tmp_path / "run")],
        cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines() == ["asp: interrupted"], result.stderr


@pytest.mark.parametrize("moment", range(MOMENTS))
def test_ctrl_c_at_any_moment_ends_in_one_line_with_status_130(job: Job, run_seconds: float, moment: int) -> None:
    time.sleep(max(0.0, job.started + run_seconds * moment / MOMENTS - time.monotonic()))
    sent = datetime.datetime.now(datetime.UTC)
    try:
        os.killpg(job.proc.pid, signal.SIGINT)
    except ProcessLookupError:  # the run had already ended
        pass
    code = job.wait()
    output = job.output()
    lines = output.strip().splitlines()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert all(OWN_LINE.match(line) for line in lines), output  # the children said nothing
    if code == 0:  # the signal came after the run had finished its work
        assert lines[-1].startswith("trained 2 iterations"), output
    else:
        assert code == 130, output
        assert "interrupted" in lines[-1], output
        assert sum("interrupted" in line for line in lines) == 1, output
    # the writer ignores Ctrl-C: never replaced, and never started once the signal was sent
    assert job.events("writer_replaced") == [], output
    late = [e for e in job.events("writer_started") if datetime.datetime.fromisoformat(str(e["timestamp"])) > sent]
    assert late == [], output
    group = left_after(lambda: process_group(job.proc.pid), seconds=10)
    assert group == [], f"processes of the run's group left alive:\n{output}"
    assert sorted(p.name for p in job.tmp.glob("asp-*")) == [], f"temporary files left behind:\n{output}"


AFTER_RETURN = """
import os, signal, sys
from asp.app import cli

cli.main = lambda: print("trained 2 iterations") or 0  # the command has done its work


class Trip:  # Ctrl-C as the script flushes the command's output, after the command returned
    def __init__(self, stream):
        self.stream, self.tripped = stream, False

    def write(self, text):
        return self.stream.write(text)

    def flush(self):
        if not self.tripped:
            self.tripped = True
            os.kill(os.getpid(), signal.SIGINT)
        self.stream.flush()


sys.stdout = Trip(sys.stdout)
from asp.app.cli import script
script()
"""


def test_ctrl_c_after_the_command_returned_keeps_its_status(tmp_path: Path) -> None:
    # Before the fix, the window between the command's return and the quiet handler raised a
    # KeyboardInterrupt outside main's try: a traceback and status -2 after the run's last line.
    command = [sys.executable, "-c", AFTER_RETURN]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT)
    assert (result.returncode, result.stdout, result.stderr) == (0, "trained 2 iterations\n", "")
