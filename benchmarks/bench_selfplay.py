"""Speed of asp's SelfPlay: scaling, overhead, weight publication, and the design it replaces.

    python benchmarks/bench_selfplay.py [--runs N] [--games G] [--json PATH] [--only NAME ...]

Sections (``--only scaling overhead publish baseline`` picks some; all by default). Pools are
started, and answer one small untimed warm-up call, before anything is timed: pool start-up is
excluded everywhere. Within a run the measurements of a section alternate in a rotating order,
so that drift in machine load hits each side alike; medians over runs are reported. The parent
process sets ``torch.set_num_threads(1)``; every worker runs one torch thread.

1. scaling: plies/s of ``SelfPlay(workers=2, threads_per_worker=1).play(TinyChess(), None,
   PlayConfig(TinyChessGame(), n_games=G, max_plies=200))`` (``asp.games``: self-play without
   search, games capped as ``asp train`` caps them) against ``workers=1``, both at the default ``shard_games``
   (``asp.selfplay.default_shard_games``: small shards, a full batch of them per task and more
   offered as games end). Target: ratio >= 1.8. On a 2-core machine this shows 1 -> 2 workers only.
2. overhead: wall time of ``SelfPlay(workers=1).play`` against ``asp.games.play_games`` in this process
   for the same games, both with the default ``shard_games`` (see above) and with
   ``shard_games=G`` (one shard, the same batch as in-process). Target: asp_time /
   inprocess_time <= 1.03; reported for both.
3. publish: ``WeightStore.publish`` of the default TinyChess (~1M parameters) after changing
   its weights in place (``p.add_(1e-3)``), into a temporary directory, ``--publishes`` times
   per run: median and p90. Target: median < 20 ms. Also the time a worker takes to load a
   publication (``torch.load(weights_only=True)`` + ``load_state_dict``), measured here in
   this process, from a file that was just written (so from the page cache).
4. baseline: :class:`baseline_pool.BaselinePool` (a long-lived spawn ``multiprocessing.Pool``,
   weights broadcast by ``pool.map(set_weights, [path] * workers)``, one equal shard per
   worker, each playing its shard with ``play_games``) against ``SelfPlay(workers=2)`` (its
   workers play ``cfg.play``, the same ``play_games``) on ``--iterations`` iterations of G
   games with very uneven, clustered game lengths, the same configs on both sides (see
   ``baseline_pool.uneven_config``); the weights change before every iteration on both sides,
   identically, and asp bumps ``model_version``. Reported: wall time over the iterations,
   plies/s, and asp's speed as baseline_time / asp_time. Targets (issue 48), with asp's default
   ``shard_games``, ``--games 192``: >= 1.5 on the uneven workload (the default: half the games
   long), >= 1.3 on the mixed one (``--long-fraction 0.25``: a quarter of the games long); the
   even one (``--long-fraction 0``) has none, since one equal shard per worker is balanced there.

The program always exits 0. ``--json PATH`` also writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import math
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from asp import SelfPlay, configure_logging
from asp.backends.weights import WeightStore
from asp.games import PlayConfig, play_games
from asp.selfplay import default_shard_games
from asp.tinychess import TinyChess, TinyChessGame

# Spawn workers import the game of section 4 (baseline_pool.UnevenChess) by module name: make
# sure this directory is on sys.path (it is when run as a script), since the children inherit
# the parent's sys.path.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from baseline_pool import BaselinePool, uneven_config  # noqa: E402
from bench_play import cpu_model  # noqa: E402

SECTIONS = ("scaling", "overhead", "publish", "baseline")
TARGET_SCALING = 1.8
TARGET_OVERHEAD = 1.03
TARGET_PUBLISH_MS = 20.0
TARGET_BASELINE = {0.5: 1.5, 0.25: 1.3}
"""asp against the pool by ``--long-fraction`` (issue 48): uneven (half the games long) and
mixed (a quarter long); an even workload (0) has no target: there the pool is balanced."""
MAX_PLIES = 200
"""The cap of a game's plies in 'scaling' and 'overhead': what ``asp train`` plays TinyChess with."""
LONG_PLIES = 400
"""'baseline': the cap of a long game's plies."""
GAME = TinyChessGame()

T = TypeVar("T")


# -- helpers ----------------------------------------------------------------------------------


def filesystem_of(path: str) -> str:
    """The file-system type of the mount holding ``path`` (Linux), or ``"unknown"``."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and path.startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def p90(values: Sequence[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def rotated(items: Sequence[T], k: int) -> list[T]:
    k %= len(items)
    return [*items[k:], *items[:k]]


def perturb(model: nn.Module, step: float = 1e-3) -> None:
    """Change every weight in place, as an optimizer step would."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(step)


def header(number: int, title: str) -> None:
    print()
    print(f"== {number}. {title} ==")


async def timed(call: Awaitable[tuple[list[Any], dict[str, Any]]]) -> tuple[int, float, dict[str, Any]]:
    """``(plies, seconds, stats)`` of one awaited play call."""
    started = time.perf_counter()
    _, stats = await call
    return int(stats["plies"]), time.perf_counter() - started, stats


# -- 1. scaling -------------------------------------------------------------------------------


async def bench_scaling(args: argparse.Namespace, model: TinyChess) -> dict[str, Any]:
    header(1, "scaling: SelfPlay(workers=2) against SelfPlay(workers=1), plies/s")
    cores = os.cpu_count() or 1
    print(f"note: this machine has {cores} cores, so this figure shows 1 -> 2 workers only")
    cfg = PlayConfig(GAME, n_games=args.games, max_plies=MAX_PLIES)
    size1 = default_shard_games(cfg.n_games, 1, cfg.batch_size)
    size2 = default_shard_games(cfg.n_games, 2, cfg.batch_size)
    print(
        f"cfg: PlayConfig(TinyChessGame(), n_games={cfg.n_games}) (max_plies {cfg.max_plies}, batch_size "
        f"{cfg.batch_size}); default shard_games: {size1} games with 1 worker, {size2} with 2 "
        "(a full batch of shards per task)"
    )
    warm = PlayConfig(GAME, n_games=8, max_plies=10)
    runs: list[dict[str, Any]] = []
    async with (
        SelfPlay(workers=1, threads_per_worker=1) as sp1,
        SelfPlay(workers=2, threads_per_worker=1) as sp2,
    ):
        await sp1.play(model, None, warm)
        await sp2.play(model, None, warm)
        pools = [(1, sp1), (2, sp2)]
        for i in range(args.runs):
            run: dict[str, Any] = {}
            for workers, sp in rotated(pools, i):
                plies, secs, stats = await timed(sp.play(model, None, cfg))
                run[f"w{workers}"] = {
                    "plies": plies,
                    "seconds": secs,
                    "plies_per_s": plies / secs,
                    "shards": stats["shards"],
                }
            run["ratio"] = run["w2"]["plies_per_s"] / run["w1"]["plies_per_s"]
            runs.append(run)
            w1, w2 = run["w1"], run["w2"]
            print(
                f"run {i + 1}: workers=1 {w1['plies']:,} plies / {w1['seconds']:.2f} s = "
                f"{w1['plies_per_s']:,.0f} plies/s ({w1['shards']} shards) | "
                f"workers=2 {w2['plies']:,} plies / "
                f"{w2['seconds']:.2f} s = {w2['plies_per_s']:,.0f} plies/s ({w2['shards']} shards) | "
                f"ratio {run['ratio']:.3f}"
            )
    median = {
        "w1_plies_per_s": statistics.median(r["w1"]["plies_per_s"] for r in runs),
        "w2_plies_per_s": statistics.median(r["w2"]["plies_per_s"] for r in runs),
        "ratio": statistics.median(r["ratio"] for r in runs),
    }
    ok = median["ratio"] >= TARGET_SCALING
    print(
        f"median: workers=1 {median['w1_plies_per_s']:,.0f} plies/s, workers=2 "
        f"{median['w2_plies_per_s']:,.0f} plies/s, ratio {median['ratio']:.3f}"
    )
    print(f"{verdict(ok)}: ratio {median['ratio']:.3f} >= {TARGET_SCALING} (target)")
    return {
        "cores": cores,
        "n_games": cfg.n_games,
        "runs": runs,
        "median": median,
        "target": {"ratio_min": TARGET_SCALING},
        "pass": ok,
    }


# -- 2. overhead ------------------------------------------------------------------------------


async def bench_overhead(args: argparse.Namespace, model: TinyChess) -> dict[str, Any]:
    header(2, "overhead: SelfPlay(workers=1).play against play_games in this process")
    cfg = PlayConfig(GAME, n_games=args.games, max_plies=MAX_PLIES)
    default_size = default_shard_games(cfg.n_games, 1, cfg.batch_size)
    print(
        f"cfg: PlayConfig(TinyChessGame(), n_games={cfg.n_games}) (max_plies {cfg.max_plies}, batch_size "
        f"{cfg.batch_size}); in-process: torch.set_num_threads(1), network batch <= {min(cfg.batch_size, cfg.n_games)}"
    )
    print(
        f"asp default shard_games: {default_size} games per shard, a batch of {cfg.batch_size} games per task "
        f"and more offered as games end; asp shard_games={cfg.n_games}: one shard, the same batch as in-process"
    )
    torch.set_num_threads(1)
    warm = PlayConfig(GAME, n_games=8, max_plies=10)
    play_games(model, None, warm)
    runs: list[dict[str, Any]] = []
    async with (
        SelfPlay(workers=1) as sp_default,
        SelfPlay(workers=1, shard_games=cfg.n_games) as sp_one,
    ):
        await sp_default.play(model, None, warm)
        await sp_one.play(model, None, warm)

        async def inprocess() -> tuple[list[Any], dict[str, Any]]:
            return play_games(model, None, cfg)

        sides: list[tuple[str, Callable[[], Awaitable[tuple[list[Any], dict[str, Any]]]]]] = [
            ("inprocess", inprocess),
            ("asp_default", lambda: sp_default.play(model, None, cfg)),
            ("asp_one_shard", lambda: sp_one.play(model, None, cfg)),
        ]
        for i in range(args.runs):
            run: dict[str, Any] = {}
            for name, call in rotated(sides, i):
                plies, secs, stats = await timed(call())
                run[name] = {"plies": plies, "seconds": secs, "shards": stats.get("shards", 1)}
            base = run["inprocess"]["seconds"]
            run["ratio_default"] = run["asp_default"]["seconds"] / base
            run["ratio_one_shard"] = run["asp_one_shard"]["seconds"] / base
            runs.append(run)
            print(
                f"run {i + 1}: in-process {base:.2f} s ({run['inprocess']['plies']:,} plies) | "
                f"asp default {run['asp_default']['seconds']:.2f} s ({run['asp_default']['shards']} shards) "
                f"= x{run['ratio_default']:.3f} | asp shard_games={cfg.n_games} "
                f"{run['asp_one_shard']['seconds']:.2f} s (1 shard) = x{run['ratio_one_shard']:.3f}"
            )
    median = {
        "inprocess_s": statistics.median(r["inprocess"]["seconds"] for r in runs),
        "asp_default_s": statistics.median(r["asp_default"]["seconds"] for r in runs),
        "asp_one_shard_s": statistics.median(r["asp_one_shard"]["seconds"] for r in runs),
        "ratio_default": statistics.median(r["ratio_default"] for r in runs),
        "ratio_one_shard": statistics.median(r["ratio_one_shard"] for r in runs),
    }
    ok_default = median["ratio_default"] <= TARGET_OVERHEAD
    ok_one = median["ratio_one_shard"] <= TARGET_OVERHEAD
    print(
        f"median: in-process {median['inprocess_s']:.2f} s | asp default {median['asp_default_s']:.2f} s | "
        f"asp one shard {median['asp_one_shard_s']:.2f} s"
    )
    print(
        f"{verdict(ok_default)}: default shard_games: asp/in-process {median['ratio_default']:.3f} "
        f"<= {TARGET_OVERHEAD} (target)"
    )
    print(
        f"{verdict(ok_one)}: shard_games={cfg.n_games} (one shard): asp/in-process "
        f"{median['ratio_one_shard']:.3f} <= {TARGET_OVERHEAD} (target)"
    )
    return {
        "n_games": cfg.n_games,
        "runs": runs,
        "median": median,
        "target": {"ratio_max": TARGET_OVERHEAD},
        "pass": {"default": ok_default, "one_shard": ok_one},
    }


# -- 3. weight publication --------------------------------------------------------------------


def bench_publish(args: argparse.Namespace) -> dict[str, Any]:
    header(3, "publish: WeightStore.publish of changed TinyChess weights, and a worker's load")
    torch.manual_seed(0)
    model = TinyChess()
    reader = TinyChess()
    params = sum(p.numel() for p in model.parameters())
    runs: list[dict[str, Any]] = []
    bugs: list[str] = []
    size = 0
    tmp_root = tempfile.gettempdir()
    for i in range(args.runs):
        publish_ms: list[float] = []
        load_ms: list[float] = []
        with tempfile.TemporaryDirectory(prefix="asp-bench-") as tmp:
            store = WeightStore(tmp)
            try:
                last = store.publish("model", model, version=1)  # untimed warm-up
                for _ in range(args.publishes):
                    perturb(model)
                    started = time.perf_counter()
                    ref = store.publish("model", model, version=1)
                    publish_ms.append((time.perf_counter() - started) * 1000)
                    if ref.publication == last.publication:
                        bugs.append(f"publish returned publication {ref.publication} again for changed weights")
                    last = ref
                    size = os.path.getsize(ref.location)
                    started = time.perf_counter()
                    state = torch.load(ref.location, map_location="cpu", weights_only=True)
                    reader.load_state_dict(state)
                    load_ms.append((time.perf_counter() - started) * 1000)
            finally:
                store.close()
        run = {
            "publish_ms": publish_ms,
            "publish_median_ms": statistics.median(publish_ms),
            "publish_p90_ms": p90(publish_ms),
            "load_median_ms": statistics.median(load_ms),
            "load_p90_ms": p90(load_ms),
            "load_ms": load_ms,
        }
        runs.append(run)
        print(
            f"run {i + 1}: publish median {run['publish_median_ms']:.2f} ms, "
            f"p90 {run['publish_p90_ms']:.2f} ms "
            f"({len(publish_ms)} publishes) | load median {run['load_median_ms']:.2f} ms, "
            f"p90 {run['load_p90_ms']:.2f} ms"
        )
    print(
        f"model: TinyChess() {params:,} parameters, file {size / 1e6:.2f} MB; temporary directory "
        f"{tmp_root} ({filesystem_of(tmp_root)}); publish = torch.save + fsync + rename"
    )
    print("load = torch.load(weights_only=True) + load_state_dict, here in this process, just after the write")
    for bug in sorted(set(bugs)):
        print(f"BUG: {bug}")
    median = {
        "publish_median_ms": statistics.median(r["publish_median_ms"] for r in runs),
        "publish_p90_ms": statistics.median(r["publish_p90_ms"] for r in runs),
        "load_median_ms": statistics.median(r["load_median_ms"] for r in runs),
        "load_p90_ms": statistics.median(r["load_p90_ms"] for r in runs),
    }
    ok = median["publish_median_ms"] < TARGET_PUBLISH_MS and not bugs
    print(
        f"median over runs: publish median {median['publish_median_ms']:.2f} ms, p90 "
        f"{median['publish_p90_ms']:.2f} ms | load median {median['load_median_ms']:.2f} ms, "
        f"p90 {median['load_p90_ms']:.2f} ms"
    )
    print(f"{verdict(ok)}: publish median {median['publish_median_ms']:.2f} ms < {TARGET_PUBLISH_MS:.0f} ms (target)")
    print(
        f"(for information: p90 {median['publish_p90_ms']:.2f} ms is "
        f"{'within' if median['publish_p90_ms'] < TARGET_PUBLISH_MS else 'over'} the same {TARGET_PUBLISH_MS:.0f} ms)"
    )
    return {
        "parameters": params,
        "file_bytes": size,
        "tmp_dir": tmp_root,
        "tmp_fs": filesystem_of(tmp_root),
        "runs": runs,
        "median": median,
        "bugs": sorted(set(bugs)),
        "target": {"publish_median_ms_max": TARGET_PUBLISH_MS},
        "pass": ok,
    }


# -- 4. baseline ------------------------------------------------------------------------------


def uneven_cfg(iteration: int, games: int, version: int, args: argparse.Namespace) -> PlayConfig:
    first = iteration * games
    return uneven_config(
        first,
        games,
        long_fraction=args.long_fraction,
        long_plies=LONG_PLIES,
        short_plies=args.short_plies,
        model_version=version,
    )


async def bench_baseline(args: argparse.Namespace, base_model: TinyChess) -> dict[str, Any]:
    header(4, "baseline: asp against a spawn multiprocessing.Pool with broadcast weights, uneven games")
    workers, games, iterations = 2, args.games, args.iterations
    sample = uneven_cfg(0, games, 0, args)
    n_long = int(games * args.long_fraction)
    print(
        f"workload: {iterations} iterations of {games} games (baseline_pool.uneven_config): per iteration "
        f"the first {n_long} ids capped at {LONG_PLIES} plies, the other {games - n_long} at "
        f"{args.short_plies}; batch_size {sample.batch_size}; weights change before every "
        f"iteration (same weights on both sides)"
    )
    print(
        f"baseline: spawn Pool({workers}), per iteration torch.save + "
        f"pool.map(set_weights, [path] * {workers}) "
        f"+ one shard of {math.ceil(games / workers)} games per worker"
    )
    shard_games = args.shard_games or None  # 0: asp's default
    size = shard_games or default_shard_games(games, workers, sample.batch_size)
    plan = (
        f"one task per shard of {size} games"
        if shard_games
        else f"shards of {size} games, a full batch of them per task and more offered as games end"
    )
    print(f"asp: SelfPlay(workers={workers}, shard_games={shard_games}): {plan}; model_version bumped each iteration")
    warm = uneven_config(0, 4 * workers, long_plies=8, short_plies=4)
    runs: list[dict[str, Any]] = []
    with BaselinePool(workers, play_games) as pool:
        async with SelfPlay(workers=workers, shard_games=shard_games) as sp:
            pool.set_weights(base_model, 0)
            pool.play(warm)
            await sp.play(base_model, None, warm)

            async def run_baseline(run_index: int) -> dict[str, Any]:
                model = copy.deepcopy(base_model)
                seconds, plies, stale = 0.0, 0, 0
                shard_s: list[list[float]] = []
                broadcast_missed = 0
                for it in range(iterations):
                    version = 1 + run_index * iterations + it
                    perturb(model)
                    started = time.perf_counter()
                    loaded_by = pool.set_weights(model, version)
                    result = pool.play(uneven_cfg(it, games, version, args))
                    seconds += time.perf_counter() - started
                    plies += int(result.stats["plies"])
                    stale += result.stale_shards
                    broadcast_missed += workers - len(set(loaded_by))
                    shard_s.append(result.shard_seconds)
                return {
                    "seconds": seconds,
                    "plies": plies,
                    "plies_per_s": plies / seconds,
                    "shard_seconds": shard_s,
                    "stale_shards": stale,
                    "broadcast_missed_workers": broadcast_missed,
                }

            async def run_asp(run_index: int) -> dict[str, Any]:
                model = copy.deepcopy(base_model)
                seconds, plies, shards = 0.0, 0, 0
                for it in range(iterations):
                    version = 1 + run_index * iterations + it
                    perturb(model)
                    started = time.perf_counter()
                    records, stats = await sp.play(model, None, uneven_cfg(it, games, version, args))
                    seconds += time.perf_counter() - started
                    plies += int(stats["plies"])
                    shards += int(stats["shards"])
                    if any(r.model_version != version for r in records):
                        print(f"BUG: asp returned records of another model_version in iteration {it}")
                return {"seconds": seconds, "plies": plies, "plies_per_s": plies / seconds, "shards": shards}

            sides: list[tuple[str, Callable[[int], Awaitable[dict[str, Any]]]]] = [
                ("baseline", run_baseline),
                ("asp", run_asp),
            ]
            for i in range(args.runs):
                run: dict[str, Any] = {}
                for name, side in rotated(sides, i):
                    run[name] = await side(i)
                run["speed"] = run["baseline"]["seconds"] / run["asp"]["seconds"]
                runs.append(run)
                b, a = run["baseline"], run["asp"]
                print(
                    f"run {i + 1}: baseline {b['seconds']:.2f} s, {b['plies']:,} plies = "
                    f"{b['plies_per_s']:,.0f} plies/s | asp {a['seconds']:.2f} s, {a['plies']:,} plies = "
                    f"{a['plies_per_s']:,.0f} plies/s "
                    f"| asp speed x{run['speed']:.3f}"
                )
                shard_text = " ".join("[" + ", ".join(f"{s:.2f}" for s in it) + "]" for it in b["shard_seconds"])
                print(
                    f"       baseline shard seconds per iteration {shard_text}; "
                    f"stale shards {b['stale_shards']}, "
                    f"workers missed by the broadcast {b['broadcast_missed_workers']}"
                )
    median = {
        "baseline_s": statistics.median(r["baseline"]["seconds"] for r in runs),
        "asp_s": statistics.median(r["asp"]["seconds"] for r in runs),
        "baseline_plies_per_s": statistics.median(r["baseline"]["plies_per_s"] for r in runs),
        "asp_plies_per_s": statistics.median(r["asp"]["plies_per_s"] for r in runs),
        "speed": statistics.median(r["speed"] for r in runs),
    }
    target = TARGET_BASELINE.get(args.long_fraction)
    ok = target is None or median["speed"] >= target
    print(
        f"median: baseline {median['baseline_s']:.2f} s = {median['baseline_plies_per_s']:,.0f} plies/s | "
        f"asp {median['asp_s']:.2f} s = {median['asp_plies_per_s']:,.0f} plies/s | asp speed "
        f"x{median['speed']:.3f} (baseline time / asp time)"
    )
    if target is None:
        print(f"asp speed x{median['speed']:.3f} (no target for long fraction {args.long_fraction})")
    else:
        print(f"{verdict(ok)}: asp speed x{median['speed']:.3f} >= {target:.2f} (target, issue 48)")
    return {
        "workers": workers,
        "games_per_iteration": games,
        "iterations": iterations,
        "shard_games": args.shard_games,
        "long_games_per_iteration": n_long,
        "long_plies": LONG_PLIES,
        "short_plies": args.short_plies,
        "runs": runs,
        "median": median,
        "target": {"speed_min": target},
        "pass": ok,
    }


# -- main -------------------------------------------------------------------------------------


async def run_sections(args: argparse.Namespace, report: dict[str, Any]) -> None:
    torch.manual_seed(0)
    model = TinyChess()
    for name in SECTIONS:
        if name not in args.only:
            continue
        started = time.perf_counter()
        if name == "scaling":
            result = await bench_scaling(args, model)
        elif name == "overhead":
            result = await bench_overhead(args, model)
        elif name == "publish":
            result = bench_publish(args)
        else:
            result = await bench_baseline(args, model)
        result["section_seconds"] = time.perf_counter() - started
        print(f"(section took {result['section_seconds']:.1f} s)")
        report["sections"][name] = result


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark asp's SelfPlay (see the module docstring).")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per section (default 3)")
    parser.add_argument(
        "--games", type=int, default=128, help="games per call, and per iteration in 'baseline' (default 128)"
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), metavar="NAME", help="sections to run"
    )
    parser.add_argument("--iterations", type=int, default=3, help="iterations in 'baseline' (default 3)")
    parser.add_argument(
        "--shard-games", type=int, default=0, help="asp's shard_games in 'baseline' (default 0: asp's default)"
    )
    parser.add_argument("--publishes", type=int, default=30, help="timed publishes per run (default 30, min 20)")
    parser.add_argument(
        "--long-fraction",
        type=float,
        default=0.5,
        help="'baseline': fraction of each iteration's games, from its first id, that are long (default 0.5, "
        "uneven; 0.25: mixed; 0: even)",
    )
    parser.add_argument(
        "--short-plies", type=int, default=40, help="'baseline': the cap of the short games' plies (default 40)"
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.games < 8:
        parser.error("--games must be at least 8")
    if args.iterations < 1 or args.shard_games < 0:
        parser.error("--iterations must be at least 1 and --shard-games at least 0")
    if args.publishes < 20:
        parser.error("--publishes must be at least 20")

    configure_logging(level="warning")
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    cores = os.cpu_count() or 1
    info: dict[str, Any] = {
        "command": shlex.join(sys.orig_argv),
        "cores": cores,
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores,
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "parent_torch_threads": torch.get_num_threads(),
    }
    for key, value in info.items():
        print(f"{key:>20}: {value}")
    print(
        f"{'settings':>20}: runs={args.runs} games={args.games} iterations={args.iterations} "
        f"shard_games={args.shard_games} publishes={args.publishes} long_fraction={args.long_fraction} "
        f"short_plies={args.short_plies} sections={' '.join(args.only)}"
    )
    report: dict[str, Any] = {"machine": info, "settings": vars(args), "sections": {}}
    started = time.perf_counter()
    asyncio.run(run_sections(args, report))
    report["total_seconds"] = time.perf_counter() - started
    print()
    print(f"total: {report['total_seconds']:.1f} s")
    if args.json is not None:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
