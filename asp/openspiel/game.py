"""Any of OpenSpiel's two-player board games as an asp game (:class:`~asp.games.Game`).

:class:`OpenSpielGame` wraps a game of ``pyspiel`` (OpenSpiel's C++ games) named by its game
string, parameters in OpenSpiel's own syntax (``breakthrough(rows=6,columns=6)``). It takes
the games asp can play: two players, sequential, deterministic, perfect information, zero sum;
any other kind is refused in one line that says what the game is.

* Players alternate in asp's protocol; in some OpenSpiel games a player moves twice in a row
  (checkers' multiple jumps, amazons' three-part turns, dots-and-boxes' extra moves). There
  the other player is given a forced *pass* (its only legal action, :data:`PASS` of
  ``action_size - 1``, written ``pass``) between the two: a move with one choice changes no
  game's value, and the search, the trainer and the records see alternating players.
* A position's notation is the actions played from the start, OpenSpiel's action numbers
  separated by spaces (``"3 3 4"``), as ``pyspiel``'s own history; :meth:`parse_state` also
  reads the moves' names (``"a2a3 b7b6"``). A move's notation is OpenSpiel's name of the
  action, its spaces written ``_`` (go: ``B_d1``).
* The network's input is OpenSpiel's observation tensor from the side to move's seat, plus
  two planes: whether the second player moves, and whether the move is a forced pass (the
  observation of some games does not say who moves). Its value for the side to move is the
  game's return for that player, scaled to [-1, 1].

>>> game = OpenSpielGame("tic_tac_toe")
>>> state = game.parse_state("4 0")
>>> game.to_move(state), game.action_text(state, 8), game.state_text(game.apply(state, 8))
(0, 'x(2,2)', '4 0 8')
>>> print(game.show(state))
o..
.x.
...
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from asp.errors import ConfigError
from asp.games.protocol import Symmetry
from asp.openspiel.symmetry import symmetries_of

__all__ = ["PASS_TEXT", "PLAYER_PLANES", "OpenSpielGame", "SpielState", "game_string_of", "load_spiel_game"]

PREFIX = "openspiel:"
"""How ``--game`` names an OpenSpiel game: ``openspiel:`` then its game string."""
PASS_TEXT = "pass"
"""The notation of the forced pass between two moves of the same player."""
_PLAYABLE = {
    "num_players": (2, "two players"),
    "dynamics": ("SEQUENTIAL", "sequential moves"),
    "chance_mode": ("DETERMINISTIC", "no chance"),
    "information": ("PERFECT_INFORMATION", "perfect information"),
    "utility": ("ZERO_SUM", "zero sum"),
}
"""What asp asks of an OpenSpiel game's type, and how the refusal says it."""
PLAYER_PLANES = {"connect_four": (0, 1), "tic_tac_toe": (2, 1)}
"""The planes of the first player's stones and of the second's in the observation of the
games whose observation is the same from either seat, by their short names."""
LINES = {"connect_four": 4, "tic_tac_toe": 3}
"""The stones in a row that win, of the games of :data:`PLAYER_PLANES` won by a line."""
RUN_SETTINGS: dict[str, dict[str, Any]] = {
    "connect_four": {
        "iterations": 19,
        "eval_every": 19,
        "eval_games": 20,
        "eval_search": 256,
        "train": {"value_mix": 0.5, "merge_repeats": True, "lr_final": 2e-4, "epochs": 2},
    },
}
"""``asp train``'s settings of the games asp also ships a game of its own for, by their short
names: those of asp's own (``connect_four``: :meth:`asp.connect4.ConnectFour.run_defaults`,
its network aside), which ``benchmarks/bench_learning.py`` measured on both."""


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError:
        raise ConfigError(
            "OpenSpiel's games need the open-spiel package: pip install 'asp[openspiel]' (or pip install open-spiel)"
        ) from None
    return pyspiel


def game_string_of(spec: str) -> str:
    """The OpenSpiel game string of ``spec``, ``openspiel:NAME`` or ``openspiel:NAME(k=v,...)``.

    >>> game_string_of("openspiel:hex(board_size=5)")
    'hex(board_size=5)'
    """
    if not spec.startswith(PREFIX) or not re.fullmatch(r"[A-Za-z0-9_]+(\(.*\))?", spec[len(PREFIX) :]):
        raise ConfigError(f"--game {spec!r}: an OpenSpiel game is openspiel:NAME or openspiel:NAME(key=value,...)")
    return spec[len(PREFIX) :]


def load_spiel_game(string: str) -> Any:
    """OpenSpiel's game of ``string``, once it is a kind asp can play.

    :raises ConfigError: one line: no such game, bad parameters, or a kind asp does not play.
    """
    pyspiel = _pyspiel()
    try:
        spiel_game = pyspiel.load_game(string)
    except Exception as e:  # noqa: BLE001 (pyspiel raises RuntimeError or its SpielError for a bad name or parameter)
        said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"--game {PREFIX + string!r}: OpenSpiel cannot load it: {said}") from None
    kind = spiel_game.get_type()
    seen = {
        "num_players": spiel_game.num_players(),
        "dynamics": kind.dynamics.name,
        "chance_mode": kind.chance_mode.name,
        "information": kind.information.name,
        "utility": kind.utility.name,
    }
    broken = [f"{field} {seen[field]}" for field, (wanted, _) in _PLAYABLE.items() if seen[field] != wanted]
    if broken:
        wanted = ", ".join(words for _, words in _PLAYABLE.values())
        raise ConfigError(f"--game {PREFIX + string!r}: asp plays games of {wanted}; this one has {', '.join(broken)}")
    if not kind.provides_observation_tensor:
        raise ConfigError(f"--game {PREFIX + string!r}: the game gives no observation tensor, the network's input")
    return spiel_game


@dataclass(frozen=True, eq=False)
class SpielState:
    """A position: OpenSpiel's state, who moves in asp's alternation, and whether that move
    is a forced pass (OpenSpiel's player moves again next). A value: never changed."""

    spiel: Any
    """The ``pyspiel.State`` (never changed: :meth:`OpenSpielGame.apply` clones it)."""
    to_move: int
    """0 the first player, 1 the second."""
    must_pass: bool = False
    """The side to move has no move but the forced pass (:data:`PASS_TEXT`)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpielState):
            return NotImplemented
        return (self.to_move, self.must_pass, self.spiel.history()) == (
            other.to_move,
            other.must_pass,
            other.spiel.history(),
        )

    def __hash__(self) -> int:
        return hash((self.to_move, self.must_pass, tuple(self.spiel.history())))


class OpenSpielGame:
    """An OpenSpiel game (``pyspiel``) by its game string, on asp's game protocol.

    The object holds the string and rebuilds OpenSpiel's game from it wherever it is
    unpickled (asp's workers). Its network is :class:`~asp.openspiel.model.SpielNet`, shaped
    by the game's observation tensor.
    """

    def __init__(self, string: str) -> None:
        self.string = string
        self.spiel_game = load_spiel_game(string)
        self.name = PREFIX + string
        self.pass_action = int(self.spiel_game.num_distinct_actions())
        """The forced pass's action: one past OpenSpiel's own."""
        self.action_size = self.pass_action + 1
        shape = tuple(int(n) for n in self.spiel_game.observation_tensor_shape())
        self.planes = shape if len(shape) == 3 else (1, *shape) if len(shape) == 2 else None
        """``(channels, rows, columns)`` of the observation, None where it is flat."""
        self.observation_size = int(np.prod(shape))
        scale = max(abs(self.spiel_game.min_utility()), abs(self.spiel_game.max_utility()))
        self.utility_scale = float(scale) if scale > 0 else 1.0

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.string,))

    def __repr__(self) -> str:
        return f"OpenSpielGame({self.string!r})"

    @property
    def features(self) -> int:
        """Numbers of :meth:`encode` a position: the observation, then the two planes (or,
        for a flat observation, the two numbers) of who moves and of the forced pass."""
        area = self.observation_size // self.planes[0] if self.planes is not None else 1
        return self.observation_size + 2 * area

    def start(self) -> SpielState:
        return SpielState(self.spiel_game.new_initial_state(), 0)

    def to_move(self, state: SpielState) -> int:
        return state.to_move

    def outcome(self, state: SpielState) -> float | None:
        if state.must_pass or not state.spiel.is_terminal():
            return None
        return float(state.spiel.returns()[state.to_move]) / self.utility_scale

    def actions(self, state: SpielState) -> list[int]:
        return [self.pass_action] if state.must_pass else [int(a) for a in state.spiel.legal_actions()]

    def apply(self, state: SpielState, action: int) -> SpielState:
        other = 1 - state.to_move
        if state.must_pass:
            if action != self.pass_action:
                raise ValueError(f"{self.name}: the only legal action here is the forced pass, {self.pass_action}")
            return SpielState(state.spiel, other)
        spiel = state.spiel.clone()
        spiel.apply_action(int(action))
        again = not spiel.is_terminal() and spiel.current_player() != other
        return SpielState(spiel, other, must_pass=again)

    def winning(self, state: SpielState) -> list[int]:
        """The actions that end the game at once with a positive return for the side to move:
        each legal action played on a copy of the position (OpenSpiel's ``child``), so that
        the search plays a win in one without searching and sees the threat of one."""
        if state.must_pass:
            return []
        mover = state.spiel.current_player()
        won = []
        for action in state.spiel.legal_actions():
            child = state.spiel.child(action)
            if child.is_terminal() and child.returns()[mover] > 0:
                won.append(int(action))
        return won

    def symmetries(self) -> list[Symmetry]:
        """The board's symmetries where asp knows them for this game
        (:func:`~asp.openspiel.symmetry.symmetries_of`: Connect Four's mirror, tic-tac-toe's
        eight...), else none."""
        if self.planes is None:
            return []
        channels, rows, columns = self.planes
        short_name = self.spiel_game.get_type().short_name
        return symmetries_of(short_name, (channels + 2, rows, columns), self.action_size)

    def encode(self, states: Sequence[SpielState]) -> torch.Tensor:
        rows = np.zeros((len(states), self.features), dtype=np.float32)
        area = (self.features - self.observation_size) // 2
        for row, state in zip(rows, states, strict=True):
            seat = state.spiel.current_player() if state.must_pass else state.to_move
            row[: self.observation_size] = state.spiel.observation_tensor(seat)
            row[self.observation_size : self.observation_size + area] = state.to_move
            row[self.observation_size + area :] = float(state.must_pass)
        return torch.from_numpy(rows)

    def network(self, cfg: Any = None) -> nn.Module:
        from asp.openspiel.model import SpielNet, SpielNetConfig

        if cfg is None:
            planes = None if self.planes is None else (self.planes[0] + 2, *self.planes[1:])
            cfg = SpielNetConfig(planes=planes, features=self.features, actions=self.action_size)
        return SpielNet(cfg)

    def run_defaults(self) -> dict[str, Any]:
        """``asp train``'s settings for this game where they differ from asp's own: in a game
        whose observation gives each player's stones a plane of their own (``connect_four``,
        ``tic_tac_toe``), a network that sees the board from the mover's side
        (:attr:`~asp.openspiel.model.SpielNetConfig.player_planes`) and the cells that would
        complete a line (:attr:`~asp.openspiel.model.SpielNetConfig.lines`); in
        ``connect_four``, the run of asp's own Connect Four (:data:`RUN_SETTINGS`); none for
        the others."""
        short_name = self.spiel_game.get_type().short_name
        settings: dict[str, Any] = copy.deepcopy(RUN_SETTINGS.get(short_name, {}))
        planes = PLAYER_PLANES.get(short_name) if self.planes is not None else None
        if planes is not None:
            settings["network"] = {"player_planes": planes, "lines": LINES[short_name]}
        return settings

    def movers(self) -> dict[str, Any]:
        """OpenSpiel's ``MCTSBot`` with 100 simulations a move, which every evaluation plays."""
        from asp.openspiel.movers import MCTSConfig, MCTSMover

        return {"mcts100": MCTSMover(MCTSConfig(100))}

    def mover(self, name: str) -> Any:
        """``mctsN``: OpenSpiel's ``MCTSBot`` with N simulations a move (1 to 10**6), by name
        (``asp eval RUN --vs mcts1000``, the yardstick of a trained model); None for any
        other name. Its cost grows with the game's playouts: at 1,000, 15 ms a move in 6x6
        breakthrough, a quarter of a second in othello's opening (one core of a machine that
        plays 24,000 python-chess random-playout plies a second)."""
        from asp.openspiel.movers import MCTSConfig, MCTSMover

        found = re.fullmatch(r"mcts(\d{1,7})", name)
        return None if found is None else MCTSMover(MCTSConfig(int(found.group(1))))

    def action_text(self, state: SpielState, action: int) -> str:
        """OpenSpiel's name of ``action``, each run of spaces in it written ``_`` (go's
        ``B d1``: ``B_d1``), so that a move is one word; ``pass`` for the forced pass."""
        if action == self.pass_action:
            return PASS_TEXT
        return "_".join(str(state.spiel.action_to_string(state.spiel.current_player(), int(action))).split())

    def parse_action(self, state: SpielState, text: str) -> int:
        """The legal action named by ``text``: OpenSpiel's name of it (case aside), or its
        number."""
        text = "_".join(text.split())
        legal = self.actions(state)
        if not legal or self.outcome(state) is not None:
            raise ValueError("the game is over")
        names = {self.action_text(state, a).lower(): a for a in legal}
        if text.lower() in names:
            return names[text.lower()]
        if text.isdigit() and int(text) in legal:
            return int(text)
        shown = ", ".join(list(names)[:8]) + (", ..." if len(names) > 8 else "")
        raise ValueError(f"{text!r} is no legal move here; legal: {shown}")

    def state_text(self, state: SpielState) -> str:
        tokens: list[str] = []
        last = None
        for player, action in ((int(pa.player), int(pa.action)) for pa in state.spiel.full_history()):
            if player == last:
                tokens.append(PASS_TEXT)
            tokens.append(str(action))
            last = player
        if not state.must_pass and last == state.to_move:
            tokens.append(PASS_TEXT)  # the forced pass was played: the same player moves again
        return " ".join(tokens)

    def parse_state(self, text: str) -> SpielState:
        """The position after the moves ``text`` lists, separated by spaces: OpenSpiel's
        action numbers, or its names of the actions where these hold no space, and ``pass``
        for a forced pass (which may be left out).

        >>> game = OpenSpielGame("tic_tac_toe")
        >>> game.parse_state("x(1,1) 0").spiel.history()
        [4, 0]
        >>> game.parse_state("4 4")
        Traceback (most recent call last):
        ...
        ValueError: move 2, '4' is no legal move here; legal: o(0,0), o(0,1), o(0,2), o(1,0), o(1,2), o(2,0), ...
        """
        state = self.start()
        for number, token in enumerate(text.split(), 1):
            if state.must_pass and token.lower() != PASS_TEXT:
                state = self.apply(state, self.pass_action)
            if self.outcome(state) is not None:
                raise ValueError(f"move {number}, {token!r}: the game is over before it")
            try:
                action = self.parse_action(state, token)
            except ValueError as e:
                raise ValueError(f"move {number}, {e}") from None
            state = self.apply(state, action)
        return state

    def show(self, state: SpielState) -> str:
        board = str(state.spiel).rstrip("\n")
        return board + ("\n(the side to move passes: the other player moves again)" if state.must_pass else "")
