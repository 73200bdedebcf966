"""Stockfish (or another UCI engine) as an opponent in games of TinyChess, in this process or in asp's workers.

:class:`EngineOpponent` is built from its config, ``EngineOpponent(EngineConfig(...))``, the
way asp's workers rebuild a network from its class and ``cfg``; it has no weights. Each
instance starts its engine on its first move: one single-threaded process (``Threads=1``,
``Hash=16``) per instance, so one per worker process. It is closed by :meth:`close`, when
the instance is garbage-collected, or when the process exits. A worker that is killed
leaves no engine behind either: Stockfish quits at end of file on its standard input, and
the kernel closes that pipe with the worker.

:func:`asp.games.play_games` asks it for one move per game where it is to move (it is an
:class:`asp.games.Mover` of :class:`~asp.tinychess.game.TinyChessGame`); the model's moves
stay batched.

Engine faults: an engine that exits, sends something that is not a legal move, or says
nothing for ``move_timeout`` seconds (beyond ``time``) fails the game it was asked about.
That game ends unscored with termination ``"engine_failure"`` (result ``"*"`` in its PGN);
the failure is logged (event ``engine_failure``), the engine is killed, and a fresh one is
started for the next move. Scores leave such games out and count them apart
(:func:`~asp.app.evaluation.elo.match_result_of`): calling them either side's loss would
measure the engine's plumbing, not the model. After ``max_failures`` failures in a row (no
move answered in between) the opponent gives up with :class:`EngineFailed`.

Games against an engine are not reproducible: below skill 20, Stockfish picks among its best
moves with a random generator seeded by the clock.

>>> EngineConfig(skill=3, nodes=50).describe()
'stockfish skill 3 nodes 50'
>>> EngineConfig(skill=21)
Traceback (most recent call last):
...
asp.errors.ConfigError: EngineConfig.skill must be an int in 0..20, got 21
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import re
import shutil
import threading
import weakref
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import chess
import chess.engine
import structlog

from asp.errors import ConfigError, NotRetried, OpponentNotFound
from asp.games.movers import BaseMover
from asp.games.protocol import MoveFailed
from asp.tinychess.moves import move_index
from asp.util.checks import SECONDS, check_int, check_number

__all__ = [
    "ENGINES",
    "ENGINE_DIRS",
    "EngineConfig",
    "EngineFailed",
    "EngineNotFound",
    "EngineOpponent",
    "check_engine_field",
    "find_engine",
]

log = structlog.get_logger("asp.tinychess.engine")

T = TypeVar("T")

ENGINES = ("stockfish", "uci")
"""The names of TinyChess's engines (``asp eval --vs NAME``): Stockfish, the default, and any
UCI engine (:meth:`EngineConfig.of`)."""

ENGINE_DIRS = ("/usr/games", "/usr/local/games")
"""Where Debian and Ubuntu install Stockfish (``apt-get install stockfish``): not on PATH."""

_HASH_MB = 16  # a search of a few hundred nodes fills a fraction of it
_START_TIMEOUT = 10.0  # seconds to start and set up an engine, at the least (a busy machine)
_SLACK = 5.0  # seconds past a deadline before the event loop itself counts as stuck


class EngineNotFound(OpponentNotFound):
    """The engine's executable is not where ``EngineConfig.path`` (``--engine``) says, or, with
    no path, ``stockfish`` is neither on PATH nor in :data:`ENGINE_DIRS`."""


class EngineFailed(NotRetried, RuntimeError):
    """The engine failed ``EngineConfig.max_failures`` times in a row: the opponent gave up."""


@dataclass(frozen=True)
class EngineConfig:
    """Which engine an :class:`EngineOpponent` runs, and how. Invalid values raise ConfigError."""

    path: str | None = None
    """The UCI engine's executable (a path, or a name on PATH); None: ``stockfish`` on PATH,
    else in :data:`ENGINE_DIRS`. :class:`EngineOpponent` stores the path it found."""

    skill: int | None = 0
    """The engine's ``Skill Level`` option (Stockfish's: 0, weakest, to 20, full strength), or
    None: leave the engine as it is (any UCI engine, with or without such an option)."""

    nodes: int | None = 100
    """Nodes searched per move (1 to 10**9), or None: no node limit."""

    time: float | None = None
    """Seconds of search per move (above 0, at most 60), or None: no time limit."""

    depth: int | None = None
    """Plies searched per move (UCI ``go depth``; 1 to 100), or None: no depth limit. At least
    one of ``nodes``, ``time`` and ``depth`` must be set. Stockfish's skill levels are
    calibrated under a depth or time limit: a handful of nodes plays far below its level."""

    move_timeout: float = 10.0
    """Seconds the engine may stay silent, starting or on a move (beyond ``time``), before it
    counts as hung (above 0, at most 3600)."""

    max_failures: int = 3
    """Engine failures in a row after which the opponent gives up (1 to 1000)."""

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(EngineConfig):
            check_engine_field(spec.name, getattr(self, spec.name))
        if self.nodes is None and self.time is None and self.depth is None:
            raise ConfigError(
                "EngineConfig.nodes, EngineConfig.time and EngineConfig.depth are all None: "
                "set a node, time or depth limit"
            )

    def opponent(self, path: str | None = None) -> EngineOpponent:
        """The engine as an opponent, run from ``path`` (None: this config's own path);
        finds the executable now (:class:`EngineNotFound`)."""
        return EngineOpponent(self if path is None else dataclasses.replace(self, path=path))

    @classmethod
    def of(cls, fields: Mapping[str, Any], names: Mapping[str, str] | None = None) -> EngineConfig:
        """The config of ``fields`` (plain data), each checked first under the name ``names``
        gives it (:func:`check_engine_field`); a field it does not have is a ConfigError.

        ``fields["name"]``, where it is given, says which engine of :data:`ENGINES`:
        ``stockfish`` (the default: Skill Level 0 unless ``skill`` is given, the executable
        found on PATH unless ``path`` is), or ``uci``, any UCI engine (``path`` required, its
        skill left as it is unless given). A node limit of 100 unless ``nodes``, ``time`` or
        ``depth`` is given.

        >>> EngineConfig.of({"skill": 3, "nodes": 50})
        EngineConfig(path=None, skill=3, nodes=50, time=None, depth=None, move_timeout=10.0, max_failures=3)
        >>> EngineConfig.of({"name": "uci", "path": "/opt/lc0", "depth": 4})
        EngineConfig(path='/opt/lc0', skill=None, nodes=None, time=None, depth=4, move_timeout=10.0, max_failures=3)
        >>> EngineConfig.of({"skill": 30}, {"skill": "--eval-skill"})
        Traceback (most recent call last):
        ...
        asp.errors.ConfigError: --eval-skill must be an int in 0..20, got 30
        """
        fields, said = dict(fields), names or {}
        engine, option = fields.pop("name", ENGINES[0]), said.get("name", "name")
        if engine not in ENGINES:
            raise ConfigError(f"{option} {engine}: not an engine of chess; its engines: {', '.join(ENGINES)}")
        if engine == "uci":
            if fields.get("path") is None:
                raise ConfigError(f"{option} uci needs {said.get('path', 'path')} PATH: the UCI engine to play")
            fields.setdefault("skill", None)
        if "nodes" not in fields and (fields.get("time") is not None or fields.get("depth") is not None):
            fields["nodes"] = None
        known = [spec.name for spec in dataclasses.fields(cls)]
        for name, value in fields.items():
            if name not in known:
                raise ConfigError(f"EngineConfig has no field {name!r}; its fields: {', '.join(known)}")
            check_engine_field(name, value, name=(names or {}).get(name))
        return cls(**fields)

    def limit(self) -> chess.engine.Limit:
        """The search limit of one move."""
        return chess.engine.Limit(nodes=self.nodes, time=self.time, depth=self.depth)

    def describe(self) -> str:
        """The engine in words, for records and PGN: ``stockfish skill 0 nodes 100``."""
        name = re.sub(r"[^\w.+-]", "_", os.path.basename(self.path or "stockfish"))[:60] or "engine"
        words = [name] + ([f"skill {self.skill}"] if self.skill is not None else [])
        if self.nodes is not None:
            words.append(f"nodes {self.nodes}")
        if self.time is not None:
            words.append(f"time {self.time:g}s")
        if self.depth is not None:
            words.append(f"depth {self.depth}")
        return " ".join(words)


_INT_FIELDS = {"skill": (0, 20), "nodes": (1, 10**9), "depth": (1, 100), "max_failures": (1, 1000)}


def check_engine_field(field: str, value: object, *, name: str | None = None) -> None:
    """ConfigError unless ``value`` is a value of EngineConfig's ``field``. The message calls it
    ``name``, by default ``EngineConfig.<field>`` (the command line names its options).

    >>> check_engine_field("skill", 21, name="--skill")
    Traceback (most recent call last):
    ...
    asp.errors.ConfigError: --skill must be an int in 0..20, got 21
    """
    name = name or f"EngineConfig.{field}"
    if field == "path":
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{name} must be None or a non-empty path, got {value!r}")
    elif field in _INT_FIELDS:
        if value is not None or field == "max_failures":  # None: no skill level, no node or depth limit
            check_int(name, value, *_INT_FIELDS[field])
    elif field in ("time", "move_timeout"):
        also: tuple[None, ...] = (None,) if field == "time" else ()
        check_number(name, value, 0, 60 if field == "time" else 3600, open_low=True, also=also, what=SECONDS)
    else:
        raise ValueError(f"EngineConfig has no field {field!r}")


def find_engine(path: str | None = None) -> str:
    """The absolute path of the engine executable ``path`` names, or of Stockfish when None.

    :raises EngineNotFound: no such executable; the message says where it looked.
    """
    if path is not None:
        found = shutil.which(path)
        if found is None:
            raise EngineNotFound(f"--engine (EngineConfig.path): {path!r} is not an executable file")
        return os.path.abspath(found)
    found = shutil.which("stockfish") or shutil.which("stockfish", path=os.pathsep.join(ENGINE_DIRS))
    if found is None:
        raise EngineNotFound(
            f"no Stockfish found: `stockfish` is neither on PATH nor in {' or '.join(ENGINE_DIRS)}; install it "
            f"(Debian, Ubuntu: apt-get install stockfish) or give its path with --engine PATH (EngineConfig.path)"
        )
    return os.path.abspath(found)


class _Engine:
    """One engine process, driven by python-chess's asyncio protocol from a daemon thread.

    Not python-chess's SimpleEngine: its thread is no daemon, so a process that ends without
    closing it waits for it forever (interpreter shutdown joins such threads before atexit
    handlers run), and its moves under a node limit have no deadline.
    """

    def __init__(self, path: str, options: Mapping[str, int], *, timeout: float) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"asp-engine {path}", daemon=True)
        self._thread.start()
        self._transport: asyncio.SubprocessTransport | None = None
        self._protocol: chess.engine.UciProtocol | None = None
        self._closed = False
        try:
            # Its own process group: Ctrl-C in a terminal is for asp, which then closes the engine.
            # Started, then initialised: an engine that never answers `uci` is killed and reaped too.
            popen = chess.engine.UciProtocol.popen(path, setpgrp=True)
            self._transport, self._protocol = self._run(popen, timeout)
            self._run(self._protocol.initialize(), timeout)
            if "Skill Level" in options and "Skill Level" not in self._protocol.options:
                raise chess.engine.EngineError(f"{path} has no 'Skill Level' option, which EngineConfig.skill sets")
            known = {name: value for name, value in options.items() if name in self._protocol.options}
            self._run(self._protocol.configure(known), timeout)
        except BaseException:
            self.close(timeout=timeout, polite=False)
            raise
        self.pid: int = self._transport.get_pid()

    def _run(self, aw: Awaitable[T], timeout: float) -> T:
        """``aw``'s result from the engine's event loop; TimeoutError after ``timeout`` seconds."""
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(aw, timeout), self._loop)
        try:
            return future.result(timeout + _SLACK)
        except TimeoutError:
            future.cancel()
            raise

    def play(self, board: chess.Board, limit: chess.engine.Limit, *, timeout: float) -> chess.Move:
        """The engine's move on ``board``; TimeoutError if it says nothing for ``timeout`` seconds."""
        assert self._protocol is not None
        result = self._run(self._protocol.play(board.copy(), limit), timeout)
        if result.move is None:
            raise chess.engine.EngineError("the engine gave no move (bestmove (none))")
        return result.move

    async def _shutdown(self, *, polite: bool, seconds: float) -> None:
        """Quit (``polite``), kill if still running, and wait for the exit: ``seconds`` for each."""
        assert self._transport is not None and self._protocol is not None
        if polite:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._protocol.quit(), seconds)
        self._transport.close()  # kills the process if it is still running
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._protocol.returncode), seconds)

    def close(self, *, timeout: float, polite: bool = True) -> None:
        """Ask the engine to quit (``polite``), kill it if it has not, stop the event loop."""
        if self._closed:
            return
        self._closed = True
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._run(self._shutdown(polite=polite, seconds=timeout), 2 * timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()


def _close_engine(holder: list[_Engine | None], timeout: float, polite: bool = True) -> None:
    engine, holder[0] = holder[0], None
    if engine is not None:
        engine.close(timeout=timeout, polite=polite)


class EngineOpponent(BaseMover):
    """A UCI engine (Stockfish) as an opponent of TinyChessGame; see the module docstring.

    ``EngineOpponent(cfg)`` finds the executable at once (:func:`find_engine`) and keeps its
    path in ``self.cfg``, so that a worker rebuilding it from its cfg runs the same file; the
    engine itself starts on the first move.

    :raises EngineNotFound: no executable where ``cfg.path`` says, or no Stockfish.
    """

    cfg: EngineConfig

    def __init__(self, cfg: EngineConfig | None = None) -> None:
        super().__init__()
        cfg = cfg if cfg is not None else EngineConfig()
        self.cfg = dataclasses.replace(cfg, path=find_engine(cfg.path))
        self.opponent_name = self.cfg.describe()
        """Who it is, in the records' ``opponent_name`` and PGN's ``Opponent`` tag."""
        self.failures = 0
        """Engine failures of this instance so far (in this process)."""
        self.last_failure = ""
        """What the last failure was, in words ("" before any)."""
        self._in_a_row = 0
        self._limit = self.cfg.limit()
        self._move_timeout = self.cfg.move_timeout + (self.cfg.time or 0.0)
        self._start_timeout = max(self.cfg.move_timeout, _START_TIMEOUT)
        # The finalizer must not hold self: it gets the holder of the engine, and runs at exit too.
        self._engine: list[_Engine | None] = [None]
        self._finalizer = weakref.finalize(self, _close_engine, self._engine, self._start_timeout)

    @property
    def engine_pid(self) -> int | None:
        """The pid of the running engine process, or None when none is running."""
        engine = self._engine[0]
        return engine.pid if engine is not None else None

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        """The engine's move at ``state``, a :class:`~asp.tinychess.game.ChessState`, as the
        game's action: the engine as a :class:`asp.games.Mover` of
        :class:`~asp.tinychess.game.TinyChessGame` (``rng`` is not used).

        :raises MoveFailed: the engine failed (termination ``engine_failure``): the game ends unscored.
        :raises EngineFailed: the ``cfg.max_failures``-th failure in a row.
        """
        board = state.history()  # the moves since the last capture or pawn move: it sees repetitions
        move = self._engine_move(board)
        if move is None:
            raise MoveFailed(f"{self.opponent_name}: {self.last_failure}", termination="engine_failure")
        return move_index(move, board.turn)

    def _engine_move(self, board: chess.Board) -> chess.Move | None:
        """The engine's move on ``board`` (a legal move), or None if the engine failed.

        :raises EngineFailed: the ``cfg.max_failures``-th failure in a row.
        """
        starting = self._engine[0] is None
        try:
            engine = self._engine[0]
            if engine is None:
                options = {"Threads": 1, "Hash": _HASH_MB}
                if self.cfg.skill is not None:  # set only when asked: not every UCI engine has one
                    options["Skill Level"] = self.cfg.skill
                engine = self._engine[0] = _Engine(self.cfg.path or "", options, timeout=self._start_timeout)
            starting = False
            move = engine.play(board, self._limit, timeout=self._move_timeout)
            if not board.is_legal(move):
                raise chess.engine.EngineError(f"the engine played {move.uci()}, not a legal move")
        except Exception as e:  # whatever it was, the game cannot go on with this engine
            self._fail(e, starting=starting)
            return None
        self._in_a_row = 0
        return move

    def _fail(self, error: Exception, *, starting: bool) -> None:
        self.failures += 1
        self._in_a_row += 1
        _close_engine(self._engine, self._start_timeout, polite=False)  # a broken engine is killed, not asked
        if isinstance(error, TimeoutError) and starting:
            reason = f"no answer within {self._start_timeout:g} s of starting"
        elif isinstance(error, TimeoutError):
            reason = f"no answer within {self._move_timeout:g} s"
        else:
            reason = f"{type(error).__name__}: {error}".strip().rstrip(":")
        self.last_failure = reason
        log.warning("engine_failure", error=reason, engine=self.opponent_name, in_a_row=self._in_a_row)
        if self._in_a_row >= self.cfg.max_failures:
            raise EngineFailed(
                f"{self.opponent_name} ({self.cfg.path}) failed {self._in_a_row} times in a row; the last: {reason}"
            ) from error

    def close(self) -> None:
        """Stop the engine (it quits, or is killed). A later move starts a new one."""
        _close_engine(self._engine, self._start_timeout)

    def extra_repr(self) -> str:
        return f"{self.opponent_name!r}, path={self.cfg.path!r}"
