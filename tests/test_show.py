"""``asp show``: a position of a PGN game as an SVG board, the last move and check highlighted.

The PGN files are asp's own (``TinyChessGame.records_text``): a fool's mate from the start position and a back-rank
mate from a custom FEN. The SVG is parsed with xml.etree: it must be well-formed, and the squares
that python-chess's chess.svg marks (``lastmove`` squares, the ``check`` gradient) are checked.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import chess
import pytest
from helpers import asp

from asp.app.cli import main
from asp.app.commands.show import write_boards
from asp.games import MODEL, OPPONENT, Record
from asp.tinychess import TinyChessGame

SVG = "{http://www.w3.org/2000/svg}"
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
BACK_RANK_FEN = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
SQUARE = 45  # chess.svg's square size, inside a 15-unit margin of coordinates
MARGIN = 15


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Game 1: fool's mate (4 plies, Black mates); game 2: Ra8# from a custom FEN (1 ply)."""
    records = [
        Record(0, chess.STARTING_FEN, [], 0.0, "rules", MODEL, MODEL, 1, moves=FOOLS_MATE),
        Record(1, BACK_RANK_FEN, [], 1.0, "rules", MODEL, OPPONENT, 1, opponent_name="random", moves=["a1a8"]),
    ]
    path = tmp_path_factory.mktemp("show") / "games.pgn"
    path.write_text(TinyChessGame().records_text(records), encoding="utf-8")
    return path


def _square(rect: ET.Element) -> str:
    """The square a chess.svg rect covers (White at the bottom, coordinates drawn)."""
    file = (int(rect.get("x", "")) - MARGIN) // SQUARE
    rank = 7 - (int(rect.get("y", "")) - MARGIN) // SQUARE
    return chess.square_name(chess.square(file, rank))


def _marks(svg: str) -> tuple[set[str], set[str], str]:
    """``(last-move squares, checked squares, the board's text)`` of well-formed SVG text."""
    root = ET.fromstring(svg)  # raises on anything that is not well-formed XML
    assert root.tag == f"{SVG}svg"
    lastmove, check = set(), set()
    for el in root.iter(f"{SVG}rect"):
        classes = el.get("class", "").split()
        if "lastmove" in classes:
            lastmove.add(_square(el))
        if "check" in classes:
            check.add(_square(el))
    text = root.findtext(f"{SVG}desc/{SVG}pre")
    assert text is not None
    return lastmove, check, text


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["show", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_final_position_highlights_the_last_move_and_the_checked_king(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mate.svg"
    code, stdout, _ = _show(capsys, str(games), "--out", str(out))
    assert code == 0
    assert stdout.count("\n") == 1 and str(out) in stdout and "game 1" in stdout
    lastmove, check, text = _marks(out.read_text(encoding="utf-8"))
    assert lastmove == {"d8", "h4"}
    assert check == {"e1"}
    board = chess.Board()
    for uci in FOOLS_MATE:
        board.push_uci(uci)
    assert text == str(board)


def test_the_default_output_is_board_svg_in_the_working_directory(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _show(capsys, str(games))[0] == 0
    assert (tmp_path / "board.svg").is_file()


def test_a_middle_ply_has_its_last_move_and_no_check(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ply2.svg"
    assert _show(capsys, str(games), "--ply", "2", "--out", str(out))[0] == 0
    lastmove, check, _ = _marks(out.read_text(encoding="utf-8"))
    assert (lastmove, check) == ({"e7", "e5"}, set())


def test_ply_zero_of_a_game_from_a_custom_fen_is_that_position(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "start.svg"
    code, stdout, _ = _show(capsys, str(games), "--game", "2", "--ply", "0", "--out", str(out))
    assert code == 0 and "start position" in stdout
    lastmove, check, text = _marks(out.read_text(encoding="utf-8"))
    assert (lastmove, check) == (set(), set())
    assert text == str(chess.Board(BACK_RANK_FEN))
    final = write_boards(TinyChessGame(), games, tmp_path / "final.svg", game_number=2).paths[0]
    final_lastmove, final_check, _ = _marks(final.read_text(encoding="utf-8"))
    assert (final_lastmove, final_check) == ({"a1", "a8"}, {"g8"})


@pytest.mark.parametrize("existing", [False, True])
def test_out_a_directory_writes_one_board_per_ply(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], existing: bool
) -> None:
    boards = tmp_path / "boards"
    if existing:
        boards.mkdir()
    code, stdout, _ = _show(capsys, str(games), "--out", str(boards) if existing else f"{boards}/")
    assert code == 0 and stdout.count("\n") == 1 and "5 boards" in stdout
    names = sorted(p.name for p in boards.iterdir())
    assert names == [f"ply-{k:03d}.svg" for k in range(len(FOOLS_MATE) + 1)]
    board = chess.Board()
    for k, name in enumerate(names):
        lastmove, _, text = _marks((boards / name).read_text(encoding="utf-8"))
        assert text == str(board)
        assert lastmove == (set() if k == 0 else {FOOLS_MATE[k - 1][:2], FOOLS_MATE[k - 1][2:]})
        if k < len(FOOLS_MATE):
            board.push_uci(FOOLS_MATE[k])


@pytest.mark.parametrize(
    ("args", "option", "allowed"),
    [
        (("--game", "3"), "--game", "1..2"),
        (("--game", "0"), "--game", "1..2"),
        (("--game", "-1"), "--game", "1..2"),
        (("--ply", "5"), "--ply", "0..4"),
        (("--ply", "-1"), "--ply", "0..4"),
        (("--game", "2", "--ply", "2"), "--ply", "0..1"),
    ],
)
def test_out_of_range_values_exit_2_naming_the_option_and_the_range(
    games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], option: str, allowed: str
) -> None:
    out = tmp_path / "never.svg"
    code, stdout, stderr = _show(capsys, str(games), *args, "--out", str(out))
    assert code == 2
    assert stderr.startswith("asp show: ") and option in stderr and allowed in stderr
    assert stdout == "" and not out.exists()


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = _show(capsys, str(tmp_path / "nope.pgn"), "--out", str(tmp_path / "x.svg"))
    assert code == 2 and "no such file" in stderr and "nope.pgn" in stderr


def test_ply_with_a_directory_exits_2(games: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = _show(capsys, str(games), "--ply", "1", "--out", f"{tmp_path}/boards/")
    assert code == 2 and "--ply" in stderr and "directory" in stderr
    assert not (tmp_path / "boards").exists()


def test_a_game_that_does_not_parse_is_an_error_naming_the_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.pgn"
    broken.write_text('[Result "*"]\n\n1. e4 e5 2. Ke3 *\n', encoding="utf-8")
    code, _, stderr = _show(capsys, str(broken), "--out", str(tmp_path / "x.svg"))
    assert code == 2 and re.match(r"asp show: GAMES.pgn: game 1 of .*broken.pgn does not parse: .*Ke3", stderr), stderr
    empty = tmp_path / "empty.pgn"
    empty.write_text("", encoding="utf-8")
    code, _, stderr = _show(capsys, str(empty), "--out", str(tmp_path / "x.svg"))
    assert code == 2 and "empty.pgn holds no games" in stderr


def test_a_tinychess_games_file_is_drawn_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before, TinyChess drew no picture of its own: only asp show of a PGN file drew a board.
    game = TinyChessGame()
    state, actions = game.start(), []
    for uci in FOOLS_MATE:
        actions.append(game.parse_action(state, uci))
        state = game.apply(state, actions[-1])
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"game": "tinychess", "start": "", "actions": actions}) + "\n", encoding="utf-8")
    code, stdout, stderr = _show(capsys, str(path), "--out", str(tmp_path / "mate.svg"))
    assert code == 0, stderr
    assert stdout.strip().splitlines()[-1].startswith(f"wrote {tmp_path / 'mate.svg'}: the position after ply 4")
    assert _marks((tmp_path / "mate.svg").read_text(encoding="utf-8"))[:2] == ({"d8", "h4"}, {"e1"})


@pytest.mark.slow
def test_asp_show_runs_as_a_command(games: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmd.svg"
    ok = asp("show", str(games), "--game", "2", "--out", str(out), seconds=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"wrote {out}: the position after ply 1 of game 2 of {games} (1 ply)"
    assert _marks(out.read_text(encoding="utf-8"))[1] == {"g8"}
    bad = asp("show", str(games), "--game", "9", seconds=60)
    assert bad.returncode == 2 and "--game must be in 1..2" in bad.stderr
