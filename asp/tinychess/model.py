"""TinyChess, the default policy/value network: a small residual MLP.

An MLP rather than a convolutional net on purpose: on one CPU core a batch of boards through
~1M parameters of dense layers costs a few tens of microseconds per board, so self-play stays
bound by the game rules rather than by the network.

>>> model = TinyChess(ModelConfig())
>>> sum(p.numel() for p in model.parameters())
1021379
>>> logits, value = model(torch.zeros(2, N_FEATURES))
>>> logits.shape, value.shape
(torch.Size([2, 1858]), torch.Size([2]))
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from asp.games.nets import ResidualBlock
from asp.tinychess.features import N_FEATURES
from asp.tinychess.moves import POLICY_SIZE
from asp.util.checks import check_int

__all__ = ["ModelConfig", "TinyChess"]


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a :class:`TinyChess` network; the network is rebuilt from this alone."""

    hidden: int = 256
    """Width of the residual trunk (8 to 4096)."""

    blocks: int = 2
    """Residual blocks in the trunk, each two linear layers (0 to 32)."""

    value_hidden: int = 64
    """Width of the value head's hidden layer (1 to 4096)."""

    def __post_init__(self) -> None:
        for name, low, high in (("hidden", 8, 4096), ("blocks", 0, 32), ("value_hidden", 1, 4096)):
            check_int(f"ModelConfig.{name}", getattr(self, name), low, high)


class TinyChess(nn.Module):
    """Policy logits over the move vocabulary and a value in [-1, 1] for the side to move.

    The input is :func:`asp.tinychess.features.encode_boards`'s output.
    """

    def __init__(self, cfg: ModelConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else ModelConfig()
        width = self.cfg.hidden
        self.stem = nn.Linear(N_FEATURES, width)
        self.trunk = nn.Sequential(*(ResidualBlock(width) for _ in range(self.cfg.blocks)))
        self.policy = nn.Linear(width, POLICY_SIZE)
        self.value = nn.Sequential(
            nn.Linear(width, self.cfg.value_hidden), nn.ReLU(), nn.Linear(self.cfg.value_hidden, 1)
        )

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(policy_logits, value)`` of shapes ``(B, POLICY_SIZE)`` and ``(B,)``."""
        h = self.trunk(torch.relu(self.stem(features)))
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)
