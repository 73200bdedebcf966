"""Batched self-play in one process: many games at once, one network call per step.

``play_games`` keeps ``cfg.batch_size`` games in flight. Each step it generates the legal
moves of every game whose mover is to choose, encodes those boards in one call, runs each
network once on the boards where it is to move, samples a move per game and pushes it. A
player that searches (``cfg.search``) starts a search there instead: the searches of all
games run side by side (:class:`asp.search.Searches`), their new roots and leaves evaluated
``batch_size`` at a time, one network call a step, and a game moves when its own search
ends, so a game with a long search holds up no other. When a game ends its slot starts the
next game, so the batch stays full until the last games drain.

Determinism: every game draws its random numbers from its own stream, seeded by
``(cfg.seed, game_id)``, and its colour and opening depend on its id alone. So a game is the
same whichever call, shard, batch or process plays it (up to floating-point differences in
the network between batch sizes, which would have to land within ~1e-7 of a sampling
boundary to change a move).

With ``cfg.mate_in_one`` the model (and a network opponent, unless
``cfg.opponent_mate_in_one`` says otherwise) plays a mate in one whenever it has one instead of
sampling: the policy network alone plays about 2% of its mates in one.

Adjudication at ``max_plies``: material is counted with pawn 1, knight 3, bishop 3, rook 5,
queen 9; a side ahead by at least ``cfg.adjudication_margin`` points wins, otherwise the
game is drawn. The termination is ``max_plies`` either way.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import chess
import numpy as np
import torch
from torch import nn

from asp.checks import check_bool, check_int, check_number
from asp.errors import ConfigError
from asp.progress import heartbeat, more_games
from asp.search import SearchConfig, Searches, SearchResult
from asp.tinychess.chess_search import ChessSearch, Position
from asp.tinychess.features import N_PLANES, pack_boards, placement_key, unpack_boards
from asp.tinychess.mates import mating_moves
from asp.tinychess.moves import legal_move_indices
from asp.tinychess.records import MODEL, OPPONENT, GameRecord, PlyData, summarise

__all__ = ["BoardPlayer", "PlayConfig", "check_play_field", "play_games"]

_MATERIAL = ((chess.PAWN, 1), (chess.KNIGHT, 3), (chess.BISHOP, 3), (chess.ROOK, 5), (chess.QUEEN, 9))


@dataclass(frozen=True)
class PlayConfig:
    """What :func:`play_games` plays. Invalid values raise :class:`asp.errors.ConfigError`."""

    n_games: int = 256
    """Games to play (0 to 10**9)."""

    seed: int = 0
    """Seed of the games' random streams (0 to 2**63 - 1)."""

    first_game: int = 0
    """Id of the first game; games get ids ``first_game .. first_game + n_games - 1``.
    Shards of one call use distinct ranges (0 to 2**63 - 1)."""

    max_plies: int = 200
    """Plies after which a game is adjudicated by material (1 to 10000)."""

    temperature: float = 1.0
    """Softmax temperature of move sampling: 0.01 to 100, or 0 to play the most likely move."""

    opponent_temperature: float | None = None
    """The opponent's temperature, if not ``temperature`` (same range). A uniformly random
    opponent (``RandomMover``) needs one above 0: at 0 it would always play its first move."""

    batch_size: int = 64
    """Games played concurrently, and the most boards per network call (1 to 4096): without
    search a call carries a board per game to move; with search, the new roots and leaves
    of every game's search wait in one queue and a call takes this many."""

    openings: tuple[str, ...] = ()
    """FENs to start games from, game ``i`` from ``openings[i % len(openings)]``; empty
    means the initial position. Each must be a valid position that is not already over."""

    mask_illegal: bool = True
    """True: sample among legal moves. False: sample from the full policy, count each
    illegal pick in ``illegal_attempts`` and resample among the legal moves."""

    model_version: int = 0
    """Version of the model's weights, copied into every record (0 to 2**63 - 1)."""

    opponent_version: int = 0
    """Version of the opponent's weights, copied into records of games against it."""

    adjudication_margin: int = 3
    """Material lead (in pawns) that wins a game adjudicated at ``max_plies`` (1 to 39)."""

    mate_in_one: bool = False
    """The model plays a mate in one whenever it has one, and samples its other moves from the
    policy: a one-ply search for checkmate (:func:`~asp.tinychess.mates.mating_moves`), since
    a network of TinyChess's size does not learn to see mates (README, "A mate in one is
    always played"). Among several mates it plays the policy's likeliest. Its log-probability
    in the record is the policy's own, so that training makes the mate likelier. The
    default is the policy alone."""

    opponent_mate_in_one: bool | None = None
    """The opponent network's ``mate_in_one``, if not the model's. False for a uniformly
    random opponent that is to stay uniform."""

    search: SearchConfig | None = None
    """Search before every move of the model (:mod:`asp.search`, Gumbel search batched over
    the games in flight: one network call per step of all their searches), or None to play
    the policy alone. A searching model plays the search's action (with ``gumbel_scale`` 1, a
    sample of its improved policy) and logs the improved policy in its PlyData as the policy's
    target.
    ``temperature`` and ``mate_in_one`` apply to moves played without search only: the search
    never misses a mate in one."""

    opponent_search: SearchConfig | None = None
    """The same for a network opponent (None: it plays its policy)."""

    samples: bool = True
    """Send back, with each record, what the model saw and chose at each of its plies
    (:class:`~asp.tinychess.records.PlyData`, about 190 bytes a ply), so that training needs
    no replay of the game. Evaluation games can do without."""

    def play(self, model: nn.Module, opp: nn.Module | None) -> tuple[list[GameRecord], dict[str, Any]]:
        """Play these games: :func:`play_games` (what :class:`asp.SelfPlay` calls with no play_fn)."""
        return play_games(model, opp, self)

    def summarise(self, records: list[GameRecord]) -> dict[str, Any]:
        """The stats of ``records``: :func:`~asp.tinychess.records.summarise`."""
        return summarise(records)

    def plies_limit(self, game_id: int) -> int:
        """``max_plies`` of game ``game_id``: the same for every game. A subclass may vary it
        (the benchmarks' uneven workload makes some games long and the others short)."""
        return self.max_plies

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(PlayConfig):  # a subclass checks the fields it adds
            check_play_field(spec.name, getattr(self, spec.name))
        object.__setattr__(self, "openings", tuple(self.openings))


_BIG = 2**63 - 1
_INT_FIELDS = {
    "n_games": (0, 10**9),
    "seed": (0, _BIG),
    "first_game": (0, _BIG),
    "max_plies": (1, 10_000),
    "batch_size": (1, 4096),
    "model_version": (0, _BIG),
    "opponent_version": (0, _BIG),
    "adjudication_margin": (1, 39),
}
_FLAGS = ("mask_illegal", "samples", "mate_in_one")


def check_play_field(field: str, value: object, *, name: str | None = None) -> None:
    """ConfigError unless ``value`` is a value of PlayConfig's ``field``. The message calls it
    ``name``, by default ``PlayConfig.<field>``: a config that makes PlayConfigs from fields of
    its own, or a command-line option, checks them under its own names.

    >>> check_play_field("batch_size", 0, name="RunConfig.play_batch")
    Traceback (most recent call last):
    ...
    asp.errors.ConfigError: RunConfig.play_batch must be an int in 1..4096, got 0
    """
    name = name or f"PlayConfig.{field}"
    if field in _INT_FIELDS:
        check_int(name, value, *_INT_FIELDS[field])
    elif field in ("temperature", "opponent_temperature"):
        # Below 0.01 logits / t overflows float32: 0 (greedy) is the way to ask for that.
        check_number(name, value, 0.01, 100, also=(None, 0) if field == "opponent_temperature" else (0,))
    elif field == "opponent_mate_in_one":
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"{name} must be None, True or False, got {value!r}")
    elif field in _FLAGS:
        check_bool(name, value)
    elif field in ("search", "opponent_search"):
        if value is not None and not isinstance(value, SearchConfig):
            raise ConfigError(f"{name} must be a SearchConfig or None, got {value!r}")
    elif field == "openings":
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(f"{name} must be a sequence of FEN strings, got {value!r}")
        for fen in value:
            _check_opening(name, fen)
    else:
        raise ValueError(f"PlayConfig has no field {field!r}")


def _check_opening(name: str, fen: object) -> None:
    if not isinstance(fen, str):
        raise ConfigError(f"{name} must hold FEN strings, got {fen!r}")
    problem = _opening_problem(fen)
    if problem is not None:
        raise ConfigError(f"{name}: {problem}")


@functools.lru_cache(maxsize=65536)
def _opening_problem(fen: str) -> str | None:
    """What is wrong with the opening ``fen``, or None. Cached: every shard of a call is a
    copy of its config, checked again on the event loop, and a board takes python-chess
    about half a millisecond to check."""
    try:
        board = chess.Board(fen)
    except ValueError as e:
        return f"invalid FEN {fen!r}: {e}"
    if not board.is_valid():
        return f"FEN {fen!r} is not a legal position ({board.status()!r})"
    if board.is_game_over():
        return f"FEN {fen!r} is a finished game"
    return None


@runtime_checkable
class BoardPlayer(Protocol):
    """An opponent that moves from the board itself, such as a chess engine
    (:class:`~asp.tinychess.engine.EngineOpponent`), rather than from a network's logits.

    :func:`play_games` asks it for a move in each game where it is to move, one game after
    the other; a network opponent is called once for all of them instead.
    """

    opponent_name: str
    """Who it is: the records' ``opponent_name``."""

    def play_board(self, board: chess.Board, *, game_id: int) -> chess.Move | None:
        """A legal move on ``board``, or None if the player failed: game ``game_id`` then ends
        with result ``"*"`` and termination ``"engine_failure"``. Must not change ``board``."""
        ...


def material(board: chess.Board, color: chess.Color) -> int:
    """``color``'s material: pawn 1, knight 3, bishop 3, rook 5, queen 9."""
    own = board.occupied_co[color]
    return sum(value * (board.pieces_mask(piece, color) & own).bit_count() for piece, value in _MATERIAL)


def material_lead(board: chess.Board) -> int:
    """White's material minus Black's (what adjudication and the training reward count)."""
    return material(board, chess.WHITE) - material(board, chess.BLACK)


class _Game:
    """A game in flight, with its own random stream."""

    __slots__ = ("actions", "bitboards", "board", "counts", "failed", "game_id", "illegal", "keeping", "leads",
                 "legal", "legal_idx", "legal_kept", "logprobs", "max_plies", "model_white", "moves", "plies",
                 "policy", "rng", "searching", "seen", "scalars", "self_play", "start_fen")  # fmt: skip

    def __init__(self, game_id: int, cfg: PlayConfig, against_opponent: bool) -> None:
        self.game_id = game_id
        self.start_fen = cfg.openings[game_id % len(cfg.openings)] if cfg.openings else chess.STARTING_FEN
        self.board = chess.Board(self.start_fen)
        self.rng = random.Random(f"asp:{cfg.seed}:{game_id}")
        self.max_plies = cfg.plies_limit(game_id)
        self.self_play = not against_opponent
        self.model_white = self.self_play or game_id % 2 == 0
        self.moves: list[str] = []
        self.logprobs: list[float] = []
        self.illegal = 0
        self.failed = False  # its BoardPlayer opponent gave no move: the game ends as engine_failure
        self.searching: Position | None = None  # the position its mover is searching, if any
        self.seen: Counter[tuple[int, ...]] = Counter([placement_key(self.board)])
        self.legal: list[chess.Move] = []
        self.legal_idx: list[int] = []
        # PlyData of the model's plies (cfg.samples): filled by keep() and push()
        self.keeping = cfg.samples
        self.plies: list[int] = []
        self.bitboards = bytearray()  # the packed boards of those plies, row after row
        self.scalars = bytearray()
        self.actions: list[int] = []
        self.legal_kept: list[int] = []
        self.counts: list[int] = []
        self.policy: list[float] = []  # the search's improved policy over legal_kept, when it searched
        self.leads: list[int] = [material_lead(self.board)] if cfg.samples else []

    def model_to_move(self) -> bool:
        return self.self_play or (self.board.turn == chess.WHITE) == self.model_white

    def repetitions(self) -> int:
        return self.seen[placement_key(self.board)] - 1

    def prepare(self, cfg: PlayConfig) -> tuple[str, str] | None:
        """Generate the legal moves; return ``(result, termination)`` if the game is over."""
        if self.failed:
            return "*", "engine_failure"
        board = self.board
        self.legal, self.legal_idx = legal_move_indices(board)
        if not self.legal and board.is_check():
            return ("0-1" if board.turn == chess.WHITE else "1-0"), "checkmate"
        if board.is_insufficient_material():
            return "1/2-1/2", "insufficient_material"
        if not self.legal:
            return "1/2-1/2", "stalemate"
        if board.halfmove_clock >= 150:
            return "1/2-1/2", "seventyfive_moves"
        if self.repetitions() >= 4 and board.is_fivefold_repetition():
            return "1/2-1/2", "fivefold_repetition"
        if len(self.moves) >= self.max_plies:
            lead = material_lead(board)
            if lead >= cfg.adjudication_margin:
                return "1-0", "max_plies"
            if -lead >= cfg.adjudication_margin:
                return "0-1", "max_plies"
            return "1/2-1/2", "max_plies"
        return None

    def keep(self, bitboards: np.ndarray, scalars: np.ndarray) -> None:
        """Note the model is about to move from this board (packed as given) with these legal moves."""
        self.plies.append(len(self.moves))
        self.bitboards += bitboards.tobytes()
        self.scalars += scalars.tobytes()
        self.legal_kept += self.legal_idx
        self.counts.append(len(self.legal_idx))

    def push(self, move: chess.Move, logprob: float, action: int | None = None) -> None:
        self.board.push(move)
        self.moves.append(move.uci())
        self.logprobs.append(logprob)
        self.seen[placement_key(self.board)] += 1
        if self.keeping:
            if action is not None:
                self.actions.append(action)
            self.leads.append(material_lead(self.board))

    def record(self, result: str, termination: str, cfg: PlayConfig, against_opponent: bool) -> GameRecord:
        white, black = MODEL, MODEL
        if against_opponent:
            white, black = (MODEL, OPPONENT) if self.model_white else (OPPONENT, MODEL)
        return GameRecord(
            game_id=self.game_id,
            moves=self.moves,
            result=result,
            termination=termination,
            start_fen=self.start_fen,
            white=white,
            black=black,
            model_version=cfg.model_version,
            logprobs=self.logprobs,
            illegal_attempts=self.illegal,
            opponent_version=cfg.opponent_version if against_opponent else None,
            samples=self._ply_data() if self.keeping else None,
        )

    def _ply_data(self) -> PlyData:
        return PlyData(
            plies=np.array(self.plies, dtype=np.int16),
            bitboards=np.frombuffer(bytes(self.bitboards), dtype=np.uint64).reshape(-1, N_PLANES),
            scalars=np.frombuffer(bytes(self.scalars), dtype=np.uint16).reshape(-1, 2),
            actions=np.array(self.actions, dtype=np.int16),
            legal=np.array(self.legal_kept, dtype=np.int16),
            legal_counts=np.array(self.counts, dtype=np.uint8),
            leads=np.array(self.leads, dtype=np.int8),
            policy=np.array(self.policy, dtype=np.float16) if self.policy else None,
        )


def _choose_moves(
    games: Sequence[_Game], logits: torch.Tensor, cfg: PlayConfig, temperature: float, model: bool, mates: bool
) -> None:
    """Sample a move for each game from its row of ``logits`` at ``temperature`` and push it
    (with its policy index, for the game's PlyData, when ``model`` plays it); with ``mates``,
    play a mate in one instead where there is one."""
    if temperature > 0:
        logits = logits / temperature
    counts = [len(g.legal_idx) for g in games]
    flat = torch.tensor([i for g in games for i in g.legal_idx])
    segment = torch.repeat_interleave(torch.arange(len(games)), torch.tensor(counts))
    legal_logits = logits[segment, flat]
    # Log-softmax within each game's legal moves, for all games in a few tensor calls.
    peak = torch.full((len(games),), -math.inf).scatter_reduce(0, segment, legal_logits, "amax")
    shifted = legal_logits - peak[segment]
    norm = torch.zeros(len(games)).index_add(0, segment, shifted.exp()).log()
    legal_logp = (shifted - norm[segment]).tolist()
    full_logp: list[float] = []
    full_pick: list[int] = []
    if not cfg.mask_illegal:
        logp_rows = torch.log_softmax(logits, dim=1)
        if temperature > 0:
            u = torch.tensor([[g.rng.random()] for g in games], dtype=logp_rows.dtype)
            cdf = logp_rows.exp().cumsum(dim=1)
            picks = torch.searchsorted(cdf, u).clamp(max=logits.shape[1] - 1).squeeze(1)
        else:
            picks = logp_rows.argmax(dim=1)
        full_pick = picks.tolist()
        full_logp = logp_rows.gather(1, picks.unsqueeze(1)).squeeze(1).tolist()

    start = 0
    for row, game in enumerate(games):
        end = start + counts[row]
        mating = mating_moves(game.board, game.legal) if mates else None
        if mating:
            k = max((start + i for i in mating), key=legal_logp.__getitem__)
            logp = legal_logp[k] if temperature > 0 else 0.0
            game.push(game.legal[k - start], logp, game.legal_idx[k - start] if model else None)
            start = end
            continue
        if full_pick:
            try:
                k = game.legal_idx.index(full_pick[row])
            except ValueError:
                game.illegal += 1
            else:
                logp = full_logp[row] if temperature > 0 else 0.0
                game.push(game.legal[k], logp, game.legal_idx[k] if model else None)
                start = end
                continue
        if temperature > 0:
            u_move = game.rng.random()
            k, acc = end - 1, 0.0
            for j in range(start, end):
                acc += math.exp(legal_logp[j])
                if u_move < acc:
                    k = j
                    break
        else:
            k = max(range(start, end), key=legal_logp.__getitem__)
        logp = legal_logp[k] if temperature > 0 else 0.0
        game.push(game.legal[k - start], logp, game.legal_idx[k - start] if model else None)
        start = end


def _play_searched(game: _Game, result: SearchResult, model: bool) -> None:
    """Push the move the search of ``game``'s position found; for the model, note the
    improved policy (the training target) beside the legal moves it kept."""
    position = game.searching
    assert position is not None
    game.searching = None
    k = result.actions.index(result.action)
    if model and game.keeping:
        game.policy.extend(result.policy)
    logp = math.log(result.policy[k]) if result.policy[k] > 0 else -math.inf
    game.push(position.legal[k], logp, result.action if model else None)


def _board_player_moves(player: BoardPlayer, games: Sequence[_Game]) -> None:
    """Ask ``player`` for its move in each of ``games`` and push it, or mark the game failed."""
    for game in games:
        move = player.play_board(game.board, game_id=game.game_id)
        if move is None or move not in game.legal:
            game.failed = True
        else:
            game.push(move, 0.0)
        heartbeat(1)  # an engine's move can take a while: each is progress


@dataclass(frozen=True)
class _Side:
    """How one side of every game chooses its moves (built once per call of :func:`play_games`)."""

    net: nn.Module
    is_model: bool
    temperature: float
    mates: bool  # plays a mate in one when it has one
    search: SearchConfig | None
    board_player: BoardPlayer | None  # an engine asked board by board, instead of the network

    @staticmethod
    def of(model: nn.Module, opp: nn.Module | None, cfg: PlayConfig) -> list[_Side]:
        """The model's side, then the opponent's if there is one."""
        sides = [_Side(model, True, cfg.temperature, cfg.mate_in_one, cfg.search, None)]
        if opp is not None:
            temperature = cfg.temperature if cfg.opponent_temperature is None else cfg.opponent_temperature
            mates = cfg.mate_in_one if cfg.opponent_mate_in_one is None else cfg.opponent_mate_in_one
            player = opp if isinstance(opp, BoardPlayer) else None
            sides.append(_Side(opp, False, temperature, mates, cfg.opponent_search, player))
        return sides


def _move(
    sides: list[_Side],
    cfg: PlayConfig,
    games: list[_Game],
    searches: dict[bool, Searches[Position, _Game]],
) -> int:
    """The move of each of ``games`` (whose movers choose now), by whoever is to move: the
    policy network samples one, an engine is asked, a searching player starts a search (its
    move comes from ``searches`` a few steps later). Returns how many games moved or began
    to search."""
    if not games:
        return 0
    bitboards, scalars = pack_boards([g.board for g in games], [g.repetitions() for g in games])
    # Split before any move is pushed: a push changes whose turn it is.
    rows_of = {side.is_model: [i for i, g in enumerate(games) if g.model_to_move() == side.is_model] for side in sides}
    if cfg.samples:
        for i in rows_of[True]:
            games[i].keep(bitboards[i], scalars[i])
    for side in sides:
        rows = rows_of[side.is_model]
        if not rows:
            continue
        if side.board_player is not None:
            _board_player_moves(side.board_player, [games[i] for i in rows])
        elif side.search is not None:
            if side.is_model not in searches:
                searches[side.is_model] = Searches(ChessSearch(side.net), side.search, batch=cfg.batch_size)
            for i in rows:
                game = games[i]
                game.searching = Position(game.board, game.repetitions(), history=game.seen)
                searches[side.is_model].start(game, game.searching, game.rng)
        else:
            logits, _ = side.net(unpack_boards(bitboards[rows], scalars[rows]))
            _choose_moves([games[i] for i in rows], logits.float(), cfg, side.temperature, side.is_model, side.mates)
    return len(games)


def play_games(model: nn.Module, opp: nn.Module | None, cfg: PlayConfig) -> tuple[list[GameRecord], dict[str, Any]]:
    """Play ``cfg.n_games`` games in this process and return ``(records, stats)``.

    ``opp=None`` is self-play. With an opponent, the model plays White in the games with an
    even id and Black in the others. An opponent that is a :class:`BoardPlayer` (a chess
    engine) is asked for its moves board by board; a game where it gives none ends with
    result ``"*"`` and termination ``"engine_failure"``. An opponent's ``opponent_name``, if
    it has one, is copied into the records. In a worker of :class:`asp.SelfPlay`, once its own games
    have all begun, a free place in the batch takes the games the coordinator offers
    (:func:`asp.more_games`), and their records are returned too. Records are sorted by game id; ``stats`` is
    :func:`~asp.tinychess.records.summarise` of them plus ``seconds`` and ``plies_per_s``.

    >>> from asp.tinychess.model import TinyChess
    >>> records, stats = play_games(TinyChess(), None, PlayConfig(n_games=2, max_plies=4))
    >>> [len(r.moves) for r in records], stats["games"]
    ([4, 4], 2)
    """
    started = time.perf_counter()
    against = opp is not None
    opponent_name = getattr(opp, "opponent_name", None) if opp is not None else None
    next_id, end_id = cfg.first_game, cfg.first_game + cfg.n_games

    def next_game() -> _Game | None:
        nonlocal next_id, end_id
        if next_id >= end_id:  # its own games have all begun: games on offer, in a worker of asp
            block = more_games()
            if block is None:
                return None
            next_id, end_id = block[0], block[0] + block[1]
        game = _Game(next_id, cfg, against)
        next_id += 1
        return game

    sides = _Side.of(model, opp, cfg)
    slots: list[_Game] = []
    records: list[GameRecord] = []
    searches: dict[bool, Searches[Position, _Game]] = {}  # the model's and the opponent's, when they search
    nets = [model] if opp is None else [model, opp]
    # Every sub-module's own flag: net.train(True) afterwards would also flip frozen parts.
    was_training = {m: m.training for net in nets for m in net.modules()}
    for net in nets:
        net.eval()
    try:
        with torch.inference_mode():
            while True:
                live: list[_Game] = []
                for game in slots:
                    while game.searching is None and (ended := game.prepare(cfg)) is not None:
                        records.append(game.record(*ended, cfg, against))
                        if (new := next_game()) is None:
                            break
                        game = new
                    else:
                        live.append(game)
                while len(live) < cfg.batch_size and (new := next_game()) is not None:
                    new.prepare(cfg)  # a fresh game always has moves: openings are checked
                    live.append(new)
                slots = live
                if not slots:
                    break
                moved = _move(sides, cfg, [g for g in slots if g.searching is None], searches)
                # in a worker: progress for stall detection (a step of a search is progress), and cancellation
                heartbeat(max(moved, 1))
                for is_model, searching in searches.items():
                    if searching:
                        for game, result in searching.step():
                            _play_searched(game, result, is_model)
    finally:
        for module, training in was_training.items():
            module.training = training
    if isinstance(opponent_name, str):
        for record in records:
            record.opponent_name = opponent_name
    records.sort(key=lambda r: r.game_id)
    return records, _stats(records, time.perf_counter() - started, searches.get(True))


def _stats(records: list[GameRecord], seconds: float, searches: Searches[Position, _Game] | None) -> dict[str, Any]:
    """:func:`summarise` of ``records``, the call's ``seconds`` and plies per second, and the
    network calls of the model's searches, when it searched."""
    stats = summarise(records)
    stats["seconds"] = seconds
    stats["plies_per_s"] = stats["plies"] / seconds if seconds > 0 else 0.0
    if searches is not None:
        evaluator = searches.game
        assert isinstance(evaluator, ChessSearch)
        stats["search/evaluations"] = evaluator.evaluations
        stats["search/boards"] = evaluator.boards
    return stats
