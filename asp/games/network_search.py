"""A :class:`~asp.games.Game` and its network as the search's :class:`~asp.search.SearchGame`.

The search asks the game for its rules (status, actions, apply) and the network for each
batch of new positions: one :meth:`Game.encode` and one forward pass per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import numpy as np
import torch
from torch import nn

from asp.games.protocol import Game, State
from asp.search import Status

__all__ = ["NetworkSearch"]


class NetworkSearch(Generic[State]):
    """The search protocol over ``game``'s states, evaluated by ``net``.

    ``evaluations`` and ``boards`` count the network calls and the positions they carried:
    the batch occupancy of searches capped at ``batch`` positions a call is
    ``boards / (evaluations * batch)``.
    """

    def __init__(self, game: Game[State], net: nn.Module) -> None:
        self.game = game
        self.net = net
        self.evaluations = 0
        self.boards = 0

    def status(self, state: State) -> Status:
        return self.game.status(state)

    def actions(self, state: State) -> Sequence[int]:
        return self.game.actions(state)

    def apply(self, state: State, action: int) -> State:
        return self.game.apply(state, action)

    def evaluate(self, states: Sequence[State]) -> tuple[list[np.ndarray], list[float]]:
        with torch.inference_mode():
            logits, values = self.net(self.game.encode(states))
        self.evaluations += 1
        self.boards += len(states)
        return list(logits.float().numpy()), values.float().tolist()
