"""A UCI engine as the opponent of play_games (an asp.games.Mover of TinyChessGame): config
errors, faults (fake engines that crash or hang), what the engine is sent, and Stockfish
itself, in this process and in spawn workers.

The fake engines are small Python scripts written into tmp_path that speak just enough UCI
and play the first legal move (in UCI order). Each takes ~0.2 s to start; a hang costs the
``move_timeout`` of 1 s. The Stockfish tests play a few short games at 50 nodes a move.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess
import psutil
import pytest
import torch
from helpers import assert_pgn_extract_accepts, pgn_games, pid_alive, survivors

from asp.app.evaluation.elo import match_result_of
from asp.errors import ConfigError
from asp.games import MODEL, OPPONENT, Mover, PlayConfig, Record, play_games
from asp.selfplay.sync import play_games_parallel
from asp.tinychess import ModelConfig, TinyChess
from asp.tinychess.engine import EngineConfig, EngineFailed, EngineNotFound, EngineOpponent
from asp.tinychess.game import TinyChessGame

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GAME = TinyChessGame()
MATCH_OPENINGS = tuple(fen for fen in GAME.openings() for _ in range(2))  # each with both colours

FAKE_ENGINE = """\
#!{python}
import sys, time
import chess

FAIL_AT, HOW = {fail_at}, {how!r}  # the go that fails (0: none), and how: exit or hang; mute: never starts
LOG = {log!r}  # where to append the position commands it is sent ("": nowhere)
board, goes = chess.Board(), 0
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci" and HOW == "mute":
        time.sleep(3600)
    if words[0] == "uci":
        print("id name Fake")
        print("option name Skill Level type spin default 20 min 0 max 20")
        print("uciok", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "position":
        if LOG:
            with open(LOG, "a") as log:
                log.write(line)
        rest = line.split(" moves ")
        board = chess.Board() if words[1] == "startpos" else chess.Board(rest[0].split(" fen ")[1])
        for uci in rest[1].split() if len(rest) > 1 else []:
            board.push_uci(uci)
    elif words[0] == "go":
        goes += 1
        if goes == FAIL_AT and HOW == "exit":
            sys.exit(3)
        if goes == FAIL_AT and HOW == "hang":
            time.sleep(3600)
        print("bestmove", min(m.uci() for m in board.legal_moves), flush=True)
    elif words[0] == "quit":
        break
"""


def fake_engine(tmp_path: Path, *, fail_at: int = 0, how: str = "exit", log: str = "") -> str:
    """An executable fake UCI engine that fails (exits or hangs) at its ``fail_at``-th go, and
    appends the position commands it is sent to the file ``log``."""
    path = tmp_path / f"fake-{how}-{fail_at}"
    path.write_text(FAKE_ENGINE.format(python=sys.executable, fail_at=fail_at, how=how, log=log))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def engines_running(name: str) -> list[int]:
    """Pids of live processes (not zombies) whose command line mentions ``name``."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if name in cmdline and p.info["status"] != psutil.STATUS_ZOMBIE and p.pid != os.getpid():
            found.append(p.pid)
    return found


def tiny_model() -> TinyChess:
    torch.manual_seed(0)
    return TinyChess(ModelConfig(hidden=16, blocks=0))


def failures(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "engine_failure"]


# -- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "allowed"),
    [
        ({"skill": 21}, "skill", "0..20"),
        ({"skill": -1}, "skill", "0..20"),
        ({"skill": 1.5}, "skill", "0..20"),
        ({"nodes": 0}, "nodes", "1..1000000000"),
        ({"time": 0.0}, "time", "(0, 60]"),
        ({"time": -1.0}, "time", "(0, 60]"),
        ({"move_timeout": 0}, "move_timeout", "(0, 3600]"),
        ({"max_failures": 0}, "max_failures", "1..1000"),
        ({"path": ""}, "path", "non-empty"),
        ({"depth": 0}, "depth", "1..100"),
        ({"nodes": None, "time": None}, "nodes", "node, time or depth limit"),
    ],
)
def test_bad_engine_config_raises_config_error_naming_the_field(
    kwargs: dict[str, Any], field: str, allowed: str
) -> None:
    with pytest.raises(ConfigError, match=rf"EngineConfig\.{field}") as info:
        EngineConfig(**kwargs)
    assert allowed in str(info.value)


def test_a_time_limit_alone_is_a_valid_config_and_named() -> None:
    cfg = EngineConfig(nodes=None, time=0.05, skill=5)
    assert cfg.limit() == chess.engine.Limit(time=0.05)
    assert cfg.describe() == "stockfish skill 5 time 0.05s"


def test_a_depth_limit_alone_is_a_valid_config_and_named() -> None:
    cfg = EngineConfig(nodes=None, depth=1)
    assert cfg.limit() == chess.engine.Limit(depth=1)
    assert cfg.describe() == "stockfish skill 0 depth 1"


def test_a_missing_engine_is_a_one_line_error_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(EngineNotFound, match=r"--engine \(EngineConfig.path\).*nope") as info:
        EngineOpponent(EngineConfig(path=str(tmp_path / "nope")))
    assert "\n" not in str(info.value)


def test_no_stockfish_anywhere_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("asp.tinychess.engine.ENGINE_DIRS", (str(tmp_path / "games"),))
    with pytest.raises(EngineNotFound, match="no Stockfish found") as info:
        EngineOpponent()
    assert "PATH" in str(info.value) and str(tmp_path / "games") in str(info.value) and "--engine" in str(info.value)


def test_the_opponent_is_rebuilt_from_its_cfg_with_the_path_it_found(tmp_path: Path) -> None:
    opponent = EngineOpponent(EngineConfig(path=fake_engine(tmp_path)))
    assert isinstance(opponent, Mover)
    assert opponent.cfg.path is not None and os.path.isabs(opponent.cfg.path)
    assert type(opponent)(opponent.cfg).cfg == opponent.cfg  # what a worker does
    assert opponent.state_dict() == {} and opponent.engine_pid is None  # no weights; no engine until a move
    assert opponent.opponent_name.startswith("fake-exit-0 skill 0 nodes 100")


# -- what the engine is sent --------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_the_engine_is_sent_the_moves_since_the_last_pawn_move(tmp_path: Path) -> None:
    state = GAME.start()
    knights = ["g1f3", "b8c6", "f3g1", "c6b8", "g1f3", "b8c6", "f3g1"]
    for uci in ["e2e4", "e7e5", *knights]:
        state = GAME.apply(state, GAME.parse_action(state, uci))
    log = tmp_path / "positions"
    engine = EngineOpponent(EngineConfig(path=fake_engine(tmp_path, log=str(log))))
    try:
        action = engine.choose(GAME, state, random.Random(0))
    finally:
        engine.close()
    # The fake engine plays the first legal move in UCI order.
    assert action == GAME.parse_action(state, min(m.uci() for m in state.board.legal_moves))
    (sent,) = log.read_text().splitlines()
    fen, moves = sent.removeprefix("position fen ").split(" moves ")
    assert moves.split() == knights
    board = chess.Board(fen)
    for uci in knights:
        board.push_uci(uci)
    assert board.fen() == state.board.fen()
    board.push_uci("c6b8")
    assert board.is_repetition(3)  # the position after 2... e5 a third time: the engine can know it
    # a search's root keeps the moves that led to it
    assert [m.uci() for m in GAME.search_root(state).history().move_stack] == knights


# -- faults -----------------------------------------------------------------------------------


def play_against_fake(path: str, cfg: PlayConfig) -> tuple[EngineOpponent, list[Record], dict[str, Any], float]:
    """Play ``cfg`` against the fake engine at ``path`` (1 s move timeout), in this process;
    return the opponent (closed), the records, the stats and the seconds it took."""
    opponent = EngineOpponent(EngineConfig(path=path, move_timeout=1.0))
    started = time.perf_counter()
    try:
        records, stats = play_games(tiny_model(), opponent, cfg)
    finally:
        opponent.close()
    return opponent, records, stats, time.perf_counter() - started


@pytest.mark.timeout(60)
def test_an_engine_that_crashes_fails_its_game_unscored_is_logged_and_restarted(
    tmp_path: Path, logs: list[dict[str, Any]], pgn_extract: str
) -> None:
    path = fake_engine(tmp_path, fail_at=3, how="exit")
    # One game at a time, two engine moves a game: each engine plays games 2k (two moves) and
    # crashes at its third, the first of game 2k + 1.
    cfg = PlayConfig(GAME, n_games=4, max_plies=4, batch_size=1, openings=MATCH_OPENINGS, samples=False)
    opponent, records, stats, seconds = play_against_fake(path, cfg)
    assert seconds < 30
    assert [r.termination for r in records] == ["max_plies", "engine_failure"] * 2
    failed = [r for r in records if r.failed]
    assert [r.game_id for r in failed] == [1, 3]
    assert all(r.moves == [] and r.model_score() is None for r in failed)
    assert stats["results"]["*"] == 2 and stats["games"] == 4
    events = failures(logs)
    assert len(events) == opponent.failures == 2
    assert all(e["log_level"] == "warning" and "EngineTerminatedError" in e["error"] for e in events)
    moved = [e for e in logs if e["event"] == "mover_failed"]
    assert [(e["game_id"], e["termination"]) for e in moved] == [(1, "engine_failure"), (3, "engine_failure")]
    assert all(e["mover"] == opponent.opponent_name and "EngineTerminatedError" in e["error"] for e in moved)
    result = match_result_of(records)
    assert (result.engine_failures, result.games) == (2, 2)
    assert engines_running(path) == []
    # A game cut short by the engine is still a valid PGN game, result "*".
    pgn = tmp_path / "failures.pgn"
    pgn.write_text(GAME.records_text(records))
    headers = [g.headers for g in pgn_games(pgn)]
    assert [(h["Result"], h["Termination"], h["AspTermination"]) for h in headers][1::2] == [
        ("*", "emergency", "engine_failure")
    ] * 2
    assert_pgn_extract_accepts(pgn, games=len(records), pgn_extract=pgn_extract)


@pytest.mark.timeout(60)
@pytest.mark.slow
def test_an_engine_that_hangs_fails_its_game_after_the_move_timeout_and_never_hangs_the_match(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    path = fake_engine(tmp_path, fail_at=3, how="hang")
    cfg = PlayConfig(GAME, n_games=2, max_plies=8, samples=False)
    opponent, records, _, seconds = play_against_fake(path, cfg)
    failed = [r for r in records if r.termination == "engine_failure"]
    assert failed and all(r.failed and r.model_score() is None for r in failed)
    events = failures(logs)
    assert len(events) == opponent.failures >= len(failed)
    assert all(e["error"] == "no answer within 1 s" for e in events)
    assert seconds < 1.0 * len(events) + 20, seconds  # a second per hang, and the rest is quick
    assert engines_running(path) == []  # the hung engines were killed


@pytest.mark.timeout(60)
def test_an_engine_that_always_fails_makes_the_opponent_give_up_with_a_clear_error(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    path = fake_engine(tmp_path, fail_at=1, how="exit")
    opponent = EngineOpponent(EngineConfig(path=path, move_timeout=1.0, max_failures=2))
    with pytest.raises(EngineFailed, match="failed 2 times in a row; the last: EngineTerminatedError"):
        play_games(tiny_model(), opponent, PlayConfig(GAME, n_games=4, max_plies=10, samples=False))
    assert len(failures(logs)) == 2
    assert engines_running(path) == []


@pytest.mark.timeout(60)
def test_an_engine_that_never_starts_is_killed_and_counts_as_a_failure(
    tmp_path: Path, logs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("asp.tinychess.engine._START_TIMEOUT", 1.0)
    path = fake_engine(tmp_path, how="mute")
    opponent = EngineOpponent(EngineConfig(path=path, move_timeout=1.0, max_failures=1))
    with pytest.raises(EngineFailed, match="failed 1 times in a row; the last: no answer within 1 s of starting"):
        play_games(tiny_model(), opponent, PlayConfig(GAME, n_games=2, max_plies=4, samples=False))
    assert [e["error"] for e in failures(logs)] == ["no answer within 1 s of starting"]
    assert engines_running(path) == [] and opponent.engine_pid is None


# -- Stockfish --------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("stockfish")
def test_stockfish_plays_games_from_the_openings_in_this_process_and_is_closed() -> None:
    opponent = EngineOpponent(EngineConfig(nodes=50))
    cfg = PlayConfig(GAME, n_games=4, max_plies=20, openings=MATCH_OPENINGS, samples=False, model_version=7)
    try:
        records, stats = play_games(tiny_model(), opponent, cfg)
        pid = opponent.engine_pid
        assert pid is not None
        engine = psutil.Process(pid)
        assert engine.name().startswith("stockfish")
    finally:
        opponent.close()
    assert stats["games"] == 4 and set(stats["terminations"]) <= {"rules", "max_plies"}
    assert all(r.opponent_name == "stockfish skill 0 nodes 50" and r.model_version == 7 for r in records)
    openings = GAME.openings()
    assert [(r.first, r.start) for r in records] == [
        (MODEL, openings[0]), (OPPONENT, openings[0]), (MODEL, openings[1]), (OPPONENT, openings[1])
    ]  # fmt: skip
    assert not pid_alive(engine.pid)
    assert match_result_of(records).games == 4


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("stockfish")
def test_stockfish_plays_at_a_depth_limit() -> None:
    opponent = EngineOpponent(EngineConfig(nodes=None, depth=1))
    cfg = PlayConfig(GAME, n_games=2, max_plies=12, openings=MATCH_OPENINGS, samples=False)
    try:
        records, _ = play_games(tiny_model(), opponent, cfg)
    finally:
        opponent.close()
    assert [r.opponent_name for r in records] == ["stockfish skill 0 depth 1"] * 2
    assert match_result_of(records).engine_failures == 0


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_stockfish_plays_in_spawn_workers_each_with_its_own_engine_closed_with_the_worker(
    children: Callable[[], list[int]], logs: list[dict[str, Any]]
) -> None:
    engines: dict[int, tuple[psutil.Process, int]] = {}  # pid: (process, parent pid), as seen while playing
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for p in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if p.name().startswith("stockfish"):
                        engines.setdefault(p.pid, (p, p.ppid()))
            done.wait(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    opponent = EngineOpponent(EngineConfig(nodes=50))
    cfg = PlayConfig(GAME, n_games=8, max_plies=20, openings=MATCH_OPENINGS, samples=False, batch_size=2)
    try:
        records, stats = play_games_parallel(tiny_model(), opponent, cfg, workers=2, shard_games=2)
    finally:
        done.set()
        watcher.join()
    assert [r.game_id for r in records] == list(range(8))
    assert all(r.opponent_name == "stockfish skill 0 nodes 50" and not r.failed for r in records)
    assert opponent.engine_pid is None  # the workers played: this process started no engine
    parents = [parent for _, parent in engines.values()]
    # Engines ran under the workers, one per worker for all its shards (4 shards, 2 workers).
    assert 1 <= len(parents) == len(set(parents)) <= 2 and os.getpid() not in parents, engines
    assert not any(pid_alive(pid) for pid in engines)  # closed with their workers
    assert children() == []
    assert not [e for e in logs if e["event"] == "worker_killed"]  # the workers exited by themselves


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_a_killed_process_leaves_no_stockfish_behind() -> None:
    """Stockfish quits at end of file on its input, which the kernel closes with a killed owner."""
    script = textwrap.dedent("""
        import random, time
        from asp.tinychess.engine import EngineConfig, EngineOpponent
        from asp.tinychess.game import TinyChessGame
        game = TinyChessGame()
        opponent = EngineOpponent(EngineConfig(nodes=50))
        opponent.choose(game, game.start(), random.Random(0))
        print(opponent.engine_pid, flush=True)
        time.sleep(60)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        engine = int(owner.stdout.readline())
        assert pid_alive(engine)
        owner.send_signal(signal.SIGKILL)
    finally:
        owner.kill()
        owner.wait(10)
        if owner.stdout is not None:
            owner.stdout.close()
    assert survivors([engine], seconds=10) == []
