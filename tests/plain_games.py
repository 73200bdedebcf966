"""A user's games that lean on the protocol's defaults: tic-tac-toe (examples/tictactoe.py) with
only the members the protocol requires, or with its own ``outcome``. A module of its own, so
that ``--game`` and worker processes import them by name (``plain_games:Plain``)."""

from __future__ import annotations

from typing import Any

from examples.tictactoe import Board, TicTacToe

SHORT_PLIES = 4
"""Plies after which :class:`ShortTicTacToe` is drawn."""


class Plain:
    """Tic-tac-toe with the required members alone: no ``winning``, ``symmetries``, ``movers``,
    ``svg`` or any other optional member."""

    name = "plain"
    action_size = 9
    start = TicTacToe.start
    to_move = TicTacToe.to_move
    outcome = TicTacToe.outcome
    actions = TicTacToe.actions
    apply = TicTacToe.apply
    encode = TicTacToe.encode
    network = TicTacToe.network
    action_text = TicTacToe.action_text
    parse_action = TicTacToe.parse_action
    state_text = TicTacToe.state_text
    parse_state = TicTacToe.parse_state
    show = TicTacToe.show


class ShortTicTacToe(TicTacToe):
    """Tic-tac-toe drawn after :data:`SHORT_PLIES` plies: its own ``outcome``, nothing else
    changed (its ``winning`` is tic-tac-toe's)."""

    def outcome(self, state: Board) -> float | None:
        value = super().outcome(state)
        return 0.0 if value is None and len(state.moves) >= SHORT_PLIES else value


class Capped(TicTacToe):
    """Tic-tac-toe drawn after ``plies`` plies, its name saying so: a game with a parameter,
    made by ``--game 'plain_games:Capped(plies=4)'``."""

    def __init__(self, plies: int = 9, *, label: str = "capped") -> None:
        if not 1 <= plies <= 9:
            raise ValueError(f"plies must be in 1..9, got {plies}")
        self.plies = plies
        self.name = f"{label}{plies}"

    def outcome(self, state: Board) -> float | None:
        value = super().outcome(state)
        return 0.0 if value is None and len(state.moves) >= self.plies else value


class Tuned(TicTacToe):
    """Tic-tac-toe with its own settings of ``asp train`` (``run_defaults``), ``settings``
    where given (a game whose settings are wrong, for the refusal)."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.settings = settings

    def run_defaults(self) -> dict[str, Any]:
        if self.settings is not None:
            return self.settings
        return {"games": 24, "search": 4, "train": {"replay": 2}, "network": {"hidden": 16}}


class Judged(TicTacToe):
    """Tic-tac-toe whose game cut short goes to the player who holds the centre (``adjudicate``)."""

    def adjudicate(self, state: Board) -> float:
        holder = state.cells[4]
        return 0.0 if holder == 0 else 1.0 if holder == 1 + self.to_move(state) else -1.0
