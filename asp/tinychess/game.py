"""TinyChess as an asp game (:class:`~asp.games.Game`): chess rules from python-chess, the
TinyChess network, and the material-greedy mover.

A position is a :class:`ChessState`: a board that is never changed once made, and the
position before it, so that repetitions are counted from the game itself. Actions are the
network's policy indices (:mod:`asp.tinychess.moves`); a move's notation is UCI, a position's
a FEN.

The game ends as chess does, without claims: checkmate, stalemate, insufficient material,
the 75-move rule and fivefold repetition. Inside a search, a position that repeats one
before it (on the search's path or earlier in the game) is a draw, as chess engines score a
repetition; a position whose mover has a mate in one lists those moves as winning, so a mate
in one is never missed. A game cut at ``max_plies`` is adjudicated by material
(:meth:`TinyChessGame.adjudicate`). Chess has no symmetry that keeps its rules (castling), so
the game has no ``symmetries``.

>>> game = TinyChessGame()
>>> state = game.parse_state("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
>>> [game.action_text(state, a) for a in game.winning(state)]
['a1a8']
>>> after = game.apply(state, game.parse_action(state, "a1a8"))
>>> game.outcome(after), game.to_move(after)
(-1.0, 1)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import chess
import numpy as np
import torch
from torch import nn

from asp.games.protocol import Mover
from asp.games.records import Record
from asp.tinychess.engine import ENGINES, EngineConfig
from asp.tinychess.features import N_PLANES, pack_boards, unpack_boards
from asp.tinychess.mates import mates_in_one
from asp.tinychess.model import ModelConfig, TinyChess
from asp.tinychess.moves import POLICY_SIZE, index_move, legal_move_indices, move_index
from asp.tinychess.openings import OPENINGS
from asp.tinychess.opponents import GreedyChessMover, MaterialSearchMover
from asp.tinychess.pgn import read_pgn_game, to_pgn
from asp.util.checks import check_int

__all__ = ["ChessState", "TinyChessGame", "material_lead"]

_PACKED = N_PLANES * 8 + 4
"""Bytes of a packed position: its bitboards, then its flags and half-move clock."""


def material_lead(board: chess.Board) -> int:
    """The side to move's material minus the opponent's: pawn 1, knight 3, bishop 3, rook 5, queen 9."""
    white = board.occupied_co[chess.WHITE]
    lead = 0
    for pieces, value in ((board.pawns, 1), (board.knights | board.bishops, 3), (board.rooks, 5), (board.queens, 9)):
        lead += value * (2 * (pieces & white).bit_count() - pieces.bit_count())  # White's minus Black's
    return lead if board.turn == chess.WHITE else -lead


def _legal(board: chess.Board, what: str) -> ChessState:
    """``board`` as a state; ValueError naming ``what`` unless it is a legal position."""
    if not board.is_valid():
        raise ValueError(f"{what} is not a legal position ({board.status()!r})")
    return ChessState(board)


@dataclass(frozen=True, eq=False)
class ChessState:
    """A position of a game of chess: a board, never changed once made, and where it came from."""

    board: chess.Board
    parent: ChessState | None = None
    """The position before it: None at the game's start, and after a capture or a pawn move,
    which no position before can repeat (so a game does not keep all its positions alive)."""
    tree: int = -1
    """Plies below the root of a search; -1 for a position played in the game."""
    move: chess.Move | None = None
    """The move that led here from :attr:`parent` (None at the game's start)."""

    @functools.cached_property
    def key(self) -> tuple[int, ...]:
        """What makes two positions the same for repetitions (as python-chess counts them)."""
        b = self.board
        ep = b.ep_square if b.ep_square is not None and b.has_legal_en_passant() else 64
        return (b.pawns, b.knights, b.bishops, b.rooks, b.queens, b.kings, b.occupied_co[chess.WHITE],
                int(b.turn), b.castling_rights, ep)  # fmt: skip

    @functools.cached_property
    def legal(self) -> list[int]:
        """The policy indices of the legal moves. The moves themselves are not kept (an
        action's move is decoded by :func:`~asp.tinychess.moves.index_move`): games and
        searches keep many positions alive, and every kept object is one more for the
        garbage collector to walk."""
        return legal_move_indices(self.board)[1]

    def earlier(self) -> list[ChessState]:
        """The positions before it that it could repeat: the same side to move, since the last
        capture or pawn move."""
        found: list[ChessState] = []
        node, plies = self.parent, 1
        while node is not None and plies <= self.board.halfmove_clock:
            if plies % 2 == 0:
                found.append(node)
            node, plies = node.parent, plies + 1
        return found

    def history(self) -> chess.Board:
        """The board with the moves since the last capture or pawn move on its stack, from the
        position before them: what a UCI engine needs to see the repetitions it could make."""
        moves: list[chess.Move] = []
        node = self
        while node.parent is not None and node.move is not None and len(moves) < self.board.halfmove_clock:
            moves.append(node.move)
            node = node.parent
        board = node.board.copy(stack=False)
        for move in reversed(moves):
            board.push(move)
        return board

    @functools.cached_property
    def seen(self) -> int:
        """Times the position occurred before (in the game, and on the search's path)."""
        key = self.key
        return sum(1 for node in self.earlier() if node.key == key)

    @functools.cached_property
    def outcome(self) -> float | None:
        """The value of the position for the side to move once the game is over by the rules
        of chess (a repetition inside a search included), else None: computed once."""
        board = self.board
        # Most positions a search scores are never expanded: their first legal move is enough.
        # A game's own positions are all played from: their moves are needed anyway.
        if not (self.legal if "legal" in self.__dict__ or self.tree < 0 else any(board.generate_legal_moves())):
            return -1.0 if board.is_check() else 0.0
        if board.is_insufficient_material() or board.halfmove_clock >= 150:
            return 0.0
        if (self.tree > 0 and self.seen) or (self.tree < 0 and self.seen >= 4):
            return 0.0
        return None

    @functools.cached_property
    def mates(self) -> tuple[chess.Move, ...]:
        """The moves that mate at once: computed once. A tuple: most positions have none, and
        the empty tuple is one shared object, not one more per position for the garbage
        collector (see :attr:`legal`)."""
        return tuple(mates_in_one(self.board))

    @functools.cached_property
    def winning(self) -> tuple[int, ...]:
        """The policy indices of the moves that mate at once."""
        return tuple(move_index(move, self.board.turn) for move in self.mates)


class TinyChessGame:
    """The game of chess, with the TinyChess network (:class:`~asp.tinychess.model.TinyChess`)."""

    name = "tinychess"
    action_size = POLICY_SIZE

    def __init__(self, adjudication_margin: int = 3) -> None:
        check_int("TinyChessGame.adjudication_margin", adjudication_margin, 1, 39)
        self.adjudication_margin = adjudication_margin
        """Material lead (in pawns) that wins a game cut at ``max_plies``."""

    def start(self) -> ChessState:
        return ChessState(chess.Board())

    def to_move(self, state: ChessState) -> int:
        return 0 if state.board.turn == chess.WHITE else 1

    def outcome(self, state: ChessState) -> float | None:
        """The value of the position for the side to move once the game is over by the rules
        of chess (a repetition inside a search included), else None: computed once."""
        return state.outcome

    def winning(self, state: ChessState) -> tuple[int, ...]:
        """The moves that mate at once, asked only where the game goes on: computed once."""
        return state.winning

    def actions(self, state: ChessState) -> list[int]:
        return state.legal

    def apply(self, state: ChessState, action: int) -> ChessState:
        board = state.board.copy(stack=False)
        move = _move(state, action)
        board.push(move)
        parent = state if board.halfmove_clock else None
        return ChessState(board, parent, state.tree + 1 if state.tree >= 0 else -1, move)

    def search_root(self, state: ChessState) -> ChessState:
        """``state`` as the root of a search: below it, repetitions are draws."""
        root = ChessState(state.board, state.parent, 0, state.move)
        known = state.__dict__  # what was computed of the position carries over
        root.__dict__.update({name: known[name] for name in ("key", "legal", "seen") if name in known})
        if "outcome" in known and known["outcome"] is None:  # a game going on: the same below a root
            root.__dict__.update({name: known[name] for name in ("outcome", "winning", "mates") if name in known})
        return root

    def adjudicate(self, state: ChessState) -> float:
        """The result, for the side to move, of a game cut at ``state``: won (1) or lost (-1)
        with a material lead of ``adjudication_margin`` pawns, else drawn (0)."""
        lead = material_lead(state.board)
        return 1.0 if lead >= self.adjudication_margin else -1.0 if -lead >= self.adjudication_margin else 0.0

    def heuristic(self, state: ChessState) -> float:
        """The side to move's material lead, in pawns (pawn 1, knight 3, bishop 3, rook 5, queen 9)."""
        return float(material_lead(state.board))

    def encode(self, states: Sequence[ChessState]) -> torch.Tensor:
        """:func:`~asp.tinychess.features.encode_boards`; inside a search, positions count as new."""
        return self.unpack(self.pack(states))

    def pack(self, states: Sequence[ChessState]) -> np.ndarray:
        """The compact form of :meth:`encode`: 132 bytes a position (uint8 rows)."""
        repetitions = [s.seen if s.tree <= 0 else 0 for s in states]
        bitboards, scalars = pack_boards([s.board for s in states], repetitions, [s.mates for s in states])
        return np.concatenate([bitboards.view(np.uint8), scalars.view(np.uint8)], axis=1)

    def unpack(self, rows: np.ndarray) -> torch.Tensor:
        """:meth:`encode`'s tensor of :meth:`pack`'s rows."""
        rows = np.ascontiguousarray(rows, dtype=np.uint8).reshape(-1, _PACKED)
        bitboards = rows[:, : N_PLANES * 8].copy().view(np.uint64)
        return unpack_boards(bitboards, rows[:, N_PLANES * 8 :].copy().view(np.uint16))

    def network(self, cfg: Any = None) -> nn.Module:
        return TinyChess(cfg if cfg is not None else ModelConfig())

    def action_text(self, state: ChessState, action: int) -> str:
        return str(_move(state, action).uci())

    def parse_action(self, state: ChessState, text: str) -> int:
        try:
            move = chess.Move.from_uci(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a move in UCI notation (e2e4, e7e8q)") from None
        if not state.board.is_legal(move):
            raise ValueError(f"{move.uci()} is not a legal move here")
        return move_index(move, state.board.turn)

    def state_text(self, state: ChessState) -> str:
        return str(state.board.fen())

    def parse_state(self, text: str) -> ChessState:
        try:
            board = chess.Board(text.strip())
        except ValueError as e:
            raise ValueError(f"invalid FEN {text.strip()!r}: {e}") from None
        return _legal(board, f"FEN {text.strip()!r}")

    def parse_line(self, text: str) -> ChessState:
        """The position of a line of a file of positions: a FEN, its six fields, or an EPD,
        its four fields and its operations (``bm``, ``id``..., each read: a best move must be
        legal there; ``hmvc`` and ``fmvn`` set the clocks). A line of fewer fields is neither:
        it would leave the side to move to a default.

        >>> game = TinyChessGame()
        >>> game.state_text(game.parse_line('6k1/5ppp/8/8/8/8/8/R5K1 b - - hmvc 3; id "x";'))
        '6k1/5ppp/8/8/8/8/8/R5K1 b - - 3 1'
        >>> game.parse_line("8/8/8/8/8/8/8/K6k w - - 0 1 ; bm Kb1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: invalid FEN '8/8/8/8/8/8/8/K6k w - - 0 1 ; bm Kb1': a FEN has six fields, ...; nor an EPD: ...
        >>> game.parse_line("8/8/8/8/8/8/8/K6k")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: invalid FEN '8/8/8/8/8/8/8/K6k': a FEN has six fields, got 1; nor an EPD: an EPD has four fields...
        >>> game.parse_line("4k3/8/8/8/8/8/8/4KQ2 w - - 200")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: invalid FEN '4k3/8/8/8/8/8/8/4KQ2 w - - 200': a FEN has six fields, got 5; nor an EPD: ... got '200'


        :raises ValueError: the line is neither (the message says why, as a FEN and as an EPD).
        """
        fields = text.split()
        if len(fields) == 6:
            try:
                return self.parse_state(text)
            except ValueError as e:
                fen_error = str(e)
        else:
            fen_error = f"invalid FEN {text.strip()!r}: a FEN has six fields, got {len(fields)}"
        if len(fields) < 4:
            raise ValueError(f"{fen_error}; nor an EPD: an EPD has four fields and its operations")
        if len(fields) > 4 and not fields[4][0].isalpha():
            raise ValueError(
                f"{fen_error}; nor an EPD: after its four fields come its operations, each an opcode "
                f"(a letter first) and its operands, got {fields[4]!r}"
            )
        try:
            board, _ = chess.Board.from_epd(text.strip())
        except ValueError as e:
            raise ValueError(f"{fen_error}; nor an EPD: {e}") from None
        return _legal(board, f"EPD {text.strip()!r}")

    def show(self, state: ChessState) -> str:
        return str(state.board)

    def movers(self) -> Mapping[str, Mover]:
        """The one-ply material-greedy mover and the two-ply material searcher
        (:mod:`asp.tinychess.opponents`), the strongest, besides the random mover every game has."""
        return {"greedy": GreedyChessMover(), "material2": MaterialSearchMover()}

    def run_defaults(self) -> dict[str, Any]:
        """``asp train``'s settings for chess: 24 iterations, games of 200 plies at most, 8
        simulations a move in self-play, one evaluation, after the last iteration, batches of
        1024, and a value that learns the material (:meth:`heuristic`, a tenth of its lead in
        pawns, its changes ahead discounted by 0.8 a ply) besides the result, discounted.
        ``benchmarks/bench_learning.py`` measures each setting against the run without it."""
        train = {"batch_size": 1024, "value_coef": 0.5, "outcome_gamma": 0.95,
                 "heuristic_weight": 0.1, "heuristic_gamma": 0.8}  # fmt: skip
        return {"iterations": 24, "games": 160, "max_plies": 200, "search": 8, "eval_every": 24, "train": train}

    engines = ENGINES
    """This game's outside opponents: ``stockfish`` (the default), and ``uci``, any UCI engine."""

    def engine(self, fields: Mapping[str, Any], names: Mapping[str, str] | None = None) -> EngineConfig:
        """A UCI engine (Stockfish) as this game's outside opponent: the
        :class:`~asp.tinychess.engine.EngineConfig` of ``fields`` (:meth:`EngineConfig.of
        <asp.tinychess.engine.EngineConfig.of>`, ``fields["name"]`` one of :attr:`engines`);
        its ``opponent()`` is an :class:`~asp.tinychess.engine.EngineOpponent`."""
        return EngineConfig.of(fields, names)

    records_suffix = ".pgn"

    def records_text(self, records: Sequence[Record]) -> str:
        """The games as PGN (:func:`~asp.tinychess.pgn.to_pgn`), White the game's first
        player; a game that ended by the rules names how (``checkmate``, ``stalemate``...).

        >>> game = TinyChessGame()
        >>> start = game.start()
        >>> moves = [game.parse_action(start, "e2e4")]
        >>> print(game.records_text([Record(0, game.state_text(start), moves, 0.5, "max_plies", "model", "model", 3)]))
        ... # doctest: +ELLIPSIS
        [Event "asp self-play"]
        ...
        1. e4 1/2-1/2
        <BLANKLINE>
        """
        return "\n".join(to_pgn(record) for record in records)

    def read_record(self, path: str, number: int) -> dict[str, Any]:
        """The ``number``-th game (from 1) of a PGN file, its start and actions
        (:func:`~asp.tinychess.pgn.read_pgn_game`): what ``asp show`` draws."""
        return read_pgn_game(path, number)

    def svg(self, state: ChessState) -> str:
        """The position as an SVG board (python-chess's :func:`chess.svg.board`), the last
        move and a king in check marked.

        >>> game = TinyChessGame()
        >>> state = game.apply(game.start(), game.parse_action(game.start(), "e2e4"))
        >>> svg = game.svg(state)
        >>> svg.startswith("<svg") and "lastmove" in svg and 'class="check"' not in svg
        True
        """
        import chess.svg

        board = state.board
        check = board.king(board.turn) if board.is_check() else None
        return str(chess.svg.board(board, lastmove=state.move, check=check, size=400))

    def openings(self) -> tuple[str, ...]:
        """The bundled openings (:data:`~asp.tinychess.openings.OPENINGS`): matches between
        players that play to win start from them."""
        return OPENINGS

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.adjudication_margin == self.adjudication_margin

    def __hash__(self) -> int:
        return hash((type(self), self.adjudication_margin))

    def __repr__(self) -> str:
        return f"TinyChessGame(adjudication_margin={self.adjudication_margin})"


def _move(state: ChessState, action: int) -> chess.Move:
    """The legal move of policy index ``action`` at ``state``."""
    if action not in state.legal:
        raise ValueError(f"action {action} is no legal move at {state.board.fen()}")
    return index_move(action, state.board)
