"""``asp train``, ``asp play`` and ``asp eval`` end to end, as a user runs them: subprocesses.

Runs are tiny (8 games of at most 20 plies, a 16-wide model, 2 workers); each costs
~10-25 s on a busy 2-core machine, mostly starting processes that import torch. Runs that
several tests read are module fixtures, and independent runs start side by side.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch
from helpers import (
    RUN_LIMIT,
    asp,
    command,
    finish,
    left_after,
    ok,
    pgn_games,
    poll_until,
    process_group,
    start,
    survivors,
)
from run_helpers import TINY_TRAIN, read_checkpoint, read_metrics

from asp.app.run.directory import kept_versions, load_checkpoint
from asp.app.run_config import GameRunConfig

GAMES = ("--games", "8")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def files(run: Path) -> dict[str, bytes]:
    """Every file under ``run`` and its bytes."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def differing_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[str]:
    assert a.keys() == b.keys()
    return [k for k in a if not torch.equal(a[k], b[k])]


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two checkpoints differ: the path of every entry (nested too) that is not the same."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
        return [] if same and a.shape == b.shape and torch.equal(a, b) else [path]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path} (keys {sorted(map(str, a.keys() ^ b.keys()))})"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return [path]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


@dataclasses.dataclass
class ResumeRuns:
    """An uninterrupted 2-iteration run and one of 1 iteration resumed with ``--iterations 2``."""

    whole: Path
    whole_result: subprocess.CompletedProcess[str]
    split: Path
    first_result: subprocess.CompletedProcess[str]
    first_checkpoint: dict[str, Any]
    resume_result: subprocess.CompletedProcess[str]


def resume_runs(base: Path, *mode: str) -> ResumeRuns:
    whole, split = base / "whole", base / "split"
    procs = [
        start("train", "--iterations", "2", "--run-dir", str(whole), *GAMES, *TINY_TRAIN, *mode, cwd=base),
        start("train", "--iterations", "1", "--run-dir", str(split), *GAMES, *TINY_TRAIN, *mode, cwd=base),
    ]
    whole_result, first_result = (finish(p) for p in procs)
    first_checkpoint = read_checkpoint(split) if first_result.returncode == 0 else {}
    resume_result = asp(
        "train", "--resume", str(split), "--iterations", "2", "--workers", "2", "--no-progress", cwd=base
    )
    return ResumeRuns(whole, whole_result, split, first_result, first_checkpoint, resume_result)


@pytest.fixture(scope="module")
def overlapped(tmp_path_factory: pytest.TempPathFactory) -> ResumeRuns:
    """Default (overlapped) mode. ``whole`` is also the reference run of the other tests."""
    return resume_runs(tmp_path_factory.mktemp("overlapped"))


@pytest.fixture(scope="module")
def sequential(tmp_path_factory: pytest.TempPathFactory) -> ResumeRuns:
    return resume_runs(tmp_path_factory.mktemp("sequential"), "--sequential")


@pytest.fixture(scope="module")
def continuous(tmp_path_factory: pytest.TempPathFactory) -> ResumeRuns:
    return resume_runs(tmp_path_factory.mktemp("continuous"), "--max-staleness", "2")


@pytest.fixture
def run_copy(overlapped: ResumeRuns, tmp_path: Path) -> Path:
    """A copy of the finished 2-iteration run, to spoil."""
    ok(overlapped.whole_result)
    return Path(shutil.copytree(overlapped.whole, tmp_path / "run"))


# -- (a) a training run and its artefacts ----------------------------------------------------


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_train_writes_every_artefact_of_a_run(overlapped: ResumeRuns) -> None:
    result = ok(overlapped.whole_result)
    run = overlapped.whole
    assert f"trained 2 iterations in {run}" in result.stdout
    assert re.search(r"last score against a random mover: \d\.\d{3}", result.stdout), result.stdout
    assert len(re.findall(r"^iteration [12]/2: 8 games", result.stderr, re.M)) == 2, result.stderr
    # how the cores are shared, said once the run is ours; how the run used its time, at the end
    assert re.search(r"^asp train: \d+ cores: 2 workers x 1 thread\(s\) \+ trainer \d+ thread\(s\) \(overlapped",
                     result.stderr, re.M), result.stderr  # fmt: skip
    assert re.search(r"workers playing \d+% of the wall time; longest event-loop stall \d+ ms", result.stdout)
    # whole lines off a terminal (once cut at 80 columns, inside a field)
    assert re.search(r"^asp train: \d+ cores: .*busy threads at most\)$", result.stderr, re.M), result.stderr
    last = (
        r"^iteration 2/2: 8 games, .*, score vs random \d\.\d{3} \(Elo [<>]? ?[+-]\d+\), "
        r"vs greedy \d\.\d{3}, vs material2 \d\.\d{3}, vs v0 \d\.\d{3}; ladder v2 [+-]\d+ \[95%: [+-]\d+, [+-]\d+\], "
        r"(above v0 by|below v0 by|cannot tell yet from v0:) [+-]\d+ \[95%: [+-]\d+, [+-]\d+\]; evaluation \d+\.\ds$"
    )
    assert re.search(last, result.stderr, re.M), result.stderr

    cfg = GameRunConfig.from_dict(json.loads((run / "config.json").read_text()))
    assert (cfg.iterations, cfg.games, cfg.max_plies, cfg.eval_games, cfg.overlap) == (2, 8, 20, 8, True)
    assert (cfg.game, cfg.network) == ("tinychess", {"hidden": 16})

    state = read_checkpoint(run)
    assert (state["next_iteration"], state["version"]) == (2, 2)
    # Overlapped: the weights that play the next iteration (version 1), kept for an extension.
    assert [p["version"] for p in state["pending_plays"]] == [1]

    lines = read_metrics(run)
    assert [m["iteration"] for m in lines] == [0, 1]
    assert [m["staleness"] for m in lines] == [0, 1]
    for line in lines:
        for key in ("loss/total", "loss/policy", "loss/value", "loss/entropy", "play/plies_per_s"):
            assert math.isfinite(line[key]), (key, line)
        assert line["play/plies_per_s"] > 0 and line["play/games"] == 8
        assert {"time/play", "time/train", "time/overlap", "time/wall", "time/artefacts"} <= line.keys()
        assert {"time/workers_busy", "time/loop_stall_max"} <= line.keys()
        assert all(line[k] >= 0 for k in line if k.startswith("time/"))
        assert 100 < line["mem/peak_rss_mb"] < 10_000  # torch alone takes 200 MB
    assert lines[0]["mem/peak_rss_mb"] <= lines[1]["mem/peak_rss_mb"]
    assert "eval/score" not in lines[0]  # evaluated every 4 iterations, and after the last
    assert 0.0 <= lines[1]["eval/score"] <= 1.0 and lines[1]["eval/games"] == 8
    assert lines[1]["eval/elo_low"] <= lines[1]["eval/elo"] <= lines[1]["eval/elo_high"]
    # the ladder: version 2 against version 0 too, and every player on one scale
    assert lines[1]["eval/version"] == 2 and lines[1]["eval_v0/games"] == 8
    assert (
        set(lines[1]["ladder"]) == {"random", "greedy", "material2", "v0", "v2"}
        and lines[1]["ladder"]["random"][0] == 0
    )
    assert lines[1]["ladder/elo"] == lines[1]["ladder"]["v2"][0]
    endings = lines[1]["eval/endings"]  # e.g. {"draw/max_plies": 5, "win/rules": 1, ...}
    assert sum(endings.values()) == 8
    assert sum(n for key, n in endings.items() if key.startswith("win/")) == lines[1]["eval/wins"]

    events = [json.loads(line)["event"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert events.count("pool_started") == 1 and events.count("iteration_done") == 2
    assert "worker_killed" not in events  # a normal end kills no worker (once: reason=close_timeout, every run)
    assert events[0] == "run_started" and "iteration_saved" in events

    for iteration in (0, 1):
        games = pgn_games(run / "games" / f"iter-{iteration:04d}.pgn")
        assert [int(g.headers["GameId"]) for g in games] == list(range(8 * iteration, 8 * iteration + 8))
        for game in games:
            assert not game.errors
            moves = list(game.mainline_moves())
            assert 0 < len(moves) <= 20 and int(game.headers["PlyCount"]) == len(moves)
            assert game.headers["Result"] in ("1-0", "0-1", "1/2-1/2")
        # Overlapped: iteration 1 was played by the version-0 snapshot too.
        assert {g.headers["White"] for g in games} == {"asp model v0"}
    assert (run / "curves.png").read_bytes().startswith(PNG_MAGIC)
    # versions kept: 0, and 2, which it evaluated: the checkpoint's own weights, without its trainer
    assert kept_versions(run) == [0, 2]
    kept = load_checkpoint(run / "versions" / "v000002.pt")
    assert (kept["version"], kept["next_iteration"], kept["config"]) == (2, 2, state["config"])
    assert differing_tensors(kept["model"], state["model"]) == [] and "optimizer" not in kept
    assert differing_tensors(kept["model"], load_checkpoint(run / "versions" / "v000000.pt")["model"])
    # no temporary file left behind; the lock file stays, emptied when the run let go of it
    assert [p.name for p in run.rglob(".*")] == [".lock"] and (run / ".lock").read_text() == ""


# -- (b) resume determinism ------------------------------------------------------------------


def _assert_resumed_run_is_complete(runs: ResumeRuns) -> None:
    ok(runs.whole_result)
    ok(runs.first_result)
    ok(runs.resume_result)
    assert runs.first_checkpoint["next_iteration"] == 1
    state = read_checkpoint(runs.split)
    assert (state["next_iteration"], state["version"]) == (2, 2)
    assert [m["iteration"] for m in read_metrics(runs.split)] == [0, 1]
    assert (runs.split / "games" / "iter-0001.pgn").exists()
    assert f"trained 2 iterations in {runs.split}" in runs.resume_result.stdout


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_sequential_resume_continues_to_the_same_weights_as_an_uninterrupted_run(sequential: ResumeRuns) -> None:
    _assert_resumed_run_is_complete(sequential)
    whole, split = read_checkpoint(sequential.whole), read_checkpoint(sequential.split)
    assert differing_tensors(whole["model"], split["model"]) == []
    # Every entry: optimizer, random states, trainer steps... a run resumed again goes on the same way.
    assert differences(whole, split) == []
    # The same games and the same losses on the way.
    for a, b in zip(read_metrics(sequential.whole), read_metrics(sequential.split), strict=True):
        assert {k: v for k, v in a.items() if k.startswith(("loss/", "play/results", "staleness"))} == {
            k: v for k, v in b.items() if k.startswith(("loss/", "play/results", "staleness"))
        }
    for name in ("iter-0000.pgn", "iter-0001.pgn"):
        got, want = pgn_games(sequential.split / "games" / name), pgn_games(sequential.whole / "games" / name)
        assert [list(g.mainline_moves()) for g in got] == [list(g.mainline_moves()) for g in want]


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_overlapped_resume_completes_the_run(overlapped: ResumeRuns) -> None:
    _assert_resumed_run_is_complete(overlapped)
    # The last iteration's checkpoint keeps the weights an extended run replays iteration 1 with.
    assert [p["version"] for p in overlapped.first_checkpoint["pending_plays"]] == [0]


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_overlapped_resume_continues_to_the_same_weights_as_an_uninterrupted_run(overlapped: ResumeRuns) -> None:
    _assert_resumed_run_is_complete(overlapped)
    whole_lines, split_lines = read_metrics(overlapped.whole), read_metrics(overlapped.split)
    versions = [(m["version_played"], m["staleness"]) for m in whole_lines]
    resumed_versions = [(m["version_played"], m["staleness"]) for m in split_lines]
    whole, split = read_checkpoint(overlapped.whole), read_checkpoint(overlapped.split)
    differ = differing_tensors(whole["model"], split["model"])
    assert (differ, resumed_versions) == ([], versions), (
        f"{len(differ)} of {len(whole['model'])} tensors differ: {differ}; (version_played, staleness) "
        f"per iteration: uninterrupted {versions}, resumed {resumed_versions}"
    )
    # Every entry: the weights playing the next iteration, optimizer, random states, trainer steps.
    assert differences(whole, split) == []


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_a_continuous_run_resumes_with_the_weights_of_the_plays_that_had_begun(continuous: ResumeRuns) -> None:
    _assert_resumed_run_is_complete(continuous)
    # Self-play may run two versions ahead: iteration 1, and the iteration after the last, are
    # begun by version 0 as soon as iteration 0 is played. The checkpoint keeps those weights.
    pending = continuous.first_checkpoint["pending_plays"]
    assert [p["version"] for p in pending] == [0]
    whole_lines, split_lines = read_metrics(continuous.whole), read_metrics(continuous.split)
    assert [(m["version_played"], m["staleness"]) for m in whole_lines] == [(0, 0), (0, 1)]
    assert [(m["version_played"], m["staleness"]) for m in split_lines] == [(0, 0), (0, 1)]
    # The idle seconds are floored at 0 (so bounds on them, or on the busy share, would test
    # nothing): what asp decides is that each figure comes from the one measure of the iteration.
    cores = re.search(r"(\d+) workers x (\d+) thread\(s\) \+ trainer (\d+) thread", continuous.whole_result.stderr)
    assert cores, continuous.whole_result.stderr
    workers, worker_threads, trainer_threads = map(int, cores.groups())
    for line in whole_lines:
        idle_share = 1 - line["time/workers_busy"]
        assert line["time/worker_idle_core_s"] == pytest.approx(
            idle_share * workers * line["time/wall"] * worker_threads, abs=1e-4
        )
        assert line["time/trainer_idle_core_s"] == pytest.approx(
            (line["time/wall"] - line["time/train"]) * trainer_threads, abs=1e-4
        )
    whole, split = read_checkpoint(continuous.whole), read_checkpoint(continuous.split)
    assert differing_tensors(whole["model"], split["model"]) == []
    # The iteration after the last is begun by the newest version there is once iteration 1 has
    # been played: 0 or 1 in the uninterrupted run (training on iteration 0 races that play),
    # 1 in the resumed one, which began with version 1. Continuous self-play depends on timing:
    # what is replayed exactly is the plays that had begun.
    assert [p["version"] for p in whole["pending_plays"]] in ([0], [1])
    assert [p["version"] for p in split["pending_plays"]] == [1]


# -- (c) interruption ------------------------------------------------------------------------


def _wait_for_first_iteration(proc: subprocess.Popen[str], run: Path, log: Path, lines: int = 1) -> None:
    """Wait until metrics.jsonl has ``lines`` lines."""
    metrics = run / "metrics.jsonl"
    poll_until(lambda: metrics.exists() and metrics.read_text().count("\n") >= lines, seconds=RUN_LIMIT,
               interval=0.1, process=proc, what=f"{lines} metrics line(s)", output=log.read_text)  # fmt: skip


@pytest.fixture
def long_run(tmp_path: Path) -> Iterator[tuple[Path, Path, list[str]]]:
    """(run dir, stderr file, the command's options); kills whatever is left at the end."""
    run, log = tmp_path / "run", tmp_path / "stderr.txt"
    options = ["--iterations", "50", "--run-dir", str(run), *TINY_TRAIN]
    yield run, log, options
    for proc in psutil.Process().children(recursive=True):  # a run a failed test left behind
        try:
            if str(run) in " ".join(proc.cmdline()):
                proc.kill()
        except psutil.Error:
            pass


def _interrupt(run: Path, log: Path, options: list[str], games: str, sig: signal.Signals) -> tuple[int, float]:
    """Start a long run, send ``sig`` once its first iteration is saved; (exit code, seconds to exit)."""
    with open(log, "wb") as err:
        proc = start("train", *options, "--games", games, cwd=run.parent, stdout=err, stderr=subprocess.STDOUT)
        try:
            _wait_for_first_iteration(proc, run, log)
            children = psutil.Process(proc.pid).children(recursive=True)
            # the two workers, the writer of games and curves, multiprocessing's resource tracker
            assert len(children) >= 3, children
            proc.send_signal(sig)
            sent = time.monotonic()
            try:
                code = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"still running 15 s after {sig.name}:\n{log.read_text()}") from None
            seconds = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    left = survivors([child.pid for child in children], seconds=10)
    for child in children:  # none, unless the test fails: then it leaves nothing behind either
        if child.pid in left:
            child.kill()
    assert left == [], f"children left alive after {sig.name}"
    return code, seconds


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_sigint_mid_iteration_exits_130_with_a_resumable_checkpoint(long_run: tuple[Path, Path, list[str]]) -> None:
    run, log, options = long_run
    code, _ = _interrupt(run, log, options, "32", signal.SIGINT)
    stderr = log.read_text()
    assert code == 130, stderr
    assert f"asp train --resume {run}" in stderr
    state = read_checkpoint(run)  # weights_only: loads
    done = state["next_iteration"]
    assert 1 <= done < 50
    assert f"the checkpoint holds {done} complete iteration(s)" in stderr
    assert len(state["pending_plays"]) == 1  # the snapshot already playing the next iteration

    resumed = ok(asp("train", "--resume", str(run), "--iterations", str(done + 1), "--workers", "2", "--no-progress",
                     cwd=run.parent))  # fmt: skip
    assert f"trained {done + 1} iterations in {run}" in resumed.stdout
    lines = read_metrics(run)
    assert [m["iteration"] for m in lines] == list(range(done + 1))
    # The interrupted iteration was replayed by the snapshot that was playing it: still one version stale.
    assert (lines[-1]["version_played"], lines[-1]["staleness"]) == (done - 1, 1)
    assert read_checkpoint(run)["next_iteration"] == done + 1


@pytest.mark.timeout(RUN_LIMIT + 60)
@pytest.mark.slow
def test_sigterm_exits_nonzero_with_a_loadable_checkpoint(long_run: tuple[Path, Path, list[str]]) -> None:
    run, log, options = long_run
    code, _ = _interrupt(run, log, options, "8", signal.SIGTERM)
    assert code != 0, log.read_text()
    assert f"asp train --resume {run}" in log.read_text()
    assert read_checkpoint(run)["next_iteration"] >= 1


@pytest.mark.timeout(RUN_LIMIT + 60)
@pytest.mark.slow
def test_sigkill_of_the_run_leaves_no_process(long_run: tuple[Path, Path, list[str]]) -> None:
    # No cleanup code runs in the killed coordinator: the workers and the writer of games and
    # curves must each notice that their parent is gone (before the fix, the writer waited on
    # its task queue forever, and multiprocessing's resource tracker with it).
    run, log, options = long_run
    code, _ = _interrupt(run, log, options, "8", signal.SIGKILL)
    assert code == -signal.SIGKILL, log.read_text()


def _file_size_limit(limit: int) -> None:
    """In the child: a file can grow to ``limit`` bytes; a write beyond fails (EFBIG), as on a full disk."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.timeout(3 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_a_checkpoint_that_cannot_be_written_ends_the_run_in_one_line_and_keeps_the_last_one(run_copy: Path) -> None:
    # Once torch.save raised a RuntimeError without its cause, and asp train ended in a
    # 60-line traceback.
    before = files(run_copy)
    limit = len(before["checkpoint.pt"]) // 2
    kept = [len(data) for name, data in before.items() if name.startswith("versions/")]
    assert kept and max(kept) < limit  # weights without the trainer: written as before
    assert max(len(data) for name, data in before.items() if name != "checkpoint.pt" and "versions/" not in name) < (
        limit // 4
    )
    resume = ("train", "--resume", str(run_copy), "--iterations", "3", "--workers", "2", "--no-progress")
    failed = asp(*resume, cwd=run_copy.parent, preexec_fn=lambda: _file_size_limit(limit))
    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last == f"asp train: File too large ({run_copy / 'checkpoint.pt'})", failed.stderr
    assert "Traceback" not in failed.stderr
    assert files(run_copy)["checkpoint.pt"] == before["checkpoint.pt"]  # the last checkpoint, intact
    assert [p.name for p in run_copy.rglob(".*")] == [".lock"]  # no temporary file left
    ok(asp(*resume, cwd=run_copy.parent))  # and the run goes on from it
    assert read_checkpoint(run_copy)["next_iteration"] == 3


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_the_hint_of_an_interrupted_resume_counts_the_iterations_of_the_checkpoint(run_copy: Path) -> None:
    log = run_copy.parent / "stderr.txt"
    with open(log, "wb") as err:
        proc = start("train", "--resume", str(run_copy), "--iterations", "50", "--workers", "2", "--no-progress",
                     cwd=run_copy.parent, stdout=err, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            _wait_for_first_iteration(proc, run_copy, log, lines=3)  # the 2 it had, and 1 of its own
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stderr = log.read_text()
    assert code == 130, stderr
    held = read_checkpoint(run_copy)["next_iteration"]
    assert held >= 3
    assert f"the checkpoint holds {held} complete iteration(s) of 50; resume with: asp train --resume {run_copy}" in (
        stderr
    )


@pytest.mark.timeout(RUN_LIMIT + 60)
@pytest.mark.slow
def test_a_double_ctrl_c_exits_130_and_leaves_no_process_nor_temporary_file(tmp_path: Path) -> None:
    run, log, tmp = tmp_path / "run", tmp_path / "stderr.txt", tmp_path / "tmp"
    tmp.mkdir()
    options = ["--iterations", "50", "--games", "16", "--run-dir", str(run), *TINY_TRAIN]
    with open(log, "wb") as err:
        # A session of its own, like a shell's job: Ctrl-C in a terminal reaches its whole process group.
        proc = start("train", *options, cwd=tmp_path, stdout=err, stderr=subprocess.STDOUT,
                     env={**os.environ, "TMPDIR": str(tmp)}, start_new_session=True)  # fmt: skip
        try:
            _wait_for_first_iteration(proc, run, log)  # then mid-iteration: playing and training the next
            children = psutil.Process(proc.pid).children(recursive=True)
            assert len(children) >= 2, children
            for _ in range(2):
                try:
                    os.killpg(proc.pid, signal.SIGINT)
                except ProcessLookupError:  # gone after the first
                    break
                time.sleep(0.3)
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"still running 30 s after two Ctrl-C:\n{log.read_text()}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stderr = log.read_text()
    assert code == 130, stderr
    assert f"resume with: asp train --resume {run}" in stderr
    assert survivors([child.pid for child in children], seconds=10) == [], (
        f"children left alive after two Ctrl-C:\n{stderr}"
    )
    group = left_after(lambda: process_group(proc.pid), seconds=10)
    assert group == [], f"processes of the run's group left alive:\n{stderr}"
    assert sorted(p.name for p in tmp.glob("asp-*")) == [], f"temporary files left behind:\n{stderr}"
    if (run / "checkpoint.pt").exists():
        assert load_checkpoint(run / "checkpoint.pt")["next_iteration"] >= 1


@pytest.mark.timeout(RUN_LIMIT + 60)
@pytest.mark.slow
def test_train_runs_from_a_thread_other_than_the_main_one(tmp_path: Path) -> None:
    # An application that runs the command line in a thread of its own: no signal handler there.
    code = (
        "import sys, threading\n"
        "from asp.app.cli import main\n"
        "codes = []\n"
        "thread = threading.Thread(target=lambda: codes.append(main(sys.argv[1:])))\n"
        "thread.start()\n"
        "thread.join()\n"
        "sys.exit(codes[0] if codes else 99)\n"
    )
    run = tmp_path / "run"
    args = ["train", "--iterations", "1", "--run-dir", str(run), *GAMES, *TINY_TRAIN]
    result = finish(
        subprocess.Popen(
            [sys.executable, "-c", code, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    )
    ok(result)
    assert f"trained 1 iterations in {run}" in result.stdout
    assert read_checkpoint(run)["next_iteration"] == 1


# -- (d) bad input ---------------------------------------------------------------------------


def _assert_usage_error(result: subprocess.CompletedProcess[str], path: Path, *words: str) -> str:
    assert result.returncode == 2, f"{result.returncode}:\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("asp train: ") and str(path) in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.timeout(RUN_LIMIT)
@pytest.mark.parametrize("option", ["--trainer-threads", "--threads-per-worker"])
@pytest.mark.slow
def test_a_thread_count_below_one_is_a_usage_error_naming_the_option_and_creates_no_run(
    tmp_path: Path, option: str
) -> None:
    run = tmp_path / "run"
    result = asp("train", option, "0", "--run-dir", str(run), "--no-progress", cwd=tmp_path)
    assert result.returncode == 2 and f"{option} must be an int in 1..256, got 0" in result.stderr, result.stderr
    assert not run.exists()


@pytest.mark.slow
def test_resuming_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    asp_script = shutil.which("asp")
    args = ["train", "--resume", str(missing), "--no-progress"]
    cmd = [asp_script, *args] if asp_script else command(*args)  # the console script, as a user types it
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_LIMIT, cwd=tmp_path)
    _assert_usage_error(result, missing)
    assert not missing.exists()


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_resuming_a_truncated_checkpoint_is_a_usage_error_and_changes_nothing(run_copy: Path) -> None:
    ckpt = run_copy / "checkpoint.pt"
    ckpt.write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    before = files(run_copy)
    result = asp("train", "--resume", str(run_copy), "--workers", "2", "--no-progress", cwd=run_copy.parent)
    _assert_usage_error(result, ckpt, "checkpoint")
    assert files(run_copy) == before


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_a_new_run_into_a_directory_holding_a_run_is_a_usage_error_and_changes_nothing(run_copy: Path) -> None:
    before = files(run_copy)
    result = asp("train", "--iterations", "2", "--run-dir", str(run_copy), *GAMES, *TINY_TRAIN, cwd=run_copy.parent)
    _assert_usage_error(result, run_copy, "already holds a run", f"--resume {run_copy}")
    assert files(run_copy) == before


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_resuming_with_another_model_width_is_a_usage_error_and_changes_nothing(run_copy: Path) -> None:
    before = files(run_copy)
    result = asp("train", "--resume", str(run_copy), "--hidden", "32", "--iterations", "3", "--workers", "2",
                 "--no-progress", cwd=run_copy.parent)  # fmt: skip
    _assert_usage_error(result, run_copy, "network={'hidden': 32}", "differs")
    assert files(run_copy) == before


# -- (e) play and eval of a checkpoint -------------------------------------------------------


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_play_writes_the_games_of_a_checkpoint(overlapped: ResumeRuns, tmp_path: Path) -> None:
    ok(overlapped.whole_result)
    result = ok(asp("play", "--checkpoint", str(overlapped.whole), "--games", "4", "--max-plies", "20",
                    "--out", "x.pgn", cwd=tmp_path))  # fmt: skip
    assert "played 4 games" in result.stdout and "wrote x.pgn" in result.stdout
    games = pgn_games(tmp_path / "x.pgn")
    assert len(games) == 4
    assert {(g.headers["White"], g.headers["Black"]) for g in games} == {("asp model v2", "asp model v2")}
    assert all(not g.errors and 0 < len(list(g.mainline_moves())) <= 20 for g in games)


@pytest.mark.timeout(2 * RUN_LIMIT + 60)
@pytest.mark.slow
def test_eval_prints_a_score_and_an_elo_interval(overlapped: ResumeRuns, tmp_path: Path) -> None:
    ok(overlapped.whole_result)
    result = ok(asp("eval", str(overlapped.whole), "--games", "8", "--max-plies", "20", cwd=tmp_path))
    line = result.stdout.strip()
    found = re.search(
        r"\(version 2\) against the random mover: score (\d\.\d{3}) \(\+(\d+) =(\d+) -(\d+) of 8\), "
        r"Elo (?:([+-]\d+) \[95%: ([+-]\d+), ([+-]\d+)\]|([<>]) [+-]\d+ \(95%\))",
        line,
    )
    assert found, line
    score = float(found.group(1))
    wins, draws, losses = (int(found.group(i)) for i in (2, 3, 4))
    assert wins + draws + losses == 8
    assert score == pytest.approx((wins + 0.5 * draws) / 8, abs=1e-3)
    if found.group(8) is not None:  # every game won or lost: a one-sided bound
        assert found.group(8) == (">" if score == 1.0 else "<") and score in (0.0, 1.0)
    else:
        elo, low, high = (int(found.group(i)) for i in (5, 6, 7))
        assert low <= elo <= high


def test_asp_train_trains_tinychess_through_the_game_seam_and_always_searches() -> None:
    from asp.app.cli import _parser
    from asp.app.commands.train import train_config
    from asp.app.run_config import defaults_for
    from asp.errors import ConfigError

    run, changes = train_config(_parser().parse_args(["train"]))
    cfg = run.cfg
    assert changes == {} and cfg == defaults_for("tinychess")
    assert (cfg.iterations, cfg.games, cfg.max_plies, cfg.search) == (24, 160, 200, 8)
    assert (cfg.eval_search, cfg.eval_every) == (64, 24)
    assert train_config(_parser().parse_args(["train", "--eval-search", "0"]))[0].search_cfg(sampling=False) is None
    for options, words in ((["--policy-only"], "asp train always searches"), (["--search", "0"], "1..10000")):
        with pytest.raises(ConfigError, match=words):
            train_config(_parser().parse_args(["train", *options]))
