"""Self-play speed of ``asp.games.play_games`` on TinyChess against plain python-chess random playouts.

Each run times, on one thread and (by default) one pinned CPU:

1. asp: ``play_games(game.network(), None, PlayConfig(game, max_plies=200))`` with ``game =
   TinyChessGame()`` (256 games of at most 200 plies, as ``asp train`` caps a game of
   TinyChess, batch 64, the network without search, default model with
   ``torch.manual_seed(0)``), in plies/s;
2. baseline: random playouts from the initial position with python-chess alone
   (``list(board.generate_legal_moves())``, a uniform pick from a seeded ``random.Random``,
   ``push``, ``is_game_over()``; games capped at the same ``max_plies``), run for about as
   long as the asp run took, in plies/s;

and the ratio asp / baseline, which factors out the speed of the machine. Runs alternate
(asp, baseline, asp, baseline, ...) so drift in machine load hits both sides alike; medians
are reported. Targets: >= 5,000 plies/s and ratio >= 0.45 (issue 9; it was 0.33 before). It
always exits 0. ``--mate-in-one`` times asp with ``PlayConfig(take_wins=True)``: the untrained
model then mates whenever it can, so its games are shorter (and TinyChessGame looks for the mates
in one of every position, its ``winning`` actions, which play without ``take_wins`` does not
ask for).

    python benchmarks/bench_play.py [--runs 3] [--games G] [--mate-in-one] [--cpu K] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import statistics
import time
from typing import Any

import chess
import torch
from torch import nn

from asp.games import PlayConfig, play_games
from asp.tinychess import TinyChessGame

TARGET_PLIES_PER_S = 5_000.0
TARGET_RATIO = 0.45
MAX_PLIES = 200
"""The cap of a game's plies: what ``asp train`` plays TinyChess with."""


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def time_asp(model: nn.Module, cfg: PlayConfig) -> tuple[int, float]:
    """Return ``(plies, seconds)`` of one ``play_games`` call."""
    started = time.perf_counter()
    _, stats = play_games(model, None, cfg)
    return int(stats["plies"]), time.perf_counter() - started


def time_random_playouts(seconds: float, max_plies: int, seed: int) -> tuple[int, int, float]:
    """Play random games until ``seconds`` have passed; return ``(games, plies, seconds)``."""
    rng = random.Random(seed)
    games = plies = 0
    started = time.perf_counter()
    while True:
        board = chess.Board()
        for _ in range(max_plies):
            board.push(rng.choice(list(board.generate_legal_moves())))
            plies += 1
            if board.is_game_over():
                break
        games += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return games, plies, elapsed


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description="Time asp self-play against python-chess random playouts.")
    parser.add_argument("--runs", type=int, default=3, help="asp/baseline pairs to time (default 3)")
    parser.add_argument("--games", type=int, default=None, help="PlayConfig.n_games (default: its default)")
    parser.add_argument("--mate-in-one", action="store_true", help="asp plays with PlayConfig.take_wins (mates in one)")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to; -1 to not pin (default 0)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    pinned = "no"
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
        pinned = f"CPU {args.cpu}"

    game = TinyChessGame()
    cfg = PlayConfig(game, max_plies=MAX_PLIES, take_wins=args.mate_in_one)
    if args.games is not None:
        cfg = dataclasses.replace(cfg, n_games=args.games)
    torch.manual_seed(0)
    model = game.network()

    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "pinned": pinned,
        "torch": torch.__version__,
        "python_chess": chess.__version__,
    }
    for key, value in info.items():
        print(f"{key:>13}: {value}")
    print(
        f"{'config':>13}: n_games={cfg.n_games} max_plies={cfg.max_plies} batch_size={cfg.batch_size} "
        f"take_wins={cfg.take_wins}"
    )

    warm_plies, warm_s = time_asp(model, PlayConfig(game, n_games=cfg.batch_size, max_plies=20))
    print(f"{'warm-up':>13}: {warm_plies} plies in {warm_s:.3f} s (untimed below)")

    runs: list[dict[str, Any]] = []
    for i in range(args.runs):
        plies, secs = time_asp(model, cfg)
        b_games, b_plies, b_secs = time_random_playouts(secs, cfg.max_plies, seed=i)
        run: dict[str, Any] = {
            "asp_plies": plies,
            "asp_s": secs,
            "asp_plies_per_s": plies / secs,
            "baseline_games": b_games,
            "baseline_plies": b_plies,
            "baseline_s": b_secs,
            "baseline_plies_per_s": b_plies / b_secs,
        }
        run["ratio"] = run["asp_plies_per_s"] / run["baseline_plies_per_s"]
        runs.append(run)
        print(
            f"run {i + 1}: asp {plies} plies / {secs:.2f} s = {run['asp_plies_per_s']:,.0f} plies/s | "
            f"random {b_games} games, {b_plies} plies / {b_secs:.2f} s = "
            f"{run['baseline_plies_per_s']:,.0f} plies/s | ratio {run['ratio']:.3f}"
        )

    asp_med = statistics.median(r["asp_plies_per_s"] for r in runs)
    base_med = statistics.median(r["baseline_plies_per_s"] for r in runs)
    ratio_med = statistics.median(r["ratio"] for r in runs)
    print(f"median asp:      {asp_med:,.0f} plies/s")
    print(f"median random:   {base_med:,.0f} plies/s")
    print(f"median ratio:    {ratio_med:.3f}")
    print(f"{verdict(asp_med >= TARGET_PLIES_PER_S)}: asp {asp_med:,.0f} >= {TARGET_PLIES_PER_S:,.0f} plies/s")
    print(f"{verdict(ratio_med >= TARGET_RATIO)}: ratio {ratio_med:.3f} >= {TARGET_RATIO}")

    if args.json is not None:
        report = {
            "machine": info,
            "config": {
                "n_games": cfg.n_games,
                "max_plies": cfg.max_plies,
                "batch_size": cfg.batch_size,
                "take_wins": cfg.take_wins,
            },  # fmt: skip
            "warmup": {"plies": warm_plies, "seconds": warm_s},
            "runs": runs,
            "median": {"asp_plies_per_s": asp_med, "baseline_plies_per_s": base_med, "ratio": ratio_med},
            "targets": {"asp_plies_per_s": TARGET_PLIES_PER_S, "ratio": TARGET_RATIO},
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
