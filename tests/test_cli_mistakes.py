"""Every user mistake is one line ``asp COMMAND: ...`` on standard error and exit status 2,
never a traceback, found before any work is done; a resume refused changes no file.

Each case runs the command as a user does (a subprocess) on files made here: tiny
checkpoints in the format ``asp train`` saves, spoiled one way each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import torch
from helpers import asp, output_of, poll_until, start
from run_helpers import untrained_state

from asp.app.game_run import GameRun
from asp.app.run.directory import CHECKPOINT
from asp.app.run_config import defaults_for
from asp.tinychess.game import TinyChessGame
from asp.util.atomic import save_atomic

LIMIT = 60  # seconds for one refused command; each takes a few (importing torch)
TINY_RUN = dataclasses.replace(
    defaults_for("tinychess"), games=8, max_plies=20, eval_games=8, network={"hidden": 16, "blocks": 0}
)
CHESS = TinyChessGame()
PGN = '[Event "asp"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n'


def save_checkpoint(run: Path, *, spoil: Callable[[dict[str, object]], None] = lambda state: None) -> Path:
    """A run directory holding a checkpoint of TINY_RUN after 2 iterations (spoiled by ``spoil``),
    its config.json and the two metrics lines."""
    state = untrained_state(TINY_RUN, version=2, game=CHESS)
    spoil(state)
    (run / "games").mkdir(parents=True)
    save_atomic(state, run / CHECKPOINT)
    (run / "config.json").write_text(json.dumps(TINY_RUN.to_dict()))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i}) + "\n" for i in range(2)))
    return run


def wider_state() -> dict[str, torch.Tensor]:
    """The weights of a network twice as wide as TINY_RUN's."""
    return GameRun(dataclasses.replace(TINY_RUN, network={"hidden": 32, "blocks": 0}), CHESS).new_model().state_dict()


def wider_weights(state: dict[str, object]) -> None:
    state["model"] = wider_state()


def no_model(state: dict[str, object]) -> None:
    del state["model"]


def version_text(state: dict[str, object]) -> None:
    state["version"] = "two"


def next_iteration_negative(state: dict[str, object]) -> None:
    state["next_iteration"] = -5


def pending_play_too_wide(state: dict[str, object]) -> None:
    state["pending_plays"] = [{"version": 1, "weights": wider_state()}]


def missing_checkpoint(run: Path) -> None:
    (run / CHECKPOINT).unlink()


def metrics_a_directory(run: Path) -> None:
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").mkdir()


def metrics_damaged(damage: bytes) -> Callable[[Path], None]:
    """Append ``damage`` to the run's metrics.jsonl (two whole lines, 0 and 1)."""

    def damaged(run: Path) -> None:
        with open(run / "metrics.jsonl", "ab") as f:
            f.write(damage)

    return damaged


def games_a_directory(run: Path) -> None:
    (run / "games" / "iter-0002.jsonl").mkdir()


def lock_a_directory(run: Path) -> None:
    (run / ".lock").mkdir()


def games_a_file(run: Path) -> None:
    (run / "games").rmdir()
    (run / "games").write_text("")


@dataclasses.dataclass(frozen=True)
class Case:
    """A command and the words its one line of error holds."""

    argv: tuple[str, ...]
    """The command's arguments; ``{tmp}`` stands for the test's directory."""
    words: tuple[str, ...]
    """What the line must say."""
    run: Callable[[Path], None] | None = None
    """Make ``{tmp}/run`` (a refused command must leave its files as they were)."""


def spoiled(spoil: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def make(run: Path) -> None:
        save_checkpoint(run, spoil=spoil)

    return make


def spoiled_run(change: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(run: Path) -> None:
        save_checkpoint(run)
        change(run)

    return make


GAMES = ("--games", "2", "--max-plies", "4")
RESUME = ("train", "--resume", "{tmp}/run", "--iterations", "3", "--workers", "1", "--no-progress")

CASES = {
    # asp play
    "play --out DIR": Case(("play", *GAMES, "--out", "{tmp}"), ("--out", "is a directory")),
    "play --out in a missing directory": Case(("play", *GAMES, "--out", "/nonexistent/d/x.pgn"), ("no directory",)),
    "play --out under /proc": Case(("play", *GAMES, "--out", "/proc/x.pgn"), ("--out", "cannot write")),
    "play --games 0": Case(("play", "--games", "0"), ("--games must be in 1..",)),
    "play --workers 0": Case(("play", "--workers", "0"), ("--workers must be in 1..",)),
    "play --temperature nan": Case(("play", "--temperature", "nan"), ("--temperature",)),
    "play a checkpoint too wide for its config": Case(
        ("play", *GAMES, "--checkpoint", "{tmp}/run"), ("do not fit", "size mismatch"), spoiled(wider_weights)
    ),
    "play a checkpoint without its model": Case(
        ("play", *GAMES, "--checkpoint", "{tmp}/run"), ("no model",), spoiled(no_model)
    ),
    "play a checkpoint whose version is text": Case(
        ("play", *GAMES, "--checkpoint", "{tmp}/run"), ("checkpoint field version", "'two'"), spoiled(version_text)
    ),
    # asp eval
    "eval --games 0": Case(("eval", "{tmp}/run", "--games", "0"), ("--games must be in 1..",), spoiled_run(str)),
    "eval --pgn DIR": Case(("eval", "{tmp}/run", *GAMES, "--pgn", "{tmp}"), ("--pgn", "directory"), spoiled_run(str)),
    "eval a checkpoint too wide": Case(("eval", "{tmp}/run", *GAMES), ("do not fit",), spoiled(wider_weights)),
    "eval --vs a checkpoint without its model": Case(
        ("eval", "{tmp}/good", *GAMES, "--vs", "{tmp}/run"), ("no model",), spoiled(no_model)
    ),
    "eval a checkpoint whose version is text": Case(
        ("eval", "{tmp}/run", *GAMES), ("checkpoint field version",), spoiled(version_text)
    ),
    "eval --ladder with an option of a match": Case(
        ("eval", "{tmp}/run", "--ladder", "--games", "20"),
        ("--games: --ladder reads the run's evaluations and plays no game: drop --games or --ladder",),
    ),
    "play --search -1": Case(("play", *GAMES, "--search", "-1"), ("--search must be in 0..10000",)),
    "play --search with --policy-only": Case(("play", *GAMES, "--search", "4", "--policy-only"), ("--policy-only",)),
    "eval --vs uci without --engine": Case(
        ("eval", "{tmp}/run", "--vs", "uci"), ("--vs uci needs --engine",), spoiled_run(str)
    ),
    "eval --skill against the greedy mover": Case(
        ("eval", "{tmp}/run", "--vs", "greedy", "--skill", "3"),
        ("--skill applies to --vs stockfish or --vs uci",),
        spoiled_run(str),
    ),
    "train --search 10001": Case(("train", "--search", "10001", "--run-dir", "{tmp}/new"), ("--search", "10000")),
    "train --policy-only": Case(
        ("train", "--policy-only", "--run-dir", "{tmp}/new"), ("--policy-only", "asp train always searches")
    ),
    "train --search 0": Case(("train", "--search", "0", "--run-dir", "{tmp}/new"), ("--search", "1..10000")),
    "train --eval-search -1": Case(
        ("train", "--eval-search", "-1", "--run-dir", "{tmp}/new"), ("--eval-search", "0..10000")
    ),
    "train --eval-precision 0.6": Case(
        ("train", "--eval-precision", "0.6", "--run-dir", "{tmp}/new"), ("--eval-precision", "[0, 0.5]")
    ),
    "train --game connect4 --eval-precision -1": Case(
        ("train", "--game", "connect4", "--eval-precision", "-1", "--run-dir", "{tmp}/new"),
        ("--eval-precision", "[0, 0.5]"),
    ),
    "train --config not TOML": Case(("train", "--config", "{tmp}/notes.txt"), ("--config", "notes.txt: not TOML")),
    "train --config binary": Case(("train", "--config", "{tmp}/binary.pgn"), ("binary.pgn: not a text file",)),
    "train --config /dev/zero": Case(("train", "--config", "/dev/zero"), ("--config /dev/zero: over 1048576 bytes",)),
    "train --config with --resume": Case(
        ("train", "--config", "{tmp}/good/config.json", "--resume", "{tmp}/run"),
        ("--config starts a new run",),
        spoiled_run(str),
    ),
    # asp show
    "show a file that is not PGN": Case(("show", "{tmp}/notes.txt"), ("not a PGN file",)),
    # once: an IndexError traceback, and reading /dev/zero until memory ran out
    "show a binary file": Case(("show", "{tmp}/binary.pgn"), ("binary.pgn is not a PGN file (binary data)",)),
    "show /dev/zero": Case(("show", "/dev/zero"), ("/dev/zero is not a regular file",)),
    "show a file of one endless line": Case(("show", "{tmp}/long.pgn"), ("long.pgn is not a PGN file (a line over",)),
    "show --out under /proc": Case(("show", "{tmp}/mate.pgn", "--out", "/proc/b.svg"), ("--out", "cannot write")),
    "show --out a directory under /proc": Case(("show", "{tmp}/mate.pgn", "--out", "/proc/x/"), ("--out",)),
    # asp train: the run directory
    "train --run-dir FILE": Case(("train", "--run-dir", "{tmp}/mate.pgn", "--no-progress"), ("not a directory",)),
    "train --run-dir under /proc": Case(("train", "--run-dir", "/proc/asp-run", "--no-progress"), ("cannot",)),
    "train --resume a directory it cannot write": Case(("train", "--resume", "/proc", "--no-progress"), ("/proc",)),
    "train --resume a run whose lock file is a directory": Case(
        RESUME, ("run directory", "cannot be written"), spoiled_run(lock_a_directory)
    ),
    "train --iterations 0": Case(("train", "--iterations", "0", "--run-dir", "{tmp}/new"), ("--iterations", "100000")),
    "train --hidden 0": Case(("train", "--hidden", "0", "--run-dir", "{tmp}/new"), ("--hidden", "8..4096")),
    # once: config.json, games/ and log.jsonl written, then SelfPlay.workers refused, and the
    # next try refused as "already holds a run"
    "train --workers 2000": Case(("train", "--workers", "2000", "--run-dir", "{tmp}/new"), ("--workers", "1..1024")),
    "train --threads-per-worker 300": Case(
        ("train", "--threads-per-worker", "300", "--run-dir", "{tmp}/new"), ("--threads-per-worker", "1..256")
    ),
    "train --trainer-threads 0": Case(
        ("train", "--trainer-threads", "0", "--run-dir", "{tmp}/new"), ("--trainer-threads", "1..256")
    ),
    "train --device cuda without CUDA": Case(
        ("train", "--device", "cuda", "--run-dir", "{tmp}/new", "--no-progress"), ("--device cuda", "CUDA")
    ),
    "train: metrics.jsonl is a directory": Case(
        RESUME, ("metrics.jsonl", "directory"), spoiled_run(metrics_a_directory)
    ),
    "train: a games file is a directory": Case(
        RESUME, ("iter-0002.jsonl", "directory"), spoiled_run(games_a_directory)
    ),
    "train: games is a file": Case(RESUME, ("games", "not a directory"), spoiled_run(games_a_file)),
    # a damaged metrics.jsonl: once a UnicodeDecodeError or a KeyError, or the lines after it dropped
    "resume a run whose metrics end in bytes that are not text": Case(
        RESUME, ("metrics.jsonl: line 3 is not text (UTF-8)",), spoiled_run(metrics_damaged(b"\xff\xfe"))
    ),
    "resume a run with a metrics line that is a list": Case(
        RESUME, ("metrics.jsonl: line 3 is a JSON list",), spoiled_run(metrics_damaged(b"[1, 2]\n{}\n"))
    ),
    "resume a run with a metrics line without its iteration": Case(
        RESUME, ("metrics.jsonl: line 3: field iteration is missing",), spoiled_run(metrics_damaged(b"{}\n"))
    ),
    "ladder of a run with negative counts in its metrics": Case(
        ("eval", "{tmp}/run", "--ladder"),
        ("metrics.jsonl: line 3: field eval/losses must be an int >= 0, got -3",),
        spoiled_run(
            metrics_damaged(
                b'{"iteration": 2, "eval/version": 2, "eval/wins": 1, "eval/draws": 0, "eval/losses": -3}\n'
            )
        ),  # fmt: skip
    ),
    # asp train --resume: everything is checked before any file changes
    "resume a checkpoint with next_iteration -5": Case(
        RESUME, ("next_iteration", "-5"), spoiled(next_iteration_negative)
    ),
    "resume a checkpoint whose version is text": Case(RESUME, ("version", "'two'"), spoiled(version_text)),
    "resume a checkpoint too wide for its config": Case(RESUME, ("do not fit",), spoiled(wider_weights)),
    "resume a pending play too wide": Case(RESUME, ("do not fit",), spoiled(pending_play_too_wide)),
    "resume with the checkpoint missing under metrics": Case(
        RESUME, ("checkpoint.pt", "missing", "2 iteration(s)"), spoiled_run(missing_checkpoint)
    ),
}


def snapshot(path: Path) -> dict[str, bytes | None]:
    """Every file and directory under ``path``, with a file's bytes; a run directory's empty
    lock file (what a command that took the lock and let it go leaves) does not count."""
    found = {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))}
    return {name: data for name, data in found.items() if not (name.endswith("/.lock") and data == b"")}


def one_line(result: subprocess.CompletedProcess[str], command: str, rc: int = 2) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == rc, f"exit {result.returncode}:\n{output}"
    assert "Traceback" not in output, output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"asp {command}: "), result.stderr
    return lines[0]


@pytest.mark.timeout(2 * LIMIT)
@pytest.mark.slow  # each case costs a process that imports torch: 2-3 s
@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in CASES.items()])
def test_a_mistake_is_one_line_with_status_2_and_changes_nothing(case: Case, tmp_path: Path) -> None:
    (tmp_path / "mate.pgn").write_text(PGN)
    (tmp_path / "notes.txt").write_text("not a game\n")
    (tmp_path / "binary.pgn").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "long.pgn").write_text('[Event "x"]\n\n' + "e4 " * 400_000)
    save_checkpoint(tmp_path / "good")
    if case.run is not None:
        case.run(tmp_path / "run")
    before = snapshot(tmp_path)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in case.argv]
    line = one_line(asp(*argv, cwd=tmp_path, seconds=LIMIT), argv[0])
    for word in case.words:
        assert word in line, line
    assert snapshot(tmp_path) == before  # no file written, none changed, none removed


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory all the same")
def test_a_read_only_run_directory_is_one_line(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "run")
    (tmp_path / "run").chmod(0o500)
    try:
        result = asp(*[arg.replace("{tmp}", str(tmp_path)) for arg in RESUME], cwd=tmp_path, seconds=LIMIT)
    finally:
        (tmp_path / "run").chmod(0o700)
    assert "cannot be written" in one_line(result, "train")


@pytest.mark.slow
def test_a_full_disk_is_one_line_naming_the_file(tmp_path: Path) -> None:
    result = asp("play", *GAMES, "--out", "/dev/full", cwd=tmp_path, seconds=LIMIT)
    assert one_line(result, "play", rc=1) == "asp play: No space left on device (/dev/full)"


@pytest.mark.timeout(3 * LIMIT)
@pytest.mark.slow
def test_a_full_disk_under_a_training_run_ends_it_with_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").symlink_to("/dev/full")
    argv = ["train", "--run-dir", str(run), "--iterations", "1", "--games", "4", "--max-plies", "10",
            "--eval-games", "2", "--hidden", "16", "--workers", "1", "--no-progress"]  # fmt: skip
    result = asp(*argv, cwd=tmp_path, seconds=2 * LIMIT)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"asp train: No space left on device ({run}/metrics.jsonl)"


@pytest.mark.timeout(3 * LIMIT)
@pytest.mark.parametrize("argv", [["play", "--games", "100000", "--workers", "2", "--out", "x.pgn"],
                                  ["eval", "good", "--games", "100000"]], ids=["play", "eval"])  # fmt: skip
@pytest.mark.slow
def test_ctrl_c_while_playing_exits_130_with_no_traceback(argv: list[str], tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "good")
    with _ctrl_c_reaches_children():
        proc = start(*argv, cwd=tmp_path)
    try:
        # Playing by then: importing torch and starting costs each process 2-3 s of CPU.
        cpu = 12 if argv[0] == "play" else 6
        poll_until(lambda: _tree_cpu(proc.pid) >= cpu, seconds=LIMIT, interval=0.2, process=proc,
                   what=f"{cpu} s of CPU", output=lambda: output_of(proc))  # fmt: skip
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip() == f"asp {argv[0]}: interrupted" and "Traceback" not in out + err, err
    _, alive = psutil.wait_procs(children, timeout=10)
    for child in alive:
        child.kill()
    assert alive == []
    assert not (tmp_path / "x.pgn").exists()


@contextlib.contextmanager
def _ctrl_c_reaches_children() -> Iterator[None]:
    """Children started inside take SIGINT as a terminal's foreground job does, also where the
    tests run with SIGINT ignored (a shell's background job, ``pytest &``): an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt handler."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)  # exec resets a caught signal
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user) of process ``pid`` and its children."""
    total = 0.0
    for process in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        try:
            total += process.cpu_times().user
        except psutil.Error:
            pass
    return total
