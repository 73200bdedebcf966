"""TinyChess through the game seam against TinyChess's own code, on one core.

Each run times, on one thread and one pinned CPU, alternating so that drift in the
machine's speed hits both sides alike:

1. self-play with search: ``asp.games.play_games`` on
   :class:`~asp.tinychess.game.TinyChessGame` against ``asp.tinychess.play_games`` (mates in
   one taken, as ``asp train`` plays), the same network, settings and seed, in plies/s;
2. training: ``asp.games.Trainer`` against ``asp.tinychess.train.Trainer`` on the games each
   loop played, with the settings of ``asp train`` (batch 1024), in samples/s;

and prints the medians and the ratios seam / own (above 1: the seam is faster).

    python benchmarks/bench_seam.py [--runs 3] [--games 64] [--simulations 8] [--max-plies 120] [--cpu 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from bench_play import cpu_model, time_random_playouts

from asp import games
from asp.search import SearchConfig
from asp.tinychess import play as chess_play
from asp.tinychess import train as chess_train
from asp.tinychess.game import TinyChessGame

GAME = TinyChessGame()


def time_play(args: argparse.Namespace, seam: bool) -> tuple[list[object], int, float]:
    """One self-play call: ``(records, plies, seconds)``."""
    search = SearchConfig(args.simulations, 16, gumbel_scale=1.0)
    torch.manual_seed(0)
    net = GAME.network()
    started = time.perf_counter()
    if seam:
        cfg = games.PlayConfig(GAME, n_games=args.games, max_plies=args.max_plies, seed=3, search=search)
        records, _ = games.play_games(net, None, cfg)
        plies = sum(len(r.actions) for r in records)
    else:
        own = chess_play.PlayConfig(
            n_games=args.games, max_plies=args.max_plies, seed=3, search=search, mate_in_one=True
        )
        chess_records, _ = chess_play.play_games(net, None, own)
        records, plies = list(chess_records), sum(len(r.moves) for r in chess_records)
    return list(records), plies, time.perf_counter() - started


def time_train(records: list[object], seam: bool) -> tuple[int, float]:
    """Two epochs over ``records`` at batch 1024: ``(samples, seconds)``."""
    torch.manual_seed(1)
    net = GAME.network()
    started = time.perf_counter()
    if seam:
        trainer = games.Trainer(net, GAME, games.TrainConfig(device="cpu", batch_size=1024, epochs=2))
        metrics = trainer.train(records)  # type: ignore[arg-type]
    else:
        own = chess_train.Trainer(net, chess_train.TrainConfig(device="cpu", batch_size=1024, epochs=2))
        metrics = own.train(records)  # type: ignore[arg-type]
    return 2 * int(metrics["train/samples"]), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="TinyChess through the game seam against its own code.")
    parser.add_argument("--runs", type=int, default=3, help="alternating pairs to time (default 3)")
    parser.add_argument("--games", type=int, default=64, help="games a self-play call (default 64)")
    parser.add_argument("--simulations", type=int, default=8, help="search simulations a move (default 8)")
    parser.add_argument("--max-plies", type=int, default=120, help="plies a game at most (default 120)")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to; -1 to not pin (default 0)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    torch.set_num_threads(1)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    _, plies, secs = time_random_playouts(5.0, 200, seed=0)
    print(f"cpu: {cpu_model()}; python-chess random playouts: {plies / secs:,.0f} plies/s")
    rates: dict[str, list[float]] = {"play own": [], "play seam": [], "train own": [], "train seam": []}
    for run in range(args.runs):
        for seam in (False, True):
            side = "seam" if seam else "own"
            records, plies, secs = time_play(args, seam)
            rates[f"play {side}"].append(plies / secs)
            samples, train_secs = time_train(records, seam)
            rates[f"train {side}"].append(samples / train_secs)
            print(f"run {run + 1} {side}: {plies / secs:,.0f} plies/s, training {samples / train_secs:,.0f} samples/s")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for what in ("play", "train"):
        unit = "plies/s" if what == "play" else "samples/s"
        own, seam = medians[f"{what} own"], medians[f"{what} seam"]
        print(
            f"{what}: seam {seam:,.0f} {unit}, own {own:,.0f}: ratio seam/own {seam / own:.3f} (medians of {args.runs})"
        )


if __name__ == "__main__":
    main()
