"""A user's games that break one rule of the protocol each: tic-tac-toe (examples/tictactoe.py)
with one method or its network changed, for the tests of what asp checks of a game. A module of
its own, so that worker processes import it by name (``broken_games:NaNFromIteration2``)."""

from __future__ import annotations

from typing import ClassVar

import torch

from examples.tictactoe import Board, NetConfig, TicTacToe, TicTacToeNet

EMPTY_AFTER = 3
"""Plies after which :class:`NoActions` lists no action while its status says the game goes on."""


class OutOfRange(TicTacToe):
    """``actions`` lists action 9 too, outside ``range(action_size)``."""

    def actions(self, state: Board) -> list[int]:
        return [*super().actions(state), 9]


class Negative(TicTacToe):
    """``actions`` lists action -1 too, which numpy would read as the last logit."""

    def actions(self, state: Board) -> list[int]:
        return [-1, *super().actions(state)]


class NoActions(TicTacToe):
    """``actions`` lists nothing after :data:`EMPTY_AFTER` plies, while ``status`` says the game goes on."""

    def actions(self, state: Board) -> list[int]:
        return [] if len(state.moves) >= EMPTY_AFTER else super().actions(state)


class WideNet(TicTacToeNet):
    """Logits one wider than the game's nine actions."""

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = super().forward(features)
        return torch.cat([logits, logits[:, :1]], dim=1), value


class NarrowNet(TicTacToeNet):
    """Logits one narrower than the game's nine actions."""

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = super().forward(features)
        return logits[:, :8], value


class ColumnValueNet(TicTacToeNet):
    """A value of shape ``(B, 1)`` instead of ``(B,)``."""

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = super().forward(features)
        return logits, value.unsqueeze(1)


class NaNNet(TicTacToeNet):
    """NaN outputs (``broken``: the logits, the value or both) once it has taken ``nan_from``
    training steps: its count of steps is a buffer, so it travels with the weights."""

    nan_from: ClassVar[int] = 0
    broken: ClassVar[tuple[str, ...]] = ("logits", "value")

    def __init__(self, cfg: NetConfig | None = None) -> None:
        super().__init__(cfg)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = super().forward(features)
        steps = self.get_buffer("steps")
        broken = int(steps) >= self.nan_from
        if self.training:
            steps += 1
        if broken:
            logits = logits * torch.nan if "logits" in self.broken else logits
            value = value * torch.nan if "value" in self.broken else value
        return logits, value


class NaNValueNet(NaNNet):
    broken = ("value",)


class NaNFromTwoStepsNet(NaNNet):
    nan_from = 2


class WideLogits(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return WideNet(cfg)


class NarrowLogits(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return NarrowNet(cfg)


class ColumnValue(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return ColumnValueNet(cfg)


class NaNOutputs(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return NaNNet(cfg)


class NaNValue(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return NaNValueNet(cfg)


class NaNFromIteration2(TicTacToe):
    """NaN outputs from the network that two training steps made: with one step an iteration,
    the network of version 2, which plays and trains on iteration 2."""

    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return NaNFromTwoStepsNet(cfg)
