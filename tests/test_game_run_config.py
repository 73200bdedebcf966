"""GameRunConfig: the fields that define a training run of any game, their checks, the play
configs it derives, and its round trip through config.json (older runs included)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from asp.app.game_run import GameRun
from asp.app.run_config import GameRunConfig, defaults_for
from asp.errors import ConfigError
from asp.games import TrainConfig
from asp.tinychess.game import TinyChessGame

SMALL = dataclasses.replace(
    defaults_for("tinychess"), games=4, max_plies=8, eval_games=4, network={"hidden": 16, "blocks": 0}
)
CHESS = TinyChessGame()


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
        ("eval_budget", -0.1),
        ("eval_budget", 10.5),
        ("max_plies", 0),
        ("play_batch", 0),
        ("search", 0),
        ("eval_search", -1),
        ("overlap", "yes"),
    ],
)
def test_game_run_config_rejects_a_bad_value_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"GameRunConfig\.{field}\b"):
        GameRunConfig(game="tinychess", **{field: value})  # type: ignore[arg-type]


def test_game_run_config_play_configs_give_each_iteration_its_own_games_and_seed() -> None:
    cfg = GameRunConfig(game="tinychess", games=10, seed=3, max_plies=50, play_batch=7)
    run = GameRun(cfg, CHESS)
    first, second = run.play_cfg(0, 0), run.play_cfg(1, 4)
    assert (first.first_game, first.n_games, first.model_version) == (0, 10, 0)
    assert (second.first_game, second.n_games, second.model_version) == (10, 10, 4)
    assert first.seed != second.seed
    assert (second.max_plies, second.batch_size) == (50, 7)
    assert GameRun(dataclasses.replace(cfg, seed=4), CHESS).play_cfg(0, 0).seed != run.play_cfg(0, 0).seed
    evaluation = run.eval_cfg(5)
    assert evaluation == run.eval_cfg(5)  # the same openings of chance at every evaluation
    assert (evaluation.n_games, evaluation.model_version, evaluation.temperature) == (100, 5, 0.0)
    assert evaluation.opponent_temperature == 1.0  # the random mover stays random
    GameRun(GameRunConfig(game="tinychess", seed=2**31 - 1, iterations=100_000), CHESS).play_cfg(
        99_999, 0
    )  # the largest seed


def test_a_run_stored_before_eval_precision_existed_plays_every_evaluation_game() -> None:
    data = json.loads(json.dumps(GameRunConfig().to_dict()))
    assert GameRunConfig.from_dict(data).eval_precision == 0.1  # the default of new runs
    del data["eval_precision"]
    assert GameRunConfig.from_dict(data).eval_precision == 0.0
    assert GameRunConfig.from_dict(data).eval_budget == 0.5
    del data["eval_budget"]
    assert GameRunConfig.from_dict(data).eval_budget == 0.0  # a run stored before: no limit, as it ran


def test_game_run_config_round_trips_through_a_dict_and_json() -> None:
    cfg = dataclasses.replace(SMALL, overlap=False, train=TrainConfig(lr=0.01, device="cpu"))
    assert GameRunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda d: d.update(playouts=3), "GameRunConfig has no field 'playouts'"),
        (lambda d: d["train"].update(gae_lambda=0.8), "GameRunConfig.train has no field 'gae_lambda'"),
        (lambda d: d.update(eval_engine=[1]), "GameRunConfig.eval_engine must be a mapping of its fields, got list"),
        (lambda d: d.update(train=[1]), "GameRunConfig.train must be a mapping of its fields, got list"),
        (lambda d: d.pop("game"), "GameRunConfig.game is missing"),
    ],
)
def test_game_run_config_from_a_dict_names_a_field_it_does_not_know(spoil: Callable[[Any], None], named: str) -> None:
    data = json.loads(json.dumps(SMALL.to_dict()))
    spoil(data)
    with pytest.raises(ConfigError, match=re.escape(named)):
        GameRunConfig.from_dict(data)


def test_a_run_checks_its_engine_against_the_engine_of_its_game() -> None:
    # The config is plain data: the fields of the engine are the game's (TinyChess: EngineConfig's).
    with pytest.raises(ConfigError, match=re.escape("GameRunConfig.eval_engine: EngineConfig has no field 'skil'")):
        GameRun(GameRunConfig(game="tinychess", eval_engine={"skil": 1}), CHESS)
    with pytest.raises(ConfigError, match="EngineConfig.skill must be an int in 0..20, got 30"):
        GameRun(GameRunConfig(game="tinychess", eval_engine={"skill": 30}), CHESS)
    with pytest.raises(ConfigError, match="eval_engine: connect4 has no engine"):
        GameRun(GameRunConfig(game="connect4", eval_engine={"skill": 1}))
    engine = GameRun(GameRunConfig(game="tinychess", eval_engine={"skill": 1}), CHESS).engine
    assert engine.describe() == "stockfish skill 1 nodes 100"


def test_a_game_gives_its_own_settings_of_a_run_and_asp_names_none() -> None:
    import plain_games

    cfg = defaults_for("plain_games:Tuned", plain_games.Tuned())
    assert (cfg.games, cfg.search, cfg.train.replay, cfg.network) == (24, 4, 2, {"hidden": 16})
    assert (cfg.iterations, cfg.eval_search) == (GameRunConfig().iterations, GameRunConfig().eval_search)
    for game in ("tinychess", "connect4"):  # the shipped games' settings are their own too
        assert defaults_for(game) != GameRunConfig(game=game)
    from asp.app import run_config

    assert "connect4" not in vars(run_config) and not hasattr(run_config, "GAME_DEFAULTS")


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        (
            {"gmaes": 24},
            r"plain_games:Tuned: the game's run_defaults\(\): no setting 'gmaes'; the settings: iterations",
        ),
        ({"train": {"replya": 2}}, r"no setting 'train.replya'; the settings: .*replay"),
        ({"train": [2]}, r"train must be a mapping, got list"),
        ({"search": 0}, r"GameRunConfig.search must be an int in 1..10000, got 0"),
        ({"train": {"replay": 0}}, r"TrainConfig.replay must be"),
    ],
)
def test_a_game_s_wrong_settings_are_named_in_one_line(settings: dict[str, Any], words: str) -> None:
    import plain_games

    with pytest.raises(ConfigError, match=words) as caught:
        defaults_for("plain_games:Tuned", plain_games.Tuned(settings))
    assert "\n" not in str(caught.value)
