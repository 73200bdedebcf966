"""Connect Four as an asp game (:class:`~asp.games.Game`): 7 columns, 6 rows, four in a row wins.

Rules from :mod:`asp.connect4.rules` (bitboards); a position's notation is the columns played
from the empty board, 1-7 (``"4453"``), as in the published Connect Four solver test sets, and
a move is its column, 1-7. The one symmetry is the left-right mirror.

>>> game = ConnectFour()
>>> state = game.parse_state("445566")
>>> [game.action_text(state, a) for a in game.winning(state)]
['3', '7']
>>> print(game.show(game.apply(state, 6)))
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
. . . O O O .
. . . X X X X
1 2 3 4 5 6 7
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from asp.connect4 import rules
from asp.connect4.lookahead import LookaheadMover
from asp.connect4.model import N_FEATURES, C4Config, C4Net
from asp.connect4.rules import HEIGHT, WIDTH, Board
from asp.games.movers import BaseMover
from asp.games.protocol import Mover, Symmetry

__all__ = ["ConnectFour", "WinBlockMover", "mirror_features"]

_CELL_BITS = np.array([c * (HEIGHT + 1) + r for c in range(WIDTH) for r in range(HEIGHT)], dtype=np.uint64)
"""The bit of every cell, column after column, bottom row first: the order of the features."""


def _planes(bitboards: list[int]) -> np.ndarray:
    """``(len(bitboards), 42)`` 0/1 cells of each bitboard."""
    words = np.array(bitboards, dtype=np.uint64)
    return ((words[:, None] >> _CELL_BITS[None, :]) & np.uint64(1)).astype(np.float32)


def mirror_features(features: torch.Tensor) -> torch.Tensor:
    """The encodings of the mirror images of the positions ``features`` encodes."""
    return features.reshape(-1, 2, WIDTH, HEIGHT).flip(2).reshape(features.shape)


class ConnectFour:
    """The game of Connect Four, and its default network (:class:`~asp.connect4.model.C4Net`)."""

    name = "connect4"
    action_size = WIDTH

    def start(self) -> Board:
        return rules.EMPTY

    def to_move(self, state: Board) -> int:
        return state.to_move

    def outcome(self, state: Board) -> float | None:
        return rules.value(state)

    def winning(self, state: Board) -> list[int]:
        return rules.winning_columns(state)

    def actions(self, state: Board) -> list[int]:
        return rules.legal_columns(state)

    def apply(self, state: Board, action: int) -> Board:
        return rules.play(state, action)

    def encode(self, states: Sequence[Board]) -> torch.Tensor:
        """Per position, the side to move's stones then the opponent's: 84 features."""
        own = _planes([s.current for s in states])
        other = _planes([s.current ^ s.mask for s in states])
        return torch.from_numpy(np.concatenate([own, other], axis=1)).reshape(len(states), N_FEATURES)

    def network(self, cfg: Any = None) -> nn.Module:
        return C4Net(cfg if cfg is not None else C4Config())

    def action_text(self, state: Board, action: int) -> str:
        return str(action + 1)

    def parse_action(self, state: Board, text: str) -> int:
        text = text.strip()
        if text not in ("1", "2", "3", "4", "5", "6", "7"):
            raise ValueError(f"{text!r} is not a column 1-7")
        column = int(text) - 1
        if column not in rules.legal_columns(state):
            raise ValueError(f"column {text} is full" if not rules.is_over(state) else "the game is over")
        return column

    def state_text(self, state: Board) -> str:
        return rules.to_columns(state)

    def parse_state(self, text: str) -> Board:
        return rules.from_columns(text.strip())

    def parse_line(self, text: str) -> Board:
        """The position of a line of a file of positions, as the published solver test sets
        write one: ``COLUMNS SCORE``, the columns played and the position's score (an int,
        not read), or the columns alone.

        >>> ConnectFour().parse_line("4453 -2").moves, ConnectFour().parse_line("4453").moves
        ((3, 3, 4, 2), (3, 3, 4, 2))
        >>> ConnectFour().parse_line("4453 5566")
        Traceback (most recent call last):
        ...
        ValueError: '4453 5566': a line is COLUMNS SCORE or COLUMNS, the score an int of at most 2 digits, got '5566'

        :raises ValueError: another line (the message says why).
        """
        fields = text.split()
        if len(fields) > 2 or (len(fields) == 2 and not re.fullmatch(r"[+-]?\d{1,2}", fields[1])):
            got = repr(fields[1]) if len(fields) == 2 else f"{len(fields)} fields"
            raise ValueError(
                f"{text.strip()!r}: a line is COLUMNS SCORE or COLUMNS, the score an int of at most 2 digits, got {got}"
            )
        return self.parse_state(fields[0] if fields else "")

    def show(self, state: Board) -> str:
        return rules.text(state)

    def svg(self, state: Board) -> str:
        """The position as an SVG picture, the last move ringed."""
        return rules.svg(state)

    def symmetries(self) -> list[Symmetry]:
        return [Symmetry("mirror", mirror_features, tuple(WIDTH - 1 - c for c in range(WIDTH)))]

    def movers(self) -> Mapping[str, Mover]:
        """The win/block mover and the lookahead mover
        (:class:`~asp.connect4.lookahead.LookaheadMover`), the strongest, besides the random
        mover every game has."""
        return {"winblock": WinBlockMover(), "lookahead": LookaheadMover()}

    def mover(self, name: str) -> Mover | None:
        """``mctsN``: OpenSpiel's ``MCTSBot`` with N simulations a move (1 to 10**6; needs
        open-spiel), by name (``asp eval RUN --vs mcts1000``, the yardstick of
        ``benchmarks/bench_learning.py``); None for any other name. At 1,000 simulations, about
        10 ms a move in the opening (one core of a machine that plays 23,000 python-chess
        random-playout plies a second). Not among :meth:`movers`: it needs open-spiel, which
        asp does not, and a run's evaluations are the same wherever it runs."""
        from asp.connect4.mcts import MCTSMover

        found = re.fullmatch(r"mcts(\d{1,7})", name)
        return None if found is None else MCTSMover(int(found.group(1)))

    def run_defaults(self) -> dict[str, Any]:
        """``asp train``'s settings for Connect Four: 19 iterations, a convolutional tower (4
        blocks 32 wide), its value on the search's value as well as the result, each repeated
        position once, two passes over the replay window a call, at a falling learning rate,
        and 256 simulations a move when it plays to win, evaluated once, after the last
        iteration, in 20 games against each opponent. ``benchmarks/bench_learning.py``
        measures each setting against the run without it."""
        return {
            "iterations": 19,
            "eval_every": 19,
            "eval_games": 20,
            "eval_search": 256,
            "train": {"value_mix": 0.5, "merge_repeats": True, "lr_final": 2e-4, "epochs": 2},
            "network": {"tower": 4, "hidden": 32},
        }

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return "ConnectFour()"


class WinBlockMover(BaseMover):
    """The one-ply win/block mover: it wins at once if it can, else blocks the opponent's
    winning column, else plays a random column (ties broken at random)."""

    opponent_name = "winblock"

    def choose(self, game: Any, state: Board, rng: random.Random) -> int:
        wins = rules.winning_columns(state)
        if not wins:  # the opponent's, as if it were to move
            wins = rules.winning_columns(Board(state.current ^ state.mask, state.mask))
        columns = wins or rules.legal_columns(state)
        return columns[rng.randrange(len(columns))]
