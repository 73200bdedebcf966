"""Chess through the game seam (asp.games.play_games playing TinyChessGame): games from
special openings replay legally and end as python-chess says, cut games are adjudicated by
material, each side is played by its own network, and repetitions reach the network."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

import chess
import pytest
import torch
from torch import nn

from asp.errors import ConfigError
from asp.games import MODEL, OPPONENT, PlayConfig, Record, play_games
from asp.games.records import RESULTS
from asp.tinychess import POLICY_SIZE, ModelConfig, TinyChess, move_index
from asp.tinychess.game import TinyChessGame

GAME = TinyChessGame()

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
BACK_RANK_FEN = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8 mates


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


def _white_result(record: Record) -> str:
    """The record's result in chess's words: its first player (TinyChessGame's player 0) is
    White, also from a start with Black to move."""
    return RESULTS[record.result]


def _replay(record: Record) -> chess.Board:
    """The final position of ``record``, checking that every move is legal and is its action."""
    board = chess.Board(record.start)
    assert len(record.actions) == len(record.moves)
    for ply, (uci, action) in enumerate(zip(record.moves, record.actions, strict=True)):
        move = chess.Move.from_uci(uci)
        assert move in board.legal_moves, f"game {record.game_id} ply {ply}: {uci} is illegal in {board.fen()}"
        assert action == move_index(move, board.turn)
        board.push(move)
    return board


def _check_record(record: Record, cfg: PlayConfig) -> chess.Board:
    """Check everything a record promises about itself; return its final position."""
    board = _replay(record)
    assert record.model_version == cfg.model_version
    outcome = board.outcome()
    if record.termination == "max_plies":
        assert len(record.moves) == cfg.max_plies
        assert outcome is None, f"game {record.game_id} was over ({outcome}) before max_plies"
        assert isinstance(cfg.game, TinyChessGame)
        lead, margin = _material(board, chess.WHITE) - _material(board, chess.BLACK), cfg.game.adjudication_margin
        expected = "1-0" if lead >= margin else "0-1" if -lead >= margin else "1/2-1/2"
        assert _white_result(record) == expected, f"lead {lead}, margin {margin}"
    else:
        assert record.termination == "rules" and len(record.moves) <= cfg.max_plies
        assert outcome is not None, f"game {record.game_id} ended by the rules but is not over"
        assert _white_result(record) == outcome.result()
    return board


def _check_all(records: list[Record], cfg: PlayConfig) -> list[chess.Board]:
    assert [r.game_id for r in records] == list(range(cfg.first_game, cfg.first_game + cfg.n_games))
    for r in records:
        assert r.start == (cfg.openings[r.game_id % len(cfg.openings)] if cfg.openings else chess.STARTING_FEN)
    return [_check_record(r, cfg) for r in records]


# legal replays, ends as python-chess says ----------------------------------------------------


def test_games_from_special_openings_replay_legally() -> None:
    # Batches of 16 from game 5 on: games that end early are still returned in the order of their ids.
    n_games = 4 * len(SPECIAL_OPENINGS)
    cfg = PlayConfig(
        GAME, n_games=n_games, first_game=5, max_plies=40, batch_size=16, openings=SPECIAL_OPENINGS, seed=3
    )
    records, stats = play_games(_model(), None, cfg)
    _check_all(records, cfg)
    assert stats["games"] == cfg.n_games and stats["plies"] == sum(len(r.moves) for r in records)

    seen: Counter[str] = Counter()
    for record in records:
        board = chess.Board(record.start)
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
        if record.start in (ONLY_PROMOTIONS_FEN, _mirrored(ONLY_PROMOTIONS_FEN)):
            assert chess.Move.from_uci(record.moves[0]).promotion is not None
        if record.start in (FORCED_EN_PASSANT_FEN, _mirrored(FORCED_EN_PASSANT_FEN)):
            assert record.moves[0] in ("e5f6", "e4f3")
    for colour in ("white", "black"):
        for event in ("castles", "en passant", "under-promotes"):
            assert seen[f"{colour} {event}"] > 0, f"no game had: {colour} {event} ({dict(seen)})"
    assert seen["white queens"] + seen["black queens"] > 0, f"no game promoted to a queen ({dict(seen)})"


def test_games_end_as_python_chess_says() -> None:
    cfg = PlayConfig(GAME, n_games=3 * len(ENDGAME_OPENINGS), max_plies=200, batch_size=12, openings=ENDGAME_OPENINGS)
    records, stats = play_games(_model(), None, cfg)
    boards = _check_all(records, cfg)
    assert stats["terminations"].get("max_plies", 0) <= cfg.n_games // 6  # most games end on the board
    assert sum(stats["terminations"].values()) == cfg.n_games
    # Random play may miss checkmates (test_each_termination forces them), but not these.
    ends = {outcome.termination.name.lower() for board in boards if (outcome := board.outcome()) is not None}
    assert {"stalemate", "insufficient_material", "seventyfive_moves"} <= ends


@pytest.mark.parametrize(
    ("fen", "preferred", "termination", "result", "plies"),
    [
        (chess.STARTING_FEN, ["g1f3", "f3g1"], "fivefold_repetition", "1/2-1/2", 16),
        (BACK_RANK_FEN, ["a1a8"], "checkmate", "1-0", 1),
        (_mirrored(BACK_RANK_FEN), ["a1a8"], "checkmate", "0-1", 1),
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
    cfg = PlayConfig(GAME, n_games=2, max_plies=100, temperature=0.0, openings=(fen,))
    records, stats = play_games(PriorityModel(preferred), None, cfg)
    for record, board in zip(records, _check_all(records, cfg), strict=True):
        outcome = board.outcome()
        assert outcome is not None and outcome.termination.name.lower() == termination
        assert (_white_result(record), len(record.moves)) == (result, plies)
    assert stats["terminations"] == {"rules": 2}


def test_a_seed_gives_the_same_games_and_another_seed_other_games() -> None:
    cfg = PlayConfig(GAME, n_games=8, max_plies=30, seed=1, openings=SPECIAL_OPENINGS[:4])
    first, _ = play_games(_model(seed=1), None, cfg)
    again, _ = play_games(_model(seed=1), None, cfg)
    assert first == again  # samples included
    other, _ = play_games(_model(seed=1), None, dataclasses.replace(cfg, seed=2))
    assert sum(a.moves != b.moves for a, b in zip(first, other, strict=True)) >= 6
    # Within one call, games differ from each other too.
    assert len({tuple(r.moves) for r in first}) == len(first)


# games against an opponent ---------------------------------------------------------------------


def test_colours_split_evenly_against_an_opponent() -> None:
    cfg = PlayConfig(GAME, n_games=10, max_plies=40, first_game=3, model_version=2, opponent_version=5, seed=4)
    records, stats = play_games(_model(seed=1), _model(seed=2), cfg)
    _check_all(records, cfg)
    points = []
    for record in records:
        model_white = record.game_id % 2 == 0
        assert (record.first, record.second) == ((MODEL, OPPONENT) if model_white else (OPPONENT, MODEL))
        assert (record.model_version, record.opponent_version) == (2, 5)
        points.append(record.result if model_white else 1.0 - record.result)  # the result is White's
        assert record.model_score() == points[-1]
    assert sum(r.first == MODEL for r in records) == sum(r.second == MODEL for r in records) == 5
    assert stats["score"] == pytest.approx(sum(points) / len(points))


def test_each_colour_is_played_by_its_own_network() -> None:
    model, opponent = PriorityModel(["b1c3", "c3b1"]), PriorityModel(["g1f3", "f3g1"])
    cfg = PlayConfig(GAME, n_games=4, max_plies=8, temperature=0.0)
    records, _ = play_games(model, opponent, cfg)
    _check_all(records, cfg)
    for record in records:
        white_moves, black_moves = set(record.moves[0::2]), set(record.moves[1::2])
        if record.first == MODEL:
            assert white_moves == {"b1c3", "c3b1"} and black_moves == {"g8f6", "f6g8"}
        else:
            assert white_moves == {"g1f3", "f3g1"} and black_moves == {"b8c6", "c6b8"}


def test_a_greedy_model_plays_its_top_legal_move_and_the_opponent_samples_at_its_own_temperature() -> None:
    model, opponent = _model(seed=4).eval(), _model(seed=5)
    openings = tuple(fen for fen in SPECIAL_OPENINGS[:3] for _ in range(4))
    cfg = PlayConfig(GAME, n_games=12, max_plies=12, temperature=0, opponent_temperature=1.0, openings=openings)
    records, _ = play_games(model, opponent, cfg)
    _check_all(records, cfg)
    for record in records:
        state = GAME.parse_state(record.start)
        for ply, action in enumerate(record.actions):
            if (ply % 2 == 0) == (record.first == MODEL):
                with torch.no_grad():
                    logits, _ = model(GAME.encode([state]))
                legal = logits[0, GAME.actions(state)]
                assert logits[0, action].item() == pytest.approx(legal.max().item(), abs=1e-4), (record.game_id, ply)
            state = GAME.apply(state, action)
    # The opponent sampled: games 4k and 4k + 2 (the same opening, the model White) differ.
    assert sum(records[k].moves != records[k + 2].moves for k in (0, 4, 8)) >= 2
    # Greedy self-play ignores the seed.
    greedy = dataclasses.replace(cfg, n_games=4, openings=SPECIAL_OPENINGS[:4])
    plays = [play_games(model, None, dataclasses.replace(greedy, seed=seed))[0] for seed in (0, 99)]
    assert [r.moves for r in plays[0]] == [r.moves for r in plays[1]]


def test_repeated_positions_are_flagged_to_the_model() -> None:
    class Recorder(PriorityModel):
        def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            flags.extend(features[:, -2:].tolist())
            return super().forward(features)

    flags: list[list[float]] = []
    # The knights go out and back: the initial position returns after plies 4, 8 and 12.
    cfg = PlayConfig(GAME, n_games=1, max_plies=13, temperature=0)
    records, _ = play_games(Recorder(["g1f3", "f3g1"]), None, cfg)
    assert records[0].moves[:4] == ["g1f3", "g8f6", "f3g1", "f6g8"]
    # python-chess is the oracle: before each ply, had the position been seen once, twice before?
    board, expected = chess.Board(), []
    for uci in records[0].moves:
        expected.append([float(board.is_repetition(2)), float(board.is_repetition(3))])
        board.push_uci(uci)
    assert flags == expected
    assert expected == [[0, 0]] * 4 + [[1, 0]] * 4 + [[1, 1]] * 5  # the game did reach both flags


# adjudication at max_plies ---------------------------------------------------------------------


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
    # In one ply nothing can be captured, so the material lead at adjudication is known. The
    # mirrored starts leave White to move at the cut: the side to move's lead becomes White's result.
    fen = fen if black_ahead else _mirrored(fen)
    win = "0-1" if black_ahead else "1-0"
    for margin, result in ((value, win), (value + 1, "1/2-1/2"), (max(1, value - 1), win)):
        cfg = PlayConfig(TinyChessGame(adjudication_margin=margin), n_games=4, max_plies=1, openings=(fen,))
        records, _ = play_games(_model(), None, cfg)
        _check_all(records, cfg)
        assert [(r.termination, _white_result(r), len(r.moves)) for r in records] == [("max_plies", result, 1)] * 4


def test_adjudicated_random_games_follow_the_material_rule() -> None:
    openings = (chess.STARTING_FEN, QUEEN_ODDS_FEN, _mirrored(QUEEN_ODDS_FEN))
    cfg = PlayConfig(GAME, n_games=12, max_plies=12, openings=openings, seed=8)
    records, stats = play_games(_model(), None, cfg)
    _check_all(records, cfg)
    assert stats["terminations"] == {"max_plies": 12}
    assert stats["length_min"] == stats["length_max"] == 12
    assert {_white_result(r) for r in records} == {"1-0", "0-1", "1/2-1/2"}

    wide = dataclasses.replace(cfg, game=TinyChessGame(adjudication_margin=39))
    records, stats = play_games(_model(), None, wide)
    _check_all(records, wide)
    assert stats["results"] == {"1/2-1/2": 12}


# bad openings ----------------------------------------------------------------------------------


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
    with pytest.raises(ConfigError, match=r"^PlayConfig\.openings\[1\]: ") as info:
        PlayConfig(GAME, openings=(chess.STARTING_FEN, fen))
    assert fen in str(info.value)


# training flags --------------------------------------------------------------------------------


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
    play_games(model, opponent, PlayConfig(GAME, n_games=2, max_plies=6))
    assert seen_modes and not any(seen_modes)  # both played in eval mode
    assert model.training is model_training
    assert opponent.training is opponent_training
    assert all(m.training is model_training for m in model.modules())

    play_games(model, None, PlayConfig(GAME, n_games=2, max_plies=6))
    assert model.training is model_training


def test_training_flag_is_restored_when_play_fails() -> None:
    class Broken(nn.Module):
        def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            raise RuntimeError("broken network")

    broken = Broken().train()
    with pytest.raises(RuntimeError, match="broken network"):
        play_games(broken, None, PlayConfig(GAME, n_games=2, max_plies=6))
    assert broken.training
