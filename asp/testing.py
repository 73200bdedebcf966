"""Play functions that misbehave on purpose: for asp's tests, examples and your own drills.

:func:`fault_play` plays no chess. Each "game" is ``plies`` heartbeats ``delay`` seconds
apart, and its record says which process played it with which weights. With ``batch_size``
it keeps that many games in flight, one heartbeat each per round, and takes the games the
coordinator offers (:func:`asp.more_games`) once its own have all begun, as a batched play
function does. A
:class:`FaultConfig` makes the shard holding game ``fault_game`` raise, hang, crash or die,
either every time or only the first time (``once=True``: the first worker to hit the fault
leaves a marker file in ``marker_dir`` and later attempts play normally).

>>> import torch
>>> records, stats = fault_play(torch.nn.Linear(1, 1), None, FaultConfig(n_games=2, plies=3))
>>> [r.game_id for r in records], stats["plies"]
([0, 1], 6)
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from asp.errors import ConfigError
from asp.progress import heartbeat, more_games

__all__ = ["FAULTS", "EchoRecord", "FaultConfig", "fault_play"]

FAULTS = ("none", "raise", "hang", "hang_in_c", "crash", "exit", "sys_exit", "keyboard_interrupt")
"""What the faulty shard does: nothing, raise RuntimeError, loop forever in Python, block
forever on a lock (inside C), SIGKILL its own process, call ``os._exit(3)``, call
``sys.exit(3)``, or raise KeyboardInterrupt."""


@dataclass(frozen=True)
class FaultConfig:
    """Config of :func:`fault_play`; has the fields every asp play_fn config has."""

    n_games: int = 8
    seed: int = 0
    first_game: int = 0
    model_version: int = 0
    plies: int = 10
    """Heartbeats per game."""
    delay: float = 0.0
    """Seconds between heartbeats."""
    batch_size: int = 0
    """0: one game after another. n: up to n games in flight, and offers taken (see above)."""
    plies_step: int = 0
    """Game ``i`` is ``plies + plies_step * (i % 4)`` heartbeats long: uneven games."""
    fault: str = "none"
    """One of :data:`FAULTS`."""
    fault_game: int = 0
    """The shard holding this game id misbehaves."""
    once: bool = False
    """Misbehave only the first time (needs ``marker_dir``)."""
    marker_dir: str = ""
    """Directory for the marker file of ``once``."""
    drop_offers: bool = False
    """A play_fn bug: take the games offered (:func:`asp.more_games`) and return none of them."""

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ConfigError(f"FaultConfig.fault must be one of {FAULTS}, got {self.fault!r}")
        if self.once and not self.marker_dir:
            raise ConfigError("FaultConfig.marker_dir must name a directory when once=True")


@dataclass
class EchoRecord:
    """One game of :func:`fault_play`: who played it, with which weights."""

    game_id: int
    pid: int
    model_version: int
    weight_sum: float
    """Sum of the model's parameters as the worker saw them."""
    plies: int


def _first_time(cfg: FaultConfig) -> bool:
    try:
        fd = os.open(os.path.join(cfg.marker_dir, f"fault-{cfg.fault_game}"), os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _misbehave(fault: str) -> None:
    if fault == "raise":
        raise RuntimeError("fault_play: the injected failure")
    if fault == "hang":
        while True:
            time.sleep(0.05)
    if fault == "hang_in_c":
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # blocks forever inside C
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "exit":
        os._exit(3)
    if fault == "sys_exit":
        sys.exit(3)
    if fault == "keyboard_interrupt":
        raise KeyboardInterrupt


def _begin(cfg: FaultConfig, game_id: int) -> int:
    """Start game ``game_id`` (misbehaving if it is the fault's); return its length in plies."""
    if cfg.fault != "none" and game_id == cfg.fault_game and (not cfg.once or _first_time(cfg)):
        _misbehave(cfg.fault)
    return cfg.plies + cfg.plies_step * (game_id % 4)


def fault_play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[EchoRecord], dict[str, Any]]:
    """Play ``cfg.n_games`` heartbeat "games"; misbehave as ``cfg`` says."""
    with torch.no_grad():
        weight_sum = float(sum(p.sum() for p in model.parameters()))
    pending = iter(range(cfg.first_game, cfg.first_game + cfg.n_games))
    records = []

    def finish(game_id: int, plies: int) -> None:
        records.append(EchoRecord(game_id, os.getpid(), cfg.model_version, weight_sum, plies))

    if not cfg.batch_size:
        for game_id in pending:
            plies = _begin(cfg, game_id)
            for _ in range(plies):
                heartbeat(1)
                if cfg.delay:
                    time.sleep(cfg.delay)
            finish(game_id, plies)
    else:
        live: dict[int, list[int]] = {}  # game id -> [plies played, its length]
        while True:
            while len(live) < cfg.batch_size:
                new = next(pending, None)
                if new is None and (block := more_games()) is not None:
                    if not cfg.drop_offers:
                        pending = iter(range(block[0], block[0] + block[1]))
                    continue
                if new is None:
                    break
                live[new] = [0, _begin(cfg, new)]
            if not live:
                break
            heartbeat(len(live))
            if cfg.delay:
                time.sleep(cfg.delay)
            for game_id, game in list(live.items()):
                game[0] += 1
                if game[0] == game[1]:
                    finish(game_id, game[1])
                    del live[game_id]
    records.sort(key=lambda r: r.game_id)
    return records, {"games": len(records), "plies": sum(r.plies for r in records)}
