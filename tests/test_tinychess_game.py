"""TinyChess as a game of the game protocol (asp.tinychess.game): its rules, encoding,
notation and movers, its samples for the trainer, and its games in a game run."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import chess
import numpy as np
import pytest
import torch
from helpers import assert_pgn_extract_accepts, pgn_games

from asp.games import MODEL, OPPONENT, PlayConfig, Record, TrainConfig, Trainer, play_games
from asp.games.movers import movers_of
from asp.games.protocol import status
from asp.search import SearchConfig
from asp.tinychess.features import encode_boards
from asp.tinychess.game import ChessState, TinyChessGame, material_lead
from asp.tinychess.moves import move_index
from asp.tinychess.opponents import GreedyChessMover, MaterialSearchMover

GAME = TinyChessGame()
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"


def fresh_net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return GAME.network()


def play_line(state: ChessState, moves: str) -> ChessState:
    for uci in moves.split():
        state = GAME.apply(state, GAME.parse_action(state, uci))
    return state


def test_checkmate_stalemate_and_insufficient_material_end_the_game() -> None:
    mated = play_line(GAME.start(), "f2f3 e7e5 g2g4 d8h4")
    assert status(GAME, mated).value == -1.0 and GAME.to_move(mated) == 0
    assert status(GAME, GAME.parse_state("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")).value == 0.0  # stalemate
    assert status(GAME, GAME.parse_state("7k/8/6K1/8/8/8/8/8 w - - 0 1")).value == 0.0  # kings alone
    assert status(GAME, GAME.parse_state("7k/8/6K1/8/8/8/8/R7 w - - 150 90")).value == 0.0  # 75-move rule


def test_status_is_worked_out_once_and_lists_the_legal_moves_only_of_a_position_it_must_expand() -> None:
    # A search scores many more positions than it expands: of the others, one legal move is
    # enough to know that the game goes on, and listing them all would slow the search for nothing.
    root = GAME.search_root(play_line(GAME.start(), "e2e4"))
    inside = GAME.apply(root, GAME.parse_action(root, "e7e5"))
    assert status(GAME, inside).value is None and "legal" not in vars(inside)
    mated = play_line(GAME.start(), "f2f3 e7e5 g2g4 d8h4")
    assert status(GAME, mated).value == -1.0
    # A game's own positions are all played from: their legal moves are listed at once.
    state = play_line(GAME.start(), "e2e4 e7e5")
    assert status(GAME, state).value is None and "legal" in vars(state)
    # Worked out once a position: the play loop asks at each ply, and again of the search's root.
    threat = play_line(state, "f1c4 b8c6 d1h5 g8f6")
    assert status(GAME, threat) == status(GAME, threat) == status(GAME, GAME.search_root(threat))
    root = GAME.search_root(threat)
    assert vars(root)["winning"] is vars(threat)["winning"] and root.legal is threat.legal


def test_outcome_is_the_status_value_without_looking_for_mates_in_one() -> None:
    # The play loop asks at every ply whether the game is over; mates in one (Status.winning)
    # are worth finding only where a search or take_wins uses them.
    mate_in_one = play_line(GAME.start(), "e2e4 e7e5 f1c4 b8c6 d1h5 g8f6")
    assert GAME.outcome(mate_in_one) is None and "winning" not in vars(mate_in_one)
    assert [GAME.action_text(mate_in_one, a) for a in status(GAME, mate_in_one).winning] == ["h5f7"]
    mated = play_line(mate_in_one, "h5f7")
    assert GAME.outcome(mated) == -1.0 == status(GAME, mated).value
    stalemate = GAME.parse_state("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert GAME.outcome(stalemate) == 0.0 == status(GAME, stalemate).value
    root = GAME.search_root(mate_in_one)
    assert GAME.outcome(root) is None and status(GAME, root).winning == status(GAME, mate_in_one).winning


def test_outcome_and_status_end_a_game_where_python_chess_does() -> None:
    rng = random.Random(1)
    for _ in range(10):
        state, board = GAME.start(), chess.Board()  # the board keeps its whole history
        while True:
            outcome = board.outcome(claim_draw=False)
            expected = None if outcome is None else 0.0 if outcome.winner is None else -1.0
            assert GAME.outcome(state) == expected == status(GAME, state).value
            if expected is not None:
                break
            action = rng.choice(GAME.actions(state))
            board.push(chess.Move.from_uci(GAME.action_text(state, action)))
            state = GAME.apply(state, action)


def test_a_position_after_a_capture_or_pawn_move_keeps_no_past() -> None:
    # No position before a capture or a pawn move can be repeated after it, so a game keeps
    # alive only its positions since the last one (and the garbage collector walks fewer).
    state = play_line(GAME.start(), "g1f3 g8f6")
    assert state.parent is not None and state.parent.parent is not None
    after_pawn = play_line(state, "e2e4")
    assert after_pawn.parent is None and after_pawn.move is not None and GAME.state_text(after_pawn).endswith("0 2")
    again = play_line(after_pawn, "b8c6")
    assert again.parent is after_pawn and again.history().move_stack == [chess.Move.from_uci("b8c6")]


def test_fivefold_repetition_ends_a_game_and_a_repetition_inside_a_search_is_a_draw() -> None:
    shuffle = "g1f3 g8f6 f3g1 f6g8 "
    state = play_line(GAME.start(), shuffle * 3)
    assert state.seen == 3 and status(GAME, state).value is None
    state = play_line(state, shuffle)
    assert state.seen == 4 and status(GAME, state).value == 0.0
    # In a search, the first repetition below the root is a draw; the root itself plays on.
    root = GAME.search_root(play_line(GAME.start(), shuffle))
    assert root.seen == 1 and status(GAME, root).value is None
    assert status(GAME, play_line(root, shuffle)).value == 0.0
    assert status(GAME, play_line(root, "g1f3 g8f6")).value == 0.0  # seen earlier in the game
    assert status(GAME, play_line(root, "b1c3 b8c6")).value is None


def test_a_cut_game_is_adjudicated_by_material_for_the_side_to_move() -> None:
    up_a_rook = GAME.parse_state("4k3/8/8/8/8/8/8/R3K3 b Q - 0 1")
    assert material_lead(up_a_rook.board) == -5 and GAME.adjudicate(up_a_rook) == -1.0
    assert TinyChessGame(adjudication_margin=6).adjudicate(up_a_rook) == 0.0
    records, _ = play_games(
        GreedyChessMover(), None, PlayConfig(GAME, n_games=1, max_plies=1, openings=("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1",))
    )
    assert (records[0].result, records[0].termination) == (1.0, "max_plies")


def test_material_lead_counts_every_piece_of_both_sides() -> None:
    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
    rng = random.Random(0)
    for _ in range(20):
        board = chess.Board()
        for _ in range(rng.randrange(120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        lead = sum(values[p.piece_type] * (1 if p.color == board.turn else -1) for p in board.piece_map().values())
        assert material_lead(board) == lead


def test_the_packed_encoding_is_the_features_of_tinychess_with_its_repetitions() -> None:
    state = play_line(GAME.start(), "g1f3 g8f6 f3g1 f6g8 b1c3")
    assert state.parent is not None
    root = GAME.search_root(state)
    mate = GAME.parse_state(MATE_IN_ONE)
    assert GAME.winning(mate)  # its mates known before it is packed: the plane of its mates reuses them
    states = [state.parent, state, GAME.search_root(state.parent), GAME.apply(root, GAME.actions(root)[0]), mate]
    rows = GAME.pack(states)
    assert rows.dtype == np.uint8 and rows.shape == (5, 132)
    expected = encode_boards([s.board for s in states], [1, 0, 1, 0, 0])
    assert expected[4, 15 * 64 : 16 * 64].nonzero().flatten().tolist() == [chess.A8]  # the mate's square
    assert torch.equal(GAME.unpack(rows), expected) and torch.equal(GAME.encode(states), expected)


def test_notation_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="invalid FEN"):
        GAME.parse_state("not a fen")
    with pytest.raises(ValueError, match="not a legal position"):
        GAME.parse_state("8/8/8/8/8/8/8/8 w - - 0 1")
    with pytest.raises(ValueError, match="UCI"):
        GAME.parse_action(GAME.start(), "Nf3")
    with pytest.raises(ValueError, match="e2e5 is not a legal move"):
        GAME.parse_action(GAME.start(), "e2e5")
    state = GAME.parse_state(MATE_IN_ONE)
    assert GAME.state_text(state) == MATE_IN_ONE and GAME.action_text(state, GAME.parse_action(state, "a1a8")) == "a1a8"


def test_the_game_s_movers_are_the_random_and_greedy_movers_and_the_material_searcher() -> None:
    known = movers_of(GAME)
    assert list(known) == ["random", "greedy", "material2"] and isinstance(known["greedy"], GreedyChessMover)
    assert isinstance(known["material2"], MaterialSearchMover)
    assert all(mover.opponent_name == name for name, mover in known.items())


@pytest.mark.parametrize("take_wins", [False, True])
def test_take_wins_makes_the_policy_play_every_mate_in_one(take_wins: bool) -> None:
    net = fresh_net(3)
    cfg = PlayConfig(GAME, n_games=8, max_plies=1, openings=(MATE_IN_ONE,), take_wins=take_wins)
    records, _ = play_games(net, None, cfg)
    mates = sum(r.moves == ["a1a8"] for r in records)
    assert mates == 8 if take_wins else mates < 8
    if take_wins:
        assert all(r.samples is not None and r.samples.policy.max() == 1.0 for r in records)


def test_the_trainer_learns_from_packed_samples() -> None:
    net = fresh_net()
    records, _ = play_games(net, None, PlayConfig(GAME, n_games=2, max_plies=8, search=SearchConfig(2, 4)))
    assert all(r.samples is not None and r.samples.features.dtype == np.uint8 for r in records)
    before = [p.detach().clone() for p in net.parameters()]
    metrics = Trainer(net, GAME, TrainConfig(device="cpu")).train(records)
    assert metrics["train/samples"] == 16 and metrics["train/steps"] == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))
    assert chess.Board(records[0].start) == chess.Board()


def test_self_play_records_white_s_material_lead_at_every_position() -> None:
    records, _ = play_games(fresh_net(), None, PlayConfig(GAME, n_games=2, max_plies=60, seed=3))
    for record in records:
        board = chess.Board(record.start)
        leads = [material_lead(board) * (1 if board.turn == chess.WHITE else -1)]
        for move in record.moves:
            board.push_uci(move)
            leads.append(material_lead(board) * (1 if board.turn == chess.WHITE else -1))
        assert record.samples is not None and record.samples.heuristic.tolist() == leads
    assert any(lead != 0 for r in records if r.samples is not None for lead in r.samples.heuristic.tolist())


def test_a_game_run_plays_the_greedy_mover_and_its_past_versions_from_the_openings_with_both_colours() -> None:
    from asp.app.game_run import GameRun
    from asp.app.run_config import GameRunConfig, defaults_for
    from asp.tinychess.openings import OPENINGS

    cfg: GameRunConfig = defaults_for("asp.tinychess.game:TinyChessGame")
    run = GameRun(cfg, GAME)
    random_match = run.eval_cfg(1)
    greedy_match = run.mover_match_cfg(1)
    version_match = run.version_match_cfg(2, 1)
    assert random_match.openings == () and random_match.random_plies == 0
    assert version_match.random_plies == 0 and version_match.opponent_version == 1
    for match, opponent in ((greedy_match, GreedyChessMover()), (version_match, fresh_net(1))):
        records, _ = play_games(fresh_net(), opponent, dataclasses.replace(match, n_games=4, max_plies=2))
        assert [(r.start, r.first) for r in records] == [
            (OPENINGS[0], MODEL), (OPENINGS[0], OPPONENT), (OPENINGS[1], MODEL), (OPENINGS[1], OPPONENT)
        ]  # fmt: skip


def test_a_game_run_writes_its_games_as_pgn_beside_the_json_lines(tmp_path: Path, pgn_extract: str) -> None:
    from asp.app.game_run import write_records

    start = GAME.start()
    mated = Record(7, GAME.state_text(start), [], 0.0, "rules", MODEL, OPPONENT, 2, opponent_name="greedy")
    state = start
    for uci in "f2f3 e7e5 g2g4 d8h4".split():
        mated.actions.append(GAME.parse_action(state, uci))
        state = GAME.apply(state, mated.actions[-1])
    self_play, _ = play_games(fresh_net(), None, PlayConfig(GAME, n_games=2, max_plies=30, seed=1))
    records = [mated, *self_play]
    seam = "asp.tinychess.game:TinyChessGame"
    path = write_records([r.plain() for r in records], tmp_path / "iter-0001.jsonl", game=seam)
    assert path.read_text().count("\n") == 3
    games = pgn_games(tmp_path / "iter-0001.pgn")
    assert [g.headers["GameId"] for g in games] == ["7", "0", "1"]
    assert [g.headers["Event"] for g in games] == ["asp match", "asp self-play", "asp self-play"]
    first = games[0].headers
    assert (first["White"], first["Black"], first["Result"]) == ("asp model v2", "greedy", "0-1")
    assert (first["AspTermination"], first["Termination"]) == ("checkmate", "normal")
    for game, record in zip(games, records, strict=True):
        board = chess.Board(record.start)
        ucis = [m.uci() for m in game.mainline_moves()]
        assert len(ucis) == len(record.actions)
        for uci, action in zip(ucis, record.actions, strict=True):
            assert move_index(chess.Move.from_uci(uci), board.turn) == action
            board.push_uci(uci)
    assert_pgn_extract_accepts(tmp_path / "iter-0001.pgn", games=3, pgn_extract=pgn_extract)
    # Records asked for in a file of the PGN's suffix stay records.
    named = write_records([r.plain() for r in records], tmp_path / "games.pgn", game=seam)
    assert named.read_text().startswith("{") and [p.name for p in tmp_path.glob("games*")] == ["games.pgn"]
