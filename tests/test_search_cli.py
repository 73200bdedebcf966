"""Search everywhere a model plays: ``asp train --search N``, and ``asp play``/``asp eval`` playing
a checkpoint as its run was configured (:func:`asp.app.commands.options.play_search`); the ladder
(greedy mover, any UCI engine)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pytest
from helpers import asp
from run_helpers import read_metrics

from asp.app.commands.options import play_search
from asp.app.game_run import GameRun
from asp.app.run_config import GameRunConfig
from asp.search import SearchConfig
from asp.tinychess.game import TinyChessGame

LIMIT = 240

# An engine that speaks UCI and has no "Skill Level" option (as lc0 or a home-made engine).
PLAIN_UCI = """
import random, sys
import chess
board = chess.Board()
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        print("id name plain", "uciok", sep="\\n", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "position":
        board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:8]))
        for uci in words[words.index("moves") + 1 :] if "moves" in words else []:
            board.push_uci(uci)
    elif words[0] == "go":
        print("bestmove", random.choice(list(board.legal_moves)).uci(), flush=True)
    elif words[0] == "quit":
        break
"""


@pytest.fixture(scope="module")
def searched_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("searched") / "run"
    result = asp(
        "train", "--search", "4", "--iterations", "2", "--games", "8", "--max-plies", "24", "--eval-every", "1",
        "--eval-games", "4", "--hidden", "32", "--workers", "2", "--run-dir", str(run), "--no-progress", seconds=LIMIT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return run


@pytest.mark.timeout(LIMIT)
@pytest.mark.slow
def test_asp_train_with_search_learns_its_targets_and_climbs_the_ladder(searched_run: Path) -> None:
    lines = read_metrics(searched_run)
    assert [line["iteration"] for line in lines] == [0, 1]
    for line in lines:
        assert "train/target_entropy" in line and "train/ratio_mean" not in line  # search targets
        assert 0 < line["play/search_occupancy"] <= 1
        assert {"eval/score", "eval_greedy/score", "eval_material2/score"} <= set(line)  # every rung, every evaluation
    assert json.loads((searched_run / "config.json").read_text())["search"] == 4


@pytest.mark.timeout(LIMIT)
@pytest.mark.slow
def test_asp_eval_plays_any_uci_engine_without_a_skill_level(searched_run: Path, tmp_path: Path) -> None:
    engine = tmp_path / "plain-uci"
    engine.write_text(f"#!{sys.executable}\n{PLAIN_UCI}")
    engine.chmod(0o755)
    result = asp("eval", str(searched_run), "--vs", "uci", "--engine", str(engine), "--games", "2", "--max-plies", "16",
                 seconds=LIMIT)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "against plain-uci nodes 100" in result.stdout and "engine failures: 0" in result.stdout
    result = asp("eval", str(searched_run), "--vs", "greedy", "--games", "2", "--max-plies", "16", seconds=LIMIT)
    assert result.returncode == 0 and "against the greedy mover" in result.stdout, result.stderr[-3000:]


def options(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"search": None, "policy_only": False, **given})


def test_a_checkpoint_plays_as_its_run_was_configured_unless_told_otherwise() -> None:
    cfg = GameRun(GameRunConfig(game="tinychess", search=12, search_considered=8, eval_search=12))
    assert play_search(cfg, options()) == SearchConfig(12, 8, gumbel_scale=0.0)
    assert play_search(cfg, options(), sampling=True) == SearchConfig(12, 8, gumbel_scale=1.0)
    assert play_search(cfg, options(search=3)) == SearchConfig(3, 8, gumbel_scale=0.0)
    assert play_search(cfg, options(search=3), sampling=True) == SearchConfig(3, 8, gumbel_scale=1.0)
    assert play_search(cfg, options(search=0)) is None
    assert play_search(cfg, options(policy_only=True), sampling=True) is None


def test_a_run_can_search_deeper_when_it_plays_to_win_than_in_self_play() -> None:
    cfg = GameRun(GameRunConfig(game="tinychess", search=4, eval_search=48))
    assert play_search(cfg, options(), sampling=True) == SearchConfig(4, gumbel_scale=1.0)  # self-play
    assert play_search(cfg, options()) == SearchConfig(48, gumbel_scale=0.0)
    assert play_search(cfg, options(search=8)) == SearchConfig(8, gumbel_scale=0.0)
    chess = TinyChessGame()
    assert GameRun(dataclasses.replace(cfg.cfg, eval_search=0), chess).eval_cfg(0).search is None  # its policy alone
    assert GameRun(cfg.cfg, chess).play_cfg(0, 0).search == SearchConfig(4)
