"""Every kind of PGN file asp exports passes pgn-extract, a PGN tool independent of python-chess.

The files are made for real: self-play games and games against the random mover through
``TinyChessGame.records_text``, the file ``asp play`` writes, and the ``games/iter-0000.pgn`` of a one-iteration
``asp train``. pgn-extract (Debian's ``pgn-extract``, in /usr/games) replays every move; the
check fails on any diagnostic it writes, on a game it drops, and on a game that it reads
differently (tags or moves) from python-chess.
"""

from __future__ import annotations

from pathlib import Path

import chess
import chess.pgn
import pytest
import torch
from helpers import asp, assert_pgn_extract_accepts, pgn_games

from asp.app.cli import main
from asp.games import PlayConfig, RandomMover, Record, play_games
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

OPENINGS = (
    chess.STARTING_FEN,
    "2n4k/1P6/8/8/8/8/2q5/K7 w - - 0 1",  # promotions only
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",  # castling both ways
)

GAME = TinyChessGame()

# Tiny networks run fastest on one thread, and do not stall when the machine is busy.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def write_pgn(records: list[Record], path: Path) -> Path:
    """The games as the PGN file asp writes: TinyChessGame.records_text."""
    path.write_text(GAME.records_text(records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model() -> TinyChess:
    torch.manual_seed(0)
    return TinyChess(ModelConfig(hidden=32, blocks=1))


def test_self_play_games_pass(model: TinyChess, tmp_path: Path, pgn_extract: str) -> None:
    records, _ = play_games(model, None, PlayConfig(GAME, n_games=6, max_plies=40, openings=OPENINGS, seed=1))
    path = write_pgn(records, tmp_path / "selfplay.pgn")
    assert_pgn_extract_accepts(path, games=6, pgn_extract=pgn_extract)


def test_games_against_the_random_mover_pass(model: TinyChess, tmp_path: Path, pgn_extract: str) -> None:
    cfg = PlayConfig(GAME, n_games=8, max_plies=40, openings=OPENINGS, seed=2, model_version=3)
    records, _ = play_games(model, RandomMover(), cfg)
    path = write_pgn(records, tmp_path / "eval.pgn")
    assert_pgn_extract_accepts(path, games=8, pgn_extract=pgn_extract)
    assert {g.headers["Opponent"] for g in pgn_games(path)} == {"random"}


def test_games_that_end_by_the_rules_pass(tmp_path: Path, pgn_extract: str) -> None:
    """Checkmate and stalemate, whose Result pgn-extract checks against the board."""
    torch.manual_seed(1)
    mover = RandomMover()
    # A random mover from positions one move from mate or stalemate, so that both happen.
    mates = ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "7k/5Q2/6K1/8/8/8/8/8 w - - 0 1")
    records, _ = play_games(mover, None, PlayConfig(GAME, n_games=16, max_plies=6, openings=mates, seed=3))
    path = write_pgn(records, tmp_path / "endings.pgn")
    endings = {g.headers["AspTermination"] for g in pgn_games(path)}
    assert {"checkmate", "stalemate"} <= endings, endings
    assert_pgn_extract_accepts(path, games=16, pgn_extract=pgn_extract)


def test_the_file_asp_play_writes_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str], pgn_extract: str) -> None:
    out = tmp_path / "play.pgn"
    argv = ["play", "--games", "3", "--max-plies", "30", "--workers", "1", "--seed", "1", "--out", str(out)]
    assert main(argv) == 0
    assert str(out) in capsys.readouterr().out
    assert_pgn_extract_accepts(out, games=3, pgn_extract=pgn_extract)


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_the_games_asp_train_writes_pass(tmp_path: Path, pgn_extract: str) -> None:
    run = tmp_path / "run"
    argv = ["train", "--iterations", "1", "--games", "4", "--max-plies", "20", "--eval-games", "4", "--hidden", "16"]
    result = asp(*argv, "--workers", "1", "--no-progress", "--run-dir", str(run))
    assert result.returncode == 0, result.stdout + result.stderr
    assert_pgn_extract_accepts(run / "games" / "iter-0000.pgn", games=4, pgn_extract=pgn_extract)


@pytest.mark.parametrize(
    ("movetext", "result", "diagnostic"),
    [
        ("1. e4 e5 2. Ke3 Nc6", "1-0", "Failed to make move 2. Ke3"),  # an illegal move
        ("1. f3 e5 2. g4 Qh4#", "1-0", "inconsistent with checkmate"),  # a Result that contradicts the mate
    ],
)
def test_the_check_fails_on_a_broken_file(
    tmp_path: Path, movetext: str, result: str, diagnostic: str, pgn_extract: str
) -> None:
    good = write_pgn(
        play_games(RandomMover(), None, PlayConfig(GAME, n_games=1, max_plies=10))[0], tmp_path / "good.pgn"
    ).read_text(encoding="utf-8")
    broken = tmp_path / "broken.pgn"
    tags = "".join(f'[{tag} "{value}"]\n' for tag, value in [("Event", "x"), ("Site", "asp"), ("Date", "2025.01.01"),
                   ("Round", "1"), ("White", "a"), ("Black", "b"), ("Result", result)])  # fmt: skip
    broken.write_text(good + "\n" + tags + "\n" + f"{movetext} {result}\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=diagnostic):
        assert_pgn_extract_accepts(broken, games=2, pgn_extract=pgn_extract)
    assert_pgn_extract_accepts(tmp_path / "good.pgn", games=1, pgn_extract=pgn_extract)  # the game around it was fine
