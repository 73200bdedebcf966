"""Self-play and train in one async loop: REINFORCE on TinyChess, games from asp's worker pool.

Each iteration awaits ``selfplay.play`` for a batch of self-play games with the current
weights, then takes one policy-gradient step on them: every move played is made more likely
if its side went on to win, less likely if it lost (draws leave it alone). The pool lives
across iterations; ``model_version`` is bumped every iteration, and asp publishes the new
weights once per call, before the games start.

    python examples/async_trainer.py --iterations 3 --games 16 --workers 2 --max-plies 24 --hidden 32
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np
import structlog
import torch

import asp
from asp.games import PlayConfig, Record
from asp.games.protocol import unpacked
from asp.tinychess.game import TinyChessGame
from asp.tinychess.model import ModelConfig

log = structlog.get_logger("async_trainer")


def batch(game: TinyChessGame, records: list[Record]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each position a model played, from the samples self-play sent back with its game: its
    features, legal-move mask, the move played and the return of the side that played it."""
    features, masks, moves, returns = [], [], [], []
    for record in records:
        samples = record.samples
        assert samples is not None  # self-play sends them back by default
        features.append(unpacked(game, samples.features))
        bounds = np.concatenate([[0], np.cumsum(samples.legal_counts)])
        first = 2.0 * record.result - 1.0  # the result is the first player's points: 1, 0.5 or 0
        for k, ply in enumerate(samples.plies):
            mask = torch.zeros(game.action_size, dtype=torch.bool)
            mask[samples.legal[bounds[k] : bounds[k + 1]]] = True
            masks.append(mask)
            moves.append(record.actions[ply])
            returns.append(first if samples.movers[k] == 0 else -first)
    return torch.cat(features), torch.stack(masks), torch.tensor(moves), torch.tensor(returns)


def reinforce_step(
    model: torch.nn.Module, game: TinyChessGame, optimizer: torch.optim.Optimizer, records: list[Record]
) -> float:
    """One gradient step on -return * log pi(move | position), pi over the legal moves."""
    features, legal, moves, returns = batch(game, records)
    logits, _value = model(features)
    # Moves were sampled among the legal ones only, so normalise over those.
    logp = torch.log_softmax(logits.masked_fill(~legal, -torch.inf), dim=1)
    loss = -(returns * logp.gather(1, moves.unsqueeze(1)).squeeze(1)).mean()
    optimizer.zero_grad()
    loss.backward()  # type: ignore[no-untyped-call]  # unannotated in torch
    optimizer.step()
    return loss.item()


async def main(args: argparse.Namespace) -> None:
    asp.configure_logging(level=args.log_level)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the cores belong to the workers while they play
    game = TinyChessGame()
    model = game.network(ModelConfig(hidden=args.hidden))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    async with asp.SelfPlay(workers=args.workers) as selfplay:
        for iteration in range(args.iterations):
            cfg = PlayConfig(
                game, n_games=args.games, max_plies=args.max_plies, seed=iteration, model_version=iteration
            )
            records, stats = await selfplay.play(model, None, cfg)
            loss = reinforce_step(model, game, optimizer, records)
            log.info(
                "iteration_done",
                iteration=iteration,
                model_version=iteration,
                games=stats["games"],
                plies_per_s=round(stats["plies_per_s"]),
                results=stats["results"],
                loss=round(loss, 4),
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=10, help="play-then-train rounds")
    parser.add_argument("--games", type=int, default=64, help="self-play games per iteration")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--max-plies", type=int, default=80, help="ply cap, adjudicated by material")
    parser.add_argument("--hidden", type=int, default=256, help="width of the model's trunk")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the model's initial weights")
    parser.add_argument("--log-level", choices=["debug", "info", "warning"], default="info")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
