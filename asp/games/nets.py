"""Building blocks of the small networks asp's games ship: a residual MLP block.

>>> import torch
>>> ResidualBlock(8)(torch.zeros(2, 8)).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ResidualBlock"]


class ResidualBlock(nn.Module):
    """Two linear layers of ``width`` with a skip connection: ``relu(x + fc2(relu(fc1(x))))``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.fc2(torch.relu(self.fc1(x))))
