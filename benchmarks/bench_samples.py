"""What the trainer saves by reading PlyData instead of replaying games, and what it costs.

On one set of default self-play games (``PlayConfig(n_games=160)``, default model, seed 0):

* ``make_samples`` from the records' PlyData against the replay of the same records with
  python-chess (``record.plain()``), medians of ``--runs``;
* pickled bytes per ply with and without PlyData (what a worker sends back);
* ``play_games`` plies/s with ``samples=True`` and ``samples=False`` on one thread, alternating.

Run::

    python benchmarks/bench_samples.py --runs 3
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time

import torch

from asp.tinychess import PlayConfig, TinyChess, play_games
from asp.tinychess.train import make_samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--games", type=int, default=160)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyChess()
    records, _ = play_games(model, None, PlayConfig(n_games=args.games))
    plain = [r.plain() for r in records]
    plies = sum(len(r.moves) for r in records)
    read, replay = [], []
    for _ in range(args.runs):
        began = time.perf_counter()
        make_samples(records)
        read.append(time.perf_counter() - began)
        began = time.perf_counter()
        make_samples(plain)
        replay.append(time.perf_counter() - began)
    with_data = len(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)) / plies
    without = len(pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)) / plies
    speed: dict[bool, list[float]] = {True: [], False: []}
    for run in range(args.runs):
        for samples in (True, False):
            began = time.perf_counter()
            _, stats = play_games(model, None, PlayConfig(n_games=128, seed=run, samples=samples))
            speed[samples].append(stats["plies"] / (time.perf_counter() - began))
    print(f"{args.games} games, {plies} plies; medians of {args.runs}:")
    print(
        f"  make_samples: {statistics.median(read):.3f} s from PlyData, {statistics.median(replay):.3f} s replayed "
        f"(x{statistics.median(replay) / statistics.median(read):.1f})"
    )
    print(f"  pickled records: {with_data:.0f} B/ply with PlyData, {without:.0f} without (+{with_data - without:.0f})")
    print(
        f"  play_games, one thread: {statistics.median(speed[True]):,.0f} plies/s keeping samples, "
        f"{statistics.median(speed[False]):,.0f} without"
    )


if __name__ == "__main__":
    main()
