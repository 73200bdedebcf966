"""A game checked against the rules of the protocol before it plays: random games through
every method, each answer held to the rule asp relies on (:class:`~asp.games.Game`).

asp checks a few rules as it plays (:mod:`asp.games.checked`: the actions in range, the
network's shapes, finite numbers), at a cost of a few operations a ply. The rules that would
cost more at every ply are checked here once, on random games, before a game of a user's
plays: a broken one stops there with one line that names the game, the method and the rule,
instead of a failure deep in a worker process, tried again, or a run that learns nonsense.

:func:`check_game` holds every answer to these rules:

* ``to_move`` is 0 or 1, and the players alternate;
* ``outcome`` is None while the game goes on, else a number in [-1, 1];
* ``actions`` gives ints (numpy's too), no bool or float, no action twice, each in
  ``range(action_size)``, at least one;
* ``apply`` takes every action that ``actions`` lists, and leaves its argument as it was
  (its ``state_text`` the same; in the first plies, where every action is tried, a copy made
  before it equal to it after, where the state has its own ``==``);
* ``encode`` gives a tensor of one row per position.

>>> from asp.connect4 import ConnectFour
>>> check_game(ConnectFour())
>>> class Cheat(ConnectFour):
...     def outcome(self, state):
...         value = super().outcome(state)
...         return None if value is None else 2 * value
>>> check_game(Cheat())  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
asp.errors.GameError: connect4: outcome gave -2.0 at position '...': the result for the side to move is in [-1, 1] ...
"""

from __future__ import annotations

import copy
import math
import numbers
import random
from collections.abc import Callable
from typing import Any

import torch

from asp.errors import GameError
from asp.games.checked import applied, raised
from asp.games.protocol import Game

__all__ = ["check_game"]

_MAX_PLIES = 1000
"""Plies after which a random game of the check stops (its rules are checked up to there)."""
_EVERY_ACTION_PLIES = 16
"""Plies of the first game at which every legal action is applied."""


def check_game(game: Game[Any], *, games: int = 2, seed: int = 0) -> None:
    """Play ``games`` random games of ``game`` from its start, every legal action applied at
    each of the first plies of the first, and check each answer against the rules above.

    :raises GameError: one line naming the game, the method and the rule broken, or the
        error a method raised.
    """
    rng = random.Random(seed)
    for number in range(games):
        state = _call(game, "start", game.start)
        seen = [state]
        for ply in range(_MAX_PLIES):
            mover = _to_move(game, state)
            if _outcome(game, state) is not None:
                break
            actions = _actions(game, state)
            chosen = actions[rng.randrange(len(actions))]
            tried = actions if number == 0 and ply < _EVERY_ACTION_PLIES else [chosen]
            state = _apply(game, state, tried, mover)[chosen]
            seen.append(state)
        _encode(game, seen[-8:])


def _where(game: Game[Any], state: Any) -> str:
    try:
        return f"position {game.state_text(state)!r}"
    except Exception:  # noqa: BLE001 (a broken game's notation must not hide what it broke)
        return "a position"


def _call(game: Game[Any], method: str, call: Callable[[], Any], state: Any = None) -> Any:
    try:
        return call()
    except Exception as e:  # noqa: BLE001 (a user's method: any failure is theirs, said in one line)
        at = "" if state is None else f" at {_where(game, state)}"
        raise GameError(f"{game.name}: {method} raised {raised(e)}{at}") from None


def _to_move(game: Game[Any], state: Any) -> int:
    mover = _call(game, "to_move", lambda: game.to_move(state), state)
    if isinstance(mover, bool) or mover not in (0, 1):
        raise GameError(
            f"{game.name}: to_move gave {mover!r} at {_where(game, state)}: "
            "it is 0 (the first player) or 1 (the second)"
        )
    return int(mover)


def _outcome(game: Game[Any], state: Any) -> float | None:
    value = _call(game, "outcome", lambda: game.outcome(state), state)
    if value is None:
        return None
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not number or not math.isfinite(float(value)) or not -1.0 <= float(value) <= 1.0:
        raise GameError(
            f"{game.name}: outcome gave {value!r} at {_where(game, state)}: the result for the side to move is in "
            "[-1, 1] (-1 lost, 0 drawn, 1 won) once the game is over, None while it goes on"
        )
    return float(value)


def _actions(game: Game[Any], state: Any) -> list[int]:
    actions = list(_call(game, "actions", lambda: game.actions(state), state))
    where = _where(game, state)
    if not actions:
        raise GameError(
            f"{game.name}: actions gave no action at {where}, where outcome says the game goes on: "
            "a position without a legal action must be over (outcome gives its value)"
        )
    for action in actions:
        if isinstance(action, bool) or not isinstance(action, numbers.Integral):
            raise GameError(
                f"{game.name}: actions gave {action!r}, a {type(action).__name__}, at {where}: actions are ints in "
                "range(action_size), the index of their logit"
            )
        if not 0 <= int(action) < game.action_size:
            raise GameError(
                f"{game.name}: actions gave action {action} at {where}, outside range({game.action_size}): "
                "actions are ints in range(action_size), the index of their logit"
            )
    if len(set(actions)) != len(actions):
        twice = next(a for a in actions if actions.count(a) > 1)
        raise GameError(f"{game.name}: actions gave action {twice} twice at {where}: each legal action is listed once")
    return [int(action) for action in actions]


def _apply(game: Game[Any], state: Any, actions: list[int], mover: int) -> dict[int, Any]:
    """The state after each of ``actions`` at ``state``, every one checked."""
    text = game.state_text(state)
    before = None
    if len(actions) > 1:  # the plies where every action is tried: compared with a copy as well
        try:
            before = copy.deepcopy(state)
        except Exception:  # noqa: BLE001 (a state that cannot be copied is checked by its text alone)
            before = None
    after = {}
    for action in actions:
        after[action] = applied(game, state, action)
        changed = game.state_text(state) != text or (before is not None and _has_own_eq(before) and before != state)
        if changed or after[action] is state:
            raise GameError(
                f"{game.name}: apply changed its argument (action {action} at position {text!r}): states are "
                "values, apply returns a new state and leaves its argument as it was"
            )
        if _outcome(game, after[action]) is None and _to_move(game, after[action]) == mover:
            raise GameError(
                f"{game.name}: to_move gave {mover} both before and after action {action} at position {text!r}: "
                "the players alternate"
            )
    return after


def _has_own_eq(state: Any) -> bool:
    """Whether ``state``'s class compares by value (not only by identity, as object's ``==``)."""
    return getattr(type(state), "__eq__", None) is not getattr(object, "__eq__", None)


def _encode(game: Game[Any], states: list[Any]) -> None:
    rows = _call(game, "encode", lambda: game.encode(states))
    if not isinstance(rows, torch.Tensor) or rows.dim() == 0 or rows.shape[0] != len(states):
        gave = f"a tensor of shape {tuple(rows.shape)}" if isinstance(rows, torch.Tensor) else type(rows).__name__
        raise GameError(
            f"{game.name}: encode gave {gave} for {len(states)} positions: it gives a tensor of one row per position"
        )
