"""A custom trainer plugged into asp's pipeline: self-play of iteration k+1 overlaps training on k.

    python examples/pipelined_loop.py --iterations 3 --games 16 --max-plies 30

The trainer here is deliberately simple (value regression only); anything with the shape
``train(records) -> metrics`` that updates the model in place fits.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import torch

from asp import Pipeline, SelfPlay, configure_logging
from asp.tinychess import GameRecord, ModelConfig, PlayConfig, TinyChess
from asp.tinychess.train import make_samples


def make_trainer(model: TinyChess, lr: float) -> Any:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def train(records: list[GameRecord]) -> dict[str, float]:
        samples = make_samples(records)  # one row per ply: features, move, outcome z
        _, value = model(samples.features)
        loss = torch.mean((value - samples.z) ** 2)
        optimizer.zero_grad()
        torch.autograd.backward(loss)
        optimizer.step()
        return {"loss/value": float(loss.detach()), "samples": len(samples)}

    return train


async def main(args: argparse.Namespace) -> None:
    configure_logging(level="warning")
    model = TinyChess(ModelConfig(hidden=args.hidden))

    def play_cfg(iteration: int, version: int) -> PlayConfig:
        return PlayConfig(
            n_games=args.games, seed=iteration, first_game=iteration * args.games,
            max_plies=args.max_plies, model_version=version,
        )  # fmt: skip

    async with SelfPlay(workers=args.workers) as selfplay:
        pipeline = Pipeline(selfplay, model, train=make_trainer(model, 1e-3), play_cfg=play_cfg, overlap=True)
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
