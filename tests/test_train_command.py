"""``asp train``'s own handling of what it is asked: a refused run leaves nothing behind, a
printed config is the one the run would run, a resume goes on as the run began (TensorBoard
included), and a SIGINT the command was started ignoring stays ignored.

Refusals run in this process (``asp.app.cli.main``); runs are subprocesses, as a user runs them.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import RUN_LIMIT, finish, ok, output_of, poll_until, start
from run_helpers import tiny_config

from asp.app.cli import _parser, main
from asp.app.commands.train import _resume_hint
from asp.app.run import RunDir

TINY_C4 = ("--game", "connect4", "--games", "4", "--max-plies", "12", "--eval-games", "2", "--search", "2",
           "--eval-search", "0", "--hidden", "16", "--workers", "1", "--no-progress")  # fmt: skip


def train(*args: str, cwd: Path, **popen: Any) -> subprocess.Popen[str]:
    """``asp train ARGS`` started in ``cwd``."""
    return start("train", *args, cwd=cwd, **popen)


def finished(proc: subprocess.Popen[str]) -> None:
    """Wait for the run to end with status 0."""
    ok(finish(proc))


def test_a_config_the_run_refuses_leaves_no_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("engine.toml").write_text("[eval_engine]\nskill = 1\n")
    assert main(["train", "--game", "connect4", "--config", "engine.toml", "--run-dir", "runs/c4"]) == 2
    assert capsys.readouterr().err == ("asp train: --config engine.toml: eval_engine: connect4 has no engine\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.toml"]  # no runs/, no .lock, no log


def test_print_config_of_a_resume_refuses_what_the_resume_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RunDir(tmp_path / "run").create(tiny_config())
    assert main(["train", "--resume", str(tmp_path / "run"), "--print-config", "--games", "8"]) == 2
    assert "belongs to another config (games=8 differs from the stored run)" in capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path / "run"), "--print-config", "--iterations", "5"]) == 0
    printed = capsys.readouterr().out
    assert "iterations = 5\n" in printed and "games = 4\n" in printed
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.json", "games"]  # no lock taken


def test_play_does_not_overwrite_the_pgn_beside_its_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("games.pgn").write_text("mine\n")
    assert main(["play", "--games", "1", "--max-plies", "2", "--out", "games.jsonl"]) == 2
    assert capsys.readouterr().err == (
        "asp play: --out games.jsonl: the games go in games.pgn beside it too, and games.pgn exists: "
        "remove it or pick another --out\n"
    )
    assert Path("games.pgn").read_text() == "mine\n" and not Path("games.jsonl").exists()


def test_the_resume_hint_keeps_tensorboard(tmp_path: Path) -> None:
    args = _parser().parse_args(["train", "--run-dir", str(tmp_path), "--tensorboard"])
    assert _resume_hint(args, RunDir(tmp_path)) == f"asp train --resume {tmp_path} --tensorboard"


@pytest.mark.timeout(2 * RUN_LIMIT + 30)
@pytest.mark.slow
def test_a_resumed_run_goes_on_writing_tensorboard_events(tmp_path: Path) -> None:
    finished(train(*TINY_C4, "--iterations", "1", "--run-dir", "run", "--tensorboard", cwd=tmp_path))
    assert len(list((tmp_path / "run" / "tensorboard").iterdir())) == 1
    finished(train("--resume", "run", "--iterations", "2", "--workers", "1", "--no-progress", cwd=tmp_path))
    assert len(list((tmp_path / "run" / "tensorboard").iterdir())) == 2  # the resumed session's events


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.timeout(RUN_LIMIT + 30)
@pytest.mark.slow
def test_a_run_started_with_sigint_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    metrics = tmp_path / "run" / "metrics.jsonl"
    proc = train(*TINY_C4, "--iterations", "3", "--run-dir", "run", cwd=tmp_path, preexec_fn=_ignore_sigint)
    try:
        poll_until(lambda: metrics.exists() and metrics.read_text().count("\n") >= 1, seconds=RUN_LIMIT,
                   process=proc, what="a metrics line", output=lambda: output_of(proc))  # fmt: skip
        proc.send_signal(signal.SIGINT)  # a background job of a script: not its to take
        finished(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert [json.loads(line)["iteration"] for line in metrics.read_text().splitlines()] == [0, 1, 2]
