"""The Connect Four network: a small residual MLP over the board's two planes.

>>> import torch
>>> net = C4Net()
>>> logits, value = net(torch.zeros(3, N_FEATURES))
>>> logits.shape, value.shape
(torch.Size([3, 7]), torch.Size([3]))
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from asp.checks import check_int
from asp.connect4.rules import HEIGHT, WIDTH
from asp.games.nets import ResidualBlock

__all__ = ["N_FEATURES", "C4Config", "C4Net"]

N_FEATURES = 2 * WIDTH * HEIGHT
"""The side to move's stones, then the opponent's, one 0/1 feature a cell."""


@dataclass(frozen=True)
class C4Config:
    """The shape of a :class:`C4Net`; the network is rebuilt from this alone."""

    hidden: int = 256
    """Width of the residual trunk (8 to 4096)."""
    blocks: int = 2
    """Residual blocks in the trunk, two linear layers each (0 to 32)."""

    def __post_init__(self) -> None:
        check_int("C4Config.hidden", self.hidden, 8, 4096)
        check_int("C4Config.blocks", self.blocks, 0, 32)


class C4Net(nn.Module):
    """Policy logits over the 7 columns and a value in [-1, 1] for the side to move."""

    def __init__(self, cfg: C4Config | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else C4Config()
        width = self.cfg.hidden
        self.stem = nn.Linear(N_FEATURES, width)
        self.trunk = nn.Sequential(*(ResidualBlock(width) for _ in range(self.cfg.blocks)))
        self.policy = nn.Linear(width, WIDTH)
        self.value = nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` of shapes ``(B, 7)`` and ``(B,)``."""
        h = self.trunk(torch.relu(self.stem(features)))
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)
