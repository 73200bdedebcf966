"""``asp moves RUN --positions FILE``: the move a checkpoint plays in each position, in the
file's order, as it plays by default; a bad line is one error naming it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import pytest
from run_helpers import kept_checkpoint, tiny_config, trained

from asp.app.cli import main
from asp.app.commands.moves import LINE_LIMIT, read_positions
from asp.app.run.directory import checkpoint_state, write_checkpoint
from asp.app.run_config import defaults_for

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#
OPENING = chess.STARTING_FEN
FOOLS_MATE = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"


@pytest.fixture(scope="module")
def chess_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = dataclasses.replace(tiny_config(), eval_search=8)
    path = tmp_path_factory.mktemp("run") / "checkpoint.pt"
    write_checkpoint(checkpoint_state(trained(cfg), cfg, next_iteration=1, version=1), path)
    return path


def test_tinychess_moves_are_printed_in_the_files_order(
    chess_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    positions = tmp_path / "fens.txt"
    positions.write_text(f"{MATE_IN_ONE}\n\n{OPENING}\n{MATE_IN_ONE}\n")
    assert main(["moves", str(chess_run), "--positions", str(positions)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.rsplit(" ", 1)[0] for line in lines] == [MATE_IN_ONE, OPENING, MATE_IN_ONE]
    assert lines[0].endswith(" a1a8") and lines[2].endswith(" a1a8")  # the search never misses a mate in one
    assert chess.Move.from_uci(lines[1].rsplit(" ", 1)[1]) in chess.Board(OPENING).legal_moves
    # the same again: no sampling
    assert main(["moves", str(chess_run), "--positions", str(positions)]) == 0
    assert capsys.readouterr().out.splitlines() == lines


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (f"{OPENING}\nnot a fen\n", ":2: not a position of tinychess: invalid FEN 'not a fen'"),
        (f"{FOOLS_MATE}\n", f":1: the game is over in '{FOOLS_MATE}': no move to play"),
    ],
)
def test_a_bad_line_is_one_error_naming_it(
    chess_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    positions = tmp_path / "fens.txt"
    positions.write_text(text)
    assert main(["moves", str(chess_run), "--positions", str(positions)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{positions}{error}" in err[0]


# once: the whole line was no FEN, so its first field was read alone, White to move, and a
# White move printed with exit 0
AFTER_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"


@pytest.fixture(scope="module")
def connect4_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = dataclasses.replace(defaults_for("connect4"), network={"hidden": 16, "blocks": 0}, eval_search=8)
    return kept_checkpoint(tmp_path_factory.mktemp("c4") / "checkpoint.pt", cfg, version=1)


def one_error(code: int, err: str) -> str:
    """The one line of error of a refused command (exit 2)."""
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    "line",
    [
        f"{AFTER_E4} ; bm e5",  # a FEN and something else: neither a FEN nor an EPD
        f"{AFTER_E4} bm e5;",  # an EPD's operations after a FEN's clocks
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e4;",  # a best move that is not legal
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR",  # no side to move: it would be White's
        "4k3/8/8/8/8/8/8/4KQ2 w - - 200",  # a FEN of five fields: no EPD's operation either
    ],
)
def test_a_line_is_read_whole_and_one_that_is_no_fen_nor_epd_is_refused(
    chess_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    positions = tmp_path / "lines.txt"
    positions.write_text(f"{OPENING}\n{line}\n")
    error = one_error(main(["moves", str(chess_run), "--positions", str(positions)]), capsys.readouterr().err)
    assert f"{positions}:2: not a position of tinychess: invalid FEN" in error and "nor an EPD" in error
    assert capsys.readouterr().out == ""


def test_an_epd_is_read_with_its_side_to_move_and_its_operations(
    chess_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    positions = tmp_path / "suite.epd"
    positions.write_text(
        "\ufeff" + 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5; id "after e4";\n'
        f"{AFTER_E4}\n"
        "6k1/5ppp/8/8/8/8/8/R5K1 w - - hmvc 7; fmvn 30; bm Ra8#;\n"
    )  # a byte order mark before the first line, as some editors write
    assert main(["moves", str(chess_run), "--positions", str(positions)]) == 0
    lines = [line.rsplit(" ", 1) for line in capsys.readouterr().out.splitlines()]
    assert [fen for fen, _ in lines] == [chess.Board(AFTER_E4).fen()] * 2 + [MATE_IN_ONE.replace("0 1", "7 30")]
    for fen, move in lines[:2]:
        assert chess.Move.from_uci(move) in chess.Board(fen).legal_moves  # Black's
    assert lines[2][1] == "a1a8"


@pytest.mark.parametrize("text", ["", "\n \n\t\n", "\ufeff\n"])
def test_a_file_without_a_position_is_an_error(
    chess_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    positions = tmp_path / "none.txt"
    positions.write_text(text)
    error = one_error(main(["moves", str(chess_run), "--positions", str(positions)]), capsys.readouterr().err)
    assert error == f"asp moves: --positions {positions}: holds no position (one a line)"


def test_a_connect4_line_is_its_columns_and_its_score_as_the_solver_test_sets_write_them(
    connect4_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    positions = tmp_path / "Test_L3_R1"
    positions.write_text("\ufeff445566 6\n4453 -2\n4453\n")
    assert main(["moves", str(connect4_run), "--positions", str(positions)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] in ("445566 3", "445566 7")  # either wins at once
    assert [line.split()[0] for line in out[1:]] == ["4453", "4453"] and out[1] == out[2]
    for line, got in [("4453 5566", "got '5566'"), ("4453 -2 x", "got 3 fields"), ("4453 WDLL-DD", "got 'WDLL-DD'")]:
        positions.write_text(f"44\n{line}\n")
        error = one_error(main(["moves", str(connect4_run), "--positions", str(positions)]), capsys.readouterr().err)
        assert f"{positions}:2: not a position of connect4: {line!r}: a line is COLUMNS SCORE or COLUMNS" in error
        assert got in error


def test_positions_are_read_a_bounded_line_at_a_time(tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_bytes(b"4" * (LINE_LIMIT + 10))
    with pytest.raises(Exception, match=f"{long}:1: a line of over {LINE_LIMIT} bytes is no position"):
        read_positions(long)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\n")
    with pytest.raises(Exception, match=f"{binary}:1: not text"):
        read_positions(binary)
    assert read_positions(Path("/dev/null")) == []


def test_every_line_is_read_past_a_million_blank_ones(tmp_path: Path) -> None:
    positions = tmp_path / "sparse.txt"
    positions.write_text(f"{OPENING}\n" + "\n" * 1_000_001 + f"{AFTER_E4}\ngarbage\n")
    assert read_positions(positions) == [(1, OPENING), (1_000_003, AFTER_E4), (1_000_004, "garbage")]
