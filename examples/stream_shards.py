"""Take self-play games shard by shard, as each finishes, instead of all at once.

``selfplay.play`` returns when the last game of the call is done; ``selfplay.stream`` yields
each shard's :class:`asp.ShardResult` the moment its worker hands it back, so a trainer can
fill its replay buffer (and start learning) while the other shards are still being played.
``contextlib.aclosing`` makes leaving the loop early (a ``break``, an exception) cancel the
shards still running at once, rather than whenever the generator is garbage-collected.

    python examples/stream_shards.py --games 24 --workers 2 --shard-games 2 --max-plies 100

Prints one line per result as it arrives (seconds since the call began, then its first
shard's index, how many shards it holds, attempt, worker pid, seconds in the worker, games and
their ids), then when the first and the last result arrived: with the command above, twelve
results of two games, the first after about a fifth of the call's time (0.77 s of 3.94 s on a
2-core machine that played 10,000 random plies a second). With the default ``shard_games``
a worker is sent several small shards at once and takes more as its games end, so one result
can hold shards whose games are not contiguous, and a small call comes back as one result
per worker; ``--shard-games N`` gives one shard per result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections import deque

import asp
from asp.games import PlayConfig, Record
from asp.tinychess.game import TinyChessGame
from asp.tinychess.model import ModelConfig


async def main(args: argparse.Namespace) -> None:
    asp.configure_logging(level=args.log_level)
    game = TinyChessGame()
    model = game.network(ModelConfig(hidden=args.hidden))
    cfg = PlayConfig(game, n_games=args.games, max_plies=args.max_plies)
    replay_buffer: deque[Record] = deque(maxlen=args.buffer)
    arrivals: list[float] = []
    async with asp.SelfPlay(workers=args.workers, shard_games=args.shard_games) as selfplay:
        started = time.perf_counter()
        async with contextlib.aclosing(selfplay.stream(model, None, cfg)) as shards:
            async for shard in shards:
                arrivals.append(time.perf_counter() - started)
                replay_buffer.extend(shard.records)
                print(
                    f"{arrivals[-1]:6.2f} s  shard {shard.shard:2d} (+{len(shard.shards) - 1:2d} more)  "
                    f"attempt {shard.attempt}  pid {shard.pid}  seconds {shard.seconds:5.2f}  "
                    f"games {shard.n_games}  (ids {_ranges([r.game_id for r in shard.records])})  "
                    f"buffer {len(replay_buffer)}",
                    flush=True,
                )
    print(
        f"{len(arrivals)} results: the first arrived after {arrivals[0]:.2f} s, "
        f"{arrivals[-1] - arrivals[0]:.2f} s before the last one was done "
        f"(at {arrivals[-1]:.2f} s); the buffer holds {len(replay_buffer)} games"
    )


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 7, 8]`` as ``"0..2,7..8"``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}..{b}" if a != b else str(a) for a, b in runs)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=64, help="games in the call")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--shard-games", type=int, default=None, help="games per shard (default: asp's)")
    parser.add_argument("--max-plies", type=int, default=80, help="ply cap, adjudicated by material")
    parser.add_argument("--hidden", type=int, default=256, help="width of the model's trunk")
    parser.add_argument("--buffer", type=int, default=10_000, help="replay buffer capacity, in games")
    parser.add_argument("--log-level", choices=["debug", "info", "warning"], default="warning")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
