"""What the tests of a run directory and its checkpoint share: a tiny run config, and a
trainer that has taken a step (a checkpoint with real state)."""

from __future__ import annotations

import dataclasses

import torch

from asp.app.run_config import RunConfig
from asp.tinychess import ModelConfig, PlayConfig, TinyChess, play_games
from asp.tinychess.train import TrainConfig, Trainer

TINY = ModelConfig(hidden=16, blocks=0)


def tiny_config(**changes: object) -> RunConfig:
    return dataclasses.replace(RunConfig(games=4, max_plies=8, eval_games=4, model=TINY), **changes)  # type: ignore[arg-type]


def trained(cfg: RunConfig) -> Trainer:
    """A trainer whose model and optimizer have taken a step: a checkpoint with real state."""
    torch.manual_seed(cfg.seed)
    trainer = Trainer(TinyChess(cfg.model), TrainConfig(device="cpu"))
    records, _ = play_games(trainer.model, None, PlayConfig(n_games=2, max_plies=6))
    trainer.train(records)
    return trainer
