"""Game records: TinyChess's PGN export, summaries, and plain-data round trips."""

from __future__ import annotations

import dataclasses
import json
import pickle

import chess
import chess.pgn
import pytest
import torch
from helpers import pgn_games

from asp.errors import ConfigError
from asp.games import MODEL, OPPONENT, PlayConfig, RandomMover, Record, play_games, summarise
from asp.games.records import RESULTS
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame
from asp.tinychess.pgn import PGN_TERMINATION, to_pgn

CASTLED_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
ONLY_PROMOTIONS_FEN = "2n4k/1P6/8/8/8/8/2q5/K7 w - - 0 1"
EP_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"


# Tiny networks run fastest on one thread, and do not stall when the machine is busy.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


GAME = TinyChessGame()


def _record(game_id: int = 0, moves: list[str] | None = None, **kwargs: object) -> Record:
    """A record of chess with UCI ``moves`` (their actions beside them)."""
    fields: dict[str, object] = {
        "game_id": game_id,
        "start": chess.STARTING_FEN,
        "actions": [],
        "result": 0.5,
        "termination": "max_plies",
        "first": MODEL,
        "second": MODEL,
        "model_version": 3,
    }
    fields.update(kwargs)
    state = GAME.parse_state(str(fields["start"]))
    for uci in ["e2e4", "e7e5"] if moves is None else moves:
        action = GAME.parse_action(state, uci)
        fields["actions"].append(action)  # type: ignore[attr-defined]
        state = GAME.apply(state, action)
    fields["moves"] = ["e2e4", "e7e5"] if moves is None else moves
    return Record(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def played() -> list[Record]:
    """Real games: self-play and games against an opponent, from several starts."""
    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=32, blocks=1))
    opponent = TinyChess(ModelConfig(hidden=32, blocks=1))
    openings = (chess.STARTING_FEN, CASTLED_FEN, ONLY_PROMOTIONS_FEN, EP_FEN)
    self_play, _ = play_games(model, None, PlayConfig(GAME, n_games=8, max_plies=30, openings=openings, seed=1))
    cfg = PlayConfig(GAME, n_games=8, max_plies=30, openings=openings, seed=2, first_game=8, opponent_version=4)
    versus, _ = play_games(model, opponent, cfg)
    return self_play + versus


def _replayed(record: Record) -> chess.Board:
    board = chess.Board(record.start)
    for uci in record.moves:
        board.push_uci(uci)
    return board


def test_to_pgn_round_trips_through_python_chess(played: list[Record]) -> None:
    assert {r.termination for r in played} >= {"rules", "max_plies"}
    for record in played:
        text = to_pgn(record)
        assert max(len(line) for line in text.splitlines()) <= 80  # PGN's export format
        (game,) = pgn_games(text)
        assert [m.uci() for m in game.mainline_moves()] == record.moves
        headers = game.headers
        assert headers["Result"] == RESULTS[record.result]
        outcome = _replayed(record).outcome()
        word = outcome.termination.name.lower() if record.termination == "rules" and outcome else record.termination
        assert (headers["Termination"], headers["AspTermination"]) == (PGN_TERMINATION[word], word)
        assert headers["ModelVersion"] == str(record.model_version)
        assert record.first in headers["White"] and record.second in headers["Black"]
        assert headers["Round"] == str(record.game_id)
        assert headers["Event"] == ("asp self-play" if record.first == record.second else "asp match")
        if record.start == chess.STARTING_FEN:
            assert "SetUp" not in headers and "FEN" not in headers
        else:
            assert headers["SetUp"] == "1"
            assert game.board().fen() == chess.Board(record.start).fen()


def test_a_record_without_its_moves_in_uci_is_written_from_its_actions(played: list[Record]) -> None:
    for record in played[:4]:
        assert to_pgn(dataclasses.replace(record, moves=[])) == to_pgn(record)


def test_pgn_names_the_players_and_their_versions() -> None:
    record = _record(first=OPPONENT, second=MODEL, model_version=12, opponent_version=9, result=0.0)
    headers = pgn_games(to_pgn(record))[0].headers
    assert "opponent" in headers["White"] and "9" in headers["White"]
    assert "model" in headers["Black"] and "12" in headers["Black"]
    assert headers["Result"] == "0-1"
    assert to_pgn(record).rstrip().endswith("0-1")


def test_pgn_of_a_non_standard_start_has_setup_and_fen_headers() -> None:
    record = _record(moves=["b7b8n", "h8g7"], start=ONLY_PROMOTIONS_FEN, termination="max_plies")
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
    mate = ["f2f3", "e7e5", "g2g4", "d8h4"]
    for moves, word, expected, asp_word in [
        (mate, "rules", "normal", "checkmate"),
        (None, "max_plies", "adjudication", "max_plies"),
        (None, "engine_failure", "emergency", "engine_failure"),
        (None, "a_word_asp_adds_later", "adjudication", "a_word_asp_adds_later"),
    ]:
        headers = pgn_games(to_pgn(_record(moves=moves, termination=word)))[0].headers
        assert (headers["Termination"], headers["AspTermination"]) == (expected, asp_word)


def test_a_game_a_mover_failed_in_has_no_result() -> None:
    record = _record(termination="engine_failure", first=MODEL, second=OPPONENT, opponent_name="stockfish")
    assert pgn_games(to_pgn(record))[0].headers["Result"] == "*"


def test_self_play_names_the_opponent_self() -> None:
    headers = pgn_games(to_pgn(_record(model_version=7)))[0].headers
    assert headers["Opponent"] == "self"
    assert headers["White"] == headers["Black"] == "asp model v7"
    assert headers["ModelVersion"] == "7"


def test_the_opponent_description_names_the_opponent_in_its_tag_and_as_its_player() -> None:
    record = _record(first=OPPONENT, second=MODEL, model_version=5, opponent_version=0, result=0.0)
    headers = pgn_games(to_pgn(record, opponent="stockfish skill 0 nodes 100"))[0].headers
    assert headers["Opponent"] == headers["White"] == "stockfish skill 0 nodes 100"
    assert headers["Black"] == "asp model v5"
    assert headers["OpponentVersion"] == "0"
    assert headers["Event"] == "asp match"
    named = dataclasses.replace(record, opponent_name="asp model v3")
    assert pgn_games(to_pgn(named))[0].headers["Opponent"] == "asp model v3"
    # The argument wins over the record's own description.
    assert pgn_games(to_pgn(named, opponent="random"))[0].headers["White"] == "random"


@pytest.mark.parametrize("bad", ["", 'say "hi"', "back\\slash", "two\nlines", "x" * 201])
def test_a_value_pgn_cannot_hold_raises_config_error_naming_the_field(bad: str) -> None:
    record = _record(first=OPPONENT, second=MODEL, opponent_version=1)
    with pytest.raises(ConfigError, match="opponent"):
        to_pgn(record, opponent=bad)
    with pytest.raises(ConfigError, match="Record.opponent_name"):
        to_pgn(dataclasses.replace(record, opponent_name=bad))
    with pytest.raises(ConfigError, match="event"):
        to_pgn(record, event=bad)


def test_the_games_text_names_games_against_a_mover_by_its_name() -> None:
    model = TinyChess(ModelConfig(hidden=16, blocks=1))
    records, _ = play_games(model, RandomMover(), PlayConfig(GAME, n_games=2, max_plies=6, model_version=2))
    games = pgn_games(GAME.records_text(records))
    assert [g.headers["Event"] for g in games] == ["asp match"] * 2
    assert [g.headers["Opponent"] for g in games] == ["random"] * 2
    assert {g.headers["White"] for g in games} == {g.headers["Black"] for g in games} == {"random", "asp model v2"}


def test_to_pgn_event_name() -> None:
    assert pgn_games(to_pgn(_record(), event="league round 3"))[0].headers["Event"] == "league round 3"


def test_summarise_hand_made_records() -> None:
    records = [
        _record(0, ["e2e4", "e7e5"], result=1.0, termination="rules", first=MODEL, second=OPPONENT),
        _record(1, ["e2e4", "e7e5", "g1f3", "b8c6"], result=1.0, termination="max_plies", first=OPPONENT, second=MODEL),
        _record(2, ["e2e4", "e7e5", "d2d4"], result=0.5, termination="rules", first=MODEL, second=OPPONENT),
        _record(3, ["e2e4"], result=0.0, termination="rules", first=OPPONENT, second=MODEL),
    ]
    stats = summarise(records)
    assert stats == {
        "games": 4,
        "plies": 10,
        "length_min": 1,
        "length_mean": 2.5,
        "length_max": 4,
        "results": {"1-0": 2, "1/2-1/2": 1, "0-1": 1},
        "terminations": {"rules": 3, "max_plies": 1},
        "score": pytest.approx((1 + 0 + 0.5 + 1) / 4),
    }
    assert [r.model_score() for r in records] == [1.0, 0.0, 0.5, 1.0]


def test_an_unfinished_game_counts_for_neither_side() -> None:
    failed = [
        _record(0, ["e2e4"], termination="engine_failure", first=MODEL, second=OPPONENT),
        _record(1, ["e2e4"], termination="engine_failure", first=OPPONENT, second=MODEL),
    ]
    won = _record(2, ["e2e4"], result=1.0, termination="rules", first=MODEL, second=OPPONENT)
    assert [r.model_score() for r in failed] == [None, None]
    assert summarise([*failed, won])["score"] == 1.0  # not 0.5 or 1/3: the failures are left out
    assert summarise([*failed, won])["results"] == {"*": 2, "1-0": 1}
    assert summarise(failed)["score"] is None


def test_summarise_self_play_has_no_score() -> None:
    stats = summarise([_record(0, result=1.0), _record(1, ["d2d4"])])
    assert stats["score"] is None
    assert stats["games"] == 2 and stats["plies"] == 3
    assert _record().model_score() is None


def test_summarise_no_records() -> None:
    stats = summarise([])
    assert stats["games"] == 0 and stats["plies"] == 0
    assert stats["length_min"] == 0 and stats["length_max"] == 0 and stats["length_mean"] == 0.0
    assert stats["results"] == {} and stats["terminations"] == {}
    assert stats["score"] is None


def test_a_record_pickles_with_its_samples(played: list[Record]) -> None:
    assert played[0].samples is not None
    for record in played:
        assert pickle.loads(pickle.dumps(record)) == record


def test_a_records_plain_form_is_json_and_builds_it_again(played: list[Record]) -> None:
    for record in [*played, dataclasses.replace(played[-1], opponent_name="random")]:
        text = json.dumps(record.plain())
        assert Record(**json.loads(text)) == dataclasses.replace(record, samples=None)
