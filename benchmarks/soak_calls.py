"""Soak: thousands of concurrent calls on one SelfPlay, with worker kills and cancels.

    python benchmarks/soak_calls.py [--calls 2000] [--concurrency 8] [--workers 2] [--kill-every 100]

One ``SelfPlay(workers=W, play_fn=fault_play, retries=20)`` serves ``--calls`` calls, at most
``--concurrency`` open at once, each from its own task: plays of 1-4 short games at a random
priority, every fifth one nested inside a stream, and one in ten cancelled after a random
0-50 ms. Every ``--kill-every`` calls a started worker is SIGKILLed. It reports:

* games lost (an id missing from a call that was not cancelled) and duplicated (an id that
  came twice) in all calls: the target is 0 and 0;
* the coordinator's RSS and open file descriptors, sampled every 100 calls after the first
  ``--warmup`` calls, each at the first moment after that when no worker is starting (a
  starting worker holds pipes for a moment), after a garbage collection (a killed worker's
  executor keeps its pipes until its reference cycles are collected): the target is growth
  within 1.10 (flat): the largest sample of the later half of the run against the largest of
  the earlier half (a leak grows; a count of a few dozen descriptors also wobbles by one or two
  with what is in flight at the moment of the sample, which is no leak);
* processes and ``asp-<pid>-*`` temporary directories of this process left after the
  SelfPlay closed: the target is 0 and 0;
* the calls per second, and python-chess's random playouts per second on this machine for
  scale (``bench_play.time_random_playouts``, 3 s).

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))

from bench_play import time_random_playouts  # noqa: E402

from asp import SelfPlay  # noqa: E402
from asp.testing import FaultConfig, fault_play  # noqa: E402
from asp.tinychess import ModelConfig, TinyChess  # noqa: E402

MODEL = TinyChess(ModelConfig(hidden=8, blocks=0))


class Tally:
    def __init__(self) -> None:
        self.calls = self.cancelled = self.lost = self.duplicated = self.kills = 0
        self.rss: list[int] = []
        self.fds: list[int] = []


def check(tally: Tally, got: list[int], first: int, n: int) -> None:
    tally.lost += len(set(range(first, first + n)) - set(got))
    tally.duplicated += len(got) - len(set(got))


async def one_call(selfplay: SelfPlay, number: int, tally: Tally, rng: random.Random) -> None:
    n = rng.randint(1, 4)
    cfg = FaultConfig(n_games=n, first_game=10 * number, plies=rng.randint(1, 10), delay=0.002)
    priority = rng.randint(0, 2)
    if number % 5 == 0:
        got: list[int] = []
        async with contextlib.aclosing(selfplay.stream(MODEL, None, cfg, priority=priority)) as shards:
            async for shard in shards:
                if not got:
                    inner = FaultConfig(n_games=1, first_game=10 * number + 5, plies=2, delay=0.002)
                    records, _ = await asyncio.wait_for(selfplay.play(MODEL, None, inner), 120)
                    check(tally, [r.game_id for r in records], inner.first_game, 1)
                got += [r.game_id for r in shard.records]
    else:
        records, _ = await selfplay.play(MODEL, None, cfg, priority=priority)
        got = [r.game_id for r in records]
    check(tally, got, cfg.first_game, n)


async def soak(args: argparse.Namespace) -> Tally:
    rng = random.Random(args.seed)
    tally = Tally()
    me = psutil.Process()
    open_calls: set[asyncio.Task[None]] = set()
    async with SelfPlay(workers=args.workers, play_fn=fault_play, retries=20, cancel_grace=0.5) as selfplay:

        def ended(task: asyncio.Task[None]) -> None:
            open_calls.discard(task)
            if task.cancelled():
                tally.cancelled += 1
            elif task.exception() is not None:
                raise SystemExit(f"a call failed: {task.exception()!r}")

        due = False
        for number in range(args.calls):
            while len(open_calls) >= args.concurrency:
                await asyncio.wait(open_calls, return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.create_task(one_call(selfplay, number, tally, rng))
            task.add_done_callback(ended)
            open_calls.add(task)
            if rng.random() < 0.1:
                asyncio.get_running_loop().call_later(rng.uniform(0, 0.05), task.cancel)
            if number and number % args.kill_every == 0:
                started = [p for s, p in enumerate(selfplay.pids) if p is not None and selfplay._backend.ready(s)]
                if started:
                    os.kill(rng.choice(started), signal.SIGKILL)
                    tally.kills += 1
            ready = all(selfplay._backend.ready(slot) for slot in range(args.workers))
            if number >= args.warmup and number % 100 == 0:
                due = True  # taken at the next moment no worker is starting (its pipes)
            if due and ready:
                gc.collect()  # what a collection frees (a killed worker's executor pipes) is no leak
                tally.rss.append(me.memory_info().rss)
                tally.fds.append(me.num_fds())
                due = False
            tally.calls += 1
        while open_calls:
            await asyncio.wait(open_calls)
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-every", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _, plies, playout_seconds = time_random_playouts(3.0, 200, 0)
    rate = plies / playout_seconds
    began = time.perf_counter()
    tally = asyncio.run(soak(args))
    seconds = time.perf_counter() - began
    left = [p.pid for p in psutil.Process().children(recursive=True) if "resource_tracker" not in " ".join(p.cmdline())]
    dirs = list(Path(tempfile.gettempdir()).glob(f"asp-{os.getpid()}-*"))

    def spread(xs: list[int]) -> float:
        """Growth: the largest sample of the later half against the largest of the earlier half."""
        half = len(xs) // 2
        return max(xs[half:]) / max(xs[:half]) if half else 1.0

    rows: list[tuple[str, Any, str]] = [
        ("calls", tally.calls, ""),
        ("cancelled", tally.cancelled, ""),
        ("workers killed", tally.kills, ""),
        ("games lost", tally.lost, "target 0"),
        ("games duplicated", tally.duplicated, "target 0"),
        ("RSS growth after warm-up", f"{spread(tally.rss):.3f}", f"target <= 1.10 ({min(tally.rss) >> 20}-"
                                                                  f"{max(tally.rss) >> 20} MiB)"),
        ("open fds growth after warm-up", f"{spread(tally.fds):.3f}", f"target <= 1.10 ({min(tally.fds)}-"
                                                                       f"{max(tally.fds)})"),
        ("processes left", len(left), "target 0"),
        ("temporary directories left", len(dirs), "target 0"),
        ("calls/s", f"{tally.calls / seconds:.1f}", f"{seconds:.1f} s in all"),
        ("random playouts, plies/s per core", f"{rate:.0f}", "python-chess, this machine"),
    ]  # fmt: skip
    for name, value, note in rows:
        print(f"{name:<36} {value!s:>10}  {note}")
    print(f"open fds sampled: {tally.fds}")
    ok = (
        tally.lost == 0
        and tally.duplicated == 0
        and spread(tally.rss) <= 1.10
        and spread(tally.fds) <= 1.10
        and not left
        and not dirs
    )
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
