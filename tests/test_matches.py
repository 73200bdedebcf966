"""Matches played in rounds (asp.app.evaluation.matches): a match stops after the round whose score is
known closely enough, its games are the first games of the whole match, and matches played
at once come back by name, or raise the first failure as it is."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch

import asp.app.evaluation.matches
import asp.app.game_run
from asp import SelfPlay
from asp.app.evaluation.elo import match_result, match_result_of
from asp.app.evaluation.matches import ROUND_GAMES, Match, play_match, play_matches, score_interval, settled
from asp.connect4 import ConnectFour, WinBlockMover
from asp.errors import ConfigError
from asp.games import PlayConfig, RandomMover

GAME = ConnectFour()


@pytest.mark.parametrize(
    ("wins", "draws", "losses"), [(20, 0, 0), (0, 0, 40), (97, 2, 1), (50, 0, 50), (10, 80, 10), (1, 0, 0)]
)
def test_the_score_interval_holds_the_score_inside_0_and_1(wins: int, draws: int, losses: int) -> None:
    result = match_result(wins=wins, draws=draws, losses=losses)
    low, high = score_interval(result)
    assert 0.0 <= low <= result.score <= high <= 1.0


def test_a_match_is_settled_by_its_games_and_the_precision_asked() -> None:
    assert not settled(match_result(wins=20, draws=0, losses=0), 0.05)
    assert settled(match_result(wins=40, draws=0, losses=0), 0.05)
    assert settled(match_result(wins=0, draws=0, losses=40), 0.05)
    assert not settled(match_result(wins=50, draws=0, losses=50), 0.05)  # +-0.098
    assert settled(match_result(wins=50, draws=0, losses=50), 0.1)
    assert not settled(match_result(wins=1000, draws=0, losses=0), 0.0)  # 0: never
    assert settled(match_result(wins=1, draws=0, losses=0), 0.5)  # the widest interval is +-0.5


def _first_settled(records: list[object], precision: float) -> int:
    """Games the whole match's records would stop at: the first round that settles it."""
    for n in range(ROUND_GAMES, len(records), ROUND_GAMES):
        if settled(match_result_of(records[:n]), precision):  # type: ignore[arg-type]
            return n
    return len(records)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.asyncio
async def test_a_match_cut_short_is_the_start_of_the_match_played_out() -> None:
    torch.manual_seed(0)
    net = GAME.network()
    cfg = PlayConfig(GAME, n_games=100, seed=5, first_game=1000, temperature=0.0, samples=False)
    async with SelfPlay(workers=2) as selfplay:
        whole = await play_match(selfplay, net, WinBlockMover(), cfg, precision=0.0)
        cuts = {p: await play_match(selfplay, net, WinBlockMover(), cfg, precision=p) for p in (0.05, 0.5)}
        late = await play_match(selfplay, net, WinBlockMover(), cfg, precision=0.0, deadline=time.monotonic())
        both = await play_matches(
            selfplay, net, {"winblock": (WinBlockMover(), cfg), "random": (RandomMover(), cfg)}, precision=0.5
        )
        with pytest.raises(ConfigError, match="cannot be rebuilt"):  # as it is, not in an ExceptionGroup
            await play_matches(
                selfplay, net, {"fine": (RandomMover(), cfg), "bad": (torch.nn.Linear(3, 3), cfg)}, precision=0.5
            )
    assert [r.game_id for r in whole.records] == list(range(1000, 1100))
    assert whole.seconds > 0 and whole.worker_seconds > 0
    for precision, cut in cuts.items():
        n = _first_settled(whole.records, precision)
        assert [r.actions for r in cut.records] == [r.actions for r in whole.records[:n]], precision
    assert len(cuts[0.5].records) == ROUND_GAMES  # any score is known to +-0.5 after one round
    assert [r.actions for r in late.records] == [r.actions for r in whole.records[:ROUND_GAMES]]  # past its deadline
    # An untrained network loses every game to the win/block mover: 0 of 40 is 0 .. 0.09.
    assert match_result_of(whole.records).score == 0.0 and len(cuts[0.05].records) == 2 * ROUND_GAMES
    assert list(both) == ["winblock", "random"]
    assert [r.game_id for r in both["random"].records] == list(range(1000, 1000 + ROUND_GAMES))
    assert {r.opponent_name for r in both["random"].records} == {"random"}


@pytest.mark.asyncio
async def test_free_workers_take_the_games_of_the_match_given_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matches' calls get priorities in the order given, the last that asked for, so that
    the costliest match, given first, is shared between the workers that are free."""
    asked: dict[str, int] = {}

    async def recorded(selfplay: object, model: object, opponent: str, cfg: object, **options: int) -> Match:
        asked[opponent] = options["priority"]
        return Match([], 0.0, 0.0)

    monkeypatch.setattr(asp.app.evaluation.matches, "play_match", recorded)
    matches = {name: (name, None) for name in ("eval_v10", "eval", "eval_greedy")}
    played = await play_matches(None, None, matches, precision=0.1, priority=1)  # type: ignore[arg-type]
    assert asked == {"eval_v10": 3, "eval": 2, "eval_greedy": 1}
    assert list(played) == list(matches)


@pytest.mark.asyncio
@pytest.mark.parametrize("game", ["tinychess", "connect4"])
async def test_an_evaluation_gives_its_matches_against_past_versions_first(
    game: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from asp.app.evaluation.evaluate import evaluate
    from asp.app.game_run import GameRun
    from asp.app.run_config import defaults_for

    given: list[list[str]] = []

    async def recorded(selfplay: object, model: object, matches: dict[str, Any], **options: Any) -> dict[str, Match]:
        given.append(list(matches))
        return {name: Match([], 0.0, 0.0) for name in matches}

    monkeypatch.setattr(asp.app.evaluation.evaluate, "play_matches", recorded)
    monkeypatch.setattr(asp.app.evaluation.evaluate, "matches_metrics", lambda played: {})
    run = GameRun(defaults_for(game))
    network = run.new_model()
    await evaluate(run, None, network, 4, [(0, network), (2, network)])  # type: ignore[arg-type]
    assert given[0][:2] == ["eval_v0", "eval_v2"] and "eval" in given[0][2:]
