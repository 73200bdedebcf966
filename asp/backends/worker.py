"""Code that runs inside a worker process: initializer, model cache and one shard's run.

Nothing here imports asyncio: a worker is plain synchronous compute. The coordinator
(:mod:`asp.selfplay`, through a backend) sends a :class:`ShardTask` per shard and gets a
:class:`ShardOutput` back, or the exception the shard raised. :func:`initialize` and
:func:`run_shard` are the local backend's process side; :func:`play_task` is what every
backend runs. A call given no play function plays :func:`cfg_play`: its config plays its own
games (``cfg.play(model, opp)``, as :class:`asp.games.PlayConfig` does), so the orchestrator
knows no game.
"""

from __future__ import annotations

import faulthandler
import gc
import numbers
import os
import pickle
import platform
import signal
import time
import traceback
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass
from typing import Any

import structlog
import torch
from torch import nn

from asp import progress
from asp.backends.weights import WeightRef, load_state_dict
from asp.errors import ConfigError, PlayExited
from asp.util.die_with_parent import die_with_parent
from asp.util.interrupts import ignore_ctrl_c
from asp.util.log import LogFormat, configure_logging

__all__ = [
    "Loader",
    "cfg_play",
    "check_playable",
    "ShardOutput",
    "ShardTask",
    "initialize",
    "play_task",
    "run_shard",
]

log = structlog.get_logger("asp.backends.worker")

STACK_SIGNAL = signal.SIGUSR1
"""The signal that makes a worker write every thread's Python stack to its stack file."""

_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")

# Per process: the networks built so far, keyed by (role, class, cfg), with the publication
# each one holds (-1: none yet). Model and opponent never share an instance.
_nets: dict[tuple[str, type[nn.Module], bytes], tuple[int, nn.Module]] = {}
_stack_file: Any = None


@dataclass(frozen=True)
class ShardTask:
    """One shard's work, as the coordinator hands it to a worker."""

    play_fn: Callable[[nn.Module, nn.Module | None, Any], tuple[list[Any], dict[str, Any]]]
    cfg: Any
    model: WeightRef
    opponent: WeightRef | None
    shard: int
    attempt: int


@dataclass(frozen=True)
class ShardOutput:
    """What a worker sends back for a finished shard."""

    records: list[Any]
    stats: dict[str, Any]
    pid: int
    seconds: float
    node: str
    """The machine that played it: its host name, or its Ray node id on the Ray backend."""
    offers_taken: int = 0
    """How many of the coordinator's offers of more games play_fn took (:func:`asp.more_games`):
    the first ``offers_taken`` offers made to this shard are part of its result."""


def initialize(
    threads: int,
    parent_pid: int,
    stack_dir: str,
    slot: int,
    progress_counters: MutableSequence[int],
    cancel_flags: MutableSequence[int],
    slot_pids: MutableSequence[int],
    phases: MutableSequence[int],
    offers: progress.OfferCells,
    warm: tuple[type[nn.Module], Any] | None,
    log_settings: tuple[LogFormat, str],
) -> None:
    """Initializer of every worker process (runs once per process, before any shard)."""
    global _stack_file
    ignore_ctrl_c()
    configure_logging(fmt=log_settings[0], level=log_settings[1])
    die_with_parent(parent_pid)
    set_threads(threads)
    _stack_file = open(os.path.join(stack_dir, f"stack-{os.getpid()}.txt"), "w")  # noqa: SIM115
    faulthandler.register(STACK_SIGNAL, file=_stack_file, all_threads=True)
    progress.attach(slot, progress_counters, cancel_flags, slot_pids, phases, offers)
    prebuild(warm)
    # What was built so far (torch, the model) lives as long as the process: keep it out of the
    # garbage collector's passes, during play and at exit, where they once took seconds.
    gc.freeze()


def set_threads(threads: int) -> None:
    """Give torch and OpenMP ``threads`` threads in this process (one inter-op thread)."""
    for name in _THREAD_ENV:
        os.environ[name] = str(threads)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set (only possible before any parallel work)
        pass


def prebuild(warm: tuple[type[nn.Module], Any] | None) -> None:
    """Build the model network of class and cfg ``warm`` now, so that the first shard need not."""
    if warm is not None:
        _nets[("model", warm[0], _cfg_key(warm[1]))] = (-1, _build(*warm))


def ping() -> int:
    """A no-op task: returns the worker's pid (used to start every worker of a pool)."""
    return os.getpid()


def _cfg_key(cfg: Any) -> bytes:
    # A model's cfg need not be hashable (a plain dataclass is not); its pickle is.
    return pickle.dumps(cfg)


def _build(model_class: type[nn.Module], model_cfg: Any) -> nn.Module:
    net = model_class() if model_cfg is None else model_class(model_cfg)
    net.eval()
    return net


Loader = Callable[[WeightRef], dict[str, torch.Tensor]]
"""Fetches a publication's state_dict (from a file, or from Ray's object store)."""


def _network(role: str, ref: WeightRef, load: Loader) -> nn.Module:
    """The network for ``role`` holding exactly the weights of publication ``ref``."""
    key = (role, ref.model_class, _cfg_key(ref.model_cfg))
    publication, net = _nets.get(key) or (-1, None)
    if net is None:
        net = _build(ref.model_class, ref.model_cfg)
    if publication != ref.publication:
        net.load_state_dict(load(ref))
        log.debug("weights_loaded", role=role, version=ref.version, publication=ref.publication)
    _nets[key] = (ref.publication, net)
    return net


def play_task(task: ShardTask, load: Loader, node: str) -> ShardOutput:
    """Play one shard in this process: its networks (reloaded on a new publication), then play_fn."""
    started = time.perf_counter()
    progress.heartbeat(0)
    model = _network("model", task.model, load)
    opponent = _network("opponent", task.opponent, load) if task.opponent is not None else None
    progress.heartbeat(1)  # loading weights was progress too: the stall clock restarts here
    try:
        result = task.play_fn(model, opponent, task.cfg)
    except (SystemExit, KeyboardInterrupt) as e:
        # Re-raised in the coordinator as they are, these would end the coordinator's program:
        # one failure of one shard must cost that shard alone.
        raise PlayExited(f"play_fn raised {type(e).__name__}({', '.join(map(repr, e.args))})") from e
    except Exception as e:
        if not _round_trips(e):  # the coordinator could not read it: send what it said instead
            text = "".join(traceback.format_exception(e))
            raise RuntimeError(f"play_fn raised {e!r}, which cannot be unpickled:\n{text}") from None
        raise
    records, stats = _checked(result)
    seconds = time.perf_counter() - started
    return ShardOutput(records, stats, os.getpid(), seconds, node, progress.offers_taken())


def _round_trips(error: BaseException) -> bool:
    """Whether ``error`` survives pickling, as the way back to the coordinator needs."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 (any failure to pickle or unpickle means no)
        return False
    return True


def _checked(result: Any) -> tuple[list[Any], dict[str, Any]]:
    """``result`` as ``(records, stats)``, or TypeError saying what a play_fn must return."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise TypeError(f"play_fn must return (records, stats), got {type(result).__name__}")
    records, stats = result
    if not isinstance(records, list):
        raise TypeError(f"play_fn must return its records as a list, got {type(records).__name__}")
    for i, record in enumerate(records):
        if not isinstance(getattr(record, "game_id", None), numbers.Integral):
            raise TypeError(f"play_fn's record {i} ({type(record).__name__}) has no int game_id")
    if not isinstance(stats, dict):
        raise TypeError(f"play_fn must return its stats as a dict, got {type(stats).__name__}")
    return records, stats


def run_shard(payload: bytes) -> bytes:
    """Play one pickled :class:`ShardTask`; return the pickled :class:`ShardOutput`.

    The coordinator pickles the task itself, so that a task this process cannot unpickle
    (a class defined under ``if __name__ == "__main__":`` or in a notebook) is an ordinary
    error of this shard, with its traceback, rather than a worker that dies before it says
    which shard it was given. The result is pickled here, after :func:`asp.progress.end_shard`,
    so that pickling a large result is never taken for a stall, and a result the coordinator
    cannot unpickle is an error of this shard there, not a broken worker.
    """
    progress.begin_shard()
    try:
        try:
            task: ShardTask = pickle.loads(payload)
        except Exception as e:
            raise ConfigError(
                f"the shard's task could not be unpickled in the worker ({e!r}): define play_fn, its cfg "
                f"class and the network classes at module level of an importable module (not under "
                f"`if __name__ == '__main__':`, not in a notebook cell)"
            ) from e
        output = play_task(task, load_state_dict, platform.node())
    finally:
        progress.end_shard()
    return pickle.dumps(output, protocol=pickle.HIGHEST_PROTOCOL)


def cfg_play(model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[list[Any], dict[str, Any]]:
    """The play_fn of a SelfPlay given none: the cfg plays its own games, ``cfg.play(model, opp)``.

    So the orchestrator knows no game: a game's config that has a ``play(model, opp)`` method
    (:class:`asp.games.PlayConfig` has) needs no play_fn.
    """
    check_playable(cfg)
    result: tuple[list[Any], dict[str, Any]] = cfg.play(model, opp)
    return result


def check_playable(cfg: Any) -> None:
    """Raise ConfigError unless ``cfg`` can play its own games (what :func:`cfg_play` needs)."""
    if not callable(getattr(cfg, "play", None)):
        raise ConfigError(
            f"no play_fn was given and the cfg ({type(cfg).__name__}) has no play(model, opp) method: "
            f"pass SelfPlay(play_fn=...)"
        )
