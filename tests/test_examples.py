"""The examples run as a user runs them (a script, its own process and pool) and do what they say."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Each run is ~10-15 s on an idle 2-core machine (mostly starting spawn workers that import
# torch); the limits leave room for a busy one.
RUN_LIMIT = 150

pytestmark = pytest.mark.slow  # each example runs as a program of its own, for seconds


def run_example(name: str, *args: str) -> str:
    """Run ``examples/<name>`` with ``args``; return its output, after asserting exit 0.

    stdout and stderr share one pipe, so the output keeps the order in which the prints and the
    log events (both flushed as written) happened.
    """
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=RUN_LIMIT,
        cwd=EXAMPLES.parent,
    )
    output = result.stdout
    assert result.returncode == 0, f"{name} exited with {result.returncode}:\n{output}"
    return output


@pytest.mark.timeout(RUN_LIMIT + 30)
def test_async_trainer_logs_one_line_per_iteration_and_workers_play_each_new_version() -> None:
    began = time.perf_counter()
    output = run_example(
        "async_trainer.py",
        *("--iterations", "2", "--games", "8", "--workers", "2", "--max-plies", "24", "--hidden", "32"),
    )
    wall = time.perf_counter() - began
    iterations = [line for line in output.splitlines() if "iteration_done" in line]
    assert len(iterations) == 2, output
    # Per version: the games and plies its shards played, and the seconds of each shard, by worker.
    games: dict[int, int] = defaultdict(int)
    plies: dict[int, int] = defaultdict(int)
    shard_seconds: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for line in output.splitlines():
        if "shard_done" in line:
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            version = int(fields["model_version"])
            games[version] += int(fields["games"])
            plies[version] += int(fields["plies"])
            shard_seconds[version][int(fields["pid"])].append(float(fields["seconds"]))
    for i, line in enumerate(iterations):
        assert f"iteration={i} " in line and f"model_version={i} " in line, line
        assert "games=8 " in line and games[i] == 8, line
        rate = re.search(r"plies_per_s=(\d+)", line)
        assert rate is not None and plies[i] > 0, line
        # The call lasted less than the whole script, and at least as long as its busiest worker
        # played (shard seconds are rounded to 1 ms, the rate to 1): the rate lies in between.
        busiest = max(sum(seconds) - 0.0005 * len(seconds) for seconds in shard_seconds[i].values())
        assert plies[i] / wall - 0.5 <= int(rate.group(1)), (plies[i], wall, line)
        if busiest > 0:
            assert int(rate.group(1)) <= plies[i] / busiest + 0.5, (plies[i], dict(shard_seconds[i]), line)
        loss = re.search(r"loss=(\S+)", line)
        assert loss is not None and abs(float(loss.group(1))) < 100, line
    # The weights trained after iteration 0 are the ones the workers played iteration 1 with.
    played_versions = set(re.findall(r"shard_done .*?model_version=(\d+)", output))
    assert played_versions == {"0", "1"}, output


@pytest.mark.timeout(RUN_LIMIT + 30)
def test_stream_shards_reports_every_shard_and_the_first_before_the_last() -> None:
    output = run_example(
        "stream_shards.py",
        *("--games", "12", "--shard-games", "2", "--workers", "2", "--max-plies", "20", "--hidden", "32"),
        *("--log-level", "info"),
    )
    shard_lines = re.findall(
        r"^\s*([\d.]+) s  shard +(\d+) \(\+ *0 more\)  attempt (\d+)  pid (\d+)  seconds +[\d.]+  games (\d+)",
        output,
        flags=re.MULTILINE,
    )
    assert sorted(int(shard) for _, shard, _, _, _ in shard_lines) == list(range(6)), output
    assert sum(int(games) for *_, games in shard_lines) == 12, output
    arrivals = [float(seconds) for seconds, *_ in shard_lines]
    assert arrivals == sorted(arrivals), output
    # Streamed, not gathered: each shard reaches the loop right after its shard_done, and the first
    # one before the last shard is done (the order of events, not the clock, which a fast machine
    # can round to equal arrivals).
    lines = output.splitlines()
    printed = [n for n, line in enumerate(lines) if re.match(r"^\s*[\d.]+ s  shard ", line)]
    done = [n for n, line in enumerate(lines) if "shard_done" in line]
    assert len(printed) == len(done) == 6, output
    assert all(d < p for d, p in zip(done, printed, strict=True)), output
    assert printed[0] < done[-1], output
    assert "6 results: the first arrived after" in output and "the buffer holds 12 games" in output


@pytest.mark.timeout(RUN_LIMIT + 30)
def test_debug_a_hang_logs_the_hung_workers_stack_and_completes_after_the_retry() -> None:
    output = run_example("debug_a_hang.py", "--workers", "2", "--stall-timeout", "2")
    assert "worker_stalled" in output
    stall = output[output.index("worker_stalled") :]
    # The stack names the function that hangs, in the shard that holds game 3 (shard 1).
    assert "_misbehave" in stall and "fault_play" in stall
    assert re.search(r"worker_stalled .*shard=1\b", output), output
    assert re.search(r"shard_done .*attempt=1 .*shard=1\b", output), output
    assert "played 8 games (ids 0..7)" in output and "retries 1, pool respawns 1" in output, output


@pytest.mark.timeout(RUN_LIMIT + 30)
def test_pipelined_loop_overlaps_play_with_a_custom_trainer() -> None:
    output = run_example(
        "pipelined_loop.py", *("--iterations", "3", "--games", "8", "--max-plies", "20", "--hidden", "16")
    )
    lines = re.findall(
        r"^iteration (\d): 8 games by version (\d) \(staleness (\d)\).*value loss ([\d.]+)$", output, re.M
    )
    # Iteration k+1 is played by version k while version k+1 is trained: one version stale.
    assert [(int(i), int(v), int(s)) for i, v, s, _ in lines] == [(0, 0, 0), (1, 0, 1), (2, 1, 1)], output
