"""A set of Connect Four positions in which a move can throw the result away, every legal move
labelled with its result under perfect play; and how often simple movers keep the best result.

Builds the set: uniformly random games from the empty board (seeded), each stopped at a stone
count drawn uniformly from 14 to 32 (where the game ends before it, both the count and the game
are drawn again, so that low counts are the more frequent), every legal move of the position
labelled by ``asp.connect4.solver.move_results``; a position is kept when its best move result
is better than its worst (a win that can become a draw or a loss, or a draw that can become a
loss), and when no earlier game reached the same stones. One line per position: the
columns played, 1-7 (the notation of the published Connect Four test sets), a space, and seven
fields for columns 1 to 7: ``W``, ``D`` or ``L`` for the result for the side to move of playing
there, ``-`` for a full column; e.g. ``4453 WDLL-DD``. Lines starting with ``#`` are comments.

    python benchmarks/connect4_positions.py [--count N] [--seed S] [--out PATH]
    python benchmarks/connect4_positions.py --report [PATH]

Without options it rebuilds ``benchmarks/data/connect4_positions.txt``. ``--report`` reads a
file already built (no solving) and prints how often a uniformly random mover keeps the best
result, and how often the one-ply win/block mover does (a winning column if it has one; else
the column that blocks the opponent's winning cell; else uniformly random), both as the
expected value over their choice of move, averaged over the positions.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from asp.connect4.rules import (
    EMPTY,
    WIDTH,
    Board,
    from_columns,
    is_over,
    legal_columns,
    play,
    to_columns,
    winning_columns,
)
from asp.connect4.solver import move_results

DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "connect4_positions.txt"
DEFAULT_COUNT = 400
DEFAULT_SEED = 2024
STONES = range(14, 33)
"""The stone counts of the positions, drawn uniformly."""

LETTERS = {1: "W", 0: "D", -1: "L"}
RESULTS = {letter: result for result, letter in LETTERS.items()}


@dataclass(frozen=True)
class Position:
    """A position of the set and the result of each legal move."""

    columns: str
    """The columns played from the empty board, 1-7."""

    results: dict[int, int]
    """For each legal 0-based column, the result for the side to move of playing there (1, 0, -1)."""

    def line(self) -> str:
        fields = "".join(LETTERS[self.results[c]] if c in self.results else "-" for c in range(WIDTH))
        return f"{self.columns} {fields}"

    @classmethod
    def parse(cls, line: str) -> Position:
        columns, fields = line.split()
        if len(fields) != WIDTH or set(fields) - {"W", "D", "L", "-"}:
            raise ValueError(f"bad results {fields!r}: seven of W, D, L, -")
        results = {c: RESULTS[f] for c, f in enumerate(fields) if f != "-"}
        board = from_columns(columns)
        if sorted(results) != legal_columns(board):
            raise ValueError(f"{columns}: results for columns {sorted(results)}, legal {legal_columns(board)}")
        return cls(columns, results)


def random_position(rng: random.Random) -> Board:
    """A position of a uniformly random game, stopped at a stone count drawn from STONES, not over."""
    while True:
        stones, board = rng.choice(STONES), EMPTY
        while board.plies < stones and (columns := legal_columns(board)):
            board = play(board, rng.choice(columns))
        if board.plies == stones and not is_over(board):
            return board


def build(count: int, seed: int) -> list[Position]:
    """``count`` positions in which some legal move throws the result away."""
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    positions: list[Position] = []
    tried = 0
    while len(positions) < count:
        board = random_position(rng)
        tried += 1
        if (board.current, board.mask) in seen:
            continue
        seen.add((board.current, board.mask))
        results = move_results(board)
        if max(results.values()) > min(results.values()):
            positions.append(Position(to_columns(board), results))
            if len(positions) % 50 == 0:
                print(f"{len(positions)} positions kept of {tried} solved", file=sys.stderr, flush=True)
    return positions


def header(count: int, seed: int) -> list[str]:
    command = "python benchmarks/connect4_positions.py"
    if (count, seed) != (DEFAULT_COUNT, DEFAULT_SEED):
        command += f" --count {count} --seed {seed}"
    return [
        "# Connect Four positions in which some legal move throws the result away.",
        f"# Made by: {command}",
        f"# Uniformly random games from the empty board (random.Random({seed})), each stopped at a",
        f"# stone count drawn uniformly from {STONES.start} to {STONES.stop - 1} where the game is not over;",
        "# kept when the best move result is better than the worst; no position twice.",
        "# Results by asp.connect4.solver.move_results (weak solver: negamax, alpha-beta, perfect play).",
        "# Line: the columns played (1-7), then columns 1-7 of the side to move: W win, D draw, L loss, - full.",
    ]


def read(path: Path) -> list[Position]:
    """The positions of a file written by :func:`build`'s caller."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Position.parse(line) for line in lines if line.strip() and not line.startswith("#")]


def opponent_winning_columns(board: Board) -> list[int]:
    """The columns where the opponent of the side to move would make four in a row if it were
    its turn: the same stones, the other side to move."""
    return winning_columns(Board(board.current ^ board.mask, board.mask))


def keeps_best(results: dict[int, int], choices: list[int]) -> float:
    """The chance that a uniform choice among ``choices`` keeps the best result of ``results``."""
    best = max(results.values())
    return sum(results[c] == best for c in choices) / len(choices)


@dataclass(frozen=True)
class Report:
    positions: int
    random_keeps: float
    """The mean, over positions, of the chance that a uniformly random move keeps the best result."""
    win_block_keeps: float
    """The same for the one-ply win/block mover."""


def report(path: Path) -> Report:
    """How often a uniformly random mover and a one-ply win/block mover keep the best result of
    the positions of ``path`` (expected values over their choice of move, averaged)."""
    positions = read(path)
    random_keeps, win_block_keeps = [], []
    for position in positions:
        board = from_columns(position.columns)
        legal = sorted(position.results)
        random_keeps.append(keeps_best(position.results, legal))
        choices = winning_columns(board) or opponent_winning_columns(board) or legal
        win_block_keeps.append(keeps_best(position.results, choices))
    return Report(len(positions), statistics.fmean(random_keeps), statistics.fmean(win_block_keeps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help="positions to keep (default %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the random games (default %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the file to write (default: the committed one)")
    parser.add_argument(
        "--report",
        type=Path,
        nargs="?",
        const=DEFAULT_OUT,
        metavar="PATH",
        help="read PATH (default: the committed file); print how often the random and win/block movers keep the best",
    )
    args = parser.parse_args()
    if args.report is not None:
        figures = report(args.report)
        print(f"{figures.positions} positions of {args.report}")
        print(f"random mover keeps the best result:    {figures.random_keeps:.1%}")
        print(f"win/block mover keeps the best result: {figures.win_block_keeps:.1%}")
        return
    if args.count < 1:
        parser.error(f"--count must be at least 1, not {args.count}")
    start = time.perf_counter()
    positions = build(args.count, args.seed)
    lines = header(args.count, args.seed) + [position.line() for position in positions]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(positions)} positions written to {args.out} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
