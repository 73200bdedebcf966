"""Which game a run plays: the shipped games by name, a user's by ``MODULE:ATTR``.

A file that a user loads (a checkpoint, a kept version, a games file, a config file) is
data: the game it names is imported only where it is a shipped game, or where the user asks
for it on the command line (``--trust-game``, or ``--game`` naming it):
:func:`check_named_game` says so before anything is imported.

>>> load_game("connect4").name
'connect4'
>>> load_game("chess")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
asp.errors.ConfigError: --game 'chess': not a game: tinychess, connect4, openspiel:NAME, or MODULE:ATTR (a Game ...)
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from typing import Any

from asp.errors import ConfigError

__all__ = ["GAMES", "OPENSPIEL", "TINYCHESS", "TRUST_HINT", "check_named_game", "load_game"]

TINYCHESS = "tinychess"
"""The default game: chess, with TinyChess's network (:class:`~asp.tinychess.game.TinyChessGame`)."""

GAMES = {TINYCHESS: "asp.tinychess.game:TinyChessGame", "connect4": "asp.connect4:ConnectFour"}
"""The shipped games, by name: where their :class:`~asp.games.Game` is."""
OPENSPIEL = "openspiel:"
"""The prefix of OpenSpiel's games (:mod:`asp.openspiel`): ``openspiel:NAME``, or
``openspiel:NAME(key=value,...)`` in OpenSpiel's own syntax. asp's code: no trust asked."""

TRUST_HINT = "--trust-game"
"""The option of every command that lets a file it reads name a game outside asp."""

_CHECKED: set[str] = set()
"""The games of users that :func:`load_game` has checked in this process (:func:`~asp.games.conformance.check_game`)."""

_METHODS = ("start", "to_move", "outcome", "actions", "apply", "encode", "network", "action_text", "parse_action",
            "state_text", "parse_state", "show")  # fmt: skip


def check_named_game(spec: Any, where: str, *, trusted: bool) -> None:
    """Refuse the game that the file ``where`` names where it is ``MODULE:ATTR`` outside asp's
    shipped games (:data:`GAMES`, by name or by their own ``MODULE:ATTR``), unless ``trusted``:
    the user asked on the command line to import it. A spec that is no ``MODULE:ATTR`` imports
    nothing: :func:`load_game` says what is wrong with it.

    >>> check_named_game("connect4", "run/checkpoint.pt", trusted=False)
    >>> check_named_game("asp.connect4:ConnectFour", "run/checkpoint.pt", trusted=False)
    >>> check_named_game("evil:Game", "run/checkpoint.pt", trusted=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    asp.errors.ConfigError: run/checkpoint.pt: names the game 'evil:Game', a module outside asp, ... --trust-game ...

    :raises ConfigError: one line naming the file and the game.
    """
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"{where}: its game must be a game's name or MODULE:ATTR, got {spec!r}")
    if ":" in spec and spec not in (*GAMES, *GAMES.values()) and not spec.startswith(OPENSPIEL) and not trusted:
        raise ConfigError(
            f"{where}: names the game {spec!r}, a module outside asp, which asp imports only when asked: "
            f"add {TRUST_HINT} if you trust the file"
        )


def _split_arguments(where: str, spec: str, option: str) -> tuple[str, tuple[tuple[Any, ...], dict[str, Any]] | None]:
    """``MODULE:ATTR(ARGUMENTS)`` as ``MODULE:ATTR`` and its arguments, Python literals
    (numbers, strings, booleans, None, tuples, lists, dicts), read without running any code;
    ``MODULE:ATTR`` alone as itself and None.

    >>> _split_arguments("mygames.hex:Hex(7, swap=True)", "x", "--game")
    ('mygames.hex:Hex', ((7,), {'swap': True}))

    :raises ConfigError: arguments that are not literals, or not a call's.
    """
    if not where.endswith(")") or "(" not in where:
        return where, None
    head, _, _ = where.partition("(")
    try:
        call = ast.parse("f" + where[len(head) :], mode="eval").body
        if not isinstance(call, ast.Call):
            raise ValueError("not a call")
        args = tuple(ast.literal_eval(a) for a in call.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
        if len(kwargs) != len(call.keywords):
            raise ValueError("no **")
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise ConfigError(
            f"{option} {spec!r}: a game's arguments are Python literals, MODULE:ATTR(7, size=9, name='x')"
        ) from None
    return head, (args, kwargs)


def load_game(spec: str, *, option: str = "--game") -> Any:
    """The game ``spec`` names: a shipped game's name (:data:`GAMES`), an OpenSpiel game
    (``openspiel:NAME``, :data:`OPENSPIEL`), or ``MODULE:ATTR``, a
    :class:`~asp.games.Game` class (made with no argument) or object in an importable module
    (the current directory counts, as for ``python -m``), or ``MODULE:ATTR(ARGUMENTS)``, the
    class made with those arguments, Python literals (``mygames.hex:Hex(size=7)``).
    ``MODULE:ATTR`` runs that module's code: a spec that a file names passes
    :func:`check_named_game` first.

    A user's game is checked once a process on random games (:func:`~asp.games.conformance.check_game`).

    :raises ConfigError: one line, naming ``option``: no such game, module or attribute, a
        module whose import fails, or not a game (it names the first method missing).
    :raises GameError: a user's game that breaks a rule of the protocol (one line naming it).
    """
    if isinstance(spec, str) and spec.startswith(OPENSPIEL):
        from asp.openspiel.game import OpenSpielGame, game_string_of

        try:
            return OpenSpielGame(game_string_of(spec))
        except ConfigError as e:
            raise ConfigError(str(e).replace("--game", option, 1)) from None
    where, arguments = _split_arguments(GAMES.get(spec, spec), spec, option)
    module_name, colon, attr = where.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"{option} {spec!r}: not a game: {', '.join(GAMES)}, {OPENSPIEL}NAME, or MODULE:ATTR "
                          "(a Game class or object)")  # fmt: skip
    if spec not in GAMES and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # spawn workers inherit sys.path: they find the module too
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"{option} {spec!r}: cannot import {module_name}: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 (a user's module: any failure is theirs, said in one line)
        said = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise ConfigError(f"{option} {spec!r}: importing {module_name} failed: {type(e).__name__}: {said}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise ConfigError(f"{option} {spec!r}: module {module_name} has no {attr}")
    if arguments is not None and not isinstance(obj, type):
        raise ConfigError(f"{option} {spec!r}: {attr} is an object, not a class: it takes no arguments")
    args, kwargs = arguments if arguments is not None else ((), {})
    try:
        game = obj(*args, **kwargs) if isinstance(obj, type) else obj
    except Exception as e:  # noqa: BLE001 (a user's constructor: any failure is theirs, said in one line)
        raise ConfigError(f"{option} {spec!r}: {attr}(...) failed: {type(e).__name__}: {e}") from None
    missing = [name for name in (*_METHODS, "name", "action_size") if not hasattr(game, name)]
    if missing:
        older = " (status(state) is now outcome(state), and its winning actions winning(state))"
        hint = older if missing[0] == "outcome" and hasattr(game, "status") else ""
        raise ConfigError(f"{option} {spec!r}: not a game (asp.games.Game): it has no {missing[0]}{hint}")
    if spec not in GAMES and spec not in _CHECKED:
        from asp.games.conformance import check_game  # here: the commands' --help imports no torch

        check_game(game)  # a user's game: its rules held on random games before it plays anywhere
        _CHECKED.add(spec)
    return game
