"""Game records: PGN export, atomic writing, summaries, and plain-data round trips."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import chess
import chess.pgn
import pytest
import torch
from helpers import pgn_games

from asp.app.pgn import write_pgn
from asp.errors import ConfigError
from asp.tinychess import (
    MODEL,
    OPPONENT,
    GameRecord,
    ModelConfig,
    PlayConfig,
    TinyChess,
    play_games,
    summarise,
    to_pgn,
)
from asp.tinychess.opponents import RandomMover
from asp.tinychess.records import PGN_TERMINATION

CASTLED_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
ONLY_PROMOTIONS_FEN = "2n4k/1P6/8/8/8/8/2q5/K7 w - - 0 1"
EP_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"


# Tiny networks run fastest on one thread, and do not stall when the machine is busy.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _record(game_id: int = 0, moves: list[str] | None = None, **kwargs: object) -> GameRecord:
    fields: dict[str, object] = {
        "game_id": game_id,
        "moves": ["e2e4", "e7e5"] if moves is None else moves,
        "result": "1/2-1/2",
        "termination": "max_plies",
        "start_fen": chess.STARTING_FEN,
        "white": MODEL,
        "black": MODEL,
        "model_version": 3,
    }
    fields.update(kwargs)
    return GameRecord(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def played() -> list[GameRecord]:
    """Real games: self-play and games against an opponent, from several starts."""
    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=32, blocks=1))
    opponent = TinyChess(ModelConfig(hidden=32, blocks=1))
    openings = (chess.STARTING_FEN, CASTLED_FEN, ONLY_PROMOTIONS_FEN, EP_FEN)
    self_play, _ = play_games(model, None, PlayConfig(n_games=8, max_plies=30, openings=openings, seed=1))
    cfg = PlayConfig(n_games=8, max_plies=30, openings=openings, seed=2, first_game=8, opponent_version=4)
    versus, _ = play_games(model, opponent, cfg)
    return self_play + versus


def test_to_pgn_round_trips_through_python_chess(played: list[GameRecord]) -> None:
    for record in played:
        text = to_pgn(record)
        assert max(len(line) for line in text.splitlines()) <= 80  # PGN's export format
        (game,) = pgn_games(text)
        assert [m.uci() for m in game.mainline_moves()] == record.moves
        headers = game.headers
        assert headers["Result"] == record.result
        assert headers["Termination"] == PGN_TERMINATION[record.termination]
        assert headers["AspTermination"] == record.termination
        assert headers["ModelVersion"] == str(record.model_version)
        assert record.white in headers["White"] and record.black in headers["Black"]
        assert headers["Round"] == str(record.game_id)
        if record.start_fen == chess.STARTING_FEN:
            assert "SetUp" not in headers and "FEN" not in headers
        else:
            assert headers["SetUp"] == "1"
            assert game.board().fen() == chess.Board(record.start_fen).fen()


def test_pgn_names_the_players_and_their_versions() -> None:
    record = _record(white=OPPONENT, black=MODEL, model_version=12, opponent_version=9, result="0-1")
    headers = pgn_games(to_pgn(record))[0].headers
    assert "opponent" in headers["White"] and "9" in headers["White"]
    assert "model" in headers["Black"] and "12" in headers["Black"]
    assert headers["Result"] == "0-1"
    assert to_pgn(record).rstrip().endswith("0-1")


def test_pgn_of_a_non_standard_start_has_setup_and_fen_headers() -> None:
    record = _record(moves=["b7b8n", "h8g7"], start_fen=ONLY_PROMOTIONS_FEN, termination="max_plies")
    (game,) = pgn_games(to_pgn(record))
    assert game.headers["SetUp"] == "1"
    assert game.headers["FEN"] == ONLY_PROMOTIONS_FEN
    assert [m.uci() for m in game.mainline_moves()] == ["b7b8n", "h8g7"]
    assert "b8=N" in to_pgn(record)


def test_pgn_has_the_seven_tag_roster_first_then_asp_tags() -> None:
    headers = pgn_games(to_pgn(_record()))[0].headers
    assert list(headers)[:7] == ["Event", "Site", "Date", "Round", "White", "Black", "Result"]
    assert headers["Site"] == "asp" and headers["Event"] == "asp self-play"
    assert all(headers[t] != "?" for t in headers)
    assert {"Termination", "PlyCount", "GameId", "ModelVersion", "Opponent", "AspTermination"} <= set(headers)
    assert "OpponentVersion" not in headers  # self-play: no opponent weights


def test_pgn_termination_is_a_standard_value_and_asp_keeps_its_word() -> None:
    standard = {"abandoned", "adjudication", "death", "emergency", "normal", "rules infraction", "time forfeit",
                "unterminated"}  # fmt: skip
    assert set(PGN_TERMINATION.values()) <= standard
    for word, expected in [("checkmate", "normal"), ("max_plies", "adjudication"), ("engine_failure", "emergency"),
                           ("a_word_asp_adds_later", "adjudication")]:  # fmt: skip
        headers = pgn_games(to_pgn(_record(termination=word)))[0].headers
        assert (headers["Termination"], headers["AspTermination"]) == (expected, word)


def test_self_play_names_the_opponent_self() -> None:
    headers = pgn_games(to_pgn(_record(model_version=7)))[0].headers
    assert headers["Opponent"] == "self"
    assert headers["White"] == headers["Black"] == "asp model v7"
    assert headers["ModelVersion"] == "7"


def test_the_opponent_description_names_the_opponent_in_its_tag_and_as_its_player() -> None:
    record = _record(white=OPPONENT, black=MODEL, model_version=5, opponent_version=0, result="0-1")
    headers = pgn_games(to_pgn(record, opponent="stockfish skill 0 nodes 100"))[0].headers
    assert headers["Opponent"] == headers["White"] == "stockfish skill 0 nodes 100"
    assert headers["Black"] == "asp model v5"
    assert headers["OpponentVersion"] == "0"
    named = dataclasses.replace(record, opponent_name="asp model v3")
    assert pgn_games(to_pgn(named))[0].headers["Opponent"] == "asp model v3"
    # The argument wins over the record's own description.
    assert pgn_games(to_pgn(named, opponent="random"))[0].headers["White"] == "random"


@pytest.mark.parametrize("bad", ["", 'say "hi"', "back\\slash", "two\nlines", "x" * 201])
def test_a_value_pgn_cannot_hold_raises_config_error_naming_the_field(bad: str) -> None:
    record = _record(white=OPPONENT, black=MODEL, opponent_version=1)
    with pytest.raises(ConfigError, match="opponent"):
        to_pgn(record, opponent=bad)
    with pytest.raises(ConfigError, match="GameRecord.opponent_name"):
        to_pgn(dataclasses.replace(record, opponent_name=bad))
    with pytest.raises(ConfigError, match="event"):
        to_pgn(record, event=bad)


def test_write_pgn_describes_evaluation_games(tmp_path: Path) -> None:
    model = TinyChess(ModelConfig(hidden=16, blocks=1))
    records, _ = play_games(model, RandomMover(), PlayConfig(n_games=2, max_plies=6, model_version=2))
    games = pgn_games(write_pgn(records, tmp_path / "eval.pgn", event="asp evaluation", opponent="random")
                        .read_text(encoding="utf-8"))  # fmt: skip
    assert [g.headers["Event"] for g in games] == ["asp evaluation"] * 2
    assert [g.headers["Opponent"] for g in games] == ["random"] * 2
    assert {g.headers["White"] for g in games} == {g.headers["Black"] for g in games} == {"random", "asp model v2"}


def test_to_pgn_event_name() -> None:
    assert pgn_games(to_pgn(_record(), event="league round 3"))[0].headers["Event"] == "league round 3"


def test_write_pgn_round_trip_and_atomic(tmp_path: Path, played: list[GameRecord]) -> None:
    target = tmp_path / "games.pgn"
    returned = write_pgn(played, target)
    assert returned == target
    assert target.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["games.pgn"]  # no temp file left behind
    games = pgn_games(target.read_text(encoding="utf-8"))
    assert [[m.uci() for m in g.mainline_moves()] for g in games] == [r.moves for r in played]
    assert [g.headers["Result"] for g in games] == [r.result for r in played]


def test_write_pgn_replaces_an_existing_file(tmp_path: Path, played: list[GameRecord]) -> None:
    target = tmp_path / "games.pgn"
    target.write_text("old contents that are not PGN\n" * 100, encoding="utf-8")
    write_pgn(played[:2], str(target))
    games = pgn_games(target.read_text(encoding="utf-8"))
    assert [[m.uci() for m in g.mainline_moves()] for g in games] == [r.moves for r in played[:2]]
    assert "old contents" not in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["games.pgn"]


def test_write_pgn_accepts_an_iterator(tmp_path: Path, played: list[GameRecord]) -> None:
    target = write_pgn(iter(played[:3]), tmp_path / "three.pgn")
    assert len(pgn_games(target.read_text(encoding="utf-8"))) == 3


def test_summarise_hand_made_records() -> None:
    records = [
        _record(0, ["e2e4", "e7e5"], result="1-0", termination="checkmate", white=MODEL, black=OPPONENT),
        _record(1, ["e2e4"] * 4, result="1-0", termination="max_plies", white=OPPONENT, black=MODEL),
        _record(2, ["e2e4"] * 6, result="1/2-1/2", termination="stalemate", white=MODEL, black=OPPONENT,
                illegal_attempts=5),
        _record(3, ["e2e4"] * 3, result="0-1", termination="checkmate", white=OPPONENT, black=MODEL,
                illegal_attempts=2),
    ]  # fmt: skip
    stats = summarise(records)
    assert stats == {
        "games": 4,
        "plies": 15,
        "length_min": 2,
        "length_mean": 3.75,
        "length_max": 6,
        "results": {"1-0": 2, "1/2-1/2": 1, "0-1": 1},
        "terminations": {"checkmate": 2, "max_plies": 1, "stalemate": 1},
        "score": pytest.approx((1 + 0 + 0.5 + 1) / 4),
        "illegal_attempts": 7,
    }
    assert [r.model_score() for r in records] == [1.0, 0.0, 0.5, 1.0]


def test_an_unfinished_game_counts_for_neither_side() -> None:
    failed = [
        _record(0, ["e2e4"], result="*", termination="engine_failure", white=MODEL, black=OPPONENT),
        _record(1, ["e2e4"], result="*", termination="engine_failure", white=OPPONENT, black=MODEL),
    ]
    won = _record(2, ["e2e4"], result="1-0", termination="checkmate", white=MODEL, black=OPPONENT)
    assert [r.model_score() for r in failed] == [None, None]
    assert summarise([*failed, won])["score"] == 1.0  # not 0.5 or 1/3: the failures are left out
    assert summarise(failed)["score"] is None


def test_summarise_self_play_has_no_score() -> None:
    stats = summarise([_record(0, result="1-0"), _record(1, ["d2d4"])])
    assert stats["score"] is None
    assert stats["games"] == 2 and stats["plies"] == 3
    assert _record().model_score() is None


def test_summarise_no_records() -> None:
    stats = summarise([])
    assert stats["games"] == 0 and stats["plies"] == 0
    assert stats["length_min"] == 0 and stats["length_max"] == 0 and stats["length_mean"] == 0.0
    assert stats["results"] == {} and stats["terminations"] == {}
    assert stats["score"] is None and stats["illegal_attempts"] == 0


def test_game_record_pickles(played: list[GameRecord]) -> None:
    for record in played:
        assert pickle.loads(pickle.dumps(record)) == record


def test_game_record_asdict_is_json_serialisable(played: list[GameRecord]) -> None:
    for record in [*played, dataclasses.replace(played[-1], opponent_name="random")]:
        text = json.dumps(dataclasses.asdict(record.plain()))
        assert GameRecord(**json.loads(text)) == record.plain()


def test_a_record_without_the_newer_fields_still_builds_and_exports() -> None:
    fields = {"game_id": 0, "moves": ["e2e4"], "result": "1/2-1/2", "termination": "max_plies",
              "start_fen": chess.STARTING_FEN, "white": MODEL, "black": OPPONENT, "model_version": 1}  # fmt: skip
    record = GameRecord(**fields)  # type: ignore[arg-type]
    assert record.opponent_name is None and record.plain() == record
    assert pgn_games(to_pgn(record))[0].headers["Black"] == "opponent"
