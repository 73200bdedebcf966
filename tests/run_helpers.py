"""What the tests of a run, its directory and its checkpoint share: a tiny run config of
TinyChess and the options of a tiny ``asp train``; checkpoints made without a training run
(a trainer that has taken a step, or an untrained network); and reading a run's files back."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from asp.app.game_run import GameRun
from asp.app.run import RunDir
from asp.app.run.directory import checkpoint_state, kept_version_state, write_checkpoint
from asp.app.run_config import GameRunConfig, defaults_for
from asp.games import PlayConfig, Trainer, play_games
from asp.tinychess.game import TinyChessGame

TINY = {"hidden": 16, "blocks": 0}
"""The network of a tiny run: a trunk of 16, no residual block."""

TINY_TRAIN = ("--max-plies", "20", "--eval-games", "8", "--hidden", "16", "--workers", "2", "--no-progress")
"""Options of a tiny ``asp train`` of TinyChess (with ``--games 8``: ~10-25 s an iteration on a
busy 2-core machine, mostly starting processes that import torch)."""


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


def tiny_run_checkpoint(where: Path) -> Path:
    """The checkpoint of a tiny run after one iteration, with real state (:func:`trained`), in the
    run directory ``where/run`` (its config.json too); its path."""
    cfg = tiny_config()
    run = RunDir(where / "run")
    run.create(cfg)
    write_checkpoint(checkpoint_state(trained(cfg), cfg, next_iteration=1, version=1), run.checkpoint)
    return run.checkpoint


def untrained_state(cfg: GameRunConfig, *, version: int, seed: int = 0, game: Any = None) -> dict[str, Any]:
    """The checkpoint state ``asp train`` saves after ``version`` iterations of the run ``cfg``
    (model, optimizer, random states...), of an untrained network made after
    ``torch.manual_seed(seed)``: the format of a real one, without the cost of training.
    ``game`` is the game object (default: TinyChess)."""
    torch.manual_seed(seed)
    game = TinyChessGame() if game is None else game
    trainer = Trainer(GameRun(cfg, game).new_model(), game, cfg.train)
    return checkpoint_state(trainer, cfg, next_iteration=version, version=version)


def kept_checkpoint(path: Path, cfg: GameRunConfig, *, version: int, seed: int = 0) -> Path:
    """At ``path``, a kept version ``version`` of the run ``cfg`` (weights, no trainer) of an
    untrained network made after ``torch.manual_seed(seed)``; ``path``."""
    torch.manual_seed(seed)
    weights = GameRun(cfg).new_model().state_dict()
    write_checkpoint(kept_version_state(cfg, version=version, next_iteration=version, weights=weights), path)
    return path


def read_checkpoint(run: Path) -> dict[str, Any]:
    """The run's checkpoint.pt as torch loads it (``weights_only``), unchecked by asp."""
    data: dict[str, Any] = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=True)
    return data


def read_metrics(run: Path) -> list[dict[str, Any]]:
    """The lines of the run's metrics.jsonl, as dicts."""
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
