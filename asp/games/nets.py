"""Building blocks of the small networks asp's games ship: a residual MLP block, a residual
block of convolutions with global pooling over the board, and the cells that complete a line
(:func:`line_threats`, for the games won by k in a row).

>>> import torch
>>> ResidualBlock(8)(torch.zeros(2, 8)).shape
torch.Size([2, 8])
"""

from __future__ import annotations

import functools

import torch
from torch import nn

__all__ = ["PooledBlock", "ResidualBlock", "line_threats"]


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


@functools.cache
def _line_kernels(length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """``(4, 1, length, length)``: the lines of ``length`` cells through a square window (along
    the second axis, along the first, and the two diagonals), made on ``device``: a network
    that a trainer moved to a GPU computes there alone."""
    first = torch.arange(length, device=device).view(length, 1)
    second = torch.arange(length, device=device).view(1, length)
    along_second, along_first = (first == 0).expand(length, length), (second == 0).expand(length, length)
    lines = torch.stack([along_second, along_first, first == second, first + second == length - 1])
    return lines.to(dtype).unsqueeze(1)


def line_threats(own: torch.Tensor, other: torch.Tensor, length: int) -> torch.Tensor:
    """``(B, 2, H, W)``: the empty cells where a stone of ``own`` (plane 0), or of ``other``
    (plane 1), would complete a line of ``length`` in a row, a column or a diagonal, from the
    0/1 planes ``(B, H, W)`` of each side's stones: exact, by fixed convolutions, whether the
    cell can be played now or not (in Connect Four a threat's row and whether its column can
    reach it decide the game).

    >>> own = torch.zeros(1, 3, 3)
    >>> own[0, 0, 0] = own[0, 1, 1] = 1.0  # two of a diagonal of three
    >>> line_threats(own, torch.zeros(1, 3, 3), 3)[0, 0].nonzero().tolist()
    [[2, 2]]
    """
    pad = length - 1
    lines = _line_kernels(length, own.device, own.dtype)
    stones = torch.stack([own, other], dim=1)
    rows, columns = stones.shape[-2:]
    # stones of each side in every line (the board padded: the lines that stick out of it
    # count no stone there, and have no empty cell there either)
    counts = nn.functional.conv2d(stones.reshape(-1, 1, rows, columns), lines, padding=pad)
    counts = counts.reshape(-1, 2, 4, rows + pad, columns + pad)
    empty = 1.0 - own - other
    threats = []
    for mine, theirs in ((counts[:, 0], counts[:, 1]), (counts[:, 1], counts[:, 0])):
        one_short = ((mine == length - 1) & (theirs == 0)).to(own.dtype)  # a line that one stone completes
        # back from the lines to their cells (the adjoint of the convolution), the empty ones kept
        cells = nn.functional.conv_transpose2d(one_short, lines, padding=pad)
        threats.append((cells[:, 0] > 0).to(own.dtype) * empty)
    return torch.stack(threats, dim=1)
