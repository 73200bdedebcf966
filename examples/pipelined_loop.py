"""A custom trainer plugged into asp's pipeline: self-play of iteration k+1 overlaps training on k.

    python examples/pipelined_loop.py --iterations 3 --games 16 --max-plies 30

The trainer here is deliberately simple (value regression only, on the samples self-play
sends back with each game: the positions the model saw, as the game encoded them); anything
with the shape ``train(records) -> metrics`` that updates the model in place fits
(:class:`asp.games.Trainer` is asp's own).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import torch

from asp import Pipeline, SelfPlay, configure_logging
from asp.games import PlayConfig, Record
from asp.games.protocol import unpacked
from asp.tinychess.game import TinyChessGame
from asp.tinychess.model import ModelConfig


def make_trainer(model: torch.nn.Module, game: TinyChessGame, lr: float) -> Any:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def train(records: list[Record]) -> dict[str, float]:
        # One row per ply the model played: the position it saw, and the game's outcome for
        # the side that moved there (the result is the first player's points: 1, 0.5 or 0).
        features, z = [], []
        for record in records:
            assert record.samples is not None  # self-play sends them back by default
            features.append(unpacked(game, record.samples.features))
            first = 2.0 * record.result - 1.0
            z += [first if mover == 0 else -first for mover in record.samples.movers]
        samples = torch.cat(features)
        _, value = model(samples)
        loss = torch.mean((value - torch.tensor(z)) ** 2)
        optimizer.zero_grad()
        torch.autograd.backward(loss)
        optimizer.step()
        return {"loss/value": float(loss.detach()), "samples": len(z)}

    return train


async def main(args: argparse.Namespace) -> None:
    configure_logging(level="warning")
    game = TinyChessGame()
    model = game.network(ModelConfig(hidden=args.hidden))

    def play_cfg(iteration: int, version: int) -> PlayConfig:
        return PlayConfig(
            game, n_games=args.games, seed=iteration, first_game=iteration * args.games,
            max_plies=args.max_plies, model_version=version,
        )  # fmt: skip

    async with SelfPlay(workers=args.workers) as selfplay:
        pipeline = Pipeline(selfplay, model, train=make_trainer(model, game, 1e-3), play_cfg=play_cfg, overlap=True)
        async for r in pipeline.run(args.iterations):
            print(
                f"iteration {r.iteration}: {len(r.records)} games by version {r.version_played} "
                f"(staleness {r.staleness}), play {r.play_seconds:.2f}s, train {r.train_seconds:.2f}s, "
                f"overlapped {r.overlap_seconds:.2f}s, value loss {r.train_metrics['loss/value']:.3f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--max-plies", type=int, default=60)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    asyncio.run(main(parser.parse_args()))
