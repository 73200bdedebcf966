"""Monte Carlo tree search with random rollouts over the game protocol: a mover that any game
has without writing one, and that a trained model does not beat at once as it beats the
random mover.

:class:`RolloutMCTSMover` is UCT (exploration constant 2, as OpenSpiel's ``MCTSBot``) whose
leaves are scored by one random playout to the end of the game; it plays the most visited
action, and a winning action at once where the game lists its ``winning`` ones. It needs
nothing of the game but the protocol, so it is as fast as the game's ``actions``, ``apply``
and ``outcome``: a few milliseconds a move for tic-tac-toe or Connect Four at 100
simulations, far more for a game of long playouts. Give it to a game of yours as one of its
``movers()``:

>>> import random
>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> mover = RolloutMCTSMover(RolloutConfig(simulations=100))
>>> wins = game.parse_state("445566")  # the first player wins at column 3 or 7
>>> game.action_text(wins, mover.choose(game, wins, random.Random(0)))
'3'
>>> blocks = game.parse_state("11223")  # the second player must block column 4
>>> game.action_text(blocks, mover.choose(game, blocks, random.Random(0)))
'4'
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from asp.games.checked import applied, legal_actions
from asp.games.movers import BaseMover
from asp.games.protocol import adjudicated, outcome, winning
from asp.util.checks import check_int, check_number

__all__ = ["RolloutConfig", "RolloutMCTSMover"]


@dataclass(frozen=True)
class RolloutConfig:
    """The settings of a :class:`RolloutMCTSMover`."""

    simulations: int = 100
    """Simulations a move, each a walk down the tree and one random playout (1 to 10**6)."""
    exploration: float = 2.0
    """UCT's exploration constant (0 to 100)."""
    max_plies: int = 1000
    """Plies after which a playout stops, scored as the game adjudicates a game cut there (1 to 10**6)."""

    def __post_init__(self) -> None:
        check_int("RolloutConfig.simulations", self.simulations, 1, 10**6)
        check_number("RolloutConfig.exploration", self.exploration, 0, 100)
        check_int("RolloutConfig.max_plies", self.max_plies, 1, 10**6)


@dataclass
class _Node:
    state: Any
    value: float | None
    """The game's result for the side to move here, once it is over; None while it goes on."""
    actions: list[int] = field(default_factory=list)
    children: dict[int, _Node] = field(default_factory=dict)
    visits: int = 0
    total: float = 0.0
    """Sum of the playouts' results, for the side that moved into this node."""


class RolloutMCTSMover(BaseMover):
    """UCT with random rollouts (see the module); ``opponent_name`` ``mcts<simulations>``."""

    def __init__(self, cfg: RolloutConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else RolloutConfig()
        self.opponent_name = f"mcts{self.cfg.simulations}"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        wins = winning(game, state)
        if wins:
            return int(wins[0])
        root = _Node(state, None, list(legal_actions(game, state)))
        if len(root.actions) == 1:
            return int(root.actions[0])
        for _ in range(self.cfg.simulations):
            self._simulate(game, root, rng)
        return max(root.actions, key=lambda a: root.children[a].visits if a in root.children else -1)

    def _simulate(self, game: Any, root: _Node, rng: random.Random) -> None:
        path, node = [root], root
        while node.value is None and len(node.children) == len(node.actions):
            node = self._select(node)
            path.append(node)
        if node.value is None:  # expand one untried action
            action = next(a for a in node.actions if a not in node.children)
            after = applied(game, node.state, action)
            value = outcome(game, after)
            child = _Node(after, value, [] if value is not None else list(legal_actions(game, after)))
            node.children[action] = child
            path.append(child)
            node = child
        # The result for the side to move at ``node``, then backed up, the sign flipping each ply
        result = node.value if node.value is not None else self._playout(game, node.state, rng)
        for visited in reversed(path):
            visited.visits += 1
            visited.total -= result  # the node's value for the side that moved into it
            result = -result

    def _select(self, node: _Node) -> _Node:
        scale = self.cfg.exploration * math.sqrt(math.log(node.visits))
        return max(
            node.children.values(),
            key=lambda child: child.total / child.visits + scale / math.sqrt(child.visits),
        )

    def _playout(self, game: Any, state: Any, rng: random.Random) -> float:
        """The result, for the side to move at ``state``, of a random game from there."""
        sign = 1.0
        for _ in range(self.cfg.max_plies):
            value = outcome(game, state)
            if value is not None:
                return sign * value
            actions = legal_actions(game, state)
            state = applied(game, state, actions[rng.randrange(len(actions))])
            sign = -sign
        return sign * adjudicated(game, state)
