"""The ``asp`` command with a game other than TinyChess, as a user runs it: ``asp train --game``
(Connect Four, and a user's game by ``MODULE:ATTR``), then ``asp eval``, ``asp play``,
``asp show`` and ``asp moves`` of its run, and the mistakes a user makes on the way."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import chess
import pytest
from helpers import asp, assert_pgn_extract_accepts, ok, pgn_games, read_scalars
from run_helpers import kept_checkpoint, read_metrics, tiny_config

from asp.app.cli import main
from asp.app.run.directory import GAME_FORMAT, load_checkpoint, run_from_checkpoint
from asp.connect4.model import C4Config
from asp.tinychess.game import TinyChessGame

TINY = ("--iterations", "2", "--games", "16", "--eval-games", "4", "--workers", "2", "--no-progress")
REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(300)


def one_line_error(result: subprocess.CompletedProcess[str] | tuple[int, str], text: str) -> None:
    code, err = (result.returncode, result.stderr) if isinstance(result, subprocess.CompletedProcess) else result
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], err


@pytest.fixture(scope="module")
def connect4_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("c4")
    options = ("--hidden", "16", "--tensorboard", "--run-dir", "run")
    result = ok(asp("train", "--game", "connect4", *TINY, *options, cwd=where))
    (where / "stderr.txt").write_text(result.stderr)
    return where / "run"


@pytest.mark.slow
def test_train_connect4_writes_a_run_of_its_game(connect4_run: Path) -> None:
    config = json.loads((connect4_run / "config.json").read_text())
    assert config["game"] == "connect4" and config["iterations"] == 2
    assert config["network"] == {"tower": 4, "hidden": 16}
    _, model, _ = run_from_checkpoint(connect4_run)  # rebuilt of the run's shape: 16 wide, not the default 32
    assert model.cfg == C4Config(hidden=16, tower=4)
    state = load_checkpoint(connect4_run / "checkpoint.pt")
    assert state["format"] == GAME_FORMAT and state["config"]["game"] == "connect4" and state["next_iteration"] == 2
    lines = (connect4_run / "games" / "iter-0001.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 16 and {r["game"] for r in records} == {"connect4"}
    assert all(r["moves"] == [str(a + 1) for a in r["actions"]] for r in records)
    metrics = read_metrics(connect4_run)
    assert [m["iteration"] for m in metrics] == [0, 1]
    assert {"eval/score", "eval_winblock/score", "eval_lookahead/score", "loss/value"} <= set(metrics[-1])
    assert (connect4_run / "curves.png").read_bytes().startswith(b"\x89PNG")
    # --tensorboard: every metric of every line, at its iteration
    scalars = read_scalars(connect4_run / "tensorboard")
    assert [step for step, _ in scalars["loss/policy"]] == [0, 1]
    assert scalars["eval/score"] == [(1, pytest.approx(metrics[-1]["eval/score"]))]
    assert scalars["ladder/v2"] == [(1, pytest.approx(metrics[-1]["ladder"]["v2"][0]))]
    # the line of an evaluated iteration scores every mover of the game, and says what it cost
    stderr = (connect4_run.parent / "stderr.txt").read_text()
    assert re.search(r"^iteration 2/2: .*score vs random \d\.\d{3} .*, vs winblock \d\.\d{3}, vs lookahead \d\.\d{3}, "
                     r"vs v0 \d\.\d{3}; "
                     r"ladder v2 .*v0.*; evaluation \d+\.\ds$", stderr, re.M), stderr  # fmt: skip
    assert set(metrics[-1]["ladder"]) == {"random", "winblock", "lookahead", "v0", "v2"}


@pytest.mark.slow
def test_a_game_run_resumes_and_grows(connect4_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(connect4_run, run)
    ok(asp("train", "--resume", str(run), "--iterations", "3", "--workers", "2", "--no-progress", cwd=tmp_path))
    metrics = read_metrics(run)
    assert [m["iteration"] for m in metrics] == [0, 1, 2]
    assert load_checkpoint(run / "checkpoint.pt")["next_iteration"] == 3


@pytest.mark.slow
def test_a_resume_checks_every_kept_version_before_it_writes(
    connect4_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(connect4_run, run)
    kept_checkpoint(run / "versions" / "v000002.pt", tiny_config(), version=2)  # a TinyChess version put there
    before = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != "log.jsonl"}
    assert main(["train", "--resume", str(run), "--iterations", "3", "--workers", "2", "--no-progress"]) == 2
    one_line_error((2, capsys.readouterr().err), "v000002.pt: a checkpoint of 'tinychess', not of the run's game")
    after = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != "log.jsonl"}
    assert after == before  # once: games/iter-0002.jsonl of an iteration its checkpoint does not hold


@pytest.mark.slow
def test_eval_play_show_and_moves_read_the_runs_game(
    connect4_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(connect4_run)
    assert main(["eval", run, "--vs", "winblock", "--games", "4", "--search", "4"]) == 0
    assert re.search(r"against the winblock mover: score [01]\.\d{3} \(\+\d+ =\d+ -\d+ of 4\)", capsys.readouterr().out)
    assert main(["eval", run, "--vs", run, "--games", "4", "--search", "4"]) == 0
    assert "score 0.500" in capsys.readouterr().out  # itself, each start with both colours
    # the versions the run keeps: 0, and 2, which it evaluated
    assert main(["eval", run, "--vs", f"{run}@0", "--games", "4", "--search", "4"]) == 0
    out = capsys.readouterr().out
    assert f"against {run}@0 (version 0): score" in out
    assert out.splitlines()[-1] == f"{run} keeps versions 0, 2: play one as --vs {run}@VERSION"
    one_line_error((main(["eval", f"{run}@5"]), capsys.readouterr().err), "keeps no version 5 (it keeps: 0, 2)")
    assert main(["eval", run, "--ladder"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith(f"ladder of {run}: Bradley-Terry over ") and len(table) == 6
    assert {row.split()[0] for row in table[1:]} == {"random", "winblock", "lookahead", "v0", "v2"}
    games = tmp_path / "games.jsonl"
    assert main(["play", "--checkpoint", run, "--games", "3", "--search", "2", "--out", str(games)]) == 0
    assert "played 3 games" in capsys.readouterr().out
    svg = tmp_path / "board.svg"
    assert main(["show", str(games), "--game", "2", "--ply", "3", "--out", str(svg)]) == 0
    board = capsys.readouterr().out.splitlines()
    assert board[6] == "1 2 3 4 5 6 7" and sum(line.count("X") + line.count("O") for line in board[:6]) == 3
    ElementTree.parse(svg)
    # --out a directory: one picture per position, as for PGN games (once, one file named so)
    plies = len(json.loads(games.read_text().splitlines()[0])["actions"])
    assert main(["show", str(games), "--out", f"{tmp_path}/boards/"]) == 0
    assert f"wrote {plies + 1} boards to {tmp_path}/boards: ply-000.svg (start)" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "boards").iterdir()) == [f"ply-{k:03d}.svg" for k in range(plies + 1)]
    ElementTree.parse(tmp_path / "boards" / f"ply-{plies:03d}.svg")
    positions = tmp_path / "positions.txt"
    positions.write_text("4453 -2\n\n445566\n")  # COLUMNS SCORE, as the solver test sets write them
    assert main(["moves", run, "--positions", str(positions)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "4453" and out[0].split()[1] in "1234567"
    assert out[1] in ("445566 3", "445566 7")  # either wins at once
    assert len(out) == 2


@pytest.mark.slow
def test_a_game_of_a_users_own_module_trains_unchanged(tmp_path: Path) -> None:
    """The guide's example, as the guide says to run it: from the directory that holds it."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    options = ("--iterations", "2", "--games", "16", "--eval-games", "4", "--workers", "2", "--no-progress")
    result = ok(asp("train", "--game", "examples.tictactoe:TicTacToe", *options, cwd=tmp_path))
    assert "trained 2 iterations in runs/tictactoe" in result.stdout
    assert json.loads((tmp_path / "runs" / "tictactoe" / "config.json").read_text())["game"] == (
        "examples.tictactoe:TicTacToe"
    )


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["train", "--game", "chess"], "'chess': not a game: tinychess, connect4, openspiel:NAME, or MODULE:ATTR"),
        (["train", "--game", "nosuchmodule:Game"], "--game 'nosuchmodule:Game': cannot import nosuchmodule"),
        (["train", "--game", "asp.connect4:Nothing"], "module asp.connect4 has no Nothing"),
        (["train", "--game", "asp.connect4:C4Config"], "not a game (asp.games.Game): it has no start"),
        (["train", "--game", "connect4", "--policy-only"], "--policy-only: asp train always searches"),
        (
            ["train", "--game", "connect4", "--hidden", "7"],
            "--hidden: C4Config.hidden must be an int in 8..4096, got 7",
        ),
        (
            ["train", "--game", "connect4", "--eval-vs", "stockfish"],
            "--eval-vs stockfish: not an engine of connect4; it has none",
        ),
        (["train", "--game", "connect4", "--eval-nodes", "5"], "--eval-nodes applies to a game with an engine only"),
        (["train", "--eval-vs", "lc0"], "--eval-vs lc0: not an engine of tinychess; its engines: stockfish, uci"),
        (["train", "--game", "connect4", "--search", "0"], "--search must be in 1..10000: asp train trains on"),
        (["train", "--game", "connect4", "--games", "0"], "--games: GameRunConfig.games must be an int in 1..1000000"),
        (["play", "--game", "connect4", "--checkpoint", "x"], "--game is for a fresh model"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(
    args: list[str], text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main([*args, "--run-dir", str(tmp_path / "run")] if args[0] == "train" else args)
    one_line_error((code, capsys.readouterr().err), text)
    assert not (tmp_path / "run").exists()  # nothing written before the mistake was found


@pytest.mark.slow
def test_a_mistake_about_a_game_run_is_one_line(
    connect4_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(connect4_run)
    cases = [
        (
            ["eval", run, "--vs", "greedy"],
            "--vs greedy: not an opponent of connect4; its movers: random, winblock, lookahead",
        ),
        (
            ["eval", run, "--pgn", str(tmp_path / "x.pgn")],
            "--pgn applies to a game with a file format of its own, not to a connect4 run",
        ),
        (["moves", run, "--positions", str(tmp_path / "none.txt")], "--positions: no such file"),
        (["show", str(tmp_path / "none.jsonl")], "no such file"),
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("44\n4458\n")
    cases.append((["moves", run, "--positions", str(bad)], f"{bad}:2: not a position of connect4: move 4: '8'"))
    over = tmp_path / "over.txt"
    over.write_text("4455667\n")
    cases.append((["moves", run, "--positions", str(over)], f"{over}:1: the game is over in '4455667'"))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    cases.append((["show", str(binary)], "line 1 is not JSON: not an asp games file"))
    for args, text in cases:
        one_line_error((main(args), capsys.readouterr().err), text)


C4_RECORD = {"game": "connect4", "start": "", "actions": [3, 3, 4]}
"""A record of Connect Four, as ``asp play`` writes one (the fields ``asp show`` reads)."""


@pytest.mark.parametrize(
    ("lines", "argv", "text"),
    [
        # once: an UnboundLocalError, an AttributeError, an OverflowError; and 2.7 and true played as 2 and 1
        ([C4_RECORD], ["--game", "0"], "--game must be 1 or more (the games of {path} count from 1), got 0"),
        ([C4_RECORD], ["--game", "-3"], "--game must be 1 or more"),
        ([C4_RECORD], ["--game", "2"], "{path}: holds 1 game(s), not 2"),
        ([C4_RECORD | {"start": 5}], [], "{path}: line 1 is not a game record of asp: field start must be a position"),
        (
            [C4_RECORD | {"actions": [3, 1e400]}],
            [],
            "line 1 is not a game record of asp: field actions must be a list of ints: actions[1] is inf",
        ),  # fmt: skip
        ([C4_RECORD | {"actions": [2.7]}], [], "field actions must be a list of ints: actions[0] is 2.7"),
        ([C4_RECORD | {"actions": [True]}], [], "field actions must be a list of ints: actions[0] is True"),
        ([C4_RECORD | {"actions": "334"}], [], "field actions must be a list of ints, got '334'"),
        ([C4_RECORD | {"game": 4}], [], "field game must be the game's name (a string), got 4"),
        (
            [C4_RECORD, [1, 2]],
            ["--game", "2"],
            "{path}: line 2 is not a game record of asp: a JSON list, not an object",
        ),
        ([5], [], "{path}: line 1 is not a game record of asp: a JSON int, not an object"),
        ([C4_RECORD | {"actions": [0] * 7}], [], "{path}: game 1 does not replay: ply 7: action 0 is not legal there"),
        ([C4_RECORD | {"actions": [9]}], [], "{path}: game 1 does not replay: ply 1: action 9 is not legal there"),
        ([C4_RECORD | {"actions": [0, 1] * 4}], [], "game 1 does not replay: ply 8: the game is over before it"),
        ([C4_RECORD | {"start": "48"}], [], "game 1 does not replay: move 2: '8' is not a column 1-7"),
    ],
)
def test_a_games_file_line_that_is_no_record_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[Any], argv: list[str], text: str
) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code = main(["show", str(path), "--out", str(tmp_path / "board.svg"), *argv])
    one_line_error((code, capsys.readouterr().err), text.format(path=path))
    assert not (tmp_path / "board.svg").exists()


def test_a_record_replays_from_its_start_or_the_games_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps(C4_RECORD | {"start": "11"}) + "\n" + json.dumps({"game": "connect4", "actions": [3]}))
    for number, stones in (("1", 5), ("2", 1)):
        assert main(["show", str(path), "--game", number, "--out", str(tmp_path / "board.svg")]) == 0
        board = capsys.readouterr().out.splitlines()
        assert sum(line.count("X") + line.count("O") for line in board[:6]) == stones


def test_a_tinychess_game_run_trains_with_tinychess_settings_and_an_option_keeps_them() -> None:
    from asp.app.cli import _parser
    from asp.app.commands.train import train_config

    spec = "asp.tinychess.game:TinyChessGame"
    cfg = train_config(_parser().parse_args(["train", "--game", spec, "--device", "cpu"]))[0].cfg
    assert (cfg.iterations, cfg.games, cfg.max_plies, cfg.search, cfg.eval_every) == (24, 160, 200, 8, 24)
    train = cfg.train
    assert (train.batch_size, train.value_coef, train.device) == (1024, 0.5, "cpu")
    assert (train.outcome_gamma, train.heuristic_weight, train.heuristic_gamma) == (0.95, 0.1, 0.8)
    other = train_config(_parser().parse_args(["train", "--game", "connect4"]))[0].cfg
    assert (other.games, other.train.heuristic_weight, other.train.outcome_gamma) == (200, 0.0, 1.0)


def test_hidden_sets_the_width_of_any_games_network_and_a_config_file_may_set_its_other_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from asp.app.cli import _parser
    from asp.app.commands.train import train_config
    from asp.app.game_run import GameRun
    from asp.app.run_config import GameRunConfig

    for spec, width, network in (
        ("connect4", 64, {"tower": 4, "hidden": 64}),  # its defaults: a tower, 32 wide
        ("asp.tinychess.game:TinyChessGame", 32, {"hidden": 32}),
    ):
        run, changes = train_config(_parser().parse_args(["train", "--game", spec, "--hidden", str(width)]))
        cfg = run.cfg
        assert cfg.network == changes["network"] == network
        assert GameRunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
        assert GameRun(cfg).new_model().cfg.hidden == width
    file = tmp_path / "run.json"
    file.write_text(json.dumps({"game": "connect4", "network": {"tower": 0, "blocks": 1, "channels": 8}}))
    cfg = train_config(_parser().parse_args(["train", "--config", str(file), "--hidden", "16"]))[0].cfg
    assert GameRun(cfg).new_model().cfg == C4Config(hidden=16, blocks=1, channels=8)
    file.write_text(json.dumps({"game": "connect4", "network": {"width": 16}}))
    code = main(["train", "--config", str(file), "--run-dir", str(tmp_path / "run")])
    one_line_error((code, capsys.readouterr().err), f"--config {file}: GameRunConfig.network: connect4's network "
                   "has no field 'width'; its fields: hidden, blocks, channels")  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_runs_of_one_game_named_two_ways_play_each_other_and_another_game_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from asp.app.run_config import GameRunConfig

    tiny = {"hidden": 16, "blocks": 0}
    named = kept_checkpoint(tmp_path / "named.pt", GameRunConfig(game="tinychess", network=tiny), version=3)
    spec = kept_checkpoint(
        tmp_path / "spec.pt", GameRunConfig(game="asp.tinychess.game:TinyChessGame", network=tiny), version=3
    )
    c4 = kept_checkpoint(
        tmp_path / "c4.pt", GameRunConfig(game="connect4", network={"hidden": 8, "blocks": 0}), version=3
    )
    for model, other in ((named, spec), (spec, named)):
        assert main(["eval", str(model), "--vs", str(other), "--games", "2", "--search", "2", "--max-plies", "6"]) == 0
        assert f"against {other} (version 3): score" in capsys.readouterr().out
    for model, game in ((named, "tinychess"), (spec, "asp.tinychess.game:TinyChessGame")):
        code = main(["eval", str(model), "--vs", str(c4), "--games", "2"])
        one_line_error((code, capsys.readouterr().err), f"--vs {c4}: a run of connect4, not of {game}")


def test_a_tinychess_game_run_may_evaluate_against_stockfish_and_keeps_its_settings() -> None:
    from asp.app.cli import _parser
    from asp.app.commands.train import train_config
    from asp.app.run_config import GameRunConfig
    from asp.tinychess.engine import EngineConfig

    spec = "asp.tinychess.game:TinyChessGame"
    options = ["train", "--game", spec, "--eval-vs", "stockfish", "--eval-nodes", "10", "--eval-skill", "3"]
    cfg = train_config(_parser().parse_args(options))[0].cfg
    assert cfg.eval_engine == dataclasses.asdict(EngineConfig(skill=3, nodes=10))
    assert GameRunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    plain = train_config(_parser().parse_args(["train", "--game", spec]))[0].cfg
    assert plain.eval_engine is None and GameRunConfig.from_dict(plain.to_dict()) == plain


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_tinychess_game_run_evaluates_against_stockfish_and_its_eval_and_play_write_pgn(
    tmp_path: Path, stockfish: str, pgn_extract: str
) -> None:
    run = tmp_path / "run"
    options = ("--game", "asp.tinychess.game:TinyChessGame", "--iterations", "1", "--games", "8", "--max-plies", "16",
               "--eval-games", "4", "--eval-precision", "0", "--eval-vs", "stockfish", "--eval-nodes", "1",
               "--hidden", "16", "--workers", "2", "--no-progress", "--run-dir", str(run))  # fmt: skip
    ok(asp("train", *options, cwd=tmp_path))
    (line,) = read_metrics(run)
    assert line["eval_sf/engine"] == "stockfish skill 0 nodes 1" and "eval_sf/error" not in line
    assert line["eval_sf/games"] + line["eval_sf/engine_failures"] == 4 and line["eval_sf/engine_failures"] == 0
    assert [p.suffix for p in sorted((run / "games").iterdir())] == [".jsonl", ".pgn"]
    # asp eval of the run: Stockfish in each of two workers, from the openings, the games as PGN
    pgn = tmp_path / "sf.pgn"
    eval_options = ("--games", "4", "--search", "2", "--max-plies", "16", "--workers", "2", "--pgn", str(pgn))
    out = ok(asp("eval", str(run), "--vs", "stockfish", "--nodes", "1", *eval_options, cwd=tmp_path)).stdout
    assert re.fullmatch(rf"{run} \(version 1\) against stockfish skill 0 nodes 1: score \d\.\d{{3}} \(\+\d+ =\d+ -\d+ "
                        rf"of 4\), Elo .*; engine failures: 0; wrote {pgn}", out.splitlines()[0]), out  # fmt: skip
    games = pgn_games(pgn)
    assert {g.headers["Opponent"] for g in games} == {"stockfish skill 0 nodes 1"}
    assert [g.board().fen() for g in games] == [line for line in TinyChessGame().openings()[:2] for _ in range(2)]
    assert_pgn_extract_accepts(pgn, games=4, pgn_extract=pgn_extract)
    # --from-start, against any UCI engine (Stockfish by its path); and the greedy mover
    uci = ("--vs", "uci", "--engine", stockfish, "--nodes", "1", "--from-start", *eval_options)
    ok(asp("eval", str(run), *uci, cwd=tmp_path))
    assert {g.board().fen() for g in pgn_games(pgn)} == {chess.STARTING_FEN}
    out = ok(asp("eval", str(run), "--vs", "greedy", "--games", "2", "--search", "2", cwd=tmp_path)).stdout
    assert "against the greedy mover: score" in out
    # asp play: PGN where --out asks for it; else JSON lines, the PGN beside them
    play = ("play", "--checkpoint", str(run), "--games", "2", "--search", "2", "--max-plies", "8", "--out")
    ok(asp(*play, str(tmp_path / "self.pgn"), cwd=tmp_path))
    assert [g.headers["Opponent"] for g in pgn_games(tmp_path / "self.pgn")] == ["self", "self"]
    (tmp_path / "self.pgn").unlink()
    ok(asp(*play, str(tmp_path / "self.jsonl"), cwd=tmp_path))
    assert len((tmp_path / "self.jsonl").read_text().splitlines()) == 2 and len(pgn_games(tmp_path / "self.pgn")) == 2


def test_asp_play_samples_as_the_runs_self_play_and_asp_eval_plays_to_win_with_its_search() -> None:
    from argparse import Namespace

    from asp.app.commands.options import play_search
    from asp.app.game_run import GameRun
    from asp.app.run_config import GameRunConfig
    from asp.search import SearchConfig

    cfg = GameRun(GameRunConfig(game="connect4", search=16, eval_search=64, search_considered=8))
    plain = Namespace(search=None, policy_only=False)
    assert play_search(cfg, plain, sampling=True) == SearchConfig(16, 8, gumbel_scale=1.0)  # as in self-play
    assert play_search(cfg, plain) == SearchConfig(64, 8, gumbel_scale=0.0)
    four = Namespace(search=4, policy_only=False)
    assert play_search(cfg, four, sampling=True) == SearchConfig(4, 8, gumbel_scale=1.0)
    assert play_search(cfg, four) == SearchConfig(4, 8, gumbel_scale=0.0)
    assert play_search(cfg, Namespace(search=0, policy_only=False), sampling=True) is None
    assert play_search(cfg, Namespace(search=None, policy_only=True), sampling=True) is None


def test_asp_play_of_a_fresh_model_writes_selfplay_in_the_games_own_format_else_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["play", "--games", "2", "--max-plies", "4"]) == 0  # TinyChess, the default game: PGN
    assert "wrote selfplay.pgn" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["selfplay.pgn"]
    assert (tmp_path / "selfplay.pgn").read_text().count("[Event ") == 2
    assert main(["play", "--game", "connect4", "--games", "2"]) == 0  # no format of its own
    assert "wrote selfplay.jsonl" in capsys.readouterr().out
    assert len((tmp_path / "selfplay.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_a_network_that_turns_nan_stops_the_run_in_one_line_and_keeps_the_last_good_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game's network that outputs NaN from version 2 on (tests/broken_games.py): iteration 2,
    which version 2 plays, stops the run; iterations 0 and 1 are saved whole, nothing of 2 is."""
    from asp.app.run import RunDir

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    tiny = ("--iterations", "4", "--games", "2", "--max-plies", "3", "--search", "2", "--eval-every", "10",
            "--eval-games", "2", "--hidden", "8", "--workers", "1", "--sequential", "--no-progress")  # fmt: skip
    assert main(["train", "--game", "broken_games:NaNFromIteration2", *tiny, "--run-dir", str(run)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "asp train: iteration 2: tictactoe: network (the model, version 2) gave NaN logits and NaN values "
        "at 2 of 2 positions: a network's outputs must be finite"
    )
    assert load_checkpoint(run / "checkpoint.pt")["next_iteration"] == 2
    assert [line["iteration"] for line in RunDir(run).read_metrics()] == [0, 1]
    assert sorted(path.name for path in (run / "games").iterdir()) == ["iter-0000.jsonl", "iter-0001.jsonl"]


def test_train_of_a_game_that_breaks_a_rule_stops_in_one_line_before_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    argv = ["train", "--game", "broken_games:ApplyRaises", "--iterations", "1", "--games", "4", "--run-dir", str(run)]
    assert main(argv) == 2
    one_line_error((2, capsys.readouterr().err), "tictactoe: apply raised IndexError: list index out of range")
    assert not run.exists()


@pytest.mark.slow
def test_an_evaluation_past_its_budget_of_time_plays_one_round_of_each_match(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'game = "connect4"\niterations = 1\ngames = 4\nsearch = 2\neval_search = 2\neval_games = 60\n'
        "eval_precision = 0.0\neval_budget = 0.0001\n\n[network]\nhidden = 8\ntower = 1\n"
    )
    ok(asp("train", "--config", str(config), "--workers", "2", "--no-progress", "--run-dir", "run", cwd=tmp_path))
    line = read_metrics(tmp_path / "run")[-1]
    assert line["eval/games"] == line["eval_winblock/games"] == line["eval_lookahead/games"] == 20  # of 60


def test_a_person_plays_to_the_ply_cap_and_the_games_adjudicate_judges(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, a game cut at --max-plies was called a draw whoever held the centre, and a move
    # refused counted as a ply: "9" then "5" made the cut after the person's one move.
    monkeypatch.setattr("sys.stdin", io.StringIO("9x\n5\n1\n2\n3\n"))
    args = ["play", "--game", "plain_games:Judged", "--human", "--search", "4", "--max-plies", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "not a move: '9x' is not a cell 1-9" in out and out.count("asp plays") == 1
    assert out.strip().splitlines()[-1].startswith("you won (cut at 2 plies, adjudicated; ")
