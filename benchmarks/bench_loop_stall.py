"""The event loop's longest stall while SelfPlay publishes a 100 MB model, against publishing on the loop.

A ticker task wakes every millisecond and records the longest gap between two wake-ups. Each
call changes the model's weights, so every call publishes them (``torch.save``, fsync, the
comparison with and copy of the last publication): asp does that in a thread. The baseline
publishes the same weights on the loop itself, as asp did before. Run::

    python benchmarks/bench_loop_stall.py --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass

import torch
from torch import nn

from asp import SelfPlay
from asp.backends.weights import WeightStore
from asp.testing import FaultConfig, fault_play


@dataclass(frozen=True)
class BigConfig:
    megabytes: int = 100


class Big(nn.Module):
    """``megabytes`` of float32 parameters."""

    def __init__(self, cfg: BigConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.zeros(cfg.megabytes * 2**18))


class Ticker:
    def __init__(self) -> None:
        self.longest = 0.0
        self._stop = False

    async def run(self) -> None:
        last = time.perf_counter()
        while not self._stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def stop(self) -> None:
        self._stop = True


async def measure(megabytes: int, calls: int) -> tuple[float, float]:
    """(longest loop stall with asp, longest with publication on the loop), seconds."""
    model = Big(BigConfig(megabytes))
    async with SelfPlay(workers=1, play_fn=fault_play, start_timeout=300) as selfplay:
        await selfplay.play(model, None, FaultConfig(n_games=1, plies=1))  # warm: the worker holds the model
        ticker = Ticker()
        task = asyncio.create_task(ticker.run())
        for call in range(calls):
            with torch.no_grad():
                model.weight.add_(1.0)
            await selfplay.play(model, None, FaultConfig(n_games=1, plies=1, model_version=call + 1))
        ticker.stop()
        await task
    with tempfile.TemporaryDirectory() as directory:
        store = WeightStore(directory)
        baseline = Ticker()
        task = asyncio.create_task(baseline.run())
        for call in range(calls):
            await asyncio.sleep(0.01)
            with torch.no_grad():
                model.weight.add_(1.0)
            store.publish("model", model, version=call + 1)  # on the loop, as before
        baseline.stop()
        await task
    return ticker.longest, baseline.longest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5, help="publications per run")
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    asp_stalls, base_stalls = [], []
    for run in range(args.runs):
        asp_stall, base_stall = asyncio.run(measure(args.megabytes, args.calls))
        asp_stalls.append(asp_stall)
        base_stalls.append(base_stall)
        print(f"run {run}: longest loop stall {asp_stall * 1000:.1f} ms with asp, "
              f"{base_stall * 1000:.1f} ms publishing on the loop ({args.megabytes} MB model)")  # fmt: skip
    print(f"median: {statistics.median(asp_stalls) * 1000:.1f} ms vs {statistics.median(base_stalls) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
