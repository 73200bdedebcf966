"""Tic-tac-toe as an asp game (:class:`asp.games.Game`): the whole game in one module.

This is the example of bringing your own game to asp: copy the module, change the rules,
the encoding and the network, and train it with

    asp train --game examples.tictactoe:TicTacToe

A position is a :class:`Board`; an action is a cell, 0-8, row by row from the top left
(``row * 3 + column``). In text, cells are numbered 1-9 (``5`` is the centre) and a position
is written as the cells played from the empty board (``519``).

>>> game = TicTacToe()
>>> state = game.parse_state("1425")
>>> [game.action_text(state, a) for a in game.winning(state)]
['3']
>>> state = game.apply(state, 2)
>>> print(game.show(state))
X X X
O O .
. . .
>>> game.state_text(state), game.outcome(state)
('14253', -1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from asp.games import PlayConfig, RandomMover, Symmetry, play_games
from asp.util.checks import check_int

__all__ = ["Board", "NetConfig", "TicTacToe", "TicTacToeNet"]

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
"""The eight lines of three cells: rows, columns, diagonals."""


@dataclass(frozen=True)
class Board:
    """A position. Frozen: :meth:`TicTacToe.apply` returns a new one."""

    cells: tuple[int, ...] = (0,) * 9
    """The cells, ``row * 3 + column``, row 0 at the top: 0 empty, 1 X (the first player), 2 O."""
    moves: tuple[int, ...] = ()
    """The actions played from the empty board."""


# The symmetries of the square, each a function at the module's top level (it is pickled to the
# worker processes) that maps a batch of encodings (B, 18) seen as (B, plane, row, column).
# Rotations turn anticlockwise; mirror swaps left and right, flip top and bottom.
def rotate90(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).rot90(1, (2, 3)).reshape(features.shape)


def rotate180(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).rot90(2, (2, 3)).reshape(features.shape)


def rotate270(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).rot90(3, (2, 3)).reshape(features.shape)


def mirror(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).flip(3).reshape(features.shape)


def flip(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).flip(2).reshape(features.shape)


def transpose(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).transpose(2, 3).reshape(features.shape)


def antitranspose(features: torch.Tensor) -> torch.Tensor:
    return features.reshape(-1, 2, 3, 3).transpose(2, 3).rot90(2, (2, 3)).reshape(features.shape)


def _cell_images(features: Callable[[torch.Tensor], torch.Tensor]) -> tuple[int, ...]:
    """Where a symmetry sends each cell, read off its feature map (a lone stone per cell, moved),
    so that a symmetry's actions always agree with its features."""
    return tuple(int(cell) for cell in features(torch.eye(9, 18))[:, :9].argmax(dim=1))


SYMMETRIES = tuple(
    Symmetry(f.__name__, f, _cell_images(f))
    for f in (rotate90, rotate180, rotate270, mirror, flip, transpose, antitranspose)
)
"""The seven symmetries of the board other than the identity."""


class TicTacToe:
    """The game of tic-tac-toe, and its default network (:class:`TicTacToeNet`)."""

    name = "tictactoe"
    action_size = 9

    def start(self) -> Board:
        return Board()

    def to_move(self, state: Board) -> int:
        return len(state.moves) % 2

    def outcome(self, state: Board) -> float | None:
        cells, mine = state.cells, 1 + self.to_move(state)
        if any(cells[a] == cells[b] == cells[c] == 3 - mine for a, b, c in LINES):
            return -1.0  # the previous mover made three in a row
        return 0.0 if 0 not in cells else None

    def winning(self, state: Board) -> list[int]:
        """The cells that make three in a row at once, so that the search plays them without
        searching (asked only while the game goes on; a game may leave this method out)."""
        cells, mine = state.cells, 1 + self.to_move(state)
        winning = {i for line in LINES for i in line if cells[i] == 0 and [cells[j] for j in line].count(mine) == 2}
        return sorted(winning)

    def actions(self, state: Board) -> list[int]:
        return [i for i, cell in enumerate(state.cells) if cell == 0]

    def apply(self, state: Board, action: int) -> Board:
        if not 0 <= action < 9 or state.cells[action]:
            raise ValueError(f"action {action} is not a free cell (0-8) at {self.state_text(state)!r}")
        cells = list(state.cells)
        cells[action] = 1 + self.to_move(state)
        return Board(tuple(cells), (*state.moves, action))

    def encode(self, states: Sequence[Board]) -> torch.Tensor:
        """Per position, the side to move's cells then the opponent's, 0/1: 18 features."""
        cells = torch.tensor([s.cells for s in states], dtype=torch.int64).reshape(len(states), 9)
        mine = 1 + torch.tensor([self.to_move(s) for s in states], dtype=torch.int64).unsqueeze(1)
        return torch.cat([cells == mine, cells == 3 - mine], dim=1).float()

    def network(self, cfg: NetConfig | None = None) -> TicTacToeNet:
        return TicTacToeNet(cfg)

    def action_text(self, state: Board, action: int) -> str:
        return str(action + 1)

    def parse_action(self, state: Board, text: str) -> int:
        text = text.strip()
        if len(text) != 1 or text not in "123456789":
            raise ValueError(f"{text!r} is not a cell 1-9")
        if self.outcome(state) is not None:
            raise ValueError(f"cell {text}: the game is over")
        if state.cells[int(text) - 1]:
            raise ValueError(f"cell {text} is taken")
        return int(text) - 1

    def state_text(self, state: Board) -> str:
        return "".join(str(action + 1) for action in state.moves)

    def parse_state(self, text: str) -> Board:
        state = self.start()
        for ply, char in enumerate(text.strip(), 1):
            try:
                state = self.apply(state, self.parse_action(state, char))
            except ValueError as e:
                raise ValueError(f"{text!r}, move {ply}: {e}") from None
        return state

    def show(self, state: Board) -> str:
        return "\n".join(" ".join(".XO"[cell] for cell in state.cells[row : row + 3]) for row in (0, 3, 6))

    def symmetries(self) -> tuple[Symmetry, ...]:
        return SYMMETRIES

    def __repr__(self) -> str:
        return "TicTacToe()"


@dataclass(frozen=True)
class NetConfig:
    """The shape of a :class:`TicTacToeNet`: the network is rebuilt from this alone."""

    hidden: int = 64
    """Width of the two hidden layers (4 to 4096)."""

    def __post_init__(self) -> None:
        check_int("NetConfig.hidden", self.hidden, 4, 4096)


class TicTacToeNet(nn.Module):
    """An MLP 18 -> hidden -> hidden: logits over the 9 cells and a value in [-1, 1] for the
    side to move."""

    def __init__(self, cfg: NetConfig | None = None) -> None:
        super().__init__()
        # A worker process rebuilds the network as type(net)(net.cfg), then loads the weights:
        # everything that shapes it must be in cfg.
        self.cfg = cfg if cfg is not None else NetConfig()
        width = self.cfg.hidden
        self.trunk = nn.Sequential(nn.Linear(18, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.policy = nn.Linear(width, 9)
        self.value = nn.Linear(width, 1)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` of shapes ``(B, 9)`` and ``(B,)``."""
        h = self.trunk(features)
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)


if __name__ == "__main__":
    game = TicTacToe()
    records, _ = play_games(game.network(), RandomMover(), PlayConfig(game, n_games=1))
    final = game.start()
    for action in records[0].actions:
        final = game.apply(final, action)
    print(f"an untrained network (X) against a random mover (O): {game.state_text(final)}")
    print(game.show(final))
