"""RunConfig: the fields that define a TinyChess training run, their checks, the play
configs it derives, and its round trip through config.json (older runs included)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from asp.app.run_config import RunConfig
from asp.errors import ConfigError
from asp.tinychess import ModelConfig
from asp.tinychess.train import TrainConfig

SMALL = RunConfig(games=4, max_plies=8, eval_games=4, model=ModelConfig(hidden=16, blocks=0))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("iterations", 0),
        ("iterations", 100_001),
        ("iterations", 2.0),
        ("iterations", True),
        ("games", 0),
        ("seed", -1),
        ("seed", 2**31),
        ("eval_every", 0),
        ("eval_games", 0),
        ("eval_games", "8"),
        ("eval_precision", -0.01),
        ("eval_precision", 0.51),
        ("eval_precision", "0.05"),
    ],
)
def test_run_config_rejects_a_bad_value_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"RunConfig\.{field}\b"):
        RunConfig(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("max_plies", 0, "max_plies"),
        ("temperature", -1.0, "temperature"),
        ("eval_temperature", 101.0, "eval_temperature"),
        ("play_batch", 0, "play_batch"),
        ("mate_in_one", "yes", "mate_in_one"),
    ],
)
def test_run_config_rejects_bad_play_settings_through_play_config(field: str, value: object, named: str) -> None:
    with pytest.raises(ConfigError, match=rf"RunConfig\.{named}\b"):
        RunConfig(**{field: value})  # type: ignore[arg-type]


def test_run_config_play_configs_give_each_iteration_its_own_games_and_seed() -> None:
    cfg = RunConfig(games=10, seed=3, max_plies=50, temperature=0.5, play_batch=7)
    first, second = cfg.play_cfg(0, 0), cfg.play_cfg(1, 4)
    assert (first.first_game, first.n_games, first.model_version) == (0, 10, 0)
    assert (second.first_game, second.n_games, second.model_version) == (10, 10, 4)
    assert first.seed != second.seed
    assert (second.max_plies, second.temperature, second.batch_size) == (50, 0.5, 7)
    assert RunConfig(seed=4).play_cfg(0, 0).seed != cfg.play_cfg(0, 0).seed
    evaluation = cfg.eval_cfg(5)
    assert evaluation == cfg.eval_cfg(5)  # the same openings of chance at every evaluation
    assert (evaluation.n_games, evaluation.model_version, evaluation.temperature) == (100, 5, 0.1)
    assert evaluation.opponent_temperature == 1.0  # the random mover stays random
    RunConfig(seed=2**31 - 1, iterations=100_000).play_cfg(99_999, 0)  # the largest seed still fits


@pytest.mark.parametrize("mate_in_one", [True, False])
def test_the_model_mates_in_one_in_self_play_and_evaluations_and_the_random_mover_never(mate_in_one: bool) -> None:
    cfg = RunConfig(mate_in_one=mate_in_one)
    assert cfg.play_cfg(0, 0).mate_in_one == cfg.eval_cfg(0).mate_in_one == mate_in_one
    assert cfg.eval_cfg(0).opponent_mate_in_one is False
    assert cfg.engine_eval_cfg(0).mate_in_one == mate_in_one


def test_a_run_stored_before_mate_in_one_existed_reads_as_without_it() -> None:
    data = json.loads(json.dumps(RunConfig().to_dict()))
    assert RunConfig.from_dict(data).mate_in_one is True  # the default of new runs
    del data["mate_in_one"]
    assert RunConfig.from_dict(data).mate_in_one is False


def test_a_run_stored_before_eval_precision_existed_plays_every_evaluation_game() -> None:
    from asp.app.game_config import GameRunConfig

    for cfg in (RunConfig(), GameRunConfig()):
        data = json.loads(json.dumps(cfg.to_dict()))
        assert type(cfg).from_dict(data).eval_precision == 0.1  # the default of new runs
        del data["eval_precision"]
        assert type(cfg).from_dict(data).eval_precision == 0.0


def test_run_config_round_trips_through_a_dict_and_json() -> None:
    cfg = dataclasses.replace(SMALL, overlap=False, train=TrainConfig(lr=0.01, device="cpu"))
    assert RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda d: d.update(playouts=3), "RunConfig has no field 'playouts'"),
        (lambda d: d["train"].update(gae_lambda=0.8), "RunConfig.train has no field 'gae_lambda'"),
        (lambda d: d["model"].update(heads=4, width=2), "RunConfig.model has no field 'heads', 'width'"),
        (lambda d: d.update(eval_engine={"skil": 1}), "RunConfig.eval_engine has no field 'skil'"),
        (lambda d: d.update(train=[1]), "RunConfig.train must be a mapping of its fields, got list"),
    ],
)
def test_run_config_from_a_dict_names_a_field_it_does_not_know(spoil: Callable[[Any], None], named: str) -> None:
    data = json.loads(json.dumps(SMALL.to_dict()))
    spoil(data)
    with pytest.raises(ConfigError, match=re.escape(named)):
        RunConfig.from_dict(data)
