"""The run directory: RunDir, metrics, curves (the checkpoint's format: test_checkpoint; the
run's config: test_run_config).

Checkpoints are written from a Trainer in this process. One test at the end runs a whole
(tiny) training session in this process, with one worker, to watch its event loop while the
run directory is written.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from run_helpers import tiny_config, tiny_run_checkpoint

import asp.app.loop_watch
import asp.app.run.curves
import asp.app.run.directory
import asp.app.session
from asp.app.evaluation.matches import endings
from asp.app.game_run import GameRun
from asp.app.run import RunDir
from asp.app.run.curves import plot_curves
from asp.app.run.directory import RunError, load_checkpoint
from asp.app.session import Writer, train_session
from asp.games import MODEL, Record, Trainer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A real checkpoint of a tiny run, in ``tmp_path/run``."""
    return tiny_run_checkpoint(tmp_path)


def metrics_line(iteration: int, **fields: object) -> dict[str, object]:
    return {
        "iteration": iteration,
        "loss/policy": 0.1 * iteration,
        "loss/value": 1.0 / (iteration + 1),
        "loss/entropy": 3.0,
        "play/plies_per_s": 100.0 + iteration,
        **fields,
    }


# -- RunDir.create and stored_config ---------------------------------------------------------


def test_create_writes_the_config_and_refuses_a_directory_that_holds_a_run(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    cfg = tiny_config()
    run.create(cfg)
    assert (run.path / "games").is_dir()
    config = (run.path / "config.json").read_bytes()
    assert run.stored_config() == cfg

    with pytest.raises(RunError, match="already holds a run") as raised:
        run.create(tiny_config(seed=9))
    assert str(run.path) in str(raised.value) and "--resume" in str(raised.value)
    assert (run.path / "config.json").read_bytes() == config


def test_create_refuses_a_directory_with_only_a_checkpoint(checkpoint: Path) -> None:
    run = RunDir(checkpoint.parent)
    (run.path / "config.json").unlink()
    before = checkpoint.read_bytes()
    with pytest.raises(RunError, match=str(run.path)):
        run.create(tiny_config())
    assert checkpoint.read_bytes() == before
    assert not (run.path / "config.json").exists()


def test_create_accepts_an_empty_existing_directory(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.create(tiny_config())
    assert run.stored_config() == tiny_config()


def test_stored_config_errors_name_the_directory(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=str(tmp_path)):
        RunDir(tmp_path).stored_config()
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(RunError, match="config.json"):
        RunDir(tmp_path).stored_config()


def test_stored_config_of_an_incomplete_config_json_is_a_run_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RunError, match="config.json"):
        RunDir(tmp_path).stored_config()


def test_a_byte_order_mark_before_config_json_and_metrics_is_skipped(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create(tiny_config())
    config = run.path / "config.json"
    config.write_bytes("\ufeff".encode() + config.read_bytes())  # saved again by an editor that writes one
    assert run.stored_config() == tiny_config()
    run.append_metrics(metrics_line(0))
    run.metrics.write_bytes("\ufeff".encode() + run.metrics.read_bytes())
    assert run.read_metrics() == [metrics_line(0)]
    run.metrics.write_bytes("\ufeff".encode() + json.dumps(metrics_line(0)).encode())  # and no newline
    assert run.read_metrics() == [metrics_line(0)]


# -- metrics ---------------------------------------------------------------------------------


def test_truncate_metrics_keeps_the_iterations_before_and_drops_a_half_written_line(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    for i in range(4):
        run.append_metrics(metrics_line(i))
    with open(run.metrics, "a", encoding="utf-8") as f:
        f.write(json.dumps(metrics_line(4))[:25])  # a crash in the middle of the fifth line
    assert [m["iteration"] for m in run.read_metrics()] == [0, 1, 2, 3]

    kept = run.truncate_metrics(2)
    assert kept == [metrics_line(0), metrics_line(1)]
    assert run.metrics.read_text() == "".join(json.dumps(metrics_line(i)) + "\n" for i in range(2))
    run.append_metrics(metrics_line(2, resumed=True))
    assert run.read_metrics()[-1] == metrics_line(2, resumed=True)


def test_truncate_metrics_after_the_last_line_only_drops_the_cut_line(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.append_metrics(metrics_line(0))
    with open(run.metrics, "a", encoding="utf-8") as f:
        f.write('{"iteration": 1, "loss/po')
    assert run.truncate_metrics(10) == [metrics_line(0)]
    assert run.metrics.read_text() == json.dumps(metrics_line(0)) + "\n"


def test_metrics_of_a_run_without_any(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.read_metrics() == []
    assert run.truncate_metrics(0) == []
    assert run.metrics.read_text() == ""


LADDER_LINE = {"iteration": 1, "eval/version": 2, "eval/wins": 3, "eval/draws": 1, "eval/losses": 0}
"""A metrics line of an evaluation: the version it evaluated, and a match against the random mover."""


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"\xff\xfe garbage", "line 2 is not text (UTF-8)"),
        (b"[1, 2]", "line 2 is a JSON list, not an iteration's metrics (an object)"),
        (b"5", "line 2 is a JSON int, not an iteration's metrics"),
        (b"", "line 2 is not JSON"),
        (b'{"loss/policy": 1.0}', "line 2: field iteration is missing"),
        (b'{"iteration": -1}', "line 2: field iteration must be an int >= 0, got -1"),
        (b'{"iteration": true}', "line 2: field iteration must be an int >= 0, got True"),
        (
            json.dumps(LADDER_LINE | {"eval/losses": -4}).encode(),
            "line 2: field eval/losses must be an int >= 0, got -4",
        ),
        (json.dumps(LADDER_LINE | {"eval/version": 1.5}).encode(), "line 2: field eval/version must be an int >= 0"),
        (
            json.dumps({"iteration": 1, "eval_v0/wins": 2}).encode(),
            "field eval_v0/draws is missing (beside eval_v0/wins)",
        ),
        (
            json.dumps({"iteration": 1, "time/wall": "1 s"}).encode(),
            "line 2: field time/wall must be a number, got '1 s'",
        ),
    ],
)
def test_a_damaged_metrics_line_is_one_error_naming_the_file_the_line_and_the_field(
    tmp_path: Path, line: bytes, error: str
) -> None:
    run = RunDir(tmp_path)
    run.append_metrics(metrics_line(0))
    with open(run.metrics, "ab") as f:
        f.write(line + b"\n" + json.dumps(metrics_line(2)).encode() + b"\n")
    before = run.metrics.read_bytes()
    for read in (run.read_metrics, lambda: run.truncate_metrics(1)):
        with pytest.raises(RunError) as raised:
            read()
        assert str(raised.value).startswith(f"{run.metrics}: ") and error in str(raised.value)
    assert run.metrics.read_bytes() == before  # never answered from the lines before it


def test_a_last_line_without_its_newline_is_left_out_only_where_a_crash_could_have_cut_it(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.append_metrics(metrics_line(0))
    whole = run.metrics.read_bytes()
    run.metrics.write_bytes(whole + b"\0" * 40)  # a file system that lost the last write's data
    assert run.read_metrics() == [metrics_line(0)]
    run.metrics.write_bytes(whole + json.dumps(metrics_line(1)).encode())  # cut just before its newline
    assert run.read_metrics() == [metrics_line(0), metrics_line(1)]
    for tail, error in [(b'{"iteration": 1, "loss/policy": "\xc3\xa9', "line 2 is not JSON"),
                        (b"\xff\xfe", "line 2 is not text"), (b"[1]", "line 2 is a JSON list")]:  # fmt: skip
        run.metrics.write_bytes(whole + tail)  # no write of asp leaves these
        with pytest.raises(RunError, match=error):
            run.read_metrics()


def test_metrics_that_cannot_be_read_are_a_run_error(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.metrics.mkdir()
    with pytest.raises(RunError, match="metrics.jsonl: cannot be read: Is a directory"):
        run.read_metrics()


# -- curves ----------------------------------------------------------------------------------


def test_curves_png_is_written(tmp_path: Path) -> None:
    history = [metrics_line(0), metrics_line(1, **{"eval/score": 0.6, "eval/elo_low": 10.0, "eval/elo_high": 120.0})]
    target = plot_curves(history, tmp_path / "curves.png")
    assert target == tmp_path / "curves.png"
    data = target.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    assert sorted(os.listdir(tmp_path)) == ["curves.png"]  # written atomically, no temp file left
    # Again, over the old one, and for a history without any evaluation yet.
    plot_curves([metrics_line(0)], target)
    assert target.read_bytes().startswith(PNG_MAGIC) and target.read_bytes() != data


@pytest.mark.slow
def test_curves_leave_pyplot_alone() -> None:
    # pyplot's global figure registry is not thread-safe, and the session plots in a thread.
    code = (
        "import sys, tempfile\n"
        "from asp.app.run.curves import plot_curves\n"
        "plot_curves([{'iteration': 0, 'loss/policy': 1.0}], tempfile.mkdtemp() + '/curves.png')\n"
        "sys.exit('matplotlib.pyplot' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr or "curves imported matplotlib.pyplot"


# -- a training session ----------------------------------------------------------------------


def _longest_gap(ticks: list[float], start: float, end: float) -> float:
    """The longest time between two turns of the event loop that overlaps ``start .. end``."""
    return max((b - a for a, b in zip(ticks, ticks[1:], strict=False) if b > start and a < end), default=end - start)


@pytest.mark.timeout(300)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_session_writes_checkpoints_and_curves_while_its_event_loop_keeps_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a 110 MB checkpoint is copied and written, or the curves are drawn, the loop (which
    collects the shards of the next iteration) keeps turning: each runs off the loop's thread,
    and the loop turns while it runs."""
    spans: dict[str, list[tuple[float, float]]] = {"copy": [], "checkpoint": [], "curves": []}
    threads: set[int] = set()

    def timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spans[name].append((started, time.perf_counter()))

        return timed_call

    monkeypatch.setattr(asp.app.run.directory, "save_atomic", timed("checkpoint", asp.app.run.directory.save_atomic))
    monkeypatch.setattr(asp.app.session, "checkpoint_state", timed("copy", asp.app.session.checkpoint_state))
    call = Writer.call

    def writer_call(writer: Writer, func: Callable[..., Any], *args: Any) -> Any:
        # the curves are drawn in the session's writer process: timed from the waiting thread
        name = getattr(func, "__name__", "")  # a game run writes its games with a partial
        return (timed("curves", call) if name == "plot_history" else call)(writer, func, *args)

    monkeypatch.setattr(Writer, "call", writer_call)
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.002)

    cfg = tiny_config(iterations=2, network={"hidden": 1024})
    run = RunDir(tmp_path / "run")
    ticking = asyncio.create_task(ticker())
    try:
        history = await train_session(run, GameRun(cfg), resume=False, workers=1)
    finally:
        ticking.cancel()
    assert [m["iteration"] for m in history] == [0, 1]
    assert load_checkpoint(run.checkpoint)["next_iteration"] == 2
    # two checkpoints, and the weights of versions 0 and 2 kept
    assert [len(spans["copy"]), len(spans["checkpoint"]), len(spans["curves"])] == [2, 4, 2]
    assert run.curves.read_bytes().startswith(b"\x89PNG")
    assert threading.get_ident() not in threads
    # A blocked loop would not turn at all while the work ran. (A window of a few tens of
    # milliseconds can hold one long gap on a busy machine without anything blocking it.)
    for name, windows in spans.items():
        for start, end in windows:
            gap = _longest_gap(ticks, start, end)
            assert gap < max(end - start, 0.1), f"{name}: the loop stood still {gap:.3f} s of {end - start:.3f} s"
    # What the metrics file says is what the session measured.
    assert run.read_metrics() == history
    assert all(line["time/artefacts"] > 0 for line in history)


@pytest.mark.timeout(300)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_session_cancelled_once_its_metrics_line_is_written_still_writes_that_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metrics line comes first, and a resume drops what its checkpoint lacks: the two are
    written together, or a cancellation between them would lose a finished iteration."""
    loop = asyncio.get_running_loop()
    sessions: list[asyncio.Task[Any]] = []
    append_metrics = RunDir.append_metrics

    def append_then_cancel(self: RunDir, line: dict[str, Any]) -> None:
        append_metrics(self, line)
        loop.call_soon_threadsafe(sessions[0].cancel)

    monkeypatch.setattr(RunDir, "append_metrics", append_then_cancel)
    run = RunDir(tmp_path / "run")
    cfg = tiny_config(iterations=3)
    sessions.append(asyncio.create_task(train_session(run, GameRun(cfg), resume=False, workers=1)))
    with pytest.raises(asyncio.CancelledError):
        await sessions[0]
    assert [m["iteration"] for m in run.read_metrics()] == [0]
    assert load_checkpoint(run.checkpoint)["next_iteration"] == 1


@pytest.mark.timeout(300)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_training_goes_on_while_an_evaluation_plays_and_the_iterations_are_saved_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An evaluation overlaps the next iterations: it is no reason for training to wait. Each
    evaluation below waits (up to a minute) for the next two iterations to have been trained
    (the saves of the iterations between wait behind it)."""
    trained: list[int] = []
    overlapped: dict[int, bool] = {}
    train, evaluate = Trainer.train, asp.app.session.evaluate

    def counted_train(self: Trainer, *args: Any, **kwargs: Any) -> Any:
        trained.append(len(trained))
        return train(self, *args, **kwargs)

    async def evaluate_later(game: GameRun, selfplay: Any, model: Any, version: int, *rest: Any, **named: Any) -> Any:
        if version + 1 < game.cfg.iterations:  # the last two versions have no two iterations after them
            deadline = time.monotonic() + 60
            while len(trained) <= version + 1 and time.monotonic() < deadline:  # noqa: ASYNC110 (counted in the trainer's thread)
                await asyncio.sleep(0.05)
            overlapped[version] = len(trained) > version + 1
        return await evaluate(game, selfplay, model, version, *rest, **named)

    monkeypatch.setattr(Trainer, "train", counted_train)
    monkeypatch.setattr(asp.app.session, "evaluate", evaluate_later)
    run = RunDir(tmp_path / "run")
    cfg = tiny_config(iterations=4, eval_every=1)
    history = await train_session(run, GameRun(cfg), resume=False, workers=1)
    assert overlapped == {1: True, 2: True}
    assert [line["iteration"] for line in history] == [0, 1, 2, 3]
    assert [line["eval/version"] for line in history] == [1, 2, 3, 4]
    assert run.read_metrics() == history
    assert load_checkpoint(run.checkpoint)["next_iteration"] == 4


@pytest.mark.timeout(300)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_resume_keeps_the_whole_metrics_lines_before_one_that_a_crash_cut(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    cfg = tiny_config(iterations=1, eval_every=100)
    first = await train_session(run, GameRun(cfg), resume=False, workers=1)
    run.metrics.write_text(run.metrics.read_text() + json.dumps(metrics_line(1))[:25])  # the next line, cut by a crash
    resumed = await train_session(run, GameRun(tiny_config(iterations=2, eval_every=100)), resume=True, workers=1)
    assert [line["iteration"] for line in resumed] == [0, 1] and resumed[0] == first[0]
    assert run.read_metrics() == resumed
    assert run.metrics.read_text() == "".join(json.dumps(line) + "\n" for line in resumed)


@pytest.mark.asyncio
async def test_a_save_stopped_before_its_first_step_leaves_no_coroutine_never_awaited() -> None:
    """Ctrl-C can land between queueing an iteration's save and the save's first step: the
    session's exit cancels it then, and nothing of it may be left to warn at the next
    garbage collection (the warning would be printed under ``asp train``'s one line)."""
    told: list[str] = []
    saver = asp.app.session._Saver(
        None, None, [], None, None, engine=None, notify=lambda kind, fields: told.append(kind)
    )  # type: ignore[arg-type]
    begun: list[int] = []

    async def write(iteration: int) -> dict[str, Any]:
        begun.append(iteration)
        return {"iteration": iteration}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saver.queue(lambda: write(0), 0)
        await asyncio.sleep(0)  # the first save runs
        saver.queue(lambda: write(1), 1)
        saver.queue(lambda: write(2), 2)  # the stop comes before either's first step
        await saver.__aexit__(KeyboardInterrupt, KeyboardInterrupt(), None)
        gc.collect()
    assert begun == [0] and told == ["iteration"]
    assert [str(w.message) for w in caught] == []


def test_a_plot_that_fails_is_reported_not_raised(tmp_path: Path) -> None:
    """The writer process draws the curves; a failure comes back as text for a warning."""
    from asp.app.run.curves import plot_history as _plot

    assert _plot([{"iteration": 0, "loss/policy": 1.0}], tmp_path / "curves.png") is None
    failure = _plot([{"iteration": 0}], tmp_path / "missing" / "curves.png")
    assert failure is not None and "FileNotFoundError" in failure


@pytest.mark.asyncio
async def test_the_loop_watch_sees_a_stall_and_a_garbage_collection() -> None:
    class Node:
        def __init__(self) -> None:
            self.other: Node | None = None

    async with asp.app.loop_watch.LoopWatch() as watch:
        await asyncio.sleep(0.05)  # let it start
        time.sleep(0.08)  # noqa: ASYNC251 (on purpose: the loop held, a stall)
        await asyncio.sleep(0.05)
        cycles = [Node() for _ in range(50_000)]
        for a, b in zip(cycles, cycles[1:], strict=False):
            a.other, b.other = b, a
        del cycles
        gc.collect()
        assert watch.take() >= 0.07
        assert watch.gc_pause() > 0.0
        assert watch.take() < 0.07 and watch.gc_pause() == 0.0  # each take starts afresh


def test_endings_count_the_models_outcomes_by_termination_and_leave_out_what_is_not_scored() -> None:
    def game(result: float, termination: str, first: str = MODEL, second: str = "opponent") -> Record:
        return Record(0, "", [], result, termination, first, second, 0)

    records = [
        game(0.5, "max_plies"),  # cut at the ply cap: drawn
        game(0.0, "rules", first="opponent", second=MODEL),  # the model wins second
        game(1.0, "rules", first="opponent", second=MODEL),  # and loses second
        game(0.5, "rules"),
        game(0.5, "engine_failure"),  # not scored
        game(1.0, "rules", first=MODEL, second=MODEL),  # self-play: no side to score
    ]
    assert endings(records) == {"draw/max_plies": 1, "draw/rules": 1, "loss/rules": 1, "win/rules": 1}
