"""OpenSpiel's MCTSBot as a Connect Four mover by name (asp.connect4.mcts): ``asp eval RUN --vs
mctsN`` plays the benchmarks' yardstick; without open-spiel, one line says what it needs."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from asp.connect4 import ConnectFour
from asp.connect4.mcts import MCTSMover
from asp.errors import ConfigError
from asp.games.movers import mover_named

pytest.importorskip("pyspiel")


def test_mcts_of_any_simulations_by_name() -> None:
    game = ConnectFour()
    mover = game.mover("mcts1000")
    assert isinstance(mover, MCTSMover) and mover.opponent_name == "mcts1000" and mover.simulations == 1000
    assert game.mover("mcts") is None and game.mover("mctsx") is None and game.mover("lookahead") is None
    assert mover_named(game, "mcts50").opponent_name == "mcts50"
    # It travels to a worker as type(mover)(mover.cfg): before, the worker's played 1,000.
    rebuilt = type(mover)(mover_named(game, "mcts50").cfg)
    assert (rebuilt.simulations, rebuilt.opponent_name) == (50, "mcts50")
    with pytest.raises(ConfigError, match=r"MCTSMover.simulations must be an int in 1..1000000, got 0"):
        game.mover("mcts0")


def test_it_wins_blocks_and_plays_legal_moves_to_the_end() -> None:
    game, mover = ConnectFour(), MCTSMover(200)
    wins = game.parse_state("445566")  # X to move wins at 3 or 7
    assert game.action_text(wins, mover.choose(game, wins, random.Random(0))) in ("3", "7")
    blocks = game.parse_state("11223")  # O to move: X wins at 4 unless O plays there
    assert game.action_text(blocks, mover.choose(game, blocks, random.Random(0))) == "4"
    state, rng = game.start(), random.Random(3)
    while game.outcome(state) is None:
        action = mover.choose(game, state, rng) if len(state.moves) % 2 else rng.choice(game.actions(state))
        assert action in game.actions(state)
        state = game.apply(state, action)


def test_without_open_spiel_it_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # import pyspiel raises ImportError
    said = 'mcts1000: needs open-spiel, OpenSpiel\'s MCTSBot (pip install -e ".[openspiel]")'
    with pytest.raises(ConfigError) as raised:
        ConnectFour().mover("mcts1000")
    assert str(raised.value) == said


def test_asp_eval_plays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from run_helpers import kept_checkpoint

    from asp.app.cli import main
    from asp.app.run_config import GameRunConfig

    cfg = GameRunConfig(game="connect4", eval_search=2, network={"hidden": 8, "tower": 1})
    kept = str(kept_checkpoint(tmp_path / "v000000.pt", cfg, version=0))
    assert main(["eval", kept, "--vs", "mcts20", "--games", "2", "--search", "2"]) == 0
    assert "against the mcts20 mover" in capsys.readouterr().out
