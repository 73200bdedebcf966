"""How a checkpoint's games against the random mover end, and the mates in one it leaves.

Replays a run's evaluation against the uniformly random mover (``RunConfig.eval_cfg``: same
games, seed and temperature as the run's own evaluations, so the final evaluation of a
finished run is played again move for move) on one thread, and prints:

1. the score and ``endings``, the counts that ``metrics.jsonl`` keeps as ``eval/endings``
   (a win by ``max_plies`` is an adjudication by material at the ply cap, not a mate);
2. the mean game length;
3. for each side, the positions in which it had a mate in one, and how often it played one.

The third is what the score is made of: a model that does not mate wins at the ply cap, and
the random mover gets a hundred moves in which to stumble on a mate. It always exits 0.

    python benchmarks/eval_endings.py RUN_DIR [--games N] [--temperature T] [--policy-only] [--json out.json]

``--policy-only`` plays the model without its mate-in-one rule (``RunConfig.mate_in_one``),
to see what the network alone has learnt.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from typing import Any

import chess
import torch

from asp.app.checkpoint import model_from_checkpoint, run_config_of
from asp.app.session import endings
from asp.tinychess import MODEL, GameRecord, play_games
from asp.tinychess.mates import mating_moves
from asp.tinychess.opponents import RandomMover


def mates_in_one(records: list[GameRecord]) -> dict[str, dict[str, int]]:
    """Per side (``model``, ``opponent``): positions with a mate in one on the board, and mates played."""
    counts = {side: {"positions": 0, "played": 0} for side in ("model", "opponent")}
    for record in records:
        board = chess.Board(record.start_fen)
        for uci in record.moves:
            mover = record.white if board.turn == chess.WHITE else record.black
            side = counts["model" if mover == MODEL else "opponent"]
            legal = list(board.legal_moves)
            mates = {legal[i].uci() for i in mating_moves(board, legal)}
            if mates:
                side["positions"] += 1
                side["played"] += uci in mates
            board.push_uci(uci)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="run directory or checkpoint file")
    parser.add_argument("--games", type=int, default=None, help="games (default: the run's eval_games)")
    parser.add_argument("--temperature", type=float, default=None, help="model's temperature (default: the run's)")
    parser.add_argument("--policy-only", action="store_true", help="the model plays no mate in one of its own")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()

    torch.set_num_threads(1)
    model, state = model_from_checkpoint(args.run)
    cfg = run_config_of(state)
    play = cfg.eval_cfg(int(state["version"]))
    if args.games is not None:
        play = dataclasses.replace(play, n_games=args.games)
    if args.temperature is not None:
        play = dataclasses.replace(play, temperature=args.temperature)
    if args.policy_only:
        play = dataclasses.replace(play, mate_in_one=False)
    records, stats = play_games(model, RandomMover(), play)
    report: dict[str, Any] = {
        "run": args.run,
        "games": len(records),
        "temperature": play.temperature,
        "mate_in_one": play.mate_in_one,
        "score": stats["score"],
        "endings": endings(records),
        "mean_plies": round(statistics.fmean(len(r.moves) for r in records), 1),
        "mates_in_one": mates_in_one(records),
    }
    rule = "with" if play.mate_in_one else "without"
    print(
        f"{args.run}: score {report['score']:.3f} over {len(records)} games at temperature {play.temperature}, "
        f"{rule} the mate-in-one rule"
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
