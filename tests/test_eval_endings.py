"""benchmarks/eval_endings.py replays a run's evaluation the way asp eval plays the model."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from eval_endings import endings_config, replayed  # noqa: E402

from asp.app.game_run import GameRun
from asp.app.run_config import defaults_for
from asp.games import MODEL, OPPONENT, Record
from asp.tinychess.game import TinyChessGame

CHESS = TinyChessGame()


def test_by_default_the_model_plays_the_runs_evaluation_with_its_search() -> None:
    cfg = defaults_for("tinychess")
    play = endings_config(cfg, CHESS, version=3, games=None, temperature=None, policy_only=False)
    assert play == GameRun(cfg, CHESS).eval_cfg(3)
    assert play.search is not None and play.search.simulations == 64


def test_policy_only_plays_the_network_alone() -> None:
    play = endings_config(defaults_for("tinychess"), CHESS, version=3, games=10, temperature=0.5, policy_only=True)
    assert (play.search, play.n_games, play.temperature) == (None, 10, 0.5)


def test_a_replay_names_the_rule_that_ended_a_game_and_counts_the_mates_in_one() -> None:
    start = CHESS.state_text(CHESS.start())
    moves = ["f2f3", "e7e5", "g2g4", "d8h4"]  # the fool's mate: the opponent (Black) mates
    fools = Record(0, start, [], 0.0, "rules", MODEL, OPPONENT, 0, moves=moves)
    cut = Record(1, start, [], 0.5, "max_plies", OPPONENT, MODEL, 0, moves=["e2e4"])
    ended, mates = replayed([fools, cut])
    assert ended == {"draw/max_plies": 1, "loss/checkmate": 1}
    assert mates == {"model": {"positions": 0, "played": 0}, "opponent": {"positions": 1, "played": 1}}


def test_another_mover_is_played_from_the_games_openings_as_the_runs_evaluations_play_it() -> None:
    cfg = defaults_for("tinychess")
    play = endings_config(cfg, CHESS, version=3, games=None, temperature=None, policy_only=True, opponent="greedy")
    assert play == dataclasses.replace(GameRun(cfg, CHESS).mover_match_cfg(3), search=None)
    assert play.openings and play.openings[0] == play.openings[1] != play.openings[2]
