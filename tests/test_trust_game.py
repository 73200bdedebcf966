"""A file a user loads is data: the game module that a checkpoint, a kept version, a games
file, a config file or a run to resume names is imported only where the user asks on the
command line (``--trust-game``, or ``--game`` naming it). Refused, the command says so in
one line (status 2) and the module's code has not run.

The module here is ``mygame``, in the current directory (which ``load_game`` puts on
``sys.path``): the tic-tac-toe of the guide, with one line that leaves a mark when it runs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from run_helpers import tiny_config, trained

from asp.app.cli import main
from asp.app.game_run import GameRun
from asp.app.run.directory import CHECKPOINT, checkpoint_state, kept_version_state, version_path, write_checkpoint
from asp.app.run_config import GameRunConfig
from asp.games import TrainConfig, Trainer

ROOT = Path(__file__).resolve().parents[1]
SPEC = "mygame:TicTacToe"
MARK = "imported.mark"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tmp_path`` as the current directory, with ``mygame.py`` in it; ``mygame`` forgotten after."""
    source = (ROOT / "examples" / "tictactoe.py").read_text()
    (tmp_path / "mygame.py").write_text(source + f"\nopen({MARK!r}, 'w').close()  # the module's code ran\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # examples.tictactoe, to write the files
    yield tmp_path
    sys.modules.pop("mygame", None)


def tictactoe_state(**fields: object) -> dict[str, object]:
    """A checkpoint of a tiny tic-tac-toe run whose config names ``mygame``."""
    from examples.tictactoe import TicTacToe

    game = TicTacToe()
    cfg = GameRunConfig(game="examples.tictactoe:TicTacToe", games=4, max_plies=9, search=2, eval_search=2,
                        train=TrainConfig(device="cpu"))  # fmt: skip
    torch.manual_seed(0)
    trainer = Trainer(GameRun(cfg, game).new_model(), game, cfg.train)
    state = checkpoint_state(trainer, dataclasses.replace(cfg, game=SPEC), next_iteration=1, version=1)
    state.update(fields)
    return state


def run_dir(where: Path) -> Path:
    """A run directory of ``mygame``: its config.json, its checkpoint, version 0 kept."""
    (where / "games").mkdir(parents=True)
    state = tictactoe_state()
    write_checkpoint(state, where / CHECKPOINT)
    (where / "config.json").write_text(json.dumps(state["config"]))
    cfg = GameRunConfig.from_dict(state["config"])  # type: ignore[arg-type]
    kept = kept_version_state(cfg, version=0, next_iteration=0, weights=state["model"])  # type: ignore[arg-type]
    version_path(where, 0).parent.mkdir()
    write_checkpoint(kept, version_path(where, 0))
    return where


def refused(capsys: pytest.CaptureFixture[str], *argv: str, where: str) -> None:
    """``asp ARGV`` exits 2 with one line that names ``where`` and the game, and runs no code of it."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and f"{where}: names the game {SPEC!r}, a module outside asp" in err, err
    assert "add --trust-game if you trust the file" in err
    assert not Path(MARK).exists() and "mygame" not in sys.modules


COMMANDS = {
    "moves": ("moves", "run", "--positions", "positions.txt"),
    "eval": ("eval", "run"),
    "eval a kept version": ("eval", "run@0"),
    "play": ("play", "--checkpoint", "run", "--games", "1"),
    "show": ("show", "games.jsonl"),
    "train --resume": ("train", "--resume", "run", "--no-progress"),
    "train --config": ("train", "--config", "run.toml", "--print-config"),
}
WHERE = {
    "moves": "run/checkpoint.pt",
    "eval": "run/checkpoint.pt",
    "eval a kept version": "run/versions/v000000.pt",
    "play": "run/checkpoint.pt",
    "show": "games.jsonl: game 1",
    "train --resume": "--resume run",
    "train --config": "--config run.toml",
}


def write_files(here: Path) -> None:
    run_dir(here / "run")
    (here / "positions.txt").write_text("15\n")
    (here / "games.jsonl").write_text(json.dumps({"game": SPEC, "actions": [4, 0]}) + "\n")
    (here / "run.toml").write_text(f'game = "{SPEC}"\nsearch = 2\n')


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_naming_a_module_imports_nothing_without_trust_game(
    command: str, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(here)
    refused(capsys, *COMMANDS[command], where=WHERE[command])
    assert not (here / "run" / ".lock").exists()


def test_another_checkpoint_as_the_opponent_is_checked_too(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(here)
    state = tictactoe_state()
    (here / "other").mkdir()
    write_checkpoint(state, here / "other" / CHECKPOINT)
    cfg = tiny_config()  # the run: TinyChess, a game of asp's own
    write_checkpoint(checkpoint_state(trained(cfg), cfg, next_iteration=1, version=1), here / "run" / CHECKPOINT)
    refused(capsys, "eval", "run", "--vs", "other", "--games", "2", where="other/checkpoint.pt")


def test_trust_game_imports_the_module_a_file_names(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(here)
    assert main(["moves", "run", "--positions", "positions.txt", "--trust-game"]) == 0
    assert capsys.readouterr().out.startswith("15 ")
    assert Path(MARK).exists()
    assert main(["show", "games.jsonl", "--trust-game", "--out", "b.svg"]) == 0
    assert main(["train", "--config", "run.toml", "--print-config", "--trust-game"]) == 0
    assert f'game = "{SPEC}"' in capsys.readouterr().out


def test_game_naming_the_module_is_trust_enough(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(here)
    assert main(["train", "--config", "run.toml", "--game", SPEC, "--print-config"]) == 0
    assert f'game = "{SPEC}"' in capsys.readouterr().out
    assert Path(MARK).exists()


def test_a_module_that_raises_on_import_is_one_line(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "broken.py").write_text("raise RuntimeError('no board today\\nsecond line')\n")
    try:
        assert main(["train", "--game", "broken:Game", "--print-config"]) == 2
    finally:
        sys.modules.pop("broken", None)
    err = capsys.readouterr().err
    assert err == ("asp train: --game 'broken:Game': importing broken failed: RuntimeError: no board today\n"), err
