"""The tree search with random playouts over the game protocol (asp.games.mcts): a mover any
game has, checked against the random mover and against OpenSpiel's own MCTSBot of the same
simulations, a yardstick asp did not write."""

from __future__ import annotations

import random
from typing import Any

import pytest

from asp.connect4 import ConnectFour
from asp.errors import ConfigError
from asp.games import RandomMover, RolloutConfig, RolloutMCTSMover
from asp.tinychess.game import TinyChessGame


def score(game: Any, mover: Any, opponent: Any, games: int, seed: int = 0) -> float:
    """``mover``'s points per game against ``opponent``, each game's first move alternating."""
    rng, points = random.Random(seed), 0.0
    for number in range(games):
        state, side = game.start(), number % 2
        while game.outcome(state) is None:
            player = mover if game.to_move(state) == side else opponent
            state = game.apply(state, player.choose(game, state, rng))
        value = game.outcome(state)
        points += ((value if game.to_move(state) == side else -value) + 1) / 2
    return points / games


def test_it_beats_the_random_mover_and_travels_as_its_config() -> None:
    mover = RolloutMCTSMover(RolloutConfig(simulations=50))
    rebuilt = type(mover)(mover.cfg)
    assert rebuilt.opponent_name == "mcts50" and rebuilt.cfg == mover.cfg
    assert score(ConnectFour(), rebuilt, RandomMover(), 8) == 1.0


@pytest.mark.slow
def test_it_holds_its_own_against_openspiels_mctsbot_of_as_many_simulations() -> None:
    from asp.openspiel import MCTSConfig, MCTSMover, OpenSpielGame

    game = OpenSpielGame("connect_four")  # OpenSpiel's own rules, and its C++ MCTSBot with its solver
    assert score(game, RolloutMCTSMover(RolloutConfig(100)), MCTSMover(MCTSConfig(100)), 30, seed=1) >= 0.4


def test_a_playout_cut_at_its_ply_cap_is_scored_as_the_game_adjudicates() -> None:
    game = TinyChessGame()
    state = game.parse_state("4k3/8/8/8/8/8/8/Q3K3 w - - 0 1")  # White a queen up: any playout wins on material
    mover = RolloutMCTSMover(RolloutConfig(simulations=20, max_plies=2))
    assert mover.choose(game, state, random.Random(0)) in game.actions(state)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"simulations": 0}, "RolloutConfig.simulations must be an int in 1..1000000, got 0"),
        ({"exploration": -1}, "RolloutConfig.exploration must be a number in [0, 100], got -1"),
        ({"max_plies": 0}, "RolloutConfig.max_plies must be an int in 1..1000000, got 0"),
    ],
)
def test_its_settings_are_checked(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("[", r"\[").replace("]", r"\]")):
        RolloutConfig(**fields)
