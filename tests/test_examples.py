"""The examples run as a user runs them (a script, its own process and pool) and do what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Each run is ~10-15 s on an idle 2-core machine (mostly starting spawn workers that import
# torch); the limits leave room for a busy one.
RUN_LIMIT = 150


def run_example(name: str, *args: str) -> str:
    """Run ``examples/<name>`` with ``args``; return its stdout and stderr, after asserting exit 0."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT,
        cwd=EXAMPLES.parent,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name} exited with {result.returncode}:\n{output}"
    return output


@pytest.mark.timeout(RUN_LIMIT + 30)
def test_async_trainer_logs_one_line_per_iteration_and_workers_play_each_new_version() -> None:
    output = run_example(
        "async_trainer.py",
        *("--iterations", "2", "--games", "8", "--workers", "2", "--max-plies", "24", "--hidden", "32"),
    )
    iterations = [line for line in output.splitlines() if "iteration_done" in line]
    assert len(iterations) == 2, output
    for i, line in enumerate(iterations):
        assert f"iteration={i} " in line and f"model_version={i} " in line, line
        assert "games=8 " in line, line
        assert re.search(r"plies_per_s=\d+", line), line
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
    )
    shard_lines = re.findall(
        r"^\s*([\d.]+) s  shard +(\d+)  attempt (\d+)  pid (\d+)  seconds +[\d.]+  games (\d+)",
        output,
        flags=re.MULTILINE,
    )
    assert sorted(int(shard) for _, shard, _, _, _ in shard_lines) == list(range(6)), output
    assert sum(int(games) for *_, games in shard_lines) == 12, output
    arrivals = [float(seconds) for seconds, *_ in shard_lines]
    assert arrivals == sorted(arrivals) and arrivals[0] < arrivals[-1], output
    assert "6 shards: the first arrived after" in output and "the buffer holds 12 games" in output


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
