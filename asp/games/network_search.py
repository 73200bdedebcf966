"""A :class:`~asp.games.Game` and its network as the search's :class:`~asp.search.SearchGame`.

The search asks the game for its rules (status, actions, apply; a position's status is
:func:`asp.games.protocol.status`, its outcome and winning actions) and the network for each
batch of new positions: one :meth:`Game.encode` and one forward pass per call. Both answers are
checked against the protocol (:mod:`asp.games.checked`) before the search, which knows no
game, takes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import numpy as np
import torch
from torch import nn

from asp.games.checked import applied, legal_actions, network_output
from asp.games.protocol import Game, State, status
from asp.search import Status

__all__ = ["NetworkSearch"]


class NetworkSearch(Generic[State]):
    """The search protocol over ``game``'s states, evaluated by ``net``.

    ``evaluations`` and ``boards`` count the network calls and the positions they carried:
    the batch occupancy of searches capped at ``batch`` positions a call is
    ``boards / (evaluations * batch)``. ``who`` says whose network it is in a message.

    :raises GameError: from :meth:`actions` and :meth:`evaluate`, where the game or its
        network breaks the protocol (:mod:`asp.games.checked`).
    :raises NonFiniteError: from :meth:`evaluate`, where the network's output is not finite.
    """

    def __init__(self, game: Game[State], net: nn.Module, *, who: str = "the network") -> None:
        self.game = game
        self.net = net
        self.who = who
        self.evaluations = 0
        self.boards = 0

    def status(self, state: State) -> Status:
        return status(self.game, state)

    def actions(self, state: State) -> Sequence[int]:
        return legal_actions(self.game, state)

    def apply(self, state: State, action: int) -> State:
        return applied(self.game, state, action)

    def evaluate(self, states: Sequence[State]) -> tuple[list[np.ndarray], list[float]]:
        with torch.inference_mode():
            logits, values = network_output(self.game, self.net, self.game.encode(states), len(states), who=self.who)
        self.evaluations += 1
        self.boards += len(states)
        return list(logits), values.tolist()
