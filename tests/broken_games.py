"""A user's games that break one rule of the protocol each: tic-tac-toe (examples/tictactoe.py)
with one method or its network changed, for the tests of what asp checks of a game. A module of
its own, so that worker processes import it by name (``broken_games:NaNFromIteration2``)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
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


class NumpyActions(TicTacToe):
    """``actions`` gives numpy's ints: a sound game (asp takes them as ints)."""

    def actions(self, state: Board) -> list[Any]:
        return [np.int64(a) for a in super().actions(state)]


class BoolAction(TicTacToe):
    """``actions`` gives action 1 as ``True``."""

    def actions(self, state: Board) -> list[Any]:
        return [True if a == 1 else a for a in super().actions(state)]


class FloatAction(TicTacToe):
    """``actions`` gives action 1 as ``1.0``."""

    def actions(self, state: Board) -> list[Any]:
        return [1.0 if a == 1 else a for a in super().actions(state)]


class DuplicateAction(TicTacToe):
    """``actions`` lists its first action twice."""

    def actions(self, state: Board) -> list[int]:
        actions = super().actions(state)
        return [actions[0], *actions]


class OccupiedLegal(TicTacToe):
    """``actions`` lists the cells played too, which ``apply`` refuses (ValueError)."""

    def actions(self, state: Board) -> list[int]:
        return sorted({*super().actions(state), *state.moves})


class ApplyRaises(TicTacToe):
    """``apply`` raises on the legal action 8."""

    def apply(self, state: Board, action: int) -> Board:
        if action == 8:
            raise IndexError("list index out of range")
        return super().apply(state, action)


class ApplyRaisesLate(TicTacToe):
    """``apply`` raises on action 8 at the seventh ply: past the plies at which the check
    before play applies every action."""

    def apply(self, state: Board, action: int) -> Board:
        if action == 8 and len(state.moves) == 6:
            raise KeyError("no cell")
        return super().apply(state, action)


class ApplyChangesItsArgument(TicTacToe):
    """``apply`` writes the move into its argument as well as into the new state."""

    def apply(self, state: Board, action: int) -> Board:
        after = super().apply(state, action)
        object.__setattr__(state, "moves", after.moves)
        return after


class OutcomeTwo(TicTacToe):
    """``outcome`` gives 2 for a win, -2 for a loss."""

    def outcome(self, state: Board) -> float | None:
        value = super().outcome(state)
        return None if value is None else 2 * value


class EncodeShort(TicTacToe):
    """``encode`` gives one row too few for more than one position."""

    def encode(self, states: Any) -> torch.Tensor:
        rows = super().encode(states)
        return rows[:-1] if len(states) > 1 else rows


class EncodeLong(TicTacToe):
    """``encode`` gives one row too many."""

    def encode(self, states: Any) -> torch.Tensor:
        rows = super().encode(states)
        return torch.cat([rows, rows[:1]])


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


class DoubledValueNet(TicTacToeNet):
    """Values twice the network's: outside [-1, 1]."""

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = super().forward(features)
        return logits, 2 * value + 1.5


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


class ValueOutOfRange(TicTacToe):
    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return DoubledValueNet(cfg)


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
