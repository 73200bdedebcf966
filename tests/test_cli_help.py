"""The command line's help: quick (no torch imported), and every option's default shown."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from asp.app import cli
from asp.app.commands import train
from asp.pipeline import MAX_STALENESS

COMMANDS = ("train", "play", "eval", "show", "moves")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("argv", [["--help"]] + [[command, "--help"] for command in COMMANDS], ids=" ".join)
def test_help_imports_no_torch(argv: list[str]) -> None:
    # Once --help took 4.3 s, most of it importing torch.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "asp.app", *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "usage: asp" in done.stdout, done.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "asp" in imported and "torch" not in imported


def _options() -> list[tuple[str, argparse.Action]]:
    [commands] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return [
        (name, action)
        for name, parser in commands.choices.items()
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    ]


@pytest.mark.parametrize(("command", "action"), _options(), ids=lambda x: x if isinstance(x, str) else x.dest)
def test_an_option_with_a_default_value_says_it_in_its_help(command: str, action: argparse.Action) -> None:
    # A flag's default is off, and an option whose default is None either says its default
    # or is not given: only the options that hold a value by default must say which.
    if action.default is None or isinstance(action.default, bool):
        return
    assert "default" in (action.help or ""), f"asp {command} {action.option_strings[-1]}: {action.help!r}"


def test_the_help_says_every_evaluation_plays_the_games_movers() -> None:
    # The movers and engines are each game's own (TinyChess's greedy and Stockfish, Connect
    # Four's winblock): the help names them as the game's, docs/cli.md by name.
    [eval_vs] = [action for command, action in _options() if command == "train" and action.dest == "eval_vs"]
    assert "the game's movers" in (eval_vs.help or "") and "an engine of the game" in (eval_vs.help or "")


def test_the_help_says_the_pipeline_s_staleness_limit() -> None:
    assert train.MAX_STALENESS == MAX_STALENESS


@pytest.mark.parametrize(
    "field", ["iterations", "games", "max_plies", "eval_every", "eval_games", "search", "eval_search"]
)
def test_the_defaults_in_the_help_are_the_configs_for_tinychess_connect_four_and_other_games(field: str) -> None:
    from asp.app.run_config import GameRunConfig, defaults_for

    [action] = [a for name, a in _options() if name == "train" and a.dest == field]
    tinychess, other = getattr(defaults_for("tinychess"), field), getattr(GameRunConfig(), field)
    connect4 = getattr(defaults_for("connect4"), field)
    said = "" if connect4 == other else rf"Connect Four: {connect4}\b[^;]*; "
    assert re.search(rf"default {tinychess}; {said}other games: {other}\b", action.help or ""), action.help
