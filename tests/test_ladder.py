"""The rating ladder (asp.app.evaluation.ladder): a Bradley-Terry fit over every game of a run's
evaluations finds the strengths that played them, anchored at the random mover, with 95%
intervals that hold them; it reads a run's metrics lines and says what they show."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from asp.app.cli import main
from asp.app.evaluation.elo import score_from_elo
from asp.app.evaluation.ladder import (
    Pairing,
    fit_ladder,
    fit_ratings,
    ladder_metrics,
    ladder_table,
    ladder_text,
    pairings_of,
    past_versions,
)
from asp.errors import ConfigError

TRUE = {"random": 0.0, "greedy": 250.0, "v0": -50.0, "v8": 400.0, "v16": 600.0}
MET = [("greedy", "random"), ("v8", "random"), ("v8", "greedy"), ("v8", "v0"), ("v16", "random"),
       ("v16", "greedy"), ("v16", "v0"), ("v16", "v8")]  # fmt: skip


def simulated(games: int, seed: int) -> list[Pairing]:
    """``games`` games of each pair that met, from the true strengths (draws included)."""
    rng = random.Random(seed)
    pairings = []
    for player, opponent in MET:
        expected = score_from_elo(TRUE[player] - TRUE[opponent])
        draw = 0.8 * expected * (1 - expected)  # most between equals; half a point each keeps the expectation
        counts = [0, 0, 0]
        for _ in range(games):
            x = rng.random()
            counts[0 if x < expected - draw / 2 else 1 if x < expected + draw / 2 else 2] += 1
        pairings.append(Pairing(player, opponent, *counts))
    return pairings


def test_the_fit_finds_the_strengths_that_played_and_its_intervals_hold_them() -> None:
    covered = total = 0
    for seed in range(20):
        ratings = fit_ratings(simulated(200, seed))
        assert ratings["random"].elo == 0.0
        for name, rating in ratings.items():
            if name != "random":
                total += 1
                covered += rating.low <= TRUE[name] <= rating.high
                assert abs(rating.elo - TRUE[name]) < 120, (name, rating)
    assert covered / total >= 0.85  # 95% intervals: about 95 of 100 hold the truth


def test_more_games_narrow_the_intervals() -> None:
    few, many = fit_ratings(simulated(40, 1)), fit_ratings(simulated(400, 1))
    for name in ("greedy", "v8", "v16", "v0"):
        assert many[name].high - many[name].low < few[name].high - few[name].low


def test_a_perfect_score_is_finite_the_side_of_a_pairing_does_not_matter_and_strangers_are_left_out() -> None:
    ratings = fit_ratings([Pairing("v4", "random", 40, 0, 0), Pairing("x", "y", 3, 0, 0)])
    assert list(ratings) == ["v4", "random"] and 400 < ratings["v4"].elo < 2000
    one = fit_ratings([Pairing("v4", "random", 30, 4, 6), Pairing("v8", "v4", 20, 0, 20)])
    other = fit_ratings([Pairing("random", "v4", 6, 4, 30), Pairing("v4", "v8", 20, 0, 20)])
    assert one == other
    with pytest.raises(ConfigError, match="games of 'random'"):
        fit_ratings([Pairing("v4", "greedy", 3, 0, 0)])


def test_a_version_that_beat_version_0_is_above_it_though_their_ratings_overlap() -> None:
    # Both perfect against the anchor: each rating is known loosely, their difference well.
    ladder = fit_ladder([Pairing("v10", "random", 20, 0, 0), Pairing("v10", "v0", 20, 0, 0)])
    v10, v0 = ladder.ratings["v10"], ladder.ratings["v0"]
    assert v10.low < v0.high  # the ratings' intervals overlap
    above = ladder.difference("v10", "v0")
    assert above.low > 0 and above.elo == pytest.approx(v10.elo - v0.elo)
    line = {"eval/version": 10, "eval/wins": 20, "eval/draws": 0, "eval/losses": 0,
            "eval_v0/wins": 20, "eval_v0/draws": 0, "eval_v0/losses": 0}  # fmt: skip
    text = ladder_text(line | ladder_metrics([line]))
    assert text is not None and ", above v0 by +" in text
    even = {"eval/version": 2, "eval/wins": 10, "eval/draws": 0, "eval/losses": 10,
            "eval_v0/wins": 10, "eval_v0/draws": 0, "eval_v0/losses": 10}  # fmt: skip
    assert ", cannot tell yet from v0: +0 [95%: -" in str(ladder_text(even | ladder_metrics([even])))


def test_an_evaluation_plays_the_latest_kept_version_before_it() -> None:
    assert past_versions([0, 8, 16, 20], 20) == [16] and past_versions([0, 8, 16, 20], 17) == [16]
    assert past_versions([0, 4], 4) == [0] and past_versions([0], 0) == []
    assert past_versions([], 4) == []  # a run resumed from before versions were kept


def test_metrics_lines_become_a_ladder_and_a_table() -> None:
    lines = [
        {"iteration": 3, "eval/version": 4, "eval/wins": 30, "eval/draws": 4, "eval/losses": 6,
         "eval_greedy/wins": 10, "eval_greedy/draws": 2, "eval_greedy/losses": 28,
         "eval_v0/wins": 35, "eval_v0/draws": 0, "eval_v0/losses": 5},
        {"iteration": 4},  # not evaluated
        {"iteration": 7, "eval/version": 8, "eval/wins": 38, "eval/draws": 2, "eval/losses": 0,
         "eval_sf/engine": "stockfish skill 0", "eval_sf/wins": 1, "eval_sf/draws": 0, "eval_sf/losses": 19,
         "eval_v4/wins": 25, "eval_v4/draws": 5, "eval_v4/losses": 10},
        {"iteration": 0, "eval/score": 1.0, "eval/wins": 4, "eval/draws": 0, "eval/losses": 0},  # before the ladder
    ]  # fmt: skip
    pairings = pairings_of(lines)
    assert {(p.player, p.opponent) for p in pairings} == {
        ("v4", "random"), ("v4", "greedy"), ("v4", "v0"), ("v8", "random"), ("v8", "stockfish skill 0"), ("v8", "v4")
    }  # fmt: skip
    metrics = ladder_metrics(lines[:3])
    assert set(metrics["ladder"]) == {"random", "greedy", "v0", "v4", "v8", "stockfish skill 0"}
    assert metrics["ladder/elo"] == metrics["ladder"]["v8"][0] > metrics["ladder"]["v4"][0]
    assert metrics["ladder/elo_low"] < metrics["ladder/elo"] < metrics["ladder/elo_high"]
    table = ladder_table(lines, "runs/x").splitlines()
    assert table[0] == "ladder of runs/x: Bradley-Terry over 220 games, the random mover = 0 (95% intervals)"
    assert [row.split()[0] for row in table[1:]][:2] == ["stockfish", "v8"] and len(table) == 7
    with pytest.raises(ConfigError, match="no evaluation to rate yet"):
        ladder_table([{"iteration": 0}], "runs/x")


EVALUATED = {"iteration": 3, "eval/version": 4, "eval/wins": 30, "eval/draws": 4, "eval/losses": 6}


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (b"\xff\xfe\n", "metrics.jsonl: line 2 is not text (UTF-8)"),
        (b"[1, 2]\n", "metrics.jsonl: line 2 is a JSON list, not an iteration's metrics"),
        (b"5\n", "metrics.jsonl: line 2 is a JSON int"),
        (json.dumps(EVALUATED | {"eval/draws": -4}).encode() + b"\n", "line 2: field eval/draws must be an int >= 0"),
        (
            json.dumps({"iteration": 4, "eval/version": 8, "eval/wins": 1}).encode() + b"\n",
            "field eval/draws is missing",
        ),
        (b"\xff\xfe", "metrics.jsonl: line 2 is not text (UTF-8)"),  # the last line: no crash leaves these bytes
    ],
)
def test_the_ladder_of_a_damaged_metrics_file_is_one_line_naming_the_line_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: bytes, error: str
) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(json.dumps(EVALUATED).encode() + b"\n" + damage)
    assert main(["eval", str(tmp_path), "--ladder"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"asp eval: {tmp_path / 'metrics.jsonl'}: ") and err.count("\n") == 1, err
    assert error in err


def test_the_ladder_leaves_out_a_last_line_being_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As a resume drops a line that a crash cut, the ladder rates the whole lines: a run still
    training may be writing its next one."""
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps(EVALUATED) + "\n")
    assert main(["eval", str(tmp_path), "--ladder"]) == 0
    whole = capsys.readouterr().out
    metrics.write_text(json.dumps(EVALUATED) + "\n" + json.dumps(EVALUATED | {"iteration": 7})[:30])
    assert main(["eval", str(tmp_path), "--ladder"]) == 0
    assert capsys.readouterr().out == whole
