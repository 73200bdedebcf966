"""Board encoding: shapes, the side-to-move frame, and the scalar features."""

from __future__ import annotations

import chess
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from asp.tinychess import N_FEATURES, encode_boards
from asp.tinychess.features import N_PLANES, N_SCALARS

PIECE_TYPES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)
CASTLING_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
PROMOTION_FEN = "1n2k3/P1P3p1/8/8/8/8/1p3P1p/4K1N1 w - - 0 1"
EP_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
START_FENS = [chess.STARTING_FEN, CASTLING_FEN, PROMOTION_FEN, EP_FEN]
START_FENS += [chess.Board(fen).mirror().fen() for fen in START_FENS]

CASTLING = slice(N_PLANES * 64, N_PLANES * 64 + 4)
HALFMOVE = N_PLANES * 64 + 4
REPEATED_ONCE = N_PLANES * 64 + 5
REPEATED_TWICE = N_PLANES * 64 + 6


def _random_board(fen: str, choices: list[int]) -> chess.Board:
    board = chess.Board(fen)
    for choice in choices:
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[choice % len(moves)])
    return board


boards = st.builds(
    _random_board,
    st.sampled_from(START_FENS),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=60),
)


def _planes(features: torch.Tensor) -> torch.Tensor:
    return features[: N_PLANES * 64].reshape(N_PLANES, 64)


def _reference_planes(board: chess.Board) -> torch.Tensor:
    """The 16 planes written out square by square, in the side to move's frame: the attacked
    squares from python-chess's ``is_attacked_by``, one square after the other; the mates'
    squares from every legal move tried."""
    planes = torch.zeros(N_PLANES, 64)
    flip = 0 if board.turn == chess.WHITE else 56
    for square, piece in board.piece_map().items():
        plane = PIECE_TYPES.index(piece.piece_type) + (0 if piece.color == board.turn else 6)
        planes[plane, square ^ flip] = 1.0
    if board.ep_square is not None:
        planes[12, board.ep_square ^ flip] = 1.0
    for square in chess.SQUARES:
        planes[13, square ^ flip] = float(board.is_attacked_by(board.turn, square))
        planes[14, square ^ flip] = float(board.is_attacked_by(not board.turn, square))
    for move in list(board.legal_moves):
        board.push(move)
        if board.is_checkmate():
            planes[15, move.to_square ^ flip] = 1.0
        board.pop()
    return planes


def test_shape_and_dtype() -> None:
    boards_ = [chess.Board(fen) for fen in START_FENS]
    features = encode_boards(boards_)
    assert N_FEATURES == N_PLANES * 64 + N_SCALARS == 1031
    assert features.shape == (len(boards_), N_FEATURES)
    assert features.dtype == torch.float32
    assert encode_boards([chess.Board()], [0]).shape == (1, N_FEATURES)


def test_empty_batch() -> None:
    features = encode_boards([])
    assert features.shape == (0, N_FEATURES)
    assert features.dtype == torch.float32


def test_initial_position_planes() -> None:
    planes = _planes(encode_boards([chess.Board()])[0])
    assert planes[0].nonzero().flatten().tolist() == list(range(8, 16))  # own pawns on rank 2
    assert planes[5].nonzero().flatten().tolist() == [chess.E1]  # own king
    assert planes[11].nonzero().flatten().tolist() == [chess.E8]  # opponent's king
    assert planes[4].nonzero().flatten().tolist() == [chess.D1]  # own queen
    assert planes[10].nonzero().flatten().tolist() == [chess.D8]
    assert planes[:12].sum() == 32
    assert planes[12].sum() == 0
    # Each side attacks b1..g1, its second rank and its third rank (mirrored, for the opponent).
    assert planes[13].nonzero().flatten().tolist() == list(range(1, 7)) + list(range(8, 24))
    assert torch.equal(planes[14].reshape(8, 8), planes[13].reshape(8, 8).flip(0))


def test_black_to_move_sees_itself_at_the_bottom() -> None:
    board = chess.Board()
    board.push_uci("e2e4")
    planes = _planes(encode_boards([board])[0])
    # Black's pawns, seen from Black's side, stand on rank 2; White's e-pawn is on "e5".
    assert planes[0].nonzero().flatten().tolist() == list(range(8, 16))
    assert planes[5].nonzero().flatten().tolist() == [chess.E1]
    assert planes[4].nonzero().flatten().tolist() == [chess.D1]
    opponent_pawns = planes[6].nonzero().flatten().tolist()
    assert chess.E5 in opponent_pawns and chess.E7 not in opponent_pawns
    assert len(opponent_pawns) == 8


def test_initial_position_equals_its_colour_flipped_mirror() -> None:
    white = chess.Board()
    black = white.mirror()
    assert black.turn == chess.BLACK
    features = encode_boards([white, black])
    assert torch.equal(features[0], features[1])


@settings(max_examples=80, deadline=None)
@given(boards, st.integers(min_value=0, max_value=5))
def test_every_position_encodes_like_its_colour_flipped_mirror(board: chess.Board, seen: int) -> None:
    features = encode_boards([board, board.mirror()], [seen, seen])
    assert torch.equal(features[0], features[1])


@settings(max_examples=80, deadline=None)
@given(boards)
def test_planes_match_a_square_by_square_encoding(board: chess.Board) -> None:
    features = encode_boards([board])[0]
    assert torch.equal(_planes(features), _reference_planes(board))
    others = torch.cat([features[:HALFMOVE], features[HALFMOVE + 1 :]])
    assert set(others.unique().tolist()) <= {0.0, 1.0}
    assert features[HALFMOVE].item() == pytest.approx(board.halfmove_clock / 100)
    mover, opponent = board.turn, not board.turn
    assert features[CASTLING].tolist() == [
        board.has_kingside_castling_rights(mover),
        board.has_queenside_castling_rights(mover),
        board.has_kingside_castling_rights(opponent),
        board.has_queenside_castling_rights(opponent),
    ]


@settings(max_examples=30, deadline=None)
@given(st.lists(boards, min_size=1, max_size=8))
def test_batch_rows_equal_single_board_encodings(batch: list[chess.Board]) -> None:
    features = encode_boards(batch)
    for row, board in zip(features, batch, strict=True):
        assert torch.equal(row, encode_boards([board])[0])


@pytest.mark.parametrize("mover", [chess.WHITE, chess.BLACK])
def test_en_passant_plane(mover: chess.Color) -> None:
    board = chess.Board()
    line = ["e2e4", "a7a6", "e4e5", "d7d5"] if mover == chess.WHITE else ["a2a3", "e7e5", "a3a4", "e5e4", "d2d4"]
    for uci in line[:-1]:
        board.push_uci(uci)
    assert encode_boards([board])[0][12 * 64 : 13 * 64].sum() == 0  # no double step: plane empty
    board.push_uci(line[-1])
    assert board.turn == mover and board.has_legal_en_passant()
    plane = encode_boards([board])[0][12 * 64 : 13 * 64]
    # In the mover's frame the target square is always on the sixth rank: d6 here.
    assert plane.nonzero().flatten().tolist() == [chess.D6]
    board.push_uci("e5d6" if mover == chess.WHITE else "e4d3")
    assert encode_boards([board])[0][12 * 64 : 13 * 64].sum() == 0


@pytest.mark.parametrize("mover", [chess.WHITE, chess.BLACK])
def test_the_mate_plane_shows_where_the_movers_mates_land(mover: chess.Color) -> None:
    # White's Rxa8 mates, and so would Black's ...Rxa1: the board is its own colour-flipped mirror
    board = chess.Board("r5k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    board.turn = mover
    planes = _planes(encode_boards([board])[0])
    assert planes[15].nonzero().flatten().tolist() == [chess.A8]  # in the mover's frame
    board.push_san("h3" if mover == chess.WHITE else "h6")  # the mover's king gets a square: no mate for the other
    assert _planes(encode_boards([board])[0])[15].sum() == 0


def test_two_mates_on_one_square_mark_it_once() -> None:
    board = chess.Board("8/RP6/8/8/8/2K1B3/8/1k6 w - - 0 1")  # b8=Q and b8=R both mate
    assert _planes(encode_boards([board])[0])[15].nonzero().flatten().tolist() == [chess.B8]


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", [1, 1, 1, 1]),
        ("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1", [0, 0, 0, 0]),
        ("r3k2r/8/8/8/8/8/8/R3K2R w Qkq - 0 1", [0, 1, 1, 1]),
        ("r3k2r/8/8/8/8/8/8/R3K2R b Qkq - 0 1", [1, 1, 0, 1]),
        ("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1", [1, 0, 0, 1]),
        ("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1", [0, 1, 1, 0]),
    ],
)
def test_castling_scalars_are_mover_first(fen: str, expected: list[int]) -> None:
    features = encode_boards([chess.Board(fen)])[0]
    assert features[CASTLING].tolist() == expected


def test_castling_scalars_follow_moves() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    board.push_uci("h1h2")  # White loses king-side castling; Black to move
    assert encode_boards([board])[0][CASTLING].tolist() == [1, 1, 0, 1]
    board.push_uci("e8d8")  # Black's king moves: Black loses both
    assert encode_boards([board])[0][CASTLING].tolist() == [0, 1, 0, 0]


def test_repetition_flags() -> None:
    board = chess.Board()
    features = encode_boards([board] * 5, [0, 1, 2, 3, 40])
    flags = features[:, [REPEATED_ONCE, REPEATED_TWICE]].tolist()
    assert flags == [[0, 0], [1, 0], [1, 1], [1, 1], [1, 1]]
    assert encode_boards([board])[0][[REPEATED_ONCE, REPEATED_TWICE]].tolist() == [0, 0]


@pytest.mark.parametrize("clock", [0, 1, 37, 99, 100, 149])
def test_halfmove_clock_scalar(clock: int) -> None:
    board = chess.Board(f"4k3/8/8/8/8/8/8/R3K3 w - - {clock} 80")
    assert encode_boards([board])[0][HALFMOVE].item() == pytest.approx(clock / 100)


def test_halfmove_clock_counts_quiet_moves_and_resets_on_pawn_moves() -> None:
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1"]:
        board.push_uci(uci)
    assert encode_boards([board])[0][HALFMOVE].item() == pytest.approx(0.03)
    board.push_uci("e7e5")
    assert encode_boards([board])[0][HALFMOVE].item() == 0.0
