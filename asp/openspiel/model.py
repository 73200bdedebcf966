"""The network of an OpenSpiel game: shaped by the game's observation tensor.

Where the observation is planes over a board (``(channels, rows, columns)``: most board
games), a tower of residual 3x3 convolutions with global pooling over the board
(:class:`~asp.games.nets.PooledBlock`); where it is flat (mancala, oware, nim), a residual
MLP. Both end in a policy over the game's actions and a value in [-1, 1] for the side to move.
In a game won by k in a row (``connect_four``, ``tic_tac_toe``), the tower also sees the cells
that would complete a line of either side (``lines``, :func:`~asp.games.nets.line_threats`).

>>> import torch
>>> net = SpielNet(SpielNetConfig(planes=(5, 3, 3), features=45, actions=10))
>>> logits, value = net(torch.zeros(2, 45))
>>> logits.shape, value.shape
(torch.Size([2, 10]), torch.Size([2]))
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from asp.errors import ConfigError
from asp.games.nets import PooledBlock, ResidualBlock, line_threats
from asp.util.checks import check_int

__all__ = ["SpielNet", "SpielNetConfig"]


@dataclass(frozen=True)
class SpielNetConfig:
    """The shape of a :class:`SpielNet`; the network is rebuilt from this alone. The game
    sets ``planes``, ``features`` and ``actions``; a run sets the others (``[network]``)."""

    planes: tuple[int, int, int] | None
    """``(channels, rows, columns)`` of the input, None where it is flat."""
    features: int
    """Numbers of an input row (the channels times the board, where it is planes)."""
    actions: int
    """Width of the policy row: the game's ``action_size``."""
    hidden: int = 32
    """Channels of the convolutions, or width of the MLP (8 to 4096)."""
    tower: int = 4
    """Residual blocks (1 to 32): of convolutions over planes, of two linear layers otherwise."""
    player_planes: tuple[int, int] | None = None
    """The input's planes of the first player's stones and of the second's, which the network
    swaps when the second player moves (the plane before the last is asp's "the second player
    moves"): it sees the board from the mover's side. None: the input as it is."""
    lines: int = 0
    """In a game won by this many stones in a row (2 to 32; with ``player_planes``), the tower
    also sees, from those planes, the empty cells that would complete a line of the side to
    move and those of its opponent (:func:`~asp.games.nets.line_threats`). 0: not."""

    def __post_init__(self) -> None:
        check_int("SpielNetConfig.features", self.features, 1, 10**7)
        check_int("SpielNetConfig.actions", self.actions, 1, 10**7)
        check_int("SpielNetConfig.hidden", self.hidden, 8, 4096)
        check_int("SpielNetConfig.tower", self.tower, 1, 32)
        if self.planes is not None:
            channels, rows, columns = self.planes
            if channels * rows * columns != self.features:
                raise ConfigError(f"SpielNetConfig.planes {self.planes} do not hold its {self.features} features")
        pair = self.player_planes
        if pair is not None:
            if self.planes is None:
                raise ConfigError(
                    f"SpielNetConfig.player_planes: the input is flat, it has no planes to swap; got {pair!r}"
                )
            observed = self.planes[0] - 2
            planes_ok = isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] != pair[1]
            if not planes_ok or not all(type(plane) is int and 0 <= plane < observed for plane in pair):
                raise ConfigError(
                    f"SpielNetConfig.player_planes must be two different planes of the observation, "
                    f"0 to {observed - 1}, got {pair!r}"
                )
            object.__setattr__(self, "player_planes", tuple(pair))  # a list, as a config file gives it
        if self.lines:
            check_int("SpielNetConfig.lines", self.lines, 2, 32)
            if pair is None:
                raise ConfigError(
                    f"SpielNetConfig.lines {self.lines}: the lines are of each player's stones; "
                    "they need player_planes, the planes of those stones"
                )


class SpielNet(nn.Module):
    """Policy logits over the game's actions and a value in [-1, 1] for the side to move."""

    def __init__(self, cfg: SpielNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        width = cfg.hidden
        if cfg.planes is None:
            self.stem: nn.Module = nn.Linear(cfg.features, width)
            self.trunk = nn.Sequential(*(ResidualBlock(width) for _ in range(cfg.tower)))
            self.policy: nn.Module = nn.Linear(width, cfg.actions)
            self.value = nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 1))
            return
        channels, rows, columns = cfg.planes
        self.stem = nn.Conv2d(channels + (2 if cfg.lines else 0), width, 3, padding=1)
        self.trunk = nn.Sequential(*(PooledBlock(width) for _ in range(cfg.tower)))
        self.policy_conv = nn.Conv2d(width, 2, 1)
        self.policy = nn.Linear(2 * rows * columns, cfg.actions)
        self.value = nn.Sequential(nn.Linear(2 * width, 64), nn.ReLU(), nn.Linear(64, 1))
        self.movers_order: list[int] | None = None
        """The input's planes in the order the second player's positions are seen in."""
        if cfg.player_planes is not None:
            first, second = cfg.player_planes
            self.movers_order = list(range(channels))
            self.movers_order[first], self.movers_order[second] = second, first

    def planes(self, features: torch.Tensor) -> torch.Tensor:
        """``(B, C, rows, columns)``: the planes the tower sees from ``(B, features)`` inputs
        (a network of planes only): the input's, from the mover's side where the network has
        ``player_planes``, then, with ``lines``, the cells that complete a line of the side to
        move and those of its opponent."""
        if self.cfg.planes is None:
            raise ValueError("SpielNet.planes: this network's input is flat, it has no planes")
        planes = features.reshape(-1, *self.cfg.planes)
        if self.movers_order is not None:
            second_moves = planes[:, -2, :1, :1].unsqueeze(1) > 0.5
            planes = torch.where(second_moves, planes[:, self.movers_order], planes)
        if self.cfg.lines and self.cfg.player_planes is not None:
            first, second = self.cfg.player_planes  # the mover's stones, the opponent's: swapped above
            threats = line_threats(planes[:, first], planes[:, second], self.cfg.lines)
            planes = torch.cat([planes, threats], dim=1)
        return planes

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` of shapes ``(B, actions)`` and ``(B,)``."""
        if self.cfg.planes is None:
            h = self.trunk(torch.relu(self.stem(features)))
            return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)
        planes = self.planes(features)
        h = self.trunk(torch.relu(self.stem(planes)))
        logits = self.policy(torch.relu(self.policy_conv(h)).flatten(1))
        pooled = torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)
        return logits, torch.tanh(self.value(pooled)).squeeze(-1)
