"""The move vocabulary: every legal move has one policy index, and the index gives it back."""

from __future__ import annotations

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asp.tinychess import POLICY_SIZE, index_move, legal_move_indices, move_index

CASTLING_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
CASTLING_BARE_FEN = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
EN_PASSANT_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
PROMOTION_FEN = "2n4k/1P6/8/8/8/8/8/K7 w - - 0 1"
# White's king on a1 is boxed in by the queen on c2 (which does not give check), so White's
# only legal moves are the eight promotions of the b7 pawn: b8 and bxc8, to Q, R, B and N.
ONLY_PROMOTIONS_FEN = "2n4k/1P6/8/8/8/8/2q5/K7 w - - 0 1"
# White's king is in check from the pawn that just moved two squares: exf6 e.p. is the only move.
FORCED_EN_PASSANT_FEN = "k7/8/4p2b/4Pp2/6K1/r7/8/7r w - f6 0 1"
PROMOTION_RACE_FEN = "1n2k3/P1P3p1/8/8/8/8/1p3P1p/4K1N1 w - - 0 1"


def _both_colours(fens: list[str]) -> list[str]:
    return fens + [chess.Board(fen).mirror().fen() for fen in fens]


START_FENS = _both_colours(
    [
        chess.STARTING_FEN,
        CASTLING_FEN,
        CASTLING_BARE_FEN,
        EN_PASSANT_FEN,
        FORCED_EN_PASSANT_FEN,
        PROMOTION_FEN,
        ONLY_PROMOTIONS_FEN,
        PROMOTION_RACE_FEN,
    ]
)


def _random_walk(fen: str, choices: list[int]) -> list[chess.Board]:
    """The positions of a game from ``fen`` where ply k plays legal move ``choices[k] % n``."""
    board = chess.Board(fen)
    positions = [board.copy()]
    for choice in choices:
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[choice % len(moves)])
        positions.append(board.copy())
    return positions


walks = st.builds(
    _random_walk,
    st.sampled_from(START_FENS),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
)


def _mirror_move(move: chess.Move) -> chess.Move:
    return chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion)


def test_policy_size_is_1858() -> None:
    assert POLICY_SIZE == 1858


def test_special_fens_are_valid_games_in_progress() -> None:
    for fen in START_FENS:
        board = chess.Board(fen)
        assert board.is_valid(), fen
        assert not board.is_game_over(), fen


@settings(max_examples=80, deadline=None)
@given(walks)
def test_every_legal_move_has_a_unique_index_that_gives_it_back(positions: list[chess.Board]) -> None:
    for board in positions:
        legal = list(board.legal_moves)
        moves, indices = legal_move_indices(board)
        assert moves == legal
        assert len(indices) == len(moves)
        assert len(set(indices)) == len(indices), f"two legal moves share an index in {board.fen()}"
        for move, index in zip(moves, indices, strict=True):
            assert 0 <= index < POLICY_SIZE
            assert move_index(move, board.turn) == index
            assert index_move(index, board) == move


@settings(max_examples=60, deadline=None)
@given(walks)
def test_indices_are_the_same_for_both_colours_in_the_movers_frame(positions: list[chess.Board]) -> None:
    for board in positions:
        mirrored = board.mirror()
        moves, indices = legal_move_indices(board)
        mirrored_moves, mirrored_indices = legal_move_indices(mirrored)
        assert sorted(indices) == sorted(mirrored_indices)
        for move, index in zip(moves, indices, strict=True):
            assert move_index(_mirror_move(move), mirrored.turn) == index
            assert index_move(index, mirrored) == _mirror_move(move)


@pytest.mark.parametrize("turn", [chess.WHITE, chess.BLACK])
def test_all_indices_decode_to_distinct_moves_that_encode_back(turn: chess.Color) -> None:
    board = chess.Board.empty()  # no pawns, so no plain index is read as a queen promotion
    board.turn = turn
    decoded = [index_move(i, board) for i in range(POLICY_SIZE)]
    assert len(set(decoded)) == POLICY_SIZE
    assert [move_index(move, turn) for move in decoded] == list(range(POLICY_SIZE))
    # The documented order, from python-chess's own attack sets: plain (from, to) pairs in the
    # mover's frame sorted by from-square then to-square, then the under-promotions.
    frame = 0 if turn == chess.WHITE else 56
    plain = []
    for square in chess.SQUARES:
        queen = chess.Board.empty()
        queen.set_piece_at(square, chess.Piece(chess.QUEEN, chess.WHITE))
        targets = queen.attacks(square) | chess.SquareSet(chess.BB_KNIGHT_ATTACKS[square])
        plain += [(square, to) for to in sorted(targets)]
    assert len(plain) == 1792
    assert [(m.from_square ^ frame, m.to_square ^ frame, m.promotion) for m in decoded[:1792]] == [
        (from_square, to_square, None) for from_square, to_square in plain
    ]
    under = [m for m in decoded if m.promotion is not None]
    assert under == decoded[1792:]
    assert len(under) == 66
    assert {m.promotion for m in under} == {chess.KNIGHT, chess.BISHOP, chess.ROOK}


@pytest.mark.parametrize(
    ("fen", "castles"),
    [
        (CASTLING_FEN, {"e1g1", "e1c1"}),
        (chess.Board(CASTLING_FEN).mirror().fen(), {"e8g8", "e8c8"}),
        (CASTLING_BARE_FEN, {"e1g1", "e1c1"}),
        (chess.Board(CASTLING_BARE_FEN).mirror().fen(), {"e8g8", "e8c8"}),
    ],
)
def test_castling_both_sides_both_colours(fen: str, castles: set[str]) -> None:
    board = chess.Board(fen)
    moves, indices = legal_move_indices(board)
    by_uci = dict(zip([m.uci() for m in moves], indices, strict=True))
    assert castles <= by_uci.keys()
    for uci in castles:
        move = chess.Move.from_uci(uci)
        assert board.is_castling(move)
        assert index_move(by_uci[uci], board) == move
    # Both colours castle king side with the same index, and queen side with another one.
    assert by_uci[sorted(castles)[1]] == move_index(chess.Move.from_uci("e1g1"), chess.WHITE)
    assert by_uci[sorted(castles)[0]] == move_index(chess.Move.from_uci("e1c1"), chess.WHITE)


@pytest.mark.parametrize("colour", [chess.WHITE, chess.BLACK])
def test_en_passant(colour: chess.Color) -> None:
    board = chess.Board()
    line = ["e2e4", "a7a6", "e4e5", "d7d5"] if colour == chess.WHITE else ["a2a3", "e7e5", "a3a4", "e5e4", "d2d4"]
    for uci in line:
        board.push_uci(uci)
    capture = chess.Move.from_uci("e5d6" if colour == chess.WHITE else "e4d3")
    assert board.turn == colour
    assert board.is_en_passant(capture) and capture in board.legal_moves
    moves, indices = legal_move_indices(board)
    index = indices[moves.index(capture)]
    assert index == move_index(capture, colour)
    assert index_move(index, board) == capture
    # The capture is the same forward-diagonal step for both colours.
    assert index == move_index(chess.Move.from_uci("e5d6"), chess.WHITE)


@pytest.mark.parametrize("fen", [FORCED_EN_PASSANT_FEN, chess.Board(FORCED_EN_PASSANT_FEN).mirror().fen()])
def test_position_where_en_passant_is_the_only_legal_move(fen: str) -> None:
    board = chess.Board(fen)
    moves, indices = legal_move_indices(board)
    assert len(moves) == 1 and board.is_en_passant(moves[0])
    assert indices == [move_index(chess.Move.from_uci("e5f6"), chess.WHITE)]
    assert index_move(indices[0], board) == moves[0]


@pytest.mark.parametrize("fen", [PROMOTION_FEN, chess.Board(PROMOTION_FEN).mirror().fen()])
def test_all_promotions_including_under_promotions(fen: str) -> None:
    board = chess.Board(fen)
    moves, indices = legal_move_indices(board)
    promotions = {m: i for m, i in zip(moves, indices, strict=True) if m.promotion is not None}
    assert len(promotions) == 8  # push and capture, each to Q, R, B, N
    assert {m.promotion for m in promotions} == {chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT}
    assert len(set(promotions.values())) == 8
    for move, index in promotions.items():
        assert index_move(index, board) == move
        if move.promotion == chess.QUEEN:
            assert index < 1792  # queen promotions use the plain from/to index
        else:
            assert 1792 <= index < POLICY_SIZE


@pytest.mark.parametrize("fen", [ONLY_PROMOTIONS_FEN, chess.Board(ONLY_PROMOTIONS_FEN).mirror().fen()])
def test_position_where_every_legal_move_is_a_promotion(fen: str) -> None:
    board = chess.Board(fen)
    assert not board.is_check()
    moves, indices = legal_move_indices(board)
    assert len(moves) == 8
    assert all(m.promotion is not None for m in moves)
    assert sorted(chess.piece_symbol(m.promotion) for m in moves) == sorted("qrbn" * 2)
    assert [index_move(i, board) for i in indices] == moves


def test_plain_index_to_last_rank_promotes_to_queen_only_for_pawns() -> None:
    board = chess.Board("4k3/1P6/8/8/8/8/8/1R2K3 w - - 0 1")
    pawn_push = move_index(chess.Move.from_uci("b7b8q"), chess.WHITE)
    assert pawn_push == move_index(chess.Move.from_uci("b7b8"), chess.WHITE)
    assert index_move(pawn_push, board) == chess.Move.from_uci("b7b8q")
    board = chess.Board("4k3/1R6/8/8/8/8/8/4K3 w - - 0 1")
    assert index_move(pawn_push, board) == chess.Move.from_uci("b7b8")


@pytest.mark.parametrize("index", [-1, POLICY_SIZE, POLICY_SIZE + 100, -POLICY_SIZE])
def test_index_move_rejects_out_of_range_index(index: int) -> None:
    with pytest.raises(ValueError, match=str(index)):
        index_move(index, chess.Board())


@pytest.mark.parametrize(
    ("uci", "turn"),
    [
        ("a1h7", chess.WHITE),  # neither a queen line nor a knight jump
        ("a1h7", chess.BLACK),
        ("b1d4", chess.WHITE),
        (chess.Move(chess.E2, chess.E2), chess.WHITE),  # no move at all
        (chess.Move.null(), chess.WHITE),
        ("e2e1n", chess.WHITE),  # White under-promotes on rank 8 only
        ("e7e8r", chess.BLACK),  # Black under-promotes on rank 1 only
        ("e6e8n", chess.WHITE),  # a promotion must be a one-rank step
        ("a7c8b", chess.WHITE),  # or a one-file capture
        ("e7e8k", chess.WHITE),  # never promote to a king
    ],
)
def test_move_index_rejects_impossible_moves(uci: str | chess.Move, turn: chess.Color) -> None:
    move = uci if isinstance(uci, chess.Move) else chess.Move.from_uci(uci)
    with pytest.raises(ValueError, match="no policy index"):
        move_index(move, turn)


def test_mirrored_under_promotions_are_accepted() -> None:
    assert move_index(chess.Move.from_uci("e2e1n"), chess.BLACK) == move_index(
        chess.Move.from_uci("e7e8n"), chess.WHITE
    )
