"""Runs of an older asp, whose TinyChess trained with its own loop (format
``asp-tinychess-run``): asp eval, play and moves read them; asp train --resume refuses them.

The files are written here as that asp wrote them: the fields its checkpoint held, its config
as its ``RunConfig.to_dict`` wrote it, and the weights of the same TinyChess network.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from asp.app.checkpoint import (
    RunError,
    kept_version_state,
    load_checkpoint,
    model_from_checkpoint,
    new_model,
    restore_checkpoint,
    run_config_of,
    write_checkpoint,
)
from asp.app.cli import main
from asp.app.game_run import GameRun
from asp.app.legacy import NOT_RESUMED
from asp.app.run import RunDir
from asp.errors import ConfigError
from asp.tinychess.model import ModelConfig, TinyChess

OLD_TRAIN = {"lr": 0.002, "weight_decay": 0.0001, "batch_size": 1024, "epochs": 1, "clip": 0.2, "value_coef": 0.5,
             "entropy_coef": 0.01, "max_grad_norm": 1.0, "device": "auto", "seed": 0, "material_weight": 0.05,
             "gamma": 0.95, "replay": 4, "outcome_gamma": 0.95}  # fmt: skip


def old_config(**changes: Any) -> dict[str, Any]:
    """A config as the older asp wrote it to config.json and into its checkpoints."""
    return {
        "game": "tinychess", "iterations": 1, "games": 8, "seed": 0, "max_plies": 200, "temperature": 1.0,
        "play_batch": 64, "overlap": True, "max_staleness": 1, "mate_in_one": True, "search": 8,
        "search_considered": 16, "eval_search": 64, "eval_every": 10, "eval_games": 4, "eval_precision": 0.1,
        "eval_temperature": 0.1, "eval_engine": None, "model": {"hidden": 32, "blocks": 2, "value_hidden": 64},
        "train": OLD_TRAIN, **changes,
    }  # fmt: skip


def old_run(path: Path, **changes: Any) -> tuple[Path, TinyChess]:
    """A run directory of the older asp, its checkpoint and config.json; and its network."""
    torch.manual_seed(3)
    net = TinyChess(ModelConfig(hidden=32))
    config = old_config(**changes)
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    state = {"format": "asp-tinychess-run", "format_version": 2, "config": config, "next_iteration": 1,
             "version": 1, "model": net.state_dict(), "play_weights": None, "pending_plays": [],
             "trainer_steps": 1}  # fmt: skip
    torch.save(state, path / "checkpoint.pt")
    return path, net


def test_an_old_run_plays_with_its_network_and_the_settings_it_had(tmp_path: Path) -> None:
    run, net = old_run(tmp_path / "old")
    model, state = model_from_checkpoint(run)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in net.state_dict().items())
    cfg = run_config_of(state)
    assert (cfg.game, cfg.games, cfg.search, cfg.eval_search, cfg.network) == ("tinychess", 8, 8, 64, {"hidden": 32})
    GameRun(cfg)  # a run of TinyChessGame like any other


def test_an_old_run_of_the_policy_alone_plays_the_policy_alone(tmp_path: Path) -> None:
    run, _ = old_run(tmp_path / "old", search=0, eval_search=None)
    cfg = run_config_of(load_checkpoint(run / "checkpoint.pt"))
    assert cfg.search_cfg(sampling=False) is None  # to win: its policy's likeliest move, as before
    sampling = cfg.search_cfg(sampling=True)  # one simulation, Gumbel noise at the root: a sample of the policy
    assert sampling is not None and (sampling.simulations, sampling.gumbel_scale) == (1, 1.0)


def test_an_old_run_does_not_resume_and_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, net = old_run(tmp_path / "old")
    cfg = run_config_of(load_checkpoint(run / "checkpoint.pt"))
    kind = GameRun(cfg)
    model = kind.new_model()
    with pytest.raises(RunError, match=NOT_RESUMED):
        restore_checkpoint(run / "checkpoint.pt", cfg, model, kind.new_trainer(model))
    with pytest.raises(RunError, match=NOT_RESUMED):
        RunDir(run).stored_config()
    (run / "checkpoint.pt").unlink()  # stopped before its first checkpoint: config.json alone
    with pytest.raises(RunError, match=NOT_RESUMED):
        RunDir(run).stored_config()
    assert main(["train", "--resume", str(run)]) == 2
    assert capsys.readouterr().err == f"asp train: {run}: {NOT_RESUMED}\n"


@pytest.mark.timeout(120)
def test_asp_eval_moves_and_play_read_an_old_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = old_run(tmp_path / "old")
    assert main(["eval", str(run), "--games", "2", "--search", "2"]) == 0
    assert capsys.readouterr().out.startswith(f"{run} (version 1) against the random mover: score ")
    positions = tmp_path / "fens.txt"
    positions.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n")
    assert main(["moves", str(run), "--positions", str(positions), "--search", "2"]) == 0
    assert capsys.readouterr().out.startswith("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 ")
    out = tmp_path / "games.pgn"
    assert main(["play", "--checkpoint", str(run), "--games", "2", "--max-plies", "4", "--out", str(out)]) == 0
    assert out.read_text().count("[Event ") == 2
    new = tmp_path / "new.pt"  # a checkpoint of this asp, of the same game: the two play each other
    cfg = run_config_of(load_checkpoint(run / "checkpoint.pt"))
    write_checkpoint(kept_version_state(cfg, version=2, next_iteration=2, weights=new_model(cfg).state_dict()), new)
    assert main(["eval", str(new), "--vs", str(run), "--games", "2", "--search", "2", "--max-plies", "6"]) == 0
    assert f"(version 2) against {run} (version 1): score" in capsys.readouterr().out


def test_a_field_the_old_config_never_had_is_refused_naming_it(tmp_path: Path) -> None:
    run, _ = old_run(tmp_path / "old", gae_lambda=0.8)
    with pytest.raises(RunError, match=r"RunConfig has no field 'gae_lambda'"):
        load_checkpoint(run / "checkpoint.pt")


def test_an_old_runs_config_json_starts_the_run_this_asp_plays_it_as(tmp_path: Path) -> None:
    from asp.app.cli import _parser
    from asp.app.train_command import train_config

    run, _ = old_run(tmp_path / "old")
    cfg, _ = train_config(_parser().parse_args(["train", "--config", str(run / "config.json"), "--games", "4"]))
    assert cfg == dataclasses.replace(run_config_of(load_checkpoint(run / "checkpoint.pt")), games=4)
    (run / "config.json").write_text(json.dumps(old_config(playouts=3)))
    with pytest.raises(ConfigError, match=f"^--config {run / 'config.json'}: RunConfig has no field 'playouts'"):
        train_config(_parser().parse_args(["train", "--config", str(run / "config.json")]))
