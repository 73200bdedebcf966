"""The ``asp`` command line: ``asp play`` writes a PGN of self-play games.

>>> import os
>>> main(["play", "--games", "2", "--max-plies", "4", "--out", os.devnull])  # doctest: +ELLIPSIS
played 2 games, 8 plies in ...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch

from asp.errors import AspError
from asp.log import LOG_FORMATS, LOG_LEVELS, configure_logging

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asp", description="Async self-play for board games.")
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("play", help="play games with TinyChess and write them as PGN")
    play.add_argument("--games", type=int, default=64, help="games to play (default 64)")
    play.add_argument("--max-plies", type=int, default=200, help="ply cap, adjudicated by material")
    play.add_argument("--seed", type=int, default=0, help="seed of the games and of the model's init")
    play.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    play.add_argument("--batch-size", type=int, default=64, help="games played at once")
    play.add_argument("--out", default="selfplay.pgn", help="PGN file to write (default selfplay.pgn)")
    for p in (play,):
        p.add_argument("--log-format", choices=LOG_FORMATS, default="console")
        p.add_argument("--log-level", choices=LOG_LEVELS, default="warning")
    return parser


def _play(args: argparse.Namespace) -> int:
    from asp.tinychess import PlayConfig, TinyChess, play_games, write_pgn

    cfg = PlayConfig(
        n_games=args.games,
        seed=args.seed,
        max_plies=args.max_plies,
        temperature=args.temperature,
        batch_size=args.batch_size,
    )
    torch.manual_seed(args.seed)
    records, stats = play_games(TinyChess(), None, cfg)
    write_pgn(records, args.out)
    print(
        f"played {stats['games']} games, {stats['plies']} plies in {stats['seconds']:.1f} s "
        f"({stats['plies_per_s']:.0f} plies/s); results {stats['results']}; wrote {args.out}"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    configure_logging(fmt=args.log_format, level=args.log_level)
    try:
        if args.command == "play":
            return _play(args)
    except AspError as e:
        print(f"asp {args.command}: {e}", file=sys.stderr)
        return 2
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
