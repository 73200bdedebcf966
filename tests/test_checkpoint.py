"""The checkpoint's format: written as a copy and atomically, loaded with ``weights_only``,
checked (every error a RunError naming the path; an older asp's refused by name), and restored
into a model and trainer to resume.

Checkpoints are written from a Trainer in this process.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from run_helpers import tiny_config, tiny_run_checkpoint, trained

from asp.app.game_run import GameRun
from asp.app.run import RunDir
from asp.app.run.directory import (
    CHECKPOINT,
    RunError,
    checkpoint_state,
    kept_versions,
    load_checkpoint,
    pending_plays,
    restore_checkpoint,
    run_from_checkpoint,
    write_checkpoint,
)
from asp.app.run_config import GameRunConfig
from asp.errors import AspError
from asp.games import PlayConfig, TrainConfig, Trainer, play_games
from asp.search import SearchConfig
from asp.tinychess.game import TinyChessGame

GAME = TinyChessGame()


def network(cfg: GameRunConfig | None = None) -> torch.nn.Module:
    """A fresh network of the run ``cfg`` (default: the tiny run's)."""
    model: torch.nn.Module = GameRun(cfg or tiny_config(), GAME).new_model()
    return model


def trainer_of(model: torch.nn.Module, **train: Any) -> Trainer:
    return Trainer(model, GAME, TrainConfig(device="cpu", **train))


def save(path: Path, trainer: Trainer, cfg: GameRunConfig, **fields: Any) -> None:
    """Write the checkpoint of ``trainer`` as a session does: a copy, then written atomically."""
    write_checkpoint(checkpoint_state(trainer, cfg, **fields), path)


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A real checkpoint of a tiny run, in ``tmp_path/run``."""
    return tiny_run_checkpoint(tmp_path)


# -- writing and loading ---------------------------------------------------------------------


@pytest.mark.slow
def test_checkpoint_round_trip_with_weights_only(tmp_path: Path) -> None:
    cfg = tiny_config(seed=5)
    trainer = trained(cfg)
    play_weights = network(cfg).state_dict()
    run = RunDir(tmp_path / "run")
    run.create(cfg)
    torch.manual_seed(123)
    save(run.checkpoint, trainer, cfg, next_iteration=3, version=3, pending_plays=[(2, play_weights)])
    assert sorted(p.name for p in run.path.iterdir()) == ["checkpoint.pt", "config.json", "games"]  # no temp file

    raw = torch.load(run.checkpoint, map_location="cpu", weights_only=True)  # no pickle code needed
    assert isinstance(raw, dict) and (raw["format"], raw["format_version"]) == ("asp-game-run", 1)
    data = load_checkpoint(run.checkpoint)
    assert (data["next_iteration"], data["version"], data["trainer_steps"]) == (3, 3, trainer.steps)
    assert GameRunConfig.from_dict(data["config"]) == cfg
    for key, tensor in trainer.model.state_dict().items():
        assert torch.equal(data["model"][key], tensor), key
    [(version, weights)] = pending_plays(data)
    assert version == 2 and all(torch.equal(weights[key], tensor) for key, tensor in play_weights.items())
    assert "play_weights" not in data  # the field of older readers is gone
    assert data["optimizer"]["state"]  # Adam's moments are kept
    state = data["trainer_rng"]
    restored = random.Random()
    restored.setstate((state[0], tuple(state[1]), state[2]))
    assert restored.random() == trainer.rng.random()
    assert torch.equal(data["torch_rng"], torch.get_rng_state())

    for where in (run.path, run.checkpoint):
        _, model, meta = run_from_checkpoint(where)
        assert meta["version"] == 3
        assert not model.training
        assert model.cfg == network(cfg).cfg
        assert all(torch.equal(v, trainer.model.state_dict()[k]) for k, v in model.state_dict().items())


def test_saving_again_replaces_the_checkpoint(checkpoint: Path) -> None:
    cfg = tiny_config()
    save(checkpoint, trained(cfg), cfg, next_iteration=2, version=2)
    assert load_checkpoint(checkpoint)["next_iteration"] == 2
    assert [p.name for p in checkpoint.parent.iterdir() if p.name.startswith(".")] == []


def _truncated(checkpoint: Path) -> Path:
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2])
    return checkpoint


def _foreign_torch_file(checkpoint: Path) -> Path:
    torch.save({"weight": torch.zeros(3), "epoch": 4}, checkpoint)
    return checkpoint


def _random_bytes(checkpoint: Path) -> Path:
    checkpoint.write_bytes(random.Random(0).randbytes(4096))
    return checkpoint


def _missing(checkpoint: Path) -> Path:
    checkpoint.unlink()
    return checkpoint


def _a_directory(checkpoint: Path) -> Path:
    return checkpoint.parent


def _other_format_version(checkpoint: Path) -> Path:
    data = torch.load(checkpoint, weights_only=True)
    data["format_version"] = 99
    torch.save(data, checkpoint)
    return checkpoint


def _a_config_field_of_another_asp(checkpoint: Path) -> Path:
    data = torch.load(checkpoint, weights_only=True)
    data["config"]["train"]["gae_lambda"] = 0.8  # a field this asp does not have
    torch.save(data, checkpoint)
    return checkpoint


def _a_config_without_its_game(checkpoint: Path) -> Path:
    data = torch.load(checkpoint, weights_only=True)
    del data["config"]["game"]
    torch.save(data, checkpoint)
    return checkpoint


@pytest.mark.parametrize(
    "spoil",
    [
        _missing,
        _a_directory,
        _truncated,
        _foreign_torch_file,
        _random_bytes,
        _other_format_version,
        _a_config_field_of_another_asp,
        _a_config_without_its_game,
    ],
)
def test_load_checkpoint_errors_are_run_errors_naming_the_path(checkpoint: Path, spoil: object) -> None:
    path = spoil(checkpoint)  # type: ignore[operator]
    with pytest.raises(RunError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message
    assert isinstance(raised.value, AspError)
    if path.is_file():
        with pytest.raises(RunError, match=str(path)):
            run_from_checkpoint(path)


@pytest.mark.parametrize("version", [1, 2])
def test_a_tinychess_run_of_an_older_asp_is_refused_in_one_line(checkpoint: Path, version: int) -> None:
    data = torch.load(checkpoint, weights_only=True)
    data["format"], data["format_version"] = "asp-tinychess-run", version
    data["config"] = {"game": "tinychess", "model": {"hidden": 32}}  # its own config: never read
    torch.save(data, checkpoint)
    with pytest.raises(RunError) as raised:
        run_from_checkpoint(checkpoint)
    assert str(raised.value) == (
        f"{checkpoint}: a TinyChess run of an older asp (format asp-tinychess-run), which this asp does not read: "
        "train a new run"
    )


@pytest.mark.parametrize(
    "plays", [None, "x", [{"version": 1}], [{"version": "1", "weights": {}}], [{"version": 1, "weights": 5}]]
)
def test_pending_plays_that_are_not_a_list_of_versioned_weights_are_refused(checkpoint: Path, plays: Any) -> None:
    data = torch.load(checkpoint, weights_only=True)
    if plays is None:
        del data["pending_plays"]  # as an asp from before pending_plays wrote it: read no more
    else:
        data["pending_plays"] = plays
    torch.save(data, checkpoint)
    with pytest.raises(RunError, match=r"checkpoint field pending_plays must be a list of \{version: int"):
        load_checkpoint(checkpoint)


def _a_whole_pickled_model(checkpoint: Path) -> Path:
    # torch.save of a module object, not a state_dict: a common foreign file. weights_only
    # refuses to build the class.
    torch.save(network(), checkpoint)
    return checkpoint


def test_a_whole_pickled_model_is_a_run_error_naming_the_path(checkpoint: Path) -> None:
    path = _a_whole_pickled_model(checkpoint)
    with pytest.raises(RunError) as raised:
        load_checkpoint(path)
    assert str(raised.value).startswith(f"{path}: not a readable checkpoint")


def test_the_error_of_a_whole_pickled_model_is_one_plain_line(checkpoint: Path) -> None:
    path = _a_whole_pickled_model(checkpoint)
    with pytest.raises(RunError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert "\n" not in message and "\x1b" not in message, repr(message)


def test_run_from_checkpoint_of_a_directory_without_one(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=str(tmp_path / CHECKPOINT)):
        run_from_checkpoint(tmp_path)


# -- older checkpoints -----------------------------------------------------------------------


def test_a_checkpoint_without_trainer_steps_plays_but_does_not_resume(checkpoint: Path) -> None:
    data = torch.load(checkpoint, weights_only=True)
    del data["trainer_steps"]
    torch.save(data, checkpoint)
    _, model, _ = run_from_checkpoint(checkpoint)
    assert not model.training
    fresh = network()
    with pytest.raises(RunError, match=r"checkpoint does not match its config \(KeyError: 'trainer_steps'\)"):
        restore_checkpoint(checkpoint, GameRun(tiny_config()), fresh, trainer_of(fresh))


# -- restoring -------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal, tensors by value, inside dicts, lists and tuples too."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def test_a_restored_checkpoint_resumes_where_the_trainer_stopped(tmp_path: Path) -> None:
    cfg = tiny_config(seed=5)
    trainer = trained(cfg)
    pending = network(cfg).state_dict()
    path = tmp_path / CHECKPOINT
    torch.manual_seed(7)
    saved_rng = torch.get_rng_state()
    save(path, trainer, cfg, next_iteration=3, version=4, pending_plays=[(3, pending)])

    torch.manual_seed(99)
    model = network(cfg)
    fresh = trainer_of(model)
    restored = restore_checkpoint(
        path, GameRun(dataclasses.replace(cfg, iterations=40)), model, fresh
    )  # longer: allowed
    assert (restored.next_iteration, restored.version) == (3, 4)
    assert _same(model.state_dict(), trainer.model.state_dict())
    assert _same(fresh.optimizer.state_dict(), trainer.optimizer.state_dict())
    assert fresh.steps == trainer.steps
    assert fresh.rng.random() == trainer.rng.random()
    assert torch.equal(torch.get_rng_state(), saved_rng)
    [(version, playing)] = restored.pending_plays
    assert version == 3 and _same(playing.state_dict(), pending)


def test_a_restored_trainer_replays_the_window_the_saved_one_would(tmp_path: Path) -> None:
    """The checkpoint keeps the samples the next call replays: resumed, the trainer takes the
    same steps as one that never stopped."""
    cfg = tiny_config(seed=5)
    torch.manual_seed(0)
    trainer = trainer_of(network(cfg), replay=3)
    searching = PlayConfig(GAME, n_games=2, max_plies=8, search=SearchConfig(simulations=2, considered=2))
    calls = [play_games(trainer.model, None, dataclasses.replace(searching, seed=i))[0] for i in range(4)]
    for records in calls[:3]:
        trainer.train(records)
    state = checkpoint_state(trainer, cfg, next_iteration=3, version=3)
    assert len(state["replay_window"]) == 2  # the next call keeps the last 2 and adds its own
    path = tmp_path / CHECKPOINT
    write_checkpoint(state, path)
    model = network(cfg)
    resumed = trainer_of(model, replay=3)
    restore_checkpoint(path, GameRun(cfg), model, resumed)
    after, before = resumed.train(calls[3]), trainer.train(calls[3])
    after.pop("train/seconds"), before.pop("train/seconds")
    assert after == before
    assert _same(model.state_dict(), trainer.model.state_dict())


def test_restoring_into_another_config_is_refused(checkpoint: Path) -> None:
    model = network()
    with pytest.raises(RunError) as raised:
        restore_checkpoint(checkpoint, GameRun(tiny_config(seed=1)), model, trainer_of(model))
    assert str(raised.value) == f"{checkpoint}: holds another run config than the one to resume with"


def test_pending_weights_that_do_not_fit_the_model_are_refused(checkpoint: Path) -> None:
    data = torch.load(checkpoint, weights_only=True)
    data["pending_plays"] = [
        {"version": 0, "weights": network(tiny_config(network={"hidden": 32, "blocks": 0})).state_dict()}
    ]
    torch.save(data, checkpoint)
    model = network()
    with pytest.raises(RunError, match=r"the checkpoint's weights do not fit its model config"):
        restore_checkpoint(checkpoint, GameRun(tiny_config()), model, trainer_of(model))


def test_kept_versions_are_the_files_of_ascii_digits(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    for name in ("v0.pt", "v12.pt", "v\u00b2.pt", "v\u0663.pt", "v.pt", "vx.pt", "v3.pt.tmp"):
        (versions / name).write_bytes(b"")
    assert kept_versions(tmp_path) == [0, 12]
