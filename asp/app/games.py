"""Which game a run plays: the shipped games by name, a user's by ``MODULE:ATTR``.

>>> load_game("connect4").name
'connect4'
>>> load_game("chess")
Traceback (most recent call last):
...
asp.errors.ConfigError: --game 'chess': not a game: tinychess, connect4, or MODULE:ATTR (a Game class or object)
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from asp.errors import ConfigError

__all__ = ["GAMES", "TINYCHESS", "is_game", "load_game"]

TINYCHESS = "tinychess"
"""The default game: chess, with TinyChess's network (:class:`~asp.tinychess.game.TinyChessGame`)."""

GAMES = {TINYCHESS: "asp.tinychess.game:TinyChessGame", "connect4": "asp.connect4:ConnectFour"}
"""The shipped games, by name: where their :class:`~asp.games.Game` is."""

_METHODS = ("start", "to_move", "status", "actions", "apply", "encode", "network", "action_text", "parse_action",
            "state_text", "parse_state", "show", "symmetries", "movers")  # fmt: skip


def is_game(obj: object) -> bool:
    """Whether ``obj`` has what :class:`asp.games.Game` asks of a game."""
    return all(callable(getattr(obj, name, None)) for name in _METHODS) and all(
        hasattr(obj, name) for name in ("name", "action_size")
    )


def load_game(spec: str, *, option: str = "--game") -> Any:
    """The game ``spec`` names: a shipped game's name (:data:`GAMES`), or ``MODULE:ATTR``, a
    :class:`~asp.games.Game` class (made with no argument) or object in an importable module
    (the current directory counts, as for ``python -m``).

    :raises ConfigError: one line, naming ``option``: no such game, module or attribute, or
        not a game (it names the first method missing).
    """
    where = GAMES.get(spec, spec)
    module_name, colon, attr = where.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"{option} {spec!r}: not a game: {', '.join(GAMES)}, or MODULE:ATTR "
                          "(a Game class or object)")  # fmt: skip
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # spawn workers inherit sys.path: they find the module too
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"{option} {spec!r}: cannot import {module_name}: {e}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise ConfigError(f"{option} {spec!r}: module {module_name} has no {attr}")
    try:
        game = obj() if isinstance(obj, type) else obj
    except Exception as e:  # noqa: BLE001 (a user's constructor: any failure is theirs, said in one line)
        raise ConfigError(f"{option} {spec!r}: {attr}() failed: {type(e).__name__}: {e}") from None
    missing = [name for name in (*_METHODS, "name", "action_size") if not hasattr(game, name)]
    if missing:
        raise ConfigError(f"{option} {spec!r}: not a game (asp.games.Game): it has no {missing[0]}")
    return game
