"""Building blocks of the small networks asp's games ship: a residual MLP block, and a
residual block of convolutions with global pooling over the board.

>>> import torch
>>> ResidualBlock(8)(torch.zeros(2, 8)).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["PooledBlock", "ResidualBlock"]


class ResidualBlock(nn.Module):
    """Two linear layers of ``width`` with a skip connection: ``relu(x + fc2(relu(fc1(x))))``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.fc2(torch.relu(self.fc1(x))))


class PooledBlock(nn.Module):
    """A residual block of two 3x3 convolutions over the board, the first one's output biased
    by a linear map of its channels' means and maxima over the board (global pooling, as
    KataGo's: every cell sees what happens anywhere on the board). Its last convolution starts
    at zero, so a new block passes its input through."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.pool = nn.Linear(2 * channels, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        nn.init.zeros_(self.conv2.weight)
        nn.init.zeros_(self.conv2.bias)  # type: ignore[arg-type]  # (bias=True: a tensor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv1(x))
        pooled = torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)
        h = torch.relu(h + self.pool(pooled)[:, :, None, None])
        return torch.relu(x + self.conv2(h))
