"""The body of a slot's Ray actor: :class:`ShardRunner`, a plain class.

:class:`asp.backends.ray_backend.RayBackend` turns it into an actor class (``ray.remote``) when
it starts; nothing here is decorated, so it runs (and is tested) without Ray's engine too.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any

import ray
import torch
from torch import nn

from asp import progress
from asp.backends import worker
from asp.backends.weights import WeightRef
from asp.util.log import LogFormat, configure_logging

__all__ = ["ShardRunner"]


class ShardRunner:
    """The body of a slot's actor: builds the model once, plays shards, answers while it plays."""

    def __init__(self, threads: int, warm: tuple[type[nn.Module], Any] | None, settings: tuple[LogFormat, str]) -> None:
        configure_logging(fmt=settings[0], level=settings[1])
        worker.set_threads(threads)
        self._lock = threading.Lock()
        self._progress, self._cancel, self._pids, self._phase = [0], [0], [0], [progress.IDLE]
        ring = progress.OFFER_RING
        self._offers = progress.OfferCells([0], [0], [0], [0] * ring, [0] * ring)
        self._waiting: dict[int, tuple[int, int]] = {}  # offers that arrived before an earlier one
        progress.attach(0, self._progress, self._cancel, self._pids, self._phase, self._offers)
        self._running: int | None = None
        self._latest: int | None = None  # the last run begun here, running or not
        self._cancelled: set[int] = set()
        self._node = ray.get_runtime_context().get_node_id()
        worker.prebuild(warm)

    def ping(self) -> tuple[int, str]:
        """This actor's pid and Ray node id (answered once the model is built)."""
        return os.getpid(), self._node

    def run(self, token: int, task: worker.ShardTask, offers: list[tuple[int, int]]) -> worker.ShardOutput:
        """Play shard ``task`` with ``offers`` made before it starts; ``token`` names this run
        for :meth:`cancel` and :meth:`offer`."""
        with self._lock:
            self._progress[0], self._phase[0], self._running = 0, progress.IDLE, token
            self._latest = token
            self._cancel[0] = int(token in self._cancelled)
            self._offers.reset(0)
            self._waiting.clear()
        for seq, (first_game, n_games) in enumerate(offers):
            self.offer(token, seq, first_game, n_games)
        progress.begin_shard()
        try:
            return worker.play_task(task, _load, self._node)
        finally:
            progress.end_shard()
            with self._lock:
                self._running = None
                self._cancelled.discard(token)

    def state(self) -> tuple[int | None, int, int, int, int, int]:
        """(run token, phase, plies, pid, offers taken, asks for more games) of the latest run."""
        with self._lock:
            offers = self._offers
            return self._latest, self._phase[0], self._progress[0], self._pids[0], offers.taken[0], offers.asked[0]

    def offer(self, token: int, seq: int, first_game: int, n_games: int) -> None:
        """Offer run ``token`` games ``first_game ..`` as its offer ``seq`` (see Backend.offer).

        Calls can arrive out of order (this actor answers on several threads): an offer is
        posted only after every earlier one, and one for a run that is over is dropped.
        """
        with self._lock:
            if token != self._running:
                return
            self._waiting[seq] = (first_game, n_games)
            offers = self._offers
            while offers.posted[0] in self._waiting:
                posted = offers.posted[0]
                offers.first[posted % progress.OFFER_RING], offers.games[posted % progress.OFFER_RING] = (
                    self._waiting.pop(posted)
                )
                offers.posted[0] = posted + 1

    def cancel(self, token: int) -> None:
        """Stop run ``token`` at its next heartbeat (even if it has not begun yet)."""
        with self._lock:
            self._cancelled.add(token)
            if self._running == token:
                self._cancel[0] = 1

    def vigil(self) -> None:
        """Never returns: the coordinator's pending call fails as soon as this actor dies."""
        threading.Event().wait()

    def stack(self) -> str:
        """Every thread's Python stack."""
        names = {t.ident: t.name for t in threading.enumerate()}
        return "\n".join(
            f"Thread {names.get(ident, ident)} (most recent call last):\n" + "".join(traceback.format_stack(frame))
            for ident, frame in sys._current_frames().items()
        )


def _load(ref: WeightRef) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = ray.get(ref.location)
    return state
