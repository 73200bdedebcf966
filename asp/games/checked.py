"""A game's answers, checked against the rules of the protocol (:class:`~asp.games.Game`) where
asp takes them: a game that breaks one stops play, search and training alike with one line that
names the game, the method and the rule, instead of an error from deep inside asp (or, worse, a
wrong answer taken as a right one: a negative action read as the last logit, a NaN policy
sampled as the last legal action).

What asp checks, and raises:

* :func:`legal_actions`: ``actions`` at a position whose game goes on gives at least one action,
  each in ``range(action_size)`` (:class:`~asp.errors.GameError`);
* :func:`network_output`: the network gives ``(logits, value)``, tensors of shapes
  ``(B, action_size)`` and ``(B,)`` (:class:`~asp.errors.GameError`), every number of them finite
  (:class:`~asp.errors.NonFiniteError`), every value in [-1, 1] (:class:`~asp.errors.GameError`).

The rules that would cost more at every ply are checked once, on random games, before a
user's game plays (:mod:`asp.games.conformance`).

Both are errors that another attempt would only repeat (:class:`~asp.errors.NotRetried`): in
a worker, they fail the call at once. A check costs a few array operations per network call,
and a ``min`` and ``max`` per list of legal actions.

>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> logits, values = network_output(game, game.network(), game.encode([game.start()]), 1, who="a test")
>>> logits.shape, values.shape
((1, 7), (1,))
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from asp.errors import AspError, GameError, NonFiniteError
from asp.games.protocol import Game, State, packed

__all__ = ["applied", "legal_actions", "legal_choices", "network_output", "output_shapes", "packed_rows", "raised"]

_SLACK = 1e-5
"""How far past [-1, 1] a network's value may round (float32)."""


def legal_actions(game: Game[State], state: State) -> Sequence[int]:
    """``game.actions(state)`` at a position whose game goes on, checked: at least one action,
    each in ``range(game.action_size)``.

    :raises GameError: naming the game, ``actions`` and the rule broken.
    """
    actions = game.actions(state)
    if len(actions) == 0 or min(actions) < 0 or max(actions) >= game.action_size:  # one test on the hot path
        if len(actions) == 0:
            raise GameError(
                f"{game.name}: actions gave no action at {_where(game, state)}, where outcome says the game goes on: "
                "a position without a legal action must be over (outcome gives its value)"
            )
        raise _out_of_range(game, state, actions, "actions")
    return actions


def applied(game: Game[State], state: State, action: int) -> State:
    """``game.apply(state, action)``, for an action that ``actions`` listed: a failure of the
    game's own is named, one line, as the game's (never tried again in a worker).

    :raises GameError: ``apply`` raised; naming the game, the action and the position.
    """
    try:
        return game.apply(state, action)
    except AspError:
        raise
    except Exception as e:  # noqa: BLE001 (the game's own failure, said in one line)
        raise GameError(
            f"{game.name}: apply raised {raised(e)} on action {action} at {_where(game, state)}, which actions "
            "lists: apply takes every legal action"
        ) from e


def raised(error: BaseException) -> str:
    """``error`` in a few words for a one-line message: its type, and the first line of what
    it says (at most 200 characters).

    >>> raised(IndexError("list index out of range")), raised(KeyError())
    ('IndexError: list index out of range', 'KeyError')
    """
    said = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return f"{type(error).__name__}: {said}" if said else type(error).__name__


def packed_rows(game: Game[State], states: Sequence[State]) -> np.ndarray:
    """:func:`~asp.games.protocol.packed` ``states``, checked: one row per position.

    :raises GameError: another count of rows, naming ``encode`` (or ``pack``, where the game has it).
    """
    rows = packed(game, states)
    if len(rows) != len(states):
        method = "pack" if hasattr(game, "pack") else "encode"
        raise GameError(
            f"{game.name}: {method} gave {len(rows)} rows for {len(states)} positions: it gives one row per position"
        )
    return rows


def legal_choices(
    game: Game[State], states: Sequence[State], choices: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """The actions each state chooses from (its legal actions, or its winning ones), checked
    as :func:`legal_actions` checks them but for the whole batch in a few array operations:
    ``(actions, counts)``, every state's choices in one int64 array and the number of each.

    :raises GameError: naming the game, the method (``actions`` or ``winning``) and the rule broken.
    """
    counts = np.fromiter(map(len, choices), dtype=np.int64, count=len(choices))
    flat = np.fromiter(itertools.chain.from_iterable(choices), dtype=np.int64, count=int(counts.sum()))
    if len(counts) and (counts.min() == 0 or flat.min() < 0 or flat.max() >= game.action_size):
        for state, options in zip(states, choices, strict=True):
            legal_actions(game, state)
            if min(options) < 0 or max(options) >= game.action_size:
                raise _out_of_range(game, state, options, "winning")
    return flat, counts


def output_shapes(game: Game[Any], output: Any, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A network's ``output`` for ``count`` positions as ``(logits, value)``, checked: two
    tensors, of shapes ``(count, action_size)`` and ``(count,)``.

    :raises GameError: naming the game, ``network`` and the rule broken.
    """
    rule = f"logits of shape ({count}, {game.action_size}) (positions, action_size) and a value of shape ({count},)"
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise GameError(f"{game.name}: network gave {type(output).__name__}: it must give (logits, value), {rule}")
    logits, value = output
    if not isinstance(logits, torch.Tensor) or not isinstance(value, torch.Tensor):
        named = f"({type(logits).__name__}, {type(value).__name__})"
        raise GameError(f"{game.name}: network gave {named}: it must give two tensors, {rule}")
    if logits.shape != (count, game.action_size) or value.shape != (count,):
        raise GameError(
            f"{game.name}: network gave logits of shape {tuple(logits.shape)} and a value of shape "
            f"{tuple(value.shape)} for {count} positions: it must give {rule}"
        )
    return logits, value


def network_output(
    game: Game[Any], net: nn.Module, features: torch.Tensor, count: int, *, who: str
) -> tuple[np.ndarray, np.ndarray]:
    """``net(features)``, its answer for ``count`` positions, as float32 arrays ``(logits,
    values)`` checked by :func:`output_shapes` and for finite numbers. ``who`` says whose
    network it is in a message (``the model, version 3``).

    :raises GameError: the output is not two tensors of the protocol's shapes.
    :raises NonFiniteError: a logit or a value is NaN or infinite.
    """
    if len(features) != count:
        raise GameError(
            f"{game.name}: encode gave {len(features)} rows for {count} positions: it gives one row per position"
        )
    logits, value = output_shapes(game, net(features), count)
    logits_array, values = logits.detach().float().cpu().numpy(), value.detach().float().cpu().numpy()
    if not (np.isfinite(logits_array).all() and np.isfinite(values).all()):
        rows = ~(np.isfinite(logits_array).all(axis=1) & np.isfinite(values))
        gave = " and ".join(
            f"{'NaN' if np.isnan(array).any() else 'infinite'} {name}"
            for name, array in (("logits", logits_array), ("values", values))
            if not np.isfinite(array).all()
        )
        raise NonFiniteError(
            f"{game.name}: network ({who}) gave {gave} at {int(rows.sum())} of {count} positions: "
            "a network's outputs must be finite"
        )
    if len(values) and (values.min() < -1.0 - _SLACK or values.max() > 1.0 + _SLACK):
        wrong = float(values[np.argmax(np.abs(values))])
        raise GameError(
            f"{game.name}: network ({who}) gave the value {wrong:.4g}: a value is in [-1, 1], the result the side "
            "to move expects (end the value head with tanh)"
        )
    return logits_array, values


def _out_of_range(game: Game[State], state: State, actions: Sequence[int], method: str) -> GameError:
    wrong = next(a for a in actions if not 0 <= a < game.action_size)
    return GameError(
        f"{game.name}: {method} gave action {wrong} at {_where(game, state)}, outside range({game.action_size}): "
        "actions are ints in range(action_size), the index of their logit"
    )


def _where(game: Game[State], state: State) -> str:
    """The position in the game's notation, for a message (its text, if the game can write it)."""
    try:
        return f"position {game.state_text(state)!r}"
    except Exception:  # noqa: BLE001 (a broken game's own notation must not hide what it broke)
        return "a position"
