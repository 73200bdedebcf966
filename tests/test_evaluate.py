"""Scores and Elo, both ways: elo_from_score (with its 95% interval), score_from_elo, match_result."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from asp.app.evaluation.elo import (
    EloEstimate,
    MatchResult,
    elo_from_score,
    match_result,
    match_result_of,
    score_from_elo,
)
from asp.errors import ConfigError
from asp.games import MODEL, OPPONENT, Record

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
games = st.integers(min_value=1, max_value=100_000)


def test_an_even_score_is_zero_elo_and_the_documented_example_holds() -> None:
    even = elo_from_score(0.5, n_games=200)
    assert even.elo == 0.0
    assert even.elo_low < 0.0 < even.elo_high
    assert even.elo_low == pytest.approx(-even.elo_high)
    r = elo_from_score(0.75, n_games=200)
    assert round(r.elo) == 191  # -400 log10(1/0.75 - 1)
    assert r.elo == pytest.approx(-400 * math.log10(1 / 0.75 - 1))


def test_the_estimate_keeps_what_it_was_given() -> None:
    r = elo_from_score(0.625, n_games=8, draw_ratio=0.25)
    assert isinstance(r, EloEstimate)
    assert (r.score, r.n_games) == (0.625, 8)


@given(score=scores, n=games)
def test_symmetric_a_score_and_its_complement_mirror_each_other(score: float, n: int) -> None:
    assume(min(score, 1.0 - score) >= 0.5 / n)  # a score of 0 or 1: the one-sided bound's test
    r, mirror = elo_from_score(score, n_games=n), elo_from_score(1.0 - score, n_games=n)
    assert r.elo == pytest.approx(-mirror.elo, abs=1e-6)
    assert r.elo_low == pytest.approx(-mirror.elo_high, abs=1e-6)
    assert r.elo_high == pytest.approx(-mirror.elo_low, abs=1e-6)


@given(a=scores, b=scores, n=games)
def test_monotonic_a_higher_score_never_means_a_lower_elo(a: float, b: float, n: int) -> None:
    low, high = sorted((a, b))
    assume(min(low, 1.0 - low) >= 0.5 / n and min(high, 1.0 - high) >= 0.5 / n)  # as above
    assert elo_from_score(low, n_games=n).elo <= elo_from_score(high, n_games=n).elo


def test_strictly_increasing_between_the_clamps() -> None:
    elos = [elo_from_score(k / 100, n_games=100).elo for k in range(1, 100)]
    assert all(x < y for x, y in zip(elos, elos[1:], strict=False))


@given(score=scores, n=games, draws=st.none() | st.floats(min_value=0.0, max_value=1.0))
def test_the_interval_is_finite_and_contains_the_estimate(score: float, n: int, draws: float | None) -> None:
    r = elo_from_score(score, n_games=n, draw_ratio=draws)
    assert all(math.isfinite(x) for x in (r.elo, r.elo_low, r.elo_high))
    assert r.elo_low <= r.elo <= r.elo_high


@pytest.mark.parametrize("n", [2, 10, 20, 200, 10_000])
def test_a_perfect_or_zero_score_gives_a_one_sided_bound(n: int) -> None:
    # Once clamped to half a point from the end: 20/20 then read "Elo +636 [95%: +395, +636]",
    # as 19/20 did, and looked like an estimate.
    win, loss = elo_from_score(1.0, n_games=n), elo_from_score(0.0, n_games=n)
    p = 0.05 ** (1 / n)  # the score at which n wins in n games had a 5% chance
    assert win.bound == ">" and win.elo_low == pytest.approx(400 * math.log10(p / (1 - p)))
    assert loss.bound == "<" and loss.elo_high == pytest.approx(-win.elo_low)
    # the estimate stays the score clamped to half a point from the end: it grows with the games won
    assert win.elo == win.elo_high == pytest.approx(-400 * math.log10(1 / (1 - 0.5 / n) - 1))
    assert match_result(wins=n, draws=0, losses=0).describe().endswith(f"Elo > {win.elo_low:+.0f} (95%)")
    assert match_result(wins=0, draws=0, losses=n).describe().endswith(f"Elo < {loss.elo_high:+.0f} (95%)")


def test_more_games_mean_a_narrower_interval_and_a_larger_clamp() -> None:
    widths = [(r.elo_high - r.elo_low) for r in (elo_from_score(0.6, n_games=n) for n in (10, 100, 1000))]
    assert widths[0] > widths[1] > widths[2] > 0
    clamps = [elo_from_score(1.0, n_games=n).elo for n in (10, 100, 1000)]
    assert clamps[0] < clamps[1] < clamps[2]


def test_draws_narrow_the_interval() -> None:
    unknown = elo_from_score(0.5, n_games=100)
    drawish = elo_from_score(0.5, n_games=100, draw_ratio=0.6)
    assert drawish.elo == unknown.elo == 0.0
    assert drawish.elo_high - drawish.elo_low < unknown.elo_high - unknown.elo_low


@pytest.mark.parametrize("n", [0, -1, -100])
def test_fewer_than_one_game_raises(n: int) -> None:
    with pytest.raises(ValueError, match="n_games"):
        elo_from_score(0.5, n_games=n)


@pytest.mark.parametrize(("kwargs", "field"), [({"score": 1.5}, "score"), ({"score": -0.1}, "score"),
                                               ({"score": math.nan}, "score"), ({"draw_ratio": 2.0}, "draw_ratio"),
                                               ({"n_games": 1.5}, "n_games")])  # fmt: skip
def test_values_outside_their_range_raise_config_error_naming_the_field(kwargs: dict[str, float], field: str) -> None:
    args: dict[str, float] = {"score": 0.5, "n_games": 10, **kwargs}
    with pytest.raises(ConfigError, match=field):
        elo_from_score(args["score"], n_games=args["n_games"], draw_ratio=args.get("draw_ratio"))  # type: ignore[arg-type]


def test_score_from_elo_known_values() -> None:
    assert score_from_elo(0.0) == 0.5
    assert score_from_elo(400.0) == pytest.approx(10 / 11)
    assert score_from_elo(-400.0) == pytest.approx(1 / 11)
    assert score_from_elo(1e9) == 1.0 and score_from_elo(-1e9) == 0.0  # no overflow


@given(score=st.floats(min_value=0.001, max_value=0.999))
def test_score_from_elo_inverts_elo_from_score(score: float) -> None:
    assert score_from_elo(elo_from_score(score, n_games=10_000).elo) == pytest.approx(score, abs=1e-9)


@given(elo=st.floats(min_value=-3000, max_value=3000))
def test_score_from_elo_is_symmetric(elo: float) -> None:
    assert score_from_elo(elo) + score_from_elo(-elo) == pytest.approx(1.0)


def test_match_result_counts_score_and_elo() -> None:
    m = match_result(wins=140, draws=20, losses=40)
    assert isinstance(m, MatchResult)
    assert (m.wins, m.draws, m.losses, m.games) == (140, 20, 40, 200)
    assert m.score == 0.75
    assert round(m.elo.elo) == 191
    assert m.elo == elo_from_score(0.75, n_games=200, draw_ratio=0.1)
    even = match_result(wins=30, draws=40, losses=30)
    assert even.score == 0.5 and even.elo.elo == 0.0
    assert even.elo.elo_low == pytest.approx(-even.elo.elo_high)


def test_match_result_of_mirrored_matches_mirror_each_other() -> None:
    a, b = match_result(wins=12, draws=5, losses=3), match_result(wins=3, draws=5, losses=12)
    assert a.score + b.score == pytest.approx(1.0)
    assert a.elo.elo == pytest.approx(-b.elo.elo)
    assert (a.elo.elo_low, a.elo.elo_high) == pytest.approx((-b.elo.elo_high, -b.elo.elo_low))


def test_all_wins_clamps_to_a_finite_elo() -> None:
    m = match_result(wins=50, draws=0, losses=0)
    assert m.score == 1.0 and m.elo.bound == ">"
    assert all(math.isfinite(x) for x in (m.elo.elo, m.elo.elo_low, m.elo.elo_high))
    assert m.elo.elo == pytest.approx(400 * math.log10((1 - 0.01) / 0.01))  # clamped to 1 - 0.5/50


def test_describe_is_the_line_asp_eval_prints() -> None:
    line = match_result(wins=169, draws=22, losses=9).describe()
    assert line == "score 0.900 (+169 =22 -9 of 200), Elo +382 [95%: +323, +462]"


@pytest.mark.parametrize(("counts", "field"), [((-1, 0, 1), "wins"), ((1, -2, 0), "draws"), ((0, 0, True), "losses"),
                                               ((0, 0, 0), "at least 1")])  # fmt: skip
def test_bad_match_counts_raise_config_error(counts: tuple[int, int, int], field: str) -> None:
    wins, draws, losses = counts
    with pytest.raises(ConfigError, match=field):
        match_result(wins=wins, draws=draws, losses=losses)


def _game(result: float, first: str, second: str) -> Record:
    return Record(0, "", [3], result, "max_plies", first, second, 1)


def test_match_result_of_records_scores_the_model_whichever_its_colour() -> None:
    records = [
        _game(1.0, MODEL, OPPONENT),  # win
        _game(1.0, OPPONENT, MODEL),  # loss
        _game(0.0, OPPONENT, MODEL),  # win
        _game(0.5, MODEL, OPPONENT),  # draw
    ]
    m = match_result_of(records)
    assert (m.wins, m.draws, m.losses, m.score) == (2, 1, 1, 0.625)
    with pytest.raises(ConfigError, match="self-play"):
        match_result_of([*records, _game(1.0, MODEL, MODEL)])
    with pytest.raises(ConfigError, match="at least 1"):
        match_result_of([])


def test_a_game_a_mover_failed_in_is_left_out_of_the_score_whatever_termination_it_names() -> None:
    def game(result: float, termination: str) -> Record:
        return Record(0, "", [], result, termination, MODEL, OPPONENT, 1, opponent_version=0)

    # MoveFailed(termination=...) may name any termination: "timeout" is a game's own
    records = [game(1.0, "rules"), game(0.5, "max_plies"), game(0.5, "timeout"), game(0.5, "engine_failure")]
    m = match_result_of(records)
    assert (m.wins, m.draws, m.losses, m.engine_failures) == (1, 1, 0, 2)
