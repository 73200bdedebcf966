"""Fixed opponents for evaluation.

>>> import torch
>>> RandomMover()(torch.zeros(3, N_FEATURES))[0].abs().sum().item()
0.0
"""

from __future__ import annotations

import torch
from torch import nn

from asp.tinychess.features import N_FEATURES
from asp.tinychess.moves import POLICY_SIZE

__all__ = ["RandomMover"]


class RandomMover(nn.Module):
    """A uniformly random mover: equal logits for every move, so play samples uniformly
    among the legal moves (with ``mask_illegal=True``). It has no weights to train."""

    cfg = None
    opponent_name = "random"
    """Who it is, in the records of games against it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("_inputs", torch.tensor(N_FEATURES))  # documents the expected input width

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = features.shape[0]
        return torch.zeros(n, POLICY_SIZE, device=features.device), torch.zeros(n, device=features.device)
