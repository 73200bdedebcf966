"""Backends: what a worker's death costs, how many shards one coordinator drives, Ray against local.

Three measurements, each a median over ``--runs`` runs in one process on this machine:

* ``kill``: 2 workers play 2 equal shards (``fault_play``, about ``--shard-seconds`` each);
  halfway through, one worker is SIGKILLed. Reported: shards run again (``retries``) and the
  seconds the call took beyond the same call without a kill. Uses only the public API, so it
  also runs against older asp (``PYTHONPATH=/path/to/old/checkout``).
* ``capacity``: shards per second the coordinator dispatches and collects on the local backend
  with a no-op play (one game, no plies) per shard and 2 workers: how many workers one
  coordinator can keep fed.
* ``ray``: the same TinyChess games (``asp.games.PlayConfig(TinyChessGame(), max_plies=200)``,
  self-play without search) on the local and the Ray backend (2 workers each; Ray's instance
  started once, before timing), as a ratio of throughputs, and Ray's extra cost per shard with
  no-op shards.

Run::

    python benchmarks/bench_backends.py --runs 3            # all three
    python benchmarks/bench_backends.py --runs 5 --only kill capacity
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from torch import nn

from asp import SelfPlay
from asp.games import PlayConfig
from asp.testing import EchoRecord, FaultConfig, fault_play
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

MAX_PLIES = 200
"""The cap of a TinyChess game's plies in ``ray``: what ``asp train`` plays with."""


@dataclasses.dataclass(frozen=True)
class CountedConfig(FaultConfig):
    count_dir: str = ""


def counted_play(
    model: nn.Module, opp: nn.Module | None, cfg: CountedConfig
) -> tuple[list[EchoRecord], dict[str, Any]]:
    """fault_play that leaves one file per shard run in ``cfg.count_dir``: runs are counted, not logged."""
    Path(cfg.count_dir, uuid.uuid4().hex).touch()
    return fault_play(model, opp, cfg)


def _workers() -> list[int]:
    """Pids of this process's worker children (multiprocessing's resource tracker excluded)."""
    pids = []
    for p in psutil.Process().children():
        try:
            if "resource_tracker" not in " ".join(p.cmdline()):
                pids.append(p.pid)
        except psutil.NoSuchProcess:
            continue
    return sorted(pids)


async def kill_run(shard_seconds: float, kill: bool) -> tuple[float, int]:
    """(seconds of the call, shards run again) with or without a SIGKILL halfway through."""
    plies = 100
    model = TinyChess(ModelConfig(hidden=8, blocks=0))
    with tempfile.TemporaryDirectory() as count_dir:
        cfg = CountedConfig(n_games=2, plies=plies, delay=shard_seconds / plies, count_dir=count_dir)
        async with SelfPlay(workers=2, play_fn=counted_play, shard_games=1) as selfplay:
            await selfplay.play(model, None, dataclasses.replace(cfg, plies=1))  # both workers hold the model
            warm = len(os.listdir(count_dir))
            began = time.perf_counter()
            task = asyncio.create_task(selfplay.play(model, None, cfg))
            if kill:
                await asyncio.sleep(shard_seconds / 2)
                os.kill(_workers()[-1], signal.SIGKILL)
            await task
            seconds = time.perf_counter() - began
        return seconds, len(os.listdir(count_dir)) - warm - 2


async def capacity_run(shards: int) -> float:
    """Shards per second with 1-game no-op shards on 2 local workers."""
    model = TinyChess(ModelConfig(hidden=8, blocks=0))
    async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1) as selfplay:
        await selfplay.play(model, None, FaultConfig(n_games=2, plies=0))
        began = time.perf_counter()
        await selfplay.play(model, None, FaultConfig(n_games=shards, plies=0))
        return shards / (time.perf_counter() - began)


async def backend_runs(runs: int, games: int, noop_shards: int) -> dict[str, Any]:
    """Per backend: medians of chess plies/s and of seconds for ``noop_shards`` no-op shards."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    out: dict[str, Any] = {}
    try:
        model = TinyChess()
        game = TinyChessGame()
        for backend in ("local", "ray"):
            plies_per_s, noop = [], []
            async with SelfPlay(workers=2, play_fn=None, backend=backend) as selfplay:
                await selfplay.play(model, None, PlayConfig(game, n_games=4, max_plies=8))  # warm
                for run in range(runs):
                    cfg = PlayConfig(game, n_games=games, seed=run, max_plies=MAX_PLIES)
                    _, stats = await selfplay.play(model, None, cfg)
                    plies_per_s.append(stats["plies_per_s"])
            async with SelfPlay(workers=2, play_fn=fault_play, shard_games=1, backend=backend) as selfplay:
                await selfplay.play(model, None, FaultConfig(n_games=2, plies=0))
                for _ in range(runs):
                    began = time.perf_counter()
                    await selfplay.play(model, None, FaultConfig(n_games=noop_shards, plies=0))
                    noop.append(time.perf_counter() - began)
            out[backend] = {"plies_per_s": statistics.median(plies_per_s), "noop_s": statistics.median(noop)}
    finally:
        ray.shutdown()
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=("kill", "capacity", "ray"), default=["kill", "capacity", "ray"])
    parser.add_argument("--shard-seconds", type=float, default=4.0)
    parser.add_argument("--capacity-shards", type=int, default=2000)
    parser.add_argument("--games", type=int, default=64, help="TinyChess games per call (ray)")
    args = parser.parse_args()
    if "kill" in args.only:
        calm = [await kill_run(args.shard_seconds, kill=False) for _ in range(args.runs)]
        killed = [await kill_run(args.shard_seconds, kill=True) for _ in range(args.runs)]
        base = statistics.median(s for s, _ in calm)
        print(
            f"kill: 2 workers, 2 shards of {args.shard_seconds} s, one worker SIGKILLed halfway: "
            f"shards run again {[r for _, r in killed]} (median {statistics.median(r for _, r in killed)}); "
            f"call {statistics.median(s for s, _ in killed):.2f} s against {base:.2f} s without a kill: "
            f"{statistics.median(s for s, _ in killed) - base:.2f} s lost (median of {args.runs})"
        )
    if "capacity" in args.only:
        rates = [await capacity_run(args.capacity_shards) for _ in range(args.runs)]
        print(
            f"capacity: {statistics.median(rates):,.0f} shards/s dispatched and collected "
            f"({args.capacity_shards} no-op 1-game shards, 2 local workers; runs: "
            f"{', '.join(f'{r:,.0f}' for r in rates)})"
        )
    if "ray" in args.only:
        noop_shards = 200
        res = await backend_runs(args.runs, args.games, noop_shards)
        local, ray_ = res["local"], res["ray"]
        ratio = ray_["plies_per_s"] / local["plies_per_s"]
        per_shard = {b: res[b]["noop_s"] * 2 / noop_shards * 1000 for b in res}  # 2 workers in parallel
        print(
            f"ray: TinyChess {args.games} games, 2 workers: local {local['plies_per_s']:,.0f} plies/s, "
            f"ray {ray_['plies_per_s']:,.0f} plies/s, ratio ray/local {ratio:.2f}; "
            f"a no-op shard costs {per_shard['ray']:.2f} ms on ray against {per_shard['local']:.2f} ms locally "
            f"(Ray's overhead {per_shard['ray'] - per_shard['local']:.2f} ms per shard; medians of {args.runs})"
        )


if __name__ == "__main__":
    asyncio.run(main())
