"""elo_from_score: the Elo difference a mean score implies, with its 95% interval."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asp.tinychess.evaluate import EloEstimate, elo_from_score

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
    r, mirror = elo_from_score(score, n_games=n), elo_from_score(1.0 - score, n_games=n)
    assert r.elo == pytest.approx(-mirror.elo, abs=1e-6)
    assert r.elo_low == pytest.approx(-mirror.elo_high, abs=1e-6)
    assert r.elo_high == pytest.approx(-mirror.elo_low, abs=1e-6)


@given(a=scores, b=scores, n=games)
def test_monotonic_a_higher_score_never_means_a_lower_elo(a: float, b: float, n: int) -> None:
    low, high = sorted((a, b))
    assert elo_from_score(low, n_games=n).elo <= elo_from_score(high, n_games=n).elo


def test_strictly_increasing_between_the_clamps() -> None:
    elos = [elo_from_score(k / 100, n_games=100).elo for k in range(1, 100)]
    assert all(x < y for x, y in zip(elos, elos[1:], strict=False))


@given(score=scores, n=games, draws=st.none() | st.floats(min_value=0.0, max_value=1.0))
def test_the_interval_is_finite_and_contains_the_estimate(score: float, n: int, draws: float | None) -> None:
    r = elo_from_score(score, n_games=n, draw_ratio=draws)
    assert all(math.isfinite(x) for x in (r.elo, r.elo_low, r.elo_high))
    assert r.elo_low <= r.elo <= r.elo_high


@pytest.mark.parametrize("n", [2, 10, 200, 10_000])
def test_perfect_and_zero_scores_are_clamped_to_finite_values(n: int) -> None:
    win, loss = elo_from_score(1.0, n_games=n), elo_from_score(0.0, n_games=n)
    # Clamped to half a point from the end: the Elo of a score of 1 - 0.5/n.
    assert win.elo == pytest.approx(-400 * math.log10(1 / (1 - 0.5 / n) - 1))
    assert loss.elo == pytest.approx(-win.elo)
    assert win.elo > 0 > loss.elo
    assert win.elo_high == pytest.approx(win.elo)  # nothing above the clamp
    assert win.elo_low < win.elo
    assert math.isfinite(win.elo_low) and math.isfinite(loss.elo_high)


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
