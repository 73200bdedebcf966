"""Pipelined against sequential training: wall time for the same iterations, games and steps.

    python benchmarks/bench_pipeline.py [--runs 3] [--iterations 4] [--games 96] [--workers 1 2] [--simulations 8]

For each worker count, the same TinyChess training loop (asp.Pipeline + asp.games.Trainer on
TinyChessGame, self-play searching ``--simulations`` a move as ``asp train`` does; same seeds,
same games per iteration, same epochs) runs with ``overlap=True`` and ``overlap=False``,
alternating. Reported per run and as medians:

* wall time of each mode and their ratio (sequential / pipelined: > 1 means pipelining wins);
* the fraction of trainer time hidden behind self-play (overlap seconds / train seconds).

Pipelined, the games of iteration k+1 are played by version k-1: not the same games as in
sequential mode, so the training steps may differ by a few (both are printed).

Pool start is excluded (the SelfPlay is started and warmed up before the clock starts).
On a 2-core machine, workers=2 plus the trainer's thread means three busy threads on two
cores: pipelining can only hide training where a core would otherwise idle (the tail of an
iteration, shard dispatch gaps). With workers=1 the trainer has a core of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import statistics
import sys
import time
from typing import Any

import torch

from asp import Pipeline, SelfPlay, configure_logging
from asp.app.run_config import defaults_for
from asp.games import PlayConfig, Trainer
from asp.search import SearchConfig
from asp.tinychess.game import TinyChessGame

GAME = TinyChessGame()


async def one_run(*, overlap: bool, workers: int, iterations: int, games: int, simulations: int) -> dict[str, float]:
    torch.manual_seed(0)
    model = GAME.network()
    train = dataclasses.replace(defaults_for("tinychess").train, device="cpu", epochs=1)  # asp train's settings
    trainer = Trainer(model, GAME, train)
    search = SearchConfig(simulations, 16, gumbel_scale=1.0)

    def play_cfg(iteration: int, version: int) -> PlayConfig:
        return PlayConfig(GAME, n_games=games, seed=iteration, first_game=iteration * games, max_plies=200,
                          model_version=version, search=search)  # fmt: skip

    async with SelfPlay(workers=workers) as selfplay:
        await selfplay.play(model, None, PlayConfig(GAME, n_games=2, max_plies=4))  # warm-up, untimed
        pipeline = Pipeline(selfplay, model, train=trainer.train, play_cfg=play_cfg, overlap=overlap)
        started = time.perf_counter()
        train_s = overlap_s = 0.0
        steps = plies = 0
        async for report in pipeline.run(iterations):
            train_s += report.train_seconds
            overlap_s += report.overlap_seconds
            steps += report.train_metrics["train/steps"]
            plies += report.play_stats["plies"]
        wall = time.perf_counter() - started
    return {"wall": wall, "train": train_s, "overlap": overlap_s, "steps": steps, "plies": plies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--games", type=int, default=96)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--simulations", type=int, default=8, help="self-play's search (asp train's: 8)")
    args = parser.parse_args()
    configure_logging(level="warning")
    torch.set_num_threads(1)  # the trainer: one core, like each worker
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(f"cores: {os.cpu_count()}, python {platform.python_version()}, torch {torch.__version__}")
    print(f"settings: iterations={args.iterations} games={args.games} simulations={args.simulations} "
          f"runs={args.runs} trainer threads=1")  # fmt: skip
    for workers in args.workers:
        print(f"\n== workers={workers} ==")
        ratios, hidden = [], []
        for run in range(args.runs):
            res: dict[bool, dict[str, Any]] = {}
            for overlap in (True, False) if run % 2 == 0 else (False, True):
                res[overlap] = asyncio.run(
                    one_run(
                        overlap=overlap,
                        workers=workers,
                        iterations=args.iterations,
                        games=args.games,
                        simulations=args.simulations,
                    )  # fmt: skip
                )
            pipe, seq = res[True], res[False]
            ratio = seq["wall"] / pipe["wall"]
            frac = pipe["overlap"] / pipe["train"] if pipe["train"] else 0.0
            ratios.append(ratio)
            hidden.append(frac)
            print(
                f"run {run + 1}: sequential {seq['wall']:.2f}s, pipelined {pipe['wall']:.2f}s "
                f"(speed-up x{ratio:.3f}); trainer {pipe['train']:.2f}s of which {pipe['overlap']:.2f}s "
                f"overlapped ({frac:.0%}); steps {pipe['steps']} / {seq['steps']}, "
                f"plies {pipe['plies']} / {seq['plies']}"
            )
        print(
            f"median: speed-up x{statistics.median(ratios):.3f}, "
            f"trainer time hidden behind self-play {statistics.median(hidden):.0%}"
        )


if __name__ == "__main__":
    main()
