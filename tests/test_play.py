"""Batched play: legal, reproducible games that end as the rules say, with sane records."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence

import chess
import pytest
import torch
from torch import nn

from asp.errors import ConfigError
from asp.tinychess import (
    MODEL,
    OPPONENT,
    POLICY_SIZE,
    GameRecord,
    ModelConfig,
    PlayConfig,
    TinyChess,
    encode_boards,
    legal_move_indices,
    move_index,
    play_games,
)
from asp.tinychess.openings import match_openings
from asp.tinychess.play import check_play_field

CASTLING_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
CASTLING_BARE_FEN = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
EN_PASSANT_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
EN_PASSANT_SMALL_FEN = "7k/8/8/8/4pP2/8/8/K7 b - f3 0 1"  # Black: 3 king moves, e3, exf3 e.p.
# White's king is in check from the pawn that just moved two squares: exf6 e.p. is the only move.
FORCED_EN_PASSANT_FEN = "k7/8/4p2b/4Pp2/6K1/r7/8/7r w - f6 0 1"
PROMOTION_FEN = "2n4k/1P6/8/8/8/8/8/K7 w - - 0 1"
# White's king is boxed in by the queen (no check): the only legal moves are b8 and bxc8 to Q/R/B/N.
ONLY_PROMOTIONS_FEN = "2n4k/1P6/8/8/8/8/2q5/K7 w - - 0 1"
QUEEN_ODDS_FEN = "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
CHECKMATE_FEN = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"  # fool's mate
FOOLS_MATE_SETUP_FEN = "rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq - 0 2"


def _mirrored(fen: str) -> str:
    return chess.Board(fen).mirror().fen()


def _both_colours(fens: Sequence[str]) -> tuple[str, ...]:
    return tuple(fens) + tuple(_mirrored(fen) for fen in fens)


SPECIAL_OPENINGS = (chess.STARTING_FEN,) + _both_colours(
    [
        CASTLING_FEN,
        CASTLING_BARE_FEN,
        EN_PASSANT_FEN,
        EN_PASSANT_SMALL_FEN,
        FORCED_EN_PASSANT_FEN,
        PROMOTION_FEN,
        ONLY_PROMOTIONS_FEN,
    ]
)
# Endgames that random play finishes quickly; high half-move clocks cap their length.
ENDGAME_OPENINGS = _both_colours(
    [
        "k7/8/1K6/8/8/8/8/7R w - - 120 80",
        "k7/8/8/1Q6/8/8/8/K7 w - - 120 80",
        "k7/8/8/8/8/8/1q6/K7 w - - 0 1",
        "7k/5Q2/5K2/8/8/8/8/8 w - - 100 80",
        "8/8/8/8/8/2k5/1p6/K7 w - - 130 80",
        "7k/8/6K1/8/8/8/8/6R1 w - - 140 80",
        "2n4k/1P4pp/8/8/8/2p5/2q5/K7 w - - 0 1",  # only promotions; bxc8=Q# and bxc8=R# mate
    ]
)
MATERIAL = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def _model(seed: int = 0, hidden: int = 32, blocks: int = 1) -> TinyChess:
    torch.manual_seed(seed)
    return TinyChess(ModelConfig(hidden=hidden, blocks=blocks))


# Tiny networks run fastest on one thread, and do not stall when the machine is busy.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class PriorityModel(nn.Module):
    """Prefers the listed moves (written for White; Black plays them mirrored) in that order."""

    def __init__(self, preferred: Sequence[str]) -> None:
        super().__init__()
        self.indices = [move_index(chess.Move.from_uci(uci), chess.WHITE) for uci in preferred]

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = torch.zeros(len(features), POLICY_SIZE)
        for rank, index in enumerate(self.indices):
            logits[:, index] = 100.0 - rank
        return logits, torch.zeros(len(features))


def _material(board: chess.Board, colour: chess.Color) -> int:
    return sum(value * len(board.pieces(piece, colour)) for piece, value in MATERIAL.items())


def _replay(record: GameRecord) -> chess.Board:
    """The final position of ``record``, checking that every move is legal."""
    board = chess.Board(record.start_fen)
    for ply, uci in enumerate(record.moves):
        move = chess.Move.from_uci(uci)
        assert move in board.legal_moves, f"game {record.game_id} ply {ply}: {uci} is illegal in {board.fen()}"
        board.push(move)
    return board


def _check_record(record: GameRecord, cfg: PlayConfig) -> chess.Board:
    """Check everything a record promises about itself; return its final position."""
    board = _replay(record)
    assert len(record.logprobs) == len(record.moves)
    assert all(lp <= 0.0 for lp in record.logprobs)
    assert record.result in ("1-0", "0-1", "1/2-1/2")
    assert record.model_version == cfg.model_version
    outcome = board.outcome()
    if record.termination == "max_plies":
        assert len(record.moves) == cfg.max_plies
        assert outcome is None, f"game {record.game_id} was over ({outcome}) before max_plies"
        lead = _material(board, chess.WHITE) - _material(board, chess.BLACK)
        expected = (
            "1-0" if lead >= cfg.adjudication_margin else "0-1" if -lead >= cfg.adjudication_margin else "1/2-1/2"
        )
        assert record.result == expected, f"lead {lead}, margin {cfg.adjudication_margin}"
    else:
        assert len(record.moves) <= cfg.max_plies
        assert outcome is not None, f"game {record.game_id} ended by {record.termination} but is not over"
        assert record.termination == outcome.termination.name.lower()
        assert record.result == outcome.result()
    return board


def _check_all(records: list[GameRecord], cfg: PlayConfig) -> list[chess.Board]:
    assert [r.game_id for r in records] == list(range(cfg.first_game, cfg.first_game + cfg.n_games))
    if cfg.openings:
        for r in records:
            assert r.start_fen == cfg.openings[r.game_id % len(cfg.openings)]
    else:
        assert all(r.start_fen == chess.STARTING_FEN for r in records)
    return [_check_record(r, cfg) for r in records]


def _same_game(a: GameRecord, b: GameRecord) -> None:
    """Equal up to floating-point noise in the log-probabilities."""
    assert _without_logprobs(a) == _without_logprobs(b)
    assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def _without_logprobs(record: GameRecord) -> dict[str, object]:
    fields = dict(vars(record))
    del fields["logprobs"]
    return fields


# (a) legal replays, terminations as python-chess says ------------------------------------------


def test_games_from_special_openings_replay_legally() -> None:
    cfg = PlayConfig(n_games=4 * len(SPECIAL_OPENINGS), max_plies=40, batch_size=16, openings=SPECIAL_OPENINGS, seed=3)
    records, stats = play_games(_model(), None, cfg)
    _check_all(records, cfg)
    assert stats["games"] == cfg.n_games and stats["plies"] == sum(len(r.moves) for r in records)

    seen: Counter[str] = Counter()
    for record in records:
        board = chess.Board(record.start_fen)
        for uci in record.moves:
            move = chess.Move.from_uci(uci)
            colour = "white" if board.turn == chess.WHITE else "black"
            if board.is_castling(move):
                seen[f"{colour} castles"] += 1
            if board.is_en_passant(move):
                seen[f"{colour} en passant"] += 1
            if move.promotion is not None:
                seen[f"{colour} {'queens' if move.promotion == chess.QUEEN else 'under-promotes'}"] += 1
            board.push(move)
        if record.start_fen in (ONLY_PROMOTIONS_FEN, _mirrored(ONLY_PROMOTIONS_FEN)):
            assert chess.Move.from_uci(record.moves[0]).promotion is not None
        if record.start_fen in (FORCED_EN_PASSANT_FEN, _mirrored(FORCED_EN_PASSANT_FEN)):
            assert record.moves[0] in ("e5f6", "e4f3")
    for colour in ("white", "black"):
        for event in ("castles", "en passant", "under-promotes"):
            assert seen[f"{colour} {event}"] > 0, f"no game had: {colour} {event} ({dict(seen)})"
    assert seen["white queens"] + seen["black queens"] > 0, f"no game promoted to a queen ({dict(seen)})"


def test_games_end_as_python_chess_says() -> None:
    cfg = PlayConfig(n_games=3 * len(ENDGAME_OPENINGS), max_plies=200, batch_size=12, openings=ENDGAME_OPENINGS)
    records, stats = play_games(_model(), None, cfg)
    _check_all(records, cfg)
    assert stats["terminations"].get("max_plies", 0) <= cfg.n_games // 6  # most games end on the board
    # Random play may miss checkmates (test_each_termination forces them), but not these.
    assert {"stalemate", "insufficient_material", "seventyfive_moves"} <= stats["terminations"].keys()
    assert sum(stats["terminations"].values()) == cfg.n_games


@pytest.mark.parametrize(
    ("fen", "preferred", "termination", "result", "plies"),
    [
        (chess.STARTING_FEN, ["g1f3", "f3g1"], "fivefold_repetition", "1/2-1/2", 16),
        ("k7/8/1K6/8/8/8/8/7R w - - 0 1", ["h1h8"], "checkmate", "1-0", 1),
        (_mirrored("k7/8/1K6/8/8/8/8/7R w - - 0 1"), ["h1h8"], "checkmate", "0-1", 1),
        ("k7/8/8/1Q6/8/8/8/K7 w - - 0 1", ["b5b6"], "stalemate", "1/2-1/2", 1),
        (_mirrored("k7/8/8/1Q6/8/8/8/K7 w - - 0 1"), ["b5b6"], "stalemate", "1/2-1/2", 1),
        ("k7/8/8/8/8/8/8/KR6 w - - 149 100", ["b1b2"], "seventyfive_moves", "1/2-1/2", 1),
        (_mirrored("k7/8/8/8/8/8/8/KR6 w - - 149 100"), ["b1b2"], "seventyfive_moves", "1/2-1/2", 1),
        ("k7/8/8/8/8/8/1q6/K7 w - - 0 1", [], "insufficient_material", "1/2-1/2", 1),
        # 1. f3 e5 and then 2. g4 Qh4#: Black mates; White's queen has no way out to h5.
        (FOOLS_MATE_SETUP_FEN, ["d1h5", "g2g4"], "checkmate", "0-1", 2),
    ],
)
def test_each_termination(fen: str, preferred: list[str], termination: str, result: str, plies: int) -> None:
    cfg = PlayConfig(n_games=2, max_plies=100, temperature=0.0, openings=(fen,))
    records, stats = play_games(PriorityModel(preferred), None, cfg)
    _check_all(records, cfg)
    for record in records:
        assert (record.termination, record.result, len(record.moves)) == (termination, result, plies)
    assert stats["terminations"] == {termination: 2}


# (b) reproducibility ---------------------------------------------------------------------------


def test_same_config_and_weights_give_identical_records() -> None:
    cfg = PlayConfig(n_games=8, max_plies=40, batch_size=4, seed=11, openings=SPECIAL_OPENINGS[:4])
    first, _ = play_games(_model(seed=1), None, cfg)
    second, _ = play_games(_model(seed=1), None, cfg)
    assert first == second


def test_different_seeds_give_different_games() -> None:
    model = _model()
    a, _ = play_games(model, None, PlayConfig(n_games=8, max_plies=30, seed=1))
    b, _ = play_games(model, None, PlayConfig(n_games=8, max_plies=30, seed=2))
    assert sum(ra.moves != rb.moves for ra, rb in zip(a, b, strict=True)) >= 6
    # Within one call, games differ from each other too.
    assert len({tuple(r.moves) for r in a}) == len(a)


def test_different_weights_give_different_games() -> None:
    cfg = PlayConfig(n_games=4, max_plies=30, temperature=0.0)
    a, _ = play_games(_model(seed=1), None, cfg)
    b, _ = play_games(_model(seed=2), None, cfg)
    assert [r.moves for r in a] != [r.moves for r in b]


# (c) a game is the same whichever call plays it -------------------------------------------------


@pytest.mark.parametrize("with_opponent", [False, True])
def test_game_k_alone_equals_game_k_of_a_bigger_call(with_opponent: bool) -> None:
    model, opponent = _model(seed=1), (_model(seed=2) if with_opponent else None)
    openings = (chess.STARTING_FEN, CASTLING_FEN, _mirrored(EN_PASSANT_FEN))
    base = PlayConfig(n_games=8, max_plies=30, batch_size=3, seed=5, openings=openings)
    everything, _ = play_games(model, opponent, base)
    for k in (0, 1, 4, 7):
        (alone,), _ = play_games(model, opponent, dataclasses.replace(base, first_game=k, n_games=1))
        assert alone.game_id == k
        _same_game(alone, everything[k])
    middle, _ = play_games(model, opponent, dataclasses.replace(base, first_game=2, n_games=4))
    for record, expected in zip(middle, everything[2:6], strict=True):
        _same_game(record, expected)


def test_batch_size_does_not_change_games() -> None:
    model = _model(seed=3)
    games = {}
    for batch_size in (1, 5, 16):
        games[batch_size], _ = play_games(model, None, PlayConfig(n_games=6, max_plies=30, batch_size=batch_size))
    for a, b, c in zip(games[1], games[5], games[16], strict=True):
        _same_game(a, b)
        _same_game(a, c)


# (d) games against an opponent -----------------------------------------------------------------


def test_colours_split_evenly_against_an_opponent() -> None:
    cfg = PlayConfig(n_games=10, max_plies=40, first_game=3, model_version=2, opponent_version=5, seed=4)
    records, stats = play_games(_model(seed=1), _model(seed=2), cfg)
    _check_all(records, cfg)
    for record in records:
        model_white = record.game_id % 2 == 0
        assert (record.white, record.black) == ((MODEL, OPPONENT) if model_white else (OPPONENT, MODEL))
        assert record.opponent_version == 5
        assert record.model_version == 2
    assert sum(r.white == MODEL for r in records) == sum(r.black == MODEL for r in records) == 5
    assert 0.0 <= stats["score"] <= 1.0
    points = []
    for record in records:
        if record.result == "1/2-1/2":
            points.append(0.5)
        else:
            points.append(1.0 if (record.result == "1-0") == (record.white == MODEL) else 0.0)
    assert stats["score"] == pytest.approx(sum(points) / len(points))


def test_each_colour_is_played_by_its_own_network() -> None:
    model, opponent = PriorityModel(["b1c3", "c3b1"]), PriorityModel(["g1f3", "f3g1"])
    cfg = PlayConfig(n_games=4, max_plies=8, temperature=0.0)
    records, _ = play_games(model, opponent, cfg)
    _check_all(records, cfg)
    for record in records:
        white_moves, black_moves = set(record.moves[0::2]), set(record.moves[1::2])
        if record.white == MODEL:
            assert white_moves == {"b1c3", "c3b1"} and black_moves == {"g8f6", "f6g8"}
        else:
            assert white_moves == {"g1f3", "f3g1"} and black_moves == {"b8c6", "c6b8"}


def test_self_play_records() -> None:
    cfg = PlayConfig(n_games=4, max_plies=20, opponent_version=9)
    began = time.perf_counter()
    records, stats = play_games(_model(), None, cfg)
    wall = time.perf_counter() - began
    assert all(r.white == r.black == MODEL for r in records)
    assert all(r.opponent_version is None for r in records)
    assert stats["score"] is None
    # The call's own clock runs inside the wall time measured around it, and the rate is its plies over it.
    assert 0 < stats["seconds"] <= wall
    assert stats["plies"] == sum(len(r.moves) for r in records) > 0
    assert stats["plies_per_s"] == pytest.approx(stats["plies"] / stats["seconds"])


# (e) mask_illegal ------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_unmasked_sampling_counts_illegal_picks_but_plays_legal_moves(temperature: float) -> None:
    model = _model(seed=7)
    cfg = PlayConfig(n_games=6, max_plies=30, mask_illegal=False, temperature=temperature, openings=SPECIAL_OPENINGS)
    records, stats = play_games(model, None, cfg)
    _check_all(records, cfg)  # replays legally
    assert stats["illegal_attempts"] == sum(r.illegal_attempts for r in records) > 0

    masked_cfg = PlayConfig(n_games=6, max_plies=30, temperature=temperature, openings=SPECIAL_OPENINGS)
    masked, stats = play_games(model, None, masked_cfg)
    _check_all(masked, masked_cfg)
    assert stats["illegal_attempts"] == 0
    assert all(r.illegal_attempts == 0 for r in masked)


# (f) temperature -------------------------------------------------------------------------------


def _expected_logprobs(model: nn.Module, record: GameRecord, temperature: float) -> list[float]:
    """Recompute each ply's log-probability from the model, one board at a time."""
    board = chess.Board(record.start_fen)
    seen: Counter[tuple[str, bool]] = Counter([(board.board_fen(), board.turn)])
    expected = []
    for uci in record.moves:
        repetitions = seen[(board.board_fen(), board.turn)] - 1
        with torch.no_grad():
            logits, _ = model(encode_boards([board], [repetitions]))
        moves, indices = legal_move_indices(board)
        logp = torch.log_softmax(logits[0, indices] / temperature, dim=0)
        expected.append(logp[moves.index(chess.Move.from_uci(uci))].item())
        board.push_uci(uci)
        seen[(board.board_fen(), board.turn)] += 1
    return expected


@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_logprobs_are_those_of_the_tempered_legal_distribution(temperature: float) -> None:
    model = _model(seed=2).eval()
    cfg = PlayConfig(n_games=3, max_plies=24, temperature=temperature, openings=(chess.STARTING_FEN, PROMOTION_FEN))
    records, _ = play_games(model, None, cfg)
    for record in records:
        assert record.logprobs == pytest.approx(_expected_logprobs(model, record, temperature), abs=1e-4)


def test_repeated_positions_are_flagged_to_the_model() -> None:
    class Recorder(PriorityModel):
        def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            flags.extend(features[:, -2:].tolist())
            return super().forward(features)

    flags: list[list[float]] = []
    # The knights go out and back: the initial position returns after plies 4, 8 and 12.
    records, _ = play_games(Recorder(["g1f3", "f3g1"]), None, PlayConfig(n_games=1, max_plies=13, temperature=0))
    assert records[0].moves[:4] == ["g1f3", "g8f6", "f3g1", "f6g8"]
    # python-chess is the oracle: before each ply, had the position been seen once, twice before?
    # (Its key also holds castling and en passant rights, which no move of this game changes.)
    board, expected = chess.Board(), []
    for uci in records[0].moves:
        expected.append([float(board.is_repetition(2)), float(board.is_repetition(3))])
        board.push_uci(uci)
    assert flags == expected
    assert expected == [[0, 0]] * 4 + [[1, 0]] * 4 + [[1, 1]] * 5  # the game did reach both flags


def test_greedy_play_is_deterministic_and_picks_the_top_legal_move() -> None:
    model = _model(seed=4).eval()
    cfg = PlayConfig(n_games=4, max_plies=30, temperature=0.0, openings=SPECIAL_OPENINGS[:4])
    records, _ = play_games(model, None, cfg)
    _check_all(records, cfg)
    assert all(lp == 0.0 for r in records for lp in r.logprobs)
    again, _ = play_games(model, None, dataclasses.replace(cfg, seed=99, batch_size=1))
    assert [r.moves for r in again] == [r.moves for r in records]  # greedy play ignores the seed
    for record in records:
        board = chess.Board(record.start_fen)
        with torch.no_grad():
            logits, _ = model(encode_boards([board]))
        moves, indices = legal_move_indices(board)
        best = max(range(len(moves)), key=lambda i: logits[0, indices[i]].item())
        assert record.moves[0] == moves[best].uci()


# (g) adjudication at max_plies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fen", "value"),
    [
        ("5k2/p6p/8/8/8/8/P7/K7 w - - 0 1", 1),  # Black is a pawn up
        ("5kn1/p7/8/8/8/8/P7/K7 w - - 0 1", 3),  # a knight up
        ("5kb1/p7/8/8/8/8/P7/K7 w - - 0 1", 3),
        ("5kr1/p7/8/8/8/8/P7/K7 w - - 0 1", 5),
        ("5kq1/p7/8/8/8/8/P7/K7 w - - 0 1", 9),
    ],
)
@pytest.mark.parametrize("black_ahead", [True, False])
def test_adjudication_margin(fen: str, value: int, black_ahead: bool) -> None:
    # In one ply nothing can be captured, so the material lead at adjudication is known.
    fen = fen if black_ahead else _mirrored(fen)
    win = "0-1" if black_ahead else "1-0"
    for margin, result in ((value, win), (value + 1, "1/2-1/2"), (max(1, value - 1), win)):
        cfg = PlayConfig(n_games=4, max_plies=1, openings=(fen,), adjudication_margin=margin)
        records, stats = play_games(_model(), None, cfg)
        _check_all(records, cfg)
        assert [(r.termination, r.result, len(r.moves)) for r in records] == [("max_plies", result, 1)] * 4


def test_adjudicated_random_games_follow_the_material_rule() -> None:
    openings = (chess.STARTING_FEN, QUEEN_ODDS_FEN, _mirrored(QUEEN_ODDS_FEN))
    cfg = PlayConfig(n_games=12, max_plies=12, openings=openings, seed=8)
    records, stats = play_games(_model(), None, cfg)
    _check_all(records, cfg)
    assert stats["terminations"] == {"max_plies": 12}
    assert stats["length_min"] == stats["length_max"] == 12
    assert set(stats["results"]) == {"1-0", "0-1", "1/2-1/2"}

    wide = dataclasses.replace(cfg, adjudication_margin=39)
    records, stats = play_games(_model(), None, wide)
    _check_all(records, wide)
    assert stats["results"] == {"1/2-1/2": 12}


# (h) ids and order -----------------------------------------------------------------------------


def test_records_are_sorted_by_id_and_ids_are_exact() -> None:
    # One-ply games (Kxb2, insufficient material) finish long before their neighbours.
    openings = (chess.STARTING_FEN, "k7/8/8/8/8/8/1q6/K7 w - - 0 1", CASTLING_FEN)
    cfg = PlayConfig(n_games=11, first_game=5, max_plies=30, batch_size=3, openings=openings)
    records, stats = play_games(_model(), None, cfg)
    assert [r.game_id for r in records] == list(range(5, 16))
    _check_all(records, cfg)
    assert stats["games"] == 11


def test_no_games() -> None:
    records, stats = play_games(_model(), None, PlayConfig(n_games=0))
    assert records == []
    assert stats["games"] == 0 and stats["plies"] == 0


def test_more_slots_than_games() -> None:
    cfg = PlayConfig(n_games=3, max_plies=10, batch_size=64, first_game=1000)
    records, _ = play_games(_model(), None, cfg)
    _check_all(records, cfg)


# (i) bad configs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_games": -1}, "n_games"),
        ({"n_games": True}, "n_games"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_plies": 0}, "max_plies"),
        ({"temperature": -1}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"mask_illegal": "yes"}, "mask_illegal"),
        ({"mate_in_one": 1}, "mate_in_one"),
        ({"opponent_mate_in_one": "no"}, "opponent_mate_in_one"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"first_game": -3}, "first_game"),
        ({"adjudication_margin": 0}, "adjudication_margin"),
        ({"model_version": -1}, "model_version"),
        ({"openings": chess.STARTING_FEN}, "openings"),
        ({"openings": (chess.STARTING_FEN, 42)}, "openings"),
    ],
)
def test_bad_config_raises_config_error_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"PlayConfig\.{field}\b") as info:
        PlayConfig(**kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "fen",
    [
        "not a fen",
        CHECKMATE_FEN,  # a finished game
        "k7/8/1Q6/8/8/8/8/K7 b - - 0 1",  # stalemate
        "k7/8/8/8/8/8/8/K7 w - - 0 1",  # insufficient material
        "4k3/8/8/8/8/8/8/3KK3 w - - 0 1",  # two white kings
        "4k3/8/8/8/8/8/8/4R1K1 w - - 0 1",  # the side not to move is in check
    ],
)
def test_bad_openings_raise_config_error_naming_the_fen(fen: str) -> None:
    with pytest.raises(ConfigError, match=r"PlayConfig\.openings") as info:
        PlayConfig(openings=(chess.STARTING_FEN, fen))
    assert fen in str(info.value)


def test_a_bad_opening_is_refused_every_time_under_the_name_asked() -> None:
    for name in ("PlayConfig.openings", "RunConfig.openings"):
        with pytest.raises(ConfigError, match=rf"^{name}: FEN .* is a finished game"):
            check_play_field("openings", (CHECKMATE_FEN,), name=name)


def test_a_copy_of_a_config_does_not_check_its_openings_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shard of a call is a copy of its config: checking each of the bundled openings again
    for each copy stalled the event loop for tens of milliseconds at every evaluation."""
    cfg = PlayConfig(openings=match_openings())
    boards: list[str] = []
    board = chess.Board
    monkeypatch.setattr(chess, "Board", lambda fen=chess.STARTING_FEN, **kw: boards.append(fen) or board(fen, **kw))
    copies = [dataclasses.replace(cfg, first_game=first, n_games=4) for first in range(0, 64, 4)]
    assert boards == [] and all(copy.openings == cfg.openings for copy in copies)


def test_openings_list_is_accepted_as_a_tuple() -> None:
    cfg = PlayConfig(openings=[chess.STARTING_FEN, CASTLING_FEN])  # type: ignore[arg-type]
    assert cfg.openings == (chess.STARTING_FEN, CASTLING_FEN)


# (j) training flag -----------------------------------------------------------------------------


@pytest.mark.parametrize(("model_training", "opponent_training"), [(True, False), (False, True)])
def test_training_flags_are_restored(model_training: bool, opponent_training: bool) -> None:
    model, opponent = _model(seed=1), _model(seed=2)
    model.train(model_training)
    opponent.train(opponent_training)
    seen_modes = []

    def record_mode(module: nn.Module, args: object) -> None:
        seen_modes.append(module.training)

    model.register_forward_pre_hook(record_mode)
    opponent.register_forward_pre_hook(record_mode)
    play_games(model, opponent, PlayConfig(n_games=2, max_plies=6))
    assert seen_modes and not any(seen_modes)  # both played in eval mode
    assert model.training is model_training
    assert opponent.training is opponent_training
    assert all(m.training is model_training for m in model.modules())

    play_games(model, None, PlayConfig(n_games=2, max_plies=6))
    assert model.training is model_training


def test_training_flag_is_restored_when_play_fails() -> None:
    class Broken(nn.Module):
        def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            raise RuntimeError("broken network")

    broken = Broken().train()
    with pytest.raises(RuntimeError, match="broken network"):
        play_games(broken, None, PlayConfig(n_games=2, max_plies=6))
    assert broken.training


def test_a_greedy_model_against_a_random_mover_with_its_own_temperature() -> None:
    from asp.tinychess.opponents import RandomMover

    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=16, blocks=0))
    cfg = PlayConfig(n_games=6, max_plies=12, temperature=0, opponent_temperature=1.0)
    records, _ = play_games(model, RandomMover(), cfg)
    model_logps = [lp for r in records for i, lp in enumerate(r.logprobs) if (i % 2 == 0) == (r.white == "model")]
    assert set(model_logps) == {0.0}  # the model played greedily
    # The random mover sampled: the model's (deterministic) games diverge.
    assert len({tuple(r.moves) for r in records if r.white == "model"}) > 1
    with pytest.raises(ConfigError, match="opponent_temperature"):
        PlayConfig(opponent_temperature=-1.0)


# (j) mate in one -------------------------------------------------------------------------------

BACK_RANK_FEN = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8 mates
TWO_MATES_FEN = "8/RP6/8/8/8/2K1B3/8/1k6 w - - 0 1"  # b8=Q and b8=R mate


@pytest.mark.parametrize("fen", [BACK_RANK_FEN, _mirrored(BACK_RANK_FEN)])
def test_with_mate_in_one_the_model_mates_where_its_policy_would_not(fen: str) -> None:
    model = PriorityModel(["a1a2"])  # a policy that plays anything but the mate
    cfg = PlayConfig(n_games=2, max_plies=1, temperature=0.0, openings=(fen,))
    plain, _ = play_games(model, None, cfg)
    assert {r.termination for r in plain} == {"max_plies"}  # Ra2, adjudicated at the ply cap
    mating, _ = play_games(model, None, dataclasses.replace(cfg, mate_in_one=True))
    white = fen == BACK_RANK_FEN
    assert {(r.termination, r.result) for r in mating} == {("checkmate", "1-0" if white else "0-1")}


def test_a_mate_in_one_is_logged_with_the_policys_own_log_probability() -> None:
    # The policy gives Ra2 a logit of 100 and the mate 0: its log-probability is about -100.
    cfg = PlayConfig(n_games=1, max_plies=4, openings=(BACK_RANK_FEN,), mate_in_one=True)
    (record,), _ = play_games(PriorityModel(["a1a2"]), None, cfg)
    assert record.moves == ["a1a8"]
    assert record.logprobs[0] == pytest.approx(-100.0)
    assert record.samples is not None
    assert record.samples.actions.tolist() == [move_index(chess.Move.from_uci("a1a8"), chess.WHITE)]


@pytest.mark.parametrize("preferred", ["b7b8q", "b7b8r"])
def test_among_several_mates_the_policys_likeliest_is_played(preferred: str) -> None:
    cfg = PlayConfig(n_games=1, max_plies=4, openings=(TWO_MATES_FEN,), mate_in_one=True)
    (record,), _ = play_games(PriorityModel(["c3d4", preferred]), None, cfg)
    assert (record.moves, record.termination) == ([preferred], "checkmate")


@pytest.mark.parametrize(("opponent_mates", "mated_by_opponent"), [(None, 4), (False, 0), (True, 4)])
def test_a_random_opponent_mates_in_one_only_when_told(opponent_mates: bool | None, mated_by_opponent: int) -> None:
    from asp.tinychess.opponents import RandomMover

    # Black to move has a mate in one; the model plays Black in the odd games, the random mover in the even.
    cfg = PlayConfig(
        n_games=8, max_plies=1, opponent_temperature=1.0, openings=(_mirrored(BACK_RANK_FEN),),
        mate_in_one=True, opponent_mate_in_one=opponent_mates,
    )  # fmt: skip
    records, _ = play_games(_model(), RandomMover(), cfg)
    mates = Counter(r.black for r in records if r.termination == "checkmate")
    assert mates[MODEL] == 4
    assert mates[OPPONENT] == mated_by_opponent
