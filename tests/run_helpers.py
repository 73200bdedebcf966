"""What the tests of a run directory and its checkpoint share: a tiny run config of
TinyChess, and a trainer that has taken a step (a checkpoint with real state)."""

from __future__ import annotations

import dataclasses

import torch

from asp.app.game_run import GameRun
from asp.app.run_config import GameRunConfig, defaults_for
from asp.games import PlayConfig, Trainer, play_games
from asp.tinychess.game import TinyChessGame

TINY = {"hidden": 16, "blocks": 0}
"""The network of a tiny run: a trunk of 16, no residual block."""


def tiny_config(**changes: object) -> GameRunConfig:
    """A run of TinyChess (as ``asp train`` starts it) that plays a few short games."""
    base = defaults_for("tinychess")
    train = dataclasses.replace(base.train, device="cpu")
    tiny = dataclasses.replace(
        base, games=4, max_plies=8, eval_games=4, search=2, eval_search=2, network=TINY, train=train
    )
    return dataclasses.replace(tiny, **changes)  # type: ignore[arg-type]


def trained(cfg: GameRunConfig) -> Trainer:
    """A trainer whose model and optimizer have taken a step: a checkpoint with real state."""
    torch.manual_seed(cfg.seed)
    game = TinyChessGame()
    run = GameRun(cfg, game)
    trainer = Trainer(run.new_model(), game, dataclasses.replace(cfg.train, batch_size=8))
    records, _ = play_games(
        trainer.model, None, PlayConfig(game, n_games=2, max_plies=6, search=run.search_cfg(sampling=True))
    )
    trainer.train(records)
    return trainer
