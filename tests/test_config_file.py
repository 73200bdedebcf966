"""``asp train --config FILE`` and ``--print-config``: every setting of a run, the trainer's
included, round-trips through the printed file; the file's settings sit over the game's
defaults and under the options; a run's own config.json reproduces it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from asp.app.cli import _parser
from asp.app.config_file import config_from_text, config_text, merged
from asp.app.train_command import train_command, train_config
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
    return train_config(_parser().parse_args(["train", *argv]))[0]


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
    assert config("--config", "run.toml") == config(*options)
    assert printed(capsys, "--config", "run.toml") == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.toml"]


def test_the_file_sits_over_the_defaults_and_under_the_options(tmp_path: Path) -> None:
    file = tmp_path / "run.toml"
    file.write_text("games = 7\neval_games = 40\n\n[train]\nlr = 0.01\nreplay = 2\n")
    cfg = config("--config", str(file), "--games", "9")
    assert (cfg.games, cfg.eval_games, cfg.train.lr, cfg.train.replay) == (9, 40, 0.01, 2)
    assert (cfg.iterations, cfg.train.batch_size) == (20, 1024)  # TinyChess's defaults where the file is silent
    file.write_text('game = "connect4"\n[train]\nsymmetries = false\n')
    cfg = config("--config", str(file))
    assert (cfg.game, cfg.train.symmetries, cfg.eval_every) == ("connect4", False, 4)


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
        ("[eval_engine]\nskil = 3\n", "--config run.toml: GameRunConfig.eval_engine has no field 'skil'"),
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
