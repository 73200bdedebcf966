"""OpenSpiel's Monte Carlo tree search as a Connect Four mover: the yardstick of
``benchmarks/bench_learning.py``, by name (``asp eval RUN --vs mcts1000``).

:class:`MCTSMover` replays the position's columns on OpenSpiel's own ``connect_four`` and
plays the move of its C++ ``MCTSBot`` (UCT, exploration constant 2, random rollouts, its
solver on: proven wins and losses are played as such), a fresh bot every move, seeded from
the game's own random stream. It needs open-spiel (``pip install -e ".[openspiel]"``).

>>> import random
>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> state = game.parse_state("445566")  # X to move wins at 3 or 7
>>> game.action_text(state, MCTSMover(100).choose(game, state, random.Random(0))) in ("3", "7")
True
"""

from __future__ import annotations

import random
from typing import Any

from asp.connect4.rules import Board
from asp.errors import ConfigError
from asp.games.movers import BaseMover
from asp.util.checks import check_int

__all__ = ["MCTSMover"]


class MCTSMover(BaseMover):
    """OpenSpiel's ``MCTSBot`` with ``simulations`` simulations a move (1 to 10**6), kept as its
    ``cfg``: a worker rebuilds it as ``MCTSMover(cfg)``.

    :raises ConfigError: open-spiel is not installed, or ``simulations`` is out of range.
    """

    def __init__(self, simulations: int = 1000) -> None:
        super().__init__()
        check_int("MCTSMover.simulations", simulations, 1, 10**6)
        try:
            import pyspiel  # noqa: F401 (here, to say so when the mover is asked for)
        except ImportError:
            raise ConfigError(
                f'mcts{simulations}: needs open-spiel, OpenSpiel\'s MCTSBot (pip install -e ".[openspiel]")'
            ) from None
        self.cfg = self.simulations = simulations
        self.opponent_name = f"mcts{simulations}"

    def choose(self, game: Any, state: Board, rng: random.Random) -> int:
        import pyspiel

        spiel_game = pyspiel.load_game("connect_four")
        spiel_state = spiel_game.new_initial_state()
        for column in state.moves:
            spiel_state.apply_action(column)
        seed = rng.getrandbits(31)
        evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
        bot = pyspiel.MCTSBot(spiel_game, evaluator, 2.0, self.simulations, 1000, True, seed, False)
        return int(bot.step(spiel_state))
