"""The Connect Four network: a 4x4 convolution over five planes of the board, then a small
residual MLP.

From the two planes of :meth:`asp.connect4.ConnectFour.encode` (the side to move's stones, the
opponent's) the network derives three more, exactly, with fixed kernels: the empty cells
that would complete a four of the side to move, those of the opponent (playable now or not:
a threat's row and whether its column can reach it decide Connect Four), and the cells
playable now.

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

from asp.connect4.rules import HEIGHT, WIDTH
from asp.games.nets import PooledBlock, ResidualBlock, line_threats
from asp.util.checks import check_int

__all__ = ["N_FEATURES", "N_PLANES", "C4Config", "C4Net", "planes_of"]

N_FEATURES = 2 * WIDTH * HEIGHT
"""The side to move's stones, then the opponent's, one 0/1 feature a cell."""
N_PLANES = 5
"""Planes the network sees: the two of the features, the threats of either side, the cells
playable now."""


def planes_of(features: torch.Tensor) -> torch.Tensor:
    """``(B, 5, 7, 6)``: the planes of the network (:data:`N_PLANES`) from ``(B, 84)`` features.

    >>> from asp.connect4 import ConnectFour
    >>> game = ConnectFour()
    >>> planes = planes_of(game.encode([game.parse_state("445566")]))
    >>> [(c, r) for c, r in planes[0, 2].nonzero().tolist()]  # the side to move's threats
    [(2, 0), (6, 0)]
    """
    stones = features.reshape(-1, 2, WIDTH, HEIGHT)
    threats = line_threats(stones[:, 0], stones[:, 1], 4)
    empty = 1.0 - stones.sum(dim=1)
    below = torch.cat([torch.ones_like(empty[:, :, :1]), 1.0 - empty[:, :, :-1]], dim=2)
    return torch.cat([stones, threats, (empty * below).unsqueeze(1)], dim=1)


@dataclass(frozen=True)
class C4Config:
    """The shape of a :class:`C4Net`; the network is rebuilt from this alone."""

    hidden: int = 256
    """Width of the trunk (8 to 4096): of the residual MLP's layers, or, with a ``tower``, of
    its convolutions (channels)."""
    blocks: int = 2
    """Residual blocks in the trunk, two linear layers each (0 to 32)."""
    channels: int = 16
    """Channels of the 4x4 convolution over the board that feeds the trunk (1 to 256): every
    four-in-a-row window of the board fits in its kernel."""
    tower: int = 0
    """Residual blocks of 3x3 convolutions with global pooling over the board, ``hidden``
    channels wide, instead of the 4x4 convolution and the MLP (0: none, the MLP; 1 to 32).
    ``blocks`` and ``channels`` are the MLP's."""

    def __post_init__(self) -> None:
        check_int("C4Config.hidden", self.hidden, 8, 4096)
        check_int("C4Config.blocks", self.blocks, 0, 32)
        check_int("C4Config.channels", self.channels, 1, 256)
        check_int("C4Config.tower", self.tower, 0, 32)


class _Tower(nn.Module):
    """The convolutional trunk and heads of a :class:`C4Net` with ``cfg.tower`` blocks."""

    def __init__(self, cfg: C4Config) -> None:
        super().__init__()
        width = cfg.hidden
        self.stem = nn.Conv2d(N_PLANES + 1, width, 3, padding=1)
        self.blocks = nn.Sequential(*(PooledBlock(width) for _ in range(cfg.tower)))
        self.policy_conv = nn.Conv2d(width, 2, 1)
        self.policy = nn.Linear(2 * WIDTH * HEIGHT, WIDTH)
        self.value = nn.Sequential(nn.Linear(2 * width, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.blocks(torch.relu(self.stem(planes)))
        logits = self.policy(torch.relu(self.policy_conv(h)).flatten(1))
        pooled = torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)
        return logits, torch.tanh(self.value(pooled)).squeeze(-1)


class C4Net(nn.Module):
    """Policy logits over the 7 columns and a value in [-1, 1] for the side to move."""

    def __init__(self, cfg: C4Config | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else C4Config()
        if self.cfg.tower:
            self.tower = _Tower(self.cfg)
            return
        width = self.cfg.hidden
        # The planes and a plane of ones (the board's edge is then seen through the padding),
        # padded by 3 cells: every 4x4 window that holds a cell of the board, 10 x 9 of them.
        self.windows = nn.Conv2d(N_PLANES + 1, self.cfg.channels, 4, padding=3)
        self.stem = nn.Linear(self.cfg.channels * (WIDTH + 3) * (HEIGHT + 3), width)
        self.trunk = nn.Sequential(*(ResidualBlock(width) for _ in range(self.cfg.blocks)))
        self.policy = nn.Linear(width, WIDTH)
        self.value = nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` of shapes ``(B, 7)`` and ``(B,)``."""
        planes = planes_of(features)
        planes = torch.cat([planes, torch.ones_like(planes[:, :1])], dim=1)
        if self.cfg.tower:
            logits, value = self.tower(planes)
            return logits, value
        h = torch.relu(self.windows(planes)).flatten(1)
        h = self.trunk(torch.relu(self.stem(h)))
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)
