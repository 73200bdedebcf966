"""A thin synchronous facade over :class:`asp.SelfPlay`, for scripts and sync trainers.

:func:`play_games_parallel` is a drop-in for :func:`asp.games.play_games` that spreads the games over
worker processes. :class:`SyncSelfPlay` keeps one pool alive across calls, for loops that play
every iteration without paying for a new pool each time:

>>> from asp.games import PlayConfig
>>> from asp.tinychess.game import TinyChessGame
>>> chess = TinyChessGame()
>>> with SyncSelfPlay(workers=1) as selfplay:
...     records, stats = selfplay.play(chess.network(), None, PlayConfig(chess, n_games=2, max_plies=4))
>>> [r.game_id for r in records]
[0, 1]

Each handle runs its own event loop (``asyncio.Runner``) in the calling thread; Ctrl-C
during a call cancels it, tears the call's shards down, and raises ``KeyboardInterrupt``.
A handle dropped without :meth:`SyncSelfPlay.close` is closed when it is garbage-collected
(or at interpreter exit): its workers stop and its temporary files go.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Any

import structlog
import torch
from torch import nn

from asp.backends.worker import cfg_play
from asp.errors import ClosedError
from asp.selfplay import PlayFn, SelfPlay

__all__ = ["SyncSelfPlay", "play_games_parallel"]

log = structlog.get_logger("asp.selfplay.sync")


class SyncSelfPlay:
    """A long-lived :class:`~asp.SelfPlay` for synchronous code; takes the same options."""

    def __init__(self, **options: Any) -> None:
        self._closed = False
        self._runner = asyncio.Runner()
        self._selfplay = SelfPlay(**options)
        try:
            self._runner.run(self._selfplay.start())
        except BaseException:
            self._runner.close()
            raise
        # Holds the runner and the SelfPlay, not this handle, so that the handle can be collected.
        self._finalizer = weakref.finalize(self, _close_dropped, self._runner, self._selfplay)

    @property
    def workers(self) -> int:
        return self._selfplay.workers

    def play(
        self, model: nn.Module, opp: nn.Module | None, cfg: Any, *, timeout: float | None = None
    ) -> tuple[list[Any], dict[str, Any]]:
        """Same as :meth:`asp.SelfPlay.play`, blocking."""
        if self._closed:
            raise ClosedError("SyncSelfPlay.play: this SyncSelfPlay is closed")
        return self._runner.run(self._selfplay.play(model, opp, cfg, timeout=timeout))

    def close(self) -> None:
        """Stop the workers and the event loop. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        _close(self._runner, self._selfplay)

    def __enter__(self) -> SyncSelfPlay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close(runner: asyncio.Runner, selfplay: SelfPlay) -> None:
    try:
        runner.run(selfplay.aclose())
    finally:
        runner.close()


def _close_dropped(runner: asyncio.Runner, selfplay: SelfPlay) -> None:
    """Close a SyncSelfPlay that was dropped without close() (the finalizer's body)."""
    log.warning("sync_selfplay_not_closed", workers=selfplay.workers, backend=selfplay.backend)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _close(runner, selfplay)
        return
    # Collected inside a running event loop (async code dropped it): this thread cannot run
    # another loop, so the runner's loop runs the close in a thread of its own.
    closer = threading.Thread(target=_close, args=(runner, selfplay), name="asp-sync-close")
    closer.start()
    closer.join()


def play_games_parallel(
    model: nn.Module,
    opp: nn.Module | None,
    cfg: Any,
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    play_fn: PlayFn | None = None,
    **options: Any,
) -> tuple[list[Any], dict[str, Any]]:
    """``play_fn(model, opp, cfg)``'s result, played by ``workers`` processes.

    With ``workers <= 1`` the games are played in this process, with no pool at all, on
    ``threads_per_worker`` torch threads as a worker would play them (torch's default, a
    thread a core, only adds overhead to a small model's batches), and the count is restored
    after. Other keyword options go to :class:`~asp.SelfPlay`.
    """
    if workers is not None and workers <= 1:
        if play_fn is None:
            play_fn = cfg_play  # the cfg plays its own games, as in SelfPlay
        started = time.perf_counter()
        threads = torch.get_num_threads()
        torch.set_num_threads(threads_per_worker)
        try:
            records, stats = play_fn(model, opp, cfg)
        finally:
            torch.set_num_threads(threads)
        stats = {"workers": 1, "shards": 1, "retries": 0, "respawns": 0, **stats}
        stats.setdefault("seconds", time.perf_counter() - started)
        return records, stats
    with SyncSelfPlay(workers=workers, threads_per_worker=threads_per_worker, play_fn=play_fn, **options) as sp:
        return sp.play(model, opp, cfg)
