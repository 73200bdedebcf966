"""benchmarks/eval_endings.py replays a run's evaluation the way asp eval plays the model."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from eval_endings import endings_config  # noqa: E402

from asp.app.run_config import RunConfig


def test_by_default_the_model_plays_the_runs_evaluation_with_its_search() -> None:
    cfg = RunConfig()
    play = endings_config(cfg, version=3, games=None, temperature=None, policy_only=False)
    assert play == cfg.eval_cfg(3)
    assert play.search is not None and play.search.simulations == 64


def test_policy_only_plays_the_network_alone_without_search_or_mate_rule() -> None:
    play = endings_config(RunConfig(), version=3, games=10, temperature=0.5, policy_only=True)
    assert (play.search, play.mate_in_one, play.n_games, play.temperature) == (None, False, 10, 0.5)
