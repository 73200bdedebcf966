"""Movers that every game has: the uniformly random mover, the bottom rung of evaluation.

A mover (:class:`~asp.games.Mover`) is a network without weights to asp's workers (it travels
as one), and chooses its moves from the rules alone.

>>> import random
>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> RandomMover().choose(game, game.start(), random.Random(0)) in range(7)
True
"""

from __future__ import annotations

import random
from typing import Any

import torch
from torch import nn

__all__ = ["RandomMover"]


class RandomMover(nn.Module):
    """Plays a legal action chosen uniformly at random."""

    cfg = None
    opponent_name = "random"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        actions = game.actions(state)
        return int(actions[rng.randrange(len(actions))])

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        raise TypeError("a mover chooses its moves with choose(); it has no forward pass")
