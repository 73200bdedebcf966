"""``asp train --config FILE`` and ``--print-config``: every setting of a run, the trainer's
included, round-trips through the printed file; the file's settings sit over the game's
defaults and under the options; a run's own config.json reproduces it."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from asp.app.cli import _parser
from asp.app.commands.train import run as train_command
from asp.app.commands.train import train_config
from asp.app.config_file import config_from_text, config_text, merged
from asp.errors import ConfigError

OPTION_SETS = [
    (),
    ("--search", "4", "--hidden", "32"),
    ("--eval-vs", "stockfish", "--eval-skill", "3", "--eval-nodes", "50", "--sequential"),
    ("--device", "cpu", "--eval-precision", "0", "--max-staleness", "3", "--eval-search", "16"),
    ("--game", "connect4", "--iterations", "3", "--eval-every", "2"),
    ("--game", "asp.tinychess.game:TinyChessGame", "--device", "cpu"),
    ("--game", "asp.tinychess.game:TinyChessGame", "--eval-vs", "stockfish", "--eval-nodes", "20"),
    ("--game", "examples.tictactoe:TicTacToe", "--search", "4"),
]


def config(*argv: str) -> Any:
    return train_config(_parser().parse_args(["train", *argv]))[0].cfg


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert train_command(_parser().parse_args(["train", "--print-config", *argv])) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "defaults")
def test_every_setting_round_trips_through_the_printed_config(
    options: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # --print-config writes nothing: no runs/ appears
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))  # examples/
    text = printed(capsys, *options)
    (tmp_path / "run.toml").write_text(text)
    # A game of one's own module, named by the file: imported where the user asks.
    trust = ("--trust-game",) if any(o.startswith("examples.") for o in options) else ()
    assert config("--config", "run.toml", *trust) == config(*options)
    assert printed(capsys, "--config", "run.toml", *trust) == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.toml"]


def test_the_options_become_a_config_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before, each option was checked on a config of its own and the run built twice (the
    # file's, then the whole), the engine's config made five times.
    import asp.app.commands.train as train_command
    import asp.app.game_loader as game_loader
    import asp.app.game_run as game_run
    import asp.games.protocol as protocol

    counts = {"load_game": 0, "GameRun": 0, "engine_config": 0}

    def counted(name: str, make: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return make(*args, **kwargs)

        return call

    monkeypatch.setattr(game_loader, "load_game", counted("load_game", game_loader.load_game))
    monkeypatch.setattr(game_run, "GameRun", counted("GameRun", game_run.GameRun))
    monkeypatch.setattr(game_run, "engine_config", counted("engine_config", game_run.engine_config))
    monkeypatch.setattr(protocol, "engine_config", counted("engine_config", protocol.engine_config))
    (tmp_path / "run.toml").write_text("games = 7\n\n[eval_engine]\nskill = 2\n\n[train]\nlr = 0.01\n")
    options = ["--config", str(tmp_path / "run.toml"), "--iterations", "3", "--search", "4", "--device", "cpu"]
    run, changes = train_command.train_config(_parser().parse_args(["train", *options, "--hidden", "64"]))
    cfg = run.cfg
    assert (cfg.games, cfg.iterations, cfg.search, cfg.network, cfg.train.lr) == (7, 3, 4, {"hidden": 64}, 0.01)
    assert run.cfg.eval_engine is not None and run.cfg.eval_engine["skill"] == 2
    assert counts == {"load_game": 1, "GameRun": 1, "engine_config": 1}
    assert sorted(changes) == ["iterations", "network", "search", "train"]
    with pytest.raises(ConfigError, match="^--search: GameRunConfig.search must be an int in 1..10000, got 20000$"):
        train_command.train_config(_parser().parse_args(["train", *options, "--search", "20000"]))


def test_the_file_sits_over_the_defaults_and_under_the_options(tmp_path: Path) -> None:
    file = tmp_path / "run.toml"
    file.write_text("games = 7\neval_games = 40\n\n[train]\nlr = 0.01\nreplay = 2\n")
    cfg = config("--config", str(file), "--games", "9")
    assert (cfg.games, cfg.eval_games, cfg.train.lr, cfg.train.replay) == (9, 40, 0.01, 2)
    assert (cfg.iterations, cfg.train.batch_size) == (24, 1024)  # TinyChess's defaults where the file is silent
    file.write_text('game = "connect4"\n[train]\nsymmetries = false\n')
    cfg = config("--config", str(file))
    # Connect Four's defaults where the file is silent
    assert (cfg.game, cfg.train.symmetries, cfg.eval_every, cfg.train.epochs) == ("connect4", False, 19, 2)


def test_a_runs_config_json_reproduces_it(tmp_path: Path) -> None:
    for options in (("--hidden", "32", "--games", "12"), ("--game", "connect4", "--seed", "3")):
        cfg = config(*options)
        (tmp_path / "config.json").write_text(json.dumps(cfg.to_dict()))
        assert config("--config", str(tmp_path / "config.json")) == cfg


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gmaes = 9\n", "--config run.toml: unknown key 'gmaes'; the keys: game, iterations"),
        ("[train]\nlearning_rate = 0.1\n", "--config run.toml [train]: unknown key 'learning_rate'"),
        ("iterations = 0\n", "--config run.toml: GameRunConfig.iterations must be an int in 1..100000, got 0"),
        ('[train]\nlr = "fast"\n', "--config run.toml: TrainConfig.lr must be"),
        ("train = 3\n", "--config run.toml: train must be a table ([train])"),
        ("games = \n", "--config run.toml: not TOML"),
        ('game = "chess"\n', "--config run.toml: game 'chess': not a game"),
        ("[eval_engine]\nskil = 3\n", "--config run.toml: GameRunConfig.eval_engine: EngineConfig has no field 'skil'"),
        # An older asp's TinyChess config: one reading of a file, so its network's shape is a key it lacks.
        ("search = 0\n[model]\nhidden = 64\n", "--config run.toml: unknown key 'model'"),
        ('game = "connect4"\n[model]\nhidden = 64\n', "--config run.toml: unknown key 'model'"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(text: str, message: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    Path("run.toml").write_text(text)
    with pytest.raises(ConfigError) as raised:
        config("--config", "run.toml")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_values_toml_has_no_plain_form_for_are_written_so_that_they_read_back() -> None:
    data = {"a": math.inf, "b": -math.inf, "c": 'quote " and \\ and \n and é', "d": None, "t": {"x": False, "y": None}}
    back = config_from_text(config_text(data), "f.toml")
    assert back == {"a": math.inf, "b": -math.inf, "c": data["c"], "t": {"x": False}}
    assert math.isnan(config_from_text(config_text({"n": math.nan}), "f.toml")["n"])
    with pytest.raises(ConfigError, match="unknown key 'z'"):
        merged({"t": {"x": 1}}, {"t": {"z": 2}}, "f.toml")


def test_a_config_with_characters_outside_the_bmp_is_printed_so_that_it_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # once written as JSON's surrogate pairs ("\ud83d\ude00"), which TOML refuses
    monkeypatch.chdir(tmp_path)
    Path("engine.toml").write_text(
        '[eval_engine]\npath = "/opt/\U0001f600 caf\xe9\\u007f/stockfish"\n', encoding="utf-8"
    )
    text = printed(capsys, "--config", "engine.toml")
    assert text.isascii() and 'path = "/opt/\\U0001F600 caf\\u00E9\\u007F/stockfish"\n' in text
    Path("run.toml").write_text(text)
    assert config("--config", "run.toml") == config("--config", "engine.toml")
    assert config("--config", "run.toml").eval_engine["path"] == "/opt/\U0001f600 caf\xe9\x7f/stockfish"


def test_a_network_config_with_a_tuple_field_is_printed_as_an_array() -> None:
    from asp.app.run_config import GameRunConfig, defaults_for

    cfg = dataclasses.replace(defaults_for("connect4"), network={"layers": (32, 16), "names": ["a", "b"]})
    back = config_from_text(config_text(cfg.to_dict()), "run.toml")
    assert back["network"] == {"layers": [32, 16], "names": ["a", "b"]}
    assert GameRunConfig.from_dict(back) == dataclasses.replace(cfg, network=back["network"])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"network": {"layers": (1, None)}}, "--print-config: network.layers[1]: no TOML value for None"),
        ({"game": "mod\udcff:Game"}, "--print-config: game: 'mod\\udcff:Game' holds a lone surrogate (U+DCFF)"),
        ({"network": {"f": object}}, "--print-config: network.f: no TOML value for <class 'object'> (a type)"),
    ],
)
def test_a_value_toml_cannot_hold_is_one_error_naming_its_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config_text(data)
    assert str(raised.value) == message or str(raised.value).startswith(message), str(raised.value)


@pytest.mark.parametrize("name", ["run.toml", "config.json"])
def test_a_byte_order_mark_before_the_file_is_skipped(name: str, tmp_path: Path) -> None:
    file = tmp_path / name
    text = '{"game": "connect4", "games": 7}' if name.endswith(".json") else 'game = "connect4"\ngames = 7\n'
    file.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert (config("--config", str(file)).game, config("--config", str(file)).games) == ("connect4", 7)


EXAMPLE_CONFIGS = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLE_CONFIGS, ids=lambda p: p.name)
def test_every_example_config_is_a_run_config(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from asp.app.cli import main

    assert main(["train", "--config", str(path), "--print-config"]) == 0
    printed = tomllib.loads(capsys.readouterr().out)
    for key, value in tomllib.loads(path.read_text()).items():
        assert printed[key] == value if not isinstance(value, dict) else value.items() <= printed[key].items()
