"""OpenSpiel's Monte Carlo tree search as an asp mover: an opponent that no network of asp's
plays, strong enough not to be saturated by a trained model.

:class:`MCTSMover` is OpenSpiel's C++ ``MCTSBot`` (UCT, exploration constant 2, random
rollouts, its solver on: proven wins and losses are played as such), a fresh bot every move,
seeded from the game's own random stream. OpenSpiel's games name it ``mcts100`` (100
simulations a move) among their movers, which every evaluation plays, and ``mctsN`` for any N
by name (``asp eval RUN --vs mcts1000``: 1,000, the yardstick of ``benchmarks/``).

>>> import random
>>> from asp.openspiel import OpenSpielGame
>>> game = OpenSpielGame("tic_tac_toe")
>>> state = game.parse_state("0 3 1 4")  # x to move wins at 2
>>> MCTSMover(MCTSConfig(100)).choose(game, state, random.Random(0))
2
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from asp.games.movers import BaseMover
from asp.util.checks import check_int

__all__ = ["MCTSConfig", "MCTSMover", "mcts_action"]


@dataclass(frozen=True)
class MCTSConfig:
    """The settings of an :class:`MCTSMover`."""

    simulations: int = 1000
    """Simulations a move (1 to 10**6)."""

    def __post_init__(self) -> None:
        check_int("MCTSConfig.simulations", self.simulations, 1, 10**6)


def mcts_action(spiel_game: Any, spiel_state: Any, simulations: int, seed: int) -> int:
    """The move of OpenSpiel's ``MCTSBot`` (random rollouts, UCT constant 2, solver on) at
    ``spiel_state``, a ``pyspiel.State`` of ``spiel_game`` whose game goes on."""
    import pyspiel

    evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
    bot = pyspiel.MCTSBot(spiel_game, evaluator, 2.0, simulations, 1000, True, seed, False)
    return int(bot.step(spiel_state))


class MCTSMover(BaseMover):
    """OpenSpiel's ``MCTSBot`` with ``cfg.simulations`` simulations a move, for an
    :class:`~asp.openspiel.OpenSpielGame`."""

    def __init__(self, cfg: MCTSConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else MCTSConfig()
        self.opponent_name = f"mcts{self.cfg.simulations}"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        if state.must_pass:
            return int(game.pass_action)
        return mcts_action(game.spiel_game, state.spiel, self.cfg.simulations, rng.getrandbits(31))
