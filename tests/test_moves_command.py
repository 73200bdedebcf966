"""``asp moves RUN --positions FILE``: the move a checkpoint plays in each position, in the
file's order, as it plays by default; a bad line is one error naming it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import pytest
from run_helpers import tiny_config, trained

from asp.app.checkpoint import checkpoint_state, write_checkpoint
from asp.app.cli import main
from asp.app.moves_command import LINE_LIMIT, read_positions

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
