"""``asp eval RUN --vs random|stockfish|RUN2``: its line, its PGN, and its usage errors.

The checkpoints are written directly in the format ``asp train`` saves (``checkpoint_state``
of a Trainer on a 16-wide, block-less TinyChess): a training run would cost ~20 s each, and
these tests are about the evaluation. The command runs in this process (``main``), except once
as a subprocess, the way a user runs it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers import asp, assert_pgn_extract_accepts, pgn_games
from run_helpers import read_metrics, untrained_state

from asp.app.cli import main
from asp.app.evaluation.elo import match_result
from asp.app.run.directory import CHECKPOINT
from asp.app.run_config import defaults_for
from asp.util.atomic import save_atomic

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LINE = (
    r"\(version {version}\) against {opponent}: score (\d\.\d{{3}}) \(\+(\d+) =(\d+) -(\d+) of {games}\), "
    r"Elo (?:([+-]\d+) \[95%: ([+-]\d+), ([+-]\d+)\]|([<>]) ([+-]\d+) \(95%\))"
)


def make_run(path: Path, *, version: int, seed: int) -> Path:
    """A run directory holding a checkpoint of model ``version`` (an untrained tiny TinyChess)."""
    cfg = dataclasses.replace(defaults_for("tinychess"), seed=seed, network={"hidden": 16, "blocks": 0})
    path.mkdir(parents=True)
    save_atomic(untrained_state(cfg, version=version, seed=seed), path / CHECKPOINT)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("runs")
    return make_run(base / "first", version=3, seed=1), make_run(base / "second", version=5, seed=2)


def eval_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(["eval", *argv]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out.strip()
    assert "\n" not in out, out
    return out


def usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("asp eval: ") and "\n" not in err, err
    return err


def check_counts(found: re.Match[str], games: int) -> None:
    score = float(found.group(1))
    wins, draws, losses = (int(found.group(i)) for i in (2, 3, 4))
    assert wins + draws + losses == games
    assert score == pytest.approx((wins + 0.5 * draws) / games, abs=1e-3)
    if found.group(8) is not None:  # all but at most half a point won or lost: a one-sided bound
        assert found.group(8) == (">" if score > 0.5 else "<") and min(score, 1.0 - score) <= 0.5 / games + 1e-9
        return
    elo, low, high = (int(found.group(i)) for i in (5, 6, 7))
    assert low <= elo <= high


@pytest.mark.parametrize(("wins", "draws", "losses"), [(0, 1, 3), (3, 1, 0), (4, 0, 0), (0, 0, 4), (2, 1, 1)])
def test_check_counts_takes_every_line_a_match_of_four_games_can_print(wins: int, draws: int, losses: int) -> None:
    # Half a point from either end is a one-sided bound too (an untrained model's one draw in 4).
    line = f"(version 3) against x: {match_result(wins=wins, draws=draws, losses=losses).describe()}"
    found = re.search(LINE.format(version=3, opponent="x", games=4), line)
    assert found, line
    check_counts(found, 4)


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_eval_against_stockfish_in_two_workers_prints_its_line_and_writes_the_pgn(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], pgn_extract: str
) -> None:
    pgn = tmp_path / "eval.pgn"
    argv = [str(runs[0]), "--vs", "stockfish", "--games", "4", "--nodes", "50", "--max-plies", "20",
            "--workers", "2", "--pgn", str(pgn)]  # fmt: skip
    line = eval_line(capsys, argv)
    found = re.search(LINE.format(version=3, opponent="stockfish skill 0 nodes 50", games=4), line)
    assert found and line.endswith(f"; engine failures: 0; wrote {pgn}"), line
    check_counts(found, 4)
    games = pgn_games(pgn)
    assert [g.headers["Opponent"] for g in games] == ["stockfish skill 0 nodes 50"] * 4
    assert {g.headers["Event"] for g in games} == {"asp match"}
    # Each of the first two openings, with the model as White and then as Black.
    assert [g.headers["White"] == "asp model v3" for g in games] == [True, False, True, False]
    assert games[0].headers["FEN"] == games[1].headers["FEN"] != games[2].headers["FEN"]
    assert_pgn_extract_accepts(pgn, games=4, pgn_extract=pgn_extract)


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_eval_against_another_checkpoint_names_it_with_its_version(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgn = tmp_path / "match.pgn"
    first, second = runs
    line = eval_line(capsys, [str(first), "--vs", str(second), "--games", "4", "--max-plies", "20", "--pgn", str(pgn)])
    found = re.search(LINE.format(version=3, opponent=re.escape(f"{second} (version 5)"), games=4), line)
    assert found, line
    check_counts(found, 4)
    games = pgn_games(pgn)
    assert {g.headers["Opponent"] for g in games} == {"asp model v5 of second"}
    assert {g.headers["OpponentVersion"] for g in games} == {"5"} and {g.headers["ModelVersion"] for g in games} == {
        "3"
    }


@pytest.mark.timeout(60)
def test_eval_against_the_random_mover_is_the_default(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    line = eval_line(capsys, [str(runs[0]), "--games", "4", "--max-plies", "10", "--from-start"])
    found = re.search(LINE.format(version=3, opponent="the random mover", games=4), line)
    assert found and "engine failures" not in line, line
    check_counts(found, 4)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--vs", "stockfish", "--skill", "25"], "--skill must be an int in 0..20, got 25"),
        (["--vs", "stockfish", "--nodes", "0"], "--nodes must be an int in 1..1000000000, got 0"),
        (["--vs", "stockfish", "--move-time", "-1"], "--move-time must be None or a number of seconds"),
        (["--vs", "stockfish", "--depth", "0"], "--depth must be an int in 1..100, got 0"),
        (["--depth", "1"], "--depth applies to --vs stockfish or --vs uci only, not --vs random"),
        (["--skill", "3"], "--skill applies to --vs stockfish or --vs uci only, not --vs random"),
    ],
)
def test_bad_engine_options_are_usage_errors_naming_the_option(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    assert named in usage_error(capsys, [str(runs[0]), *options])


@pytest.mark.parametrize("version", ["-1", "abc", "", "\u00b2", "3.0"])
def test_a_version_that_is_no_int_is_named_as_such(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], version: str
) -> None:
    # once: "no checkpoint there", as if RUN@VERSION were a file's name
    run = str(runs[0])
    for argv in ([f"{run}@{version}"], [run, "--vs", f"{run}@{version}"]):
        err = usage_error(capsys, argv)
        assert err == (
            f"asp eval: {run}@{version}: VERSION must be a version that {run} keeps, an int >= 0 (it keeps: none), "
            f"got {version!r}"
        )


@pytest.mark.parametrize("vs", ["winblock", "greedyy", ""])
def test_a_mover_the_game_does_not_have_is_named_with_the_movers_it_has(
    runs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    vs: str,
) -> None:
    # once: "winblock: no checkpoint there", where --vs greedy of a Connect Four run listed its movers
    monkeypatch.chdir(tmp_path)
    err = usage_error(capsys, [str(runs[0]), "--vs", vs])
    assert (
        err
        == f"asp eval: --vs {vs}: not an opponent of tinychess; its movers: random, greedy, material2, stockfish, uci, "
        "or a RUN"
    )
    if vs:  # '--vs ""' once said "checkpoint.pt: no checkpoint there"
        assert usage_error(capsys, [str(runs[0]), "--vs", f"./{vs}"]).endswith(f"{vs}: no checkpoint there")  # a path


def test_a_missing_engine_is_a_one_line_usage_error(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    err = usage_error(capsys, [str(runs[0]), "--vs", "stockfish", "--engine", str(tmp_path / "nope")])
    assert "--engine" in err and "nope" in err
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("asp.tinychess.engine.ENGINE_DIRS", (str(tmp_path / "games"),))
    err = usage_error(capsys, [str(runs[0]), "--vs", "stockfish"])
    assert "no Stockfish found" in err and "--engine PATH" in err


@pytest.mark.timeout(120)
@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_broken_engine_ends_the_match_in_one_line_in_one_worker_or_several(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    # Once, in two workers, EngineFailed was a shard failure retried three times (68 s), and
    # the last line said "play_fn raised EngineFailed" after 15 lines of traceback text.
    engine = tmp_path / "broken.sh"
    engine.write_text("#!/bin/sh\necho broken >&2\nexit 1\n")
    engine.chmod(0o755)
    argv = [str(runs[0]), "--vs", "uci", "--engine", str(engine), "--games", "12", "--workers", workers]
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err.strip()  # the engine's failures as warnings (in this process), then the line
    assert "Traceback" not in err and "play_fn raised" not in err, err
    last = err.splitlines()[-1]
    assert last.startswith(f"asp eval: broken.sh nodes 100 ({engine}) failed 3 times in a row; the last: "), err


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_a_bad_skill_exits_with_status_2_from_the_command_line(runs: tuple[Path, Path], tmp_path: Path) -> None:
    result = asp("eval", str(runs[0]), "--vs", "stockfish", "--skill", "21", cwd=tmp_path, seconds=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "asp eval: --skill must be an int in 0..20, got 21", result.stderr


# -- asp train --eval-vs stockfish -----------------------------------------------------------


def _train(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    options = ["--iterations", "1", "--games", "4", "--max-plies", "20", "--eval-games", "4", "--hidden", "16"]
    return asp("train", *options, "--workers", "2", "--no-progress", "--run-dir", "run", *extra, cwd=tmp_path)


@pytest.mark.timeout(200)
@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_train_evaluates_against_stockfish_too_and_records_it(tmp_path: Path) -> None:
    done = _train(tmp_path, "--eval-vs", "stockfish", "--eval-depth", "1")
    assert done.returncode == 0, done.stderr
    (line,) = read_metrics(tmp_path / "run")
    assert line["eval_sf/engine"] == "stockfish skill 0 depth 1"
    assert line["eval_sf/games"] + line["eval_sf/engine_failures"] == 4
    assert 0.0 <= line["eval_sf/score"] <= 1.0 and line["eval_sf/elo_low"] <= line["eval_sf/elo_high"]
    assert sum(line["eval_sf/endings"].values()) == line["eval_sf/games"]
    assert "eval/score" in line  # the random mover too
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["eval_engine"]["depth"] == 1 and stored["eval_engine"]["nodes"] is None
    assert stored["eval_engine"]["path"] is None


@pytest.mark.timeout(200)
@pytest.mark.slow
def test_train_without_the_engine_says_so_and_trains(tmp_path: Path) -> None:
    done = _train(tmp_path, "--eval-vs", "stockfish", "--engine", str(tmp_path / "no-such-engine"))
    assert done.returncode == 0, done.stderr
    text = " ".join((done.stdout + done.stderr).split())  # the console wraps long lines
    assert text.count("asp train: no evaluation against stockfish skill 0 nodes 100") == 1, text
    assert "no-such-engine' is not an executable file" in text
    (line,) = read_metrics(tmp_path / "run")
    assert "eval/score" in line and not any(key.startswith("eval_sf/") for key in line)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (("--eval-vs", "stockfish", "--eval-skill", "21"), "--eval-skill"),
        (("--eval-nodes", "5"), "--eval-nodes"),
        (("--eval-vs", "stockfish", "--eval-depth", "0"), "--eval-depth"),
        (("--eval-depth", "1"), "--eval-depth"),
    ],
)
def test_train_engine_options_are_checked_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], named: str
) -> None:
    assert main(["train", "--run-dir", str(tmp_path / "run"), *options]) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
