"""Connect Four: what ``asp train --game connect4`` costs and how strong its model plays.

Each run trains with the defaults (``asp train --game connect4 --no-progress``, a fresh run
directory, timed as a subprocess), then scores the final model as it plays by default (its
search with ``eval_search`` simulations, no noise, no sampling), side by side in this script:

1. against the uniformly random mover and the one-ply win/block mover (``--games`` games
   each, both colours, from the empty board);
2. against OpenSpiel's ``MCTSBot`` with random rollouts (``open_spiel.python.algorithms.mcts``,
   ``uct_c`` 2, ``--mcts-simulations`` simulations a move, one rollout per leaf, its default
   solver on), ``--mcts-games`` games, both colours, from the empty board; the bot's random
   state is seeded per move from the game's own stream;
3. on the positions of ``benchmarks/data/connect4_positions.txt`` (14 to 32 stones from random
   play, labelled by perfect play, only those where some move throws the result away): the
   share where the model's move keeps the best result, beside the expected shares of the
   random mover and the win/block mover.

Wall times are also given in python-chess random-playout plies (wall seconds times the
machine's rate on one core, measured at the start), the unit of the time budgets::

    python benchmarks/bench_connect4.py --runs 3 [--keep DIR] [--json out.json]
    python benchmarks/bench_connect4.py --run RUN_DIR      # score a trained run only

open-spiel is needed for the MCTSBot (``pip install open-spiel``; without it that match is
left out and said so).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.util
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from asp import SelfPlay
from asp.app.evaluation.elo import match_result_of
from asp.app.game_run import GameRun
from asp.app.run.checkpoint import run_from_checkpoint
from asp.connect4 import WinBlockMover
from asp.connect4.rules import Board, from_columns, winning_columns
from asp.games import PlayConfig, RandomMover, play_games

sys.path.insert(0, str(Path(__file__).parent))
from bench_play import cpu_model, time_random_playouts  # noqa: E402
from connect4_positions import keeps_best, opponent_winning_columns, read  # noqa: E402

POSITIONS = Path(__file__).parent / "data" / "connect4_positions.txt"
TARGETS = {"random": 0.99, "winblock": 0.90, "mcts": 0.60, "positions": 0.90}


class MCTSMover(nn.Module):
    """OpenSpiel's MCTSBot with random rollouts over its own ``connect_four``, as an asp mover."""

    cfg = None
    opponent_name = "mcts"
    simulations = 1000

    def choose(self, game: Any, state: Board, rng: random.Random) -> int:
        import pyspiel
        from open_spiel.python.algorithms import mcts

        spiel_game = pyspiel.load_game("connect_four")
        spiel_state = spiel_game.new_initial_state()
        for column in state.moves:
            spiel_state.apply_action(column)
        seed = rng.getrandbits(32)
        evaluator = mcts.RandomRolloutEvaluator(1, np.random.RandomState(seed))
        bot = mcts.MCTSBot(spiel_game, 2, self.simulations, evaluator, random_state=np.random.RandomState(seed))
        return int(bot.step(spiel_state))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        raise TypeError("a mover has no forward pass")


def train(keep: Path, index: int) -> tuple[Path, float]:
    run = keep / f"run-{index}"
    started = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "asp.app.cli",
        "train",
        "--game",
        "connect4",
        "--no-progress",
        "--run-dir",
        str(run),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return run, time.perf_counter() - started


async def matches(run: Path, games: int, mcts_games: int, mcts_simulations: int) -> dict[str, Any]:
    game_run, model, state = run_from_checkpoint(run)
    play = game_run.eval_cfg(state["version"], games=games, seed=1)
    opponents: list[tuple[str, nn.Module, int]] = [
        ("random", RandomMover(), games),
        ("winblock", WinBlockMover(), games),
    ]
    if importlib.util.find_spec("pyspiel") is not None:
        MCTSMover.simulations = mcts_simulations
        opponents.append(("mcts", MCTSMover(), mcts_games))
    result: dict[str, Any] = {}
    async with SelfPlay(workers=2) as selfplay:
        for name, opponent, n in opponents:
            started = time.perf_counter()
            records, _ = await selfplay.play(model, opponent, dataclasses.replace(play, n_games=n))
            match = match_result_of(records)
            result[name] = {"score": match.score, "wdl": [match.wins, match.draws, match.losses],
                            "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
    if "mcts" not in result:
        result["mcts"] = {"skipped": "open-spiel is not installed: pip install open-spiel"}
    result["positions"] = positions_score(model, game_run)
    return result


def positions_score(model: nn.Module, run: GameRun) -> dict[str, Any]:
    """The share of the labelled positions where the model's move keeps the best result."""
    game = run.game
    positions = read(POSITIONS)
    play = PlayConfig(
        game,
        n_games=len(positions),
        openings=tuple(p.columns for p in positions),
        max_plies=1,
        temperature=0.0,
        search=run.search_cfg(sampling=False),
        samples=False,
    )
    records, _ = play_games(model, None, play)
    result: dict[str, Any] = {}
    # The whole set, and the positions where the side to move cannot win at once (in most of
    # the set it can, and the win/block mover is then never wrong).
    for name, quiet in (("all", False), ("no_win_at_once", True)):
        rows = [(p, r) for p, r in zip(positions, records, strict=True) if not (quiet and winning(p.columns))]
        model_keeps = [float(p.results[r.actions[0]] == max(p.results.values())) for p, r in rows]
        random_keeps = [keeps_best(p.results, sorted(p.results)) for p, _ in rows]
        simple = [keeps_best(p.results, win_block(p.columns) or sorted(p.results)) for p, _ in rows]
        result[name] = {"positions": len(rows), "model": statistics.fmean(model_keeps),
                        "random": statistics.fmean(random_keeps), "winblock": statistics.fmean(simple)}  # fmt: skip
    return result


def winning(columns: str) -> list[int]:
    return winning_columns(from_columns(columns))


def win_block(columns: str) -> list[int]:
    """The columns the one-ply win/block mover chooses among."""
    board = from_columns(columns)
    return winning_columns(board) or opponent_winning_columns(board)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="training runs (default 1)")
    parser.add_argument("--run", type=Path, help="score this run directory instead of training")
    parser.add_argument("--keep", type=Path, help="keep the run directories here")
    parser.add_argument("--games", type=int, default=200, help="games against each mover (default 200)")
    parser.add_argument("--mcts-games", type=int, default=100, help="games against the MCTSBot (default 100)")
    parser.add_argument("--mcts-simulations", type=int, default=1000, help="the MCTSBot's simulations a move")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    _, plies, seconds = time_random_playouts(3.0, 200, seed=0)
    rate = plies / seconds
    print(f"machine: {cpu_model()}; python-chess random playouts: {rate:,.0f} plies/s on one core")
    keep = args.keep or Path(tempfile.mkdtemp(prefix="bench-c4-"))
    results: list[dict[str, Any]] = []
    for index in range(1 if args.run else args.runs):
        run, wall = (args.run, 0.0) if args.run else train(keep, index)
        result = {"run": str(run), "wall_s": round(wall, 1), "wall_plies": round(wall * rate)}
        result.update(asyncio.run(matches(run, args.games, args.mcts_games, args.mcts_simulations)))
        print(json.dumps(result))
        results.append(result)
    summary = {
        key: statistics.median(r[key]["score"] for r in results)
        for key in ("random", "winblock", "mcts")
        if all("score" in r[key] for r in results)
    }
    summary["positions"] = statistics.median(r["positions"]["all"]["model"] for r in results)
    summary["positions_no_win_at_once"] = statistics.median(r["positions"]["no_win_at_once"]["model"] for r in results)
    if not args.run:
        summary["wall_s"] = statistics.median(r["wall_s"] for r in results)
    print(f"medians of {len(results)} run(s): {json.dumps(summary)}; targets: {json.dumps(TARGETS)}")
    if args.json:
        args.json.write_text(json.dumps({"rate": rate, "runs": results, "medians": summary}, indent=2))
    if not args.keep and not args.run:
        shutil.rmtree(keep, ignore_errors=True)


if __name__ == "__main__":
    main()
