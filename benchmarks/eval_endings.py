"""How a checkpoint's games against one of its game's movers end, and the mates in one it leaves.

Replays a run's evaluation against a mover of its game (by default the uniformly random
mover, ``GameRun.eval_cfg``; another, such as ``greedy`` or ``material2``, from the game's
openings with both colours, ``GameRun.mover_match_cfg``: same games, seed and search as the
run's own evaluations, so the final evaluation of a finished run is played again move for
move) on one thread, and prints:

1. the score and how the games ended, from the model's side: ``endings`` as ``metrics.jsonl``
   keeps them (``eval/endings``: ``rules`` or ``max_plies``, a cut game adjudicated by
   material), with the rule that ended a game named (``win/checkmate``, ``draw/stalemate``...);
2. the mean game length;
3. for each side, the positions in which it had a mate in one, and how often it played one.

The third is what the score is made of: a model that does not mate wins at most on material
at the ply cap, and the random mover gets a hundred moves in which to stumble on a mate. It
exits 0, or 2 where the game has no mover of that name.

    python benchmarks/eval_endings.py RUN_DIR [--opponent NAME] [--games N] [--temperature T]
        [--policy-only] [--json out.json]

``--policy-only`` plays the network alone, without the run's search (as ``asp eval
--policy-only``), to see what the network itself has learnt.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import statistics
from typing import Any

import chess
import torch

from asp.app.game_loader import load_game
from asp.app.game_run import GameRun
from asp.app.run.directory import run_config_of, run_from_checkpoint
from asp.app.run_config import GameRunConfig
from asp.games import MODEL, PlayConfig, Record, play_games
from asp.games.movers import movers_of
from asp.tinychess.mates import mating_moves


def replayed(records: list[Record]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """How the scored games ended, named by the rule of chess that ended them; and per side
    (``model``, ``opponent``) the positions with a mate in one on the board, and mates played."""
    names = {1.0: "win", 0.5: "draw", 0.0: "loss"}
    ended: collections.Counter[str] = collections.Counter()
    counts = {side: {"positions": 0, "played": 0} for side in ("model", "opponent")}
    for record in records:
        board = chess.Board(record.start)
        first = board.turn
        for uci in record.moves:
            mover = record.first if board.turn == first else record.second
            side = counts["model" if mover == MODEL else "opponent"]
            legal = list(board.legal_moves)
            mates = {legal[i].uci() for i in mating_moves(board, legal)}
            if mates:
                side["positions"] += 1
                side["played"] += uci in mates
            board.push_uci(uci)
        points = record.model_score()
        if points is not None:
            outcome = board.outcome()
            how = outcome.termination.name.lower() if outcome is not None else record.termination
            ended[f"{names[points]}/{how}"] += 1
    return dict(sorted(ended.items())), counts


def endings_config(
    cfg: GameRunConfig,
    game: Any,
    version: int,
    games: int | None,
    temperature: float | None,
    policy_only: bool,
    opponent: str = "random",
) -> PlayConfig:
    """The run's evaluation against the mover ``opponent``, with the games and temperature
    asked for; ``policy_only``: the network alone (no search)."""
    play = GameRun(cfg, game).mover_cfg(version, opponent)
    if games is not None:
        play = dataclasses.replace(play, n_games=games)
    if temperature is not None:
        play = dataclasses.replace(play, temperature=temperature)
    if policy_only:
        play = dataclasses.replace(play, search=None)
    return play


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="run directory or checkpoint file (of a game of chess)")
    parser.add_argument("--opponent", default="random", help="the game's mover to play (default: random)")
    parser.add_argument("--games", type=int, default=None, help="games (default: the run's eval_games)")
    parser.add_argument("--temperature", type=float, default=None, help="model's temperature (default: the run's)")
    parser.add_argument("--policy-only", action="store_true", help="the network alone: no search")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()

    torch.set_num_threads(1)
    _, model, state = run_from_checkpoint(args.run)
    cfg = run_config_of(state)
    game = load_game(cfg.game)
    movers = movers_of(game)
    if args.opponent not in movers:
        parser.error(f"--opponent must be one of {', '.join(movers)}, got {args.opponent!r}")
    play = endings_config(
        cfg, game, int(state["version"]), args.games, args.temperature, args.policy_only, args.opponent
    )
    records, stats = play_games(model, movers[args.opponent], play)
    ended, mates = replayed(records)
    report: dict[str, Any] = {
        "run": args.run,
        "opponent": args.opponent,
        "games": len(records),
        "temperature": play.temperature,
        "search": 0 if play.search is None else play.search.simulations,
        "score": stats["score"],
        "endings": ended,
        "mean_plies": round(statistics.fmean(len(r.moves) for r in records), 1),
        "mates_in_one": mates,
    }
    how = "the network alone" if play.search is None else f"searching {play.search.simulations} simulations a move"
    print(
        f"{args.run}: score {report['score']:.3f} against {args.opponent} over {len(records)} games"
        f" at temperature {play.temperature}, {how}"
    )
    for key, n in sorted(report["endings"].items(), key=lambda kv: -kv[1]):
        print(f"  {key:28s} {n:5d}")
    print(f"  mean length {report['mean_plies']} plies")
    for side, c in report["mates_in_one"].items():
        print(f"  {side:8s} had a mate in one in {c['positions']:5d} positions and played it {c['played']:4d} times")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
