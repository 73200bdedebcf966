"""The design asp replaces, as a reusable class, and an uneven self-play workload to compare on.

:class:`BaselinePool` is the usual hand-rolled parallel self-play loop:

* a long-lived ``multiprocessing.get_context("spawn").Pool(workers, initializer=...)`` whose
  initializer builds the network once per worker (torch set to ``threads_per_worker``);
* each iteration, the trainer writes the ``state_dict`` with ``torch.save`` and re-broadcasts
  it with ``pool.map(set_weights, [path] * workers)`` (here ``[(path, version)] * workers``,
  so that a worker can tell which weights it holds);
* then ONE equal, contiguous shard of the games per worker: ``pool.map(play_shard, shards)``.

Nothing guarantees that the broadcast reaches every worker: one worker can take two of the
``set_weights`` tasks and another none (docs/design.md, "What asp does about them", point 5).
The class does not hide that: :meth:`BaselinePool.set_weights` returns the pids that loaded
the weights, and every shard reports the version its worker held, so a stale shard shows up
in :attr:`BaselineResult.stale_shards`.

The workload: :func:`uneven_config` makes the :class:`~asp.games.PlayConfig` of one block
(iteration) of games whose lengths are very uneven and clustered by game id, played by
:func:`asp.games.play_games` (asp's ``SelfPlay`` calls it as ``cfg.play``; the pool's workers
call it as their ``play_fn``). Chosen on purpose to show the cost of one equal shard per
worker, and documented here so that nobody mistakes it for typical self-play:

* a *block* is one iteration's games, ids ``block_first .. block_first + block_games - 1``;
* the first ``long_fraction`` (default half) of a block's ids are *long* games, capped at
  ``long_plies`` (default 400: with the untrained TinyChess, 64 such games averaged ~330 plies
  in a quick measurement, ending by insufficient material, the 75-move rule, mate or
  adjudication); every other game is *short*, capped at ``short_plies`` (default 40, nearly
  always exactly 40 plies);
* the game is :class:`UnevenChess`, TinyChess whose games end at the cap their start gives:
  a game's id picks its start from the config's ``openings`` (game ``i`` starts from
  ``openings[i % len(openings)]``), and every start is the initial position, a long game's
  with the fullmove number :data:`LONG_FULLMOVE` (the network does not see that number), so
  one ``play_games`` batch loop plays long and short games together and keeps its batch as
  full as it can. A game ended at its cap is scored by material as at ``max_plies``, but its
  record's termination reads ``rules``.

With one contiguous shard per worker, the first worker gets every long game: most of the work.
Small shards spread the long games over the workers, but each shard plays fewer games at once,
so the network batch is smaller. asp's default deals each worker a full batch of small shards
(every other shard of the first batches, for two workers) and then offers it more games, a
few at a time, as its games end (``asp.more_games``).

Spawn workers import this module by name (``baseline_pool``): its directory must be on
``sys.path`` in the parent before the pool starts (spawn children inherit ``sys.path``).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.pool
import multiprocessing.synchronize
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import torch
from torch import nn

from asp.games import PlayConfig
from asp.tinychess import TinyChess, TinyChessGame
from asp.tinychess.game import ChessState

__all__ = ["LONG_FULLMOVE", "BaselinePool", "BaselineResult", "PlayFn", "UnevenChess", "uneven_config"]

PlayFn = Callable[[nn.Module, nn.Module | None, Any], tuple[list[Any], dict[str, Any]]]


# -- the uneven workload ----------------------------------------------------------------------

LONG_FULLMOVE = 10_001
"""Fullmove number of a long game's start (a short game starts at 1): the game's ply count
(:meth:`chess.Board.ply`) then tells a long game from a short one."""
_LONG_PLY = 2 * (LONG_FULLMOVE - 1)
_SHORT_START = chess.STARTING_FEN
_LONG_START = chess.STARTING_FEN.rsplit(" ", 1)[0] + f" {LONG_FULLMOVE}"


class UnevenChess(TinyChessGame):
    """TinyChess whose games end, scored by material, after ``long_plies`` plies from a long
    start (fullmove :data:`LONG_FULLMOVE`) and ``short_plies`` from any other."""

    def __init__(self, long_plies: int = 400, short_plies: int = 40) -> None:
        super().__init__()
        for name, plies in (("long_plies", long_plies), ("short_plies", short_plies)):
            if not 1 <= plies < _LONG_PLY:
                raise ValueError(f"UnevenChess.{name} must be in 1..{_LONG_PLY - 1}, got {plies}")
        self.long_plies = long_plies
        self.short_plies = short_plies

    def outcome(self, state: ChessState) -> float | None:
        """TinyChess's outcome, and a game at its cap adjudicated (the search's status follows)."""
        value = super().outcome(state)
        if value is None:
            ply = state.board.ply()
            played, cap = (ply - _LONG_PLY, self.long_plies) if ply >= _LONG_PLY else (ply, self.short_plies)
            if played >= cap:
                return self.adjudicate(state)
        return value

    def __eq__(self, other: object) -> bool:
        return (
            super().__eq__(other)
            and isinstance(other, UnevenChess)
            and (other.long_plies, other.short_plies) == (self.long_plies, self.short_plies)
        )

    def __hash__(self) -> int:
        return hash((super().__hash__(), self.long_plies, self.short_plies))

    def __repr__(self) -> str:
        return f"UnevenChess(long_plies={self.long_plies}, short_plies={self.short_plies})"


def uneven_config(
    block_first: int,
    block_games: int,
    *,
    long_fraction: float = 0.5,
    long_plies: int = 400,
    short_plies: int = 40,
    **play: Any,
) -> PlayConfig:
    """The :class:`PlayConfig` of the block of games ``block_first .. block_first + block_games - 1``:
    the first ``long_fraction`` of its ids long games, the others short.

    ``play`` holds PlayConfig's other fields; ``first_game`` and ``n_games`` default to the
    block's. Any game id, in the block or not, gets the start of its place in the block's
    pattern, so a shard of the block (or a game offered to a worker) plays the same game.
    """
    n_long = int(block_games * long_fraction)
    starts = [_LONG_START if (k - block_first) % block_games < n_long else _SHORT_START for k in range(block_games)]
    play.setdefault("first_game", block_first)
    play.setdefault("n_games", block_games)
    return PlayConfig(
        UnevenChess(long_plies, short_plies), openings=tuple(starts), max_plies=max(long_plies, short_plies), **play
    )


# -- the baseline pool: code that runs in its workers -------------------------------------------

_play_fn: PlayFn | None = None
_model: nn.Module | None = None
_version = -1
_barrier: multiprocessing.synchronize.Barrier | None = None


def _initialize(
    play_fn: PlayFn,
    model_class: type[nn.Module],
    model_cfg: Any,
    threads: int,
    barrier: multiprocessing.synchronize.Barrier,
) -> None:
    """Pool initializer: set torch's threads and build the network, once per worker."""
    global _play_fn, _model, _barrier
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    net = model_class() if model_cfg is None else model_class(model_cfg)
    net.eval()
    _play_fn, _model, _barrier = play_fn, net, barrier


def _ready(_: int) -> int:
    """Wait until every worker holds one of these tasks: so every worker has started."""
    assert _barrier is not None
    _barrier.wait(timeout=120.0)
    return os.getpid()


def _set_weights(task: tuple[str, int]) -> tuple[int, int]:
    """Load the weights file ``task[0]`` (version ``task[1]``); return ``(pid, version)``."""
    global _version
    assert _model is not None
    path, version = task
    _model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    _version = version
    return os.getpid(), version


@dataclass(frozen=True)
class _ShardOut:
    records: list[Any]
    stats: dict[str, Any]
    pid: int
    version: int
    seconds: float


def _play_shard(cfg: Any) -> _ShardOut:
    """Play one shard with whatever weights this worker holds."""
    assert _play_fn is not None and _model is not None
    started = time.perf_counter()
    records, stats = _play_fn(_model, None, cfg)
    return _ShardOut(records, stats, os.getpid(), _version, time.perf_counter() - started)


# -- the baseline pool: the parent's side -------------------------------------------------------


@dataclass(frozen=True)
class BaselineResult:
    """One :meth:`BaselinePool.play` call."""

    records: list[Any]
    """Every shard's records, sorted by game id."""
    stats: dict[str, Any]
    """The sum of the shards' numeric stats."""
    shard_seconds: list[float]
    """Seconds each shard took in its worker, in shard order."""
    pids: list[int]
    """The worker that played each shard."""
    stale_shards: int
    """Shards played by a worker that did not hold the last weights given to set_weights."""


class BaselinePool:
    """A long-lived spawn ``multiprocessing.Pool``: weights by broadcast, one shard per worker.

    Use it as ``with BaselinePool(2, play_games) as pool:``; ``start()`` and ``close()`` are
    the same by hand. Start-up waits until every worker has run its initializer.
    """

    def __init__(
        self,
        workers: int,
        play_fn: PlayFn,
        *,
        model_class: type[nn.Module] = TinyChess,
        model_cfg: Any = None,
        threads_per_worker: int = 1,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.play_fn = play_fn
        self.model_class = model_class
        self.model_cfg = model_cfg
        self.threads_per_worker = threads_per_worker
        self.pids: list[int] = []
        self._pool: multiprocessing.pool.Pool | None = None
        self._dir: Path | None = None
        self._version = -1

    def start(self) -> float:
        """Start the pool and wait until every worker is ready; return the seconds it took."""
        if self._pool is not None:
            raise RuntimeError("BaselinePool already started")
        started = time.perf_counter()
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(self.workers)
        self._dir = Path(tempfile.mkdtemp(prefix="asp-baseline-"))
        self._pool = ctx.Pool(
            self.workers,
            initializer=_initialize,
            initargs=(self.play_fn, self.model_class, self.model_cfg, self.threads_per_worker, barrier),
        )
        # Each _ready task blocks its worker in the barrier until all are in: one per worker.
        self.pids = sorted(self._pool.map(_ready, range(self.workers), chunksize=1))
        return time.perf_counter() - started

    def set_weights(self, model: nn.Module, version: int) -> list[int]:
        """``torch.save`` the state_dict, then ``pool.map(set_weights, [path] * workers)``.

        Returns the pid of the worker that ran each of the ``workers`` broadcast tasks: the
        same pid twice means some worker did not get the new weights.
        """
        pool, directory = self._started()
        path = directory / "weights.pt"
        torch.save(model.state_dict(), path)
        self._version = version
        loaded = pool.map(_set_weights, [(str(path), version)] * self.workers, chunksize=1)
        return [pid for pid, _ in loaded]

    def play(self, cfg: Any) -> BaselineResult:
        """Split ``cfg`` into one equal contiguous shard per worker and play them all."""
        pool, _ = self._started()
        size, extra = divmod(cfg.n_games, self.workers)
        shards: list[Any] = []
        first = cfg.first_game
        for k in range(self.workers):
            n = size + (1 if k < extra else 0)
            if n:
                shards.append(dataclasses.replace(cfg, first_game=first, n_games=n))
            first += n
        outs = pool.map(_play_shard, shards, chunksize=1)
        records = sorted((r for out in outs for r in out.records), key=lambda r: r.game_id)
        stats: dict[str, Any] = {}
        for out in outs:
            for key, value in out.stats.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    stats[key] = stats.get(key, 0) + value
        return BaselineResult(
            records=records,
            stats=stats,
            shard_seconds=[out.seconds for out in outs],
            pids=[out.pid for out in outs],
            stale_shards=sum(out.version != self._version for out in outs),
        )

    def close(self) -> None:
        """Let the workers finish and exit (``pool.close`` + ``join``); remove the weights file."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None
        self._remove_dir()

    def terminate(self) -> None:
        """Kill the workers at once (``pool.terminate`` + ``join``); remove the weights file."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _started(self) -> tuple[multiprocessing.pool.Pool, Path]:
        if self._pool is None or self._dir is None:
            raise RuntimeError("BaselinePool is not started: use `with BaselinePool(...) as pool:`")
        return self._pool, self._dir

    def __enter__(self) -> BaselinePool:
        try:
            self.start()
        except BaseException:
            self.terminate()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()
