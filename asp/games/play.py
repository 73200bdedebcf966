"""Batched play of any :class:`~asp.games.Game` in one process: many games at once, one
network call per step.

:func:`play_games` keeps ``cfg.batch_size`` games in flight. Each step, every game whose
mover is to choose gets its move from that side: a network without search samples from its
logits over the legal actions (one call for all its games), a searching network starts a
search (the searches of all games run side by side, :class:`asp.search.Searches`, their new
positions evaluated ``batch_size`` at a time, and a game moves when its own search ends), and
a :class:`~asp.games.Mover` chooses from the rules. When a game ends its slot starts the next
game, so the batch stays full until the last games drain; in a worker of :class:`asp.SelfPlay`
a free slot also takes the games the coordinator offers (:func:`asp.more_games`).

Determinism: every game draws its random numbers from its own stream, seeded by
``(cfg.seed, game_id)``, and its colour and opening depend on its id alone. So a game is the
same whichever call, shard, batch or process plays it (up to floating-point differences of
the network between batch sizes).

>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> records, stats = play_games(game.network(), None, PlayConfig(game, n_games=2, max_plies=4))
>>> [len(r.actions) for r in records], stats["games"]
([4, 4], 2)
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, cast

import numpy as np
import structlog
import torch
from torch import nn

from asp.errors import ConfigError
from asp.games.checked import applied, legal_actions, legal_choices, network_output, packed_rows
from asp.games.network_search import NetworkSearch
from asp.games.protocol import (
    Game,
    MoveFailed,
    Mover,
    State,
    adjudicated,
    heuristic,
    outcome,
    search_root,
    unpacked,
    winning,
)
from asp.games.records import MODEL, OPPONENT, Record, Samples, summarise
from asp.progress import heartbeat, more_games
from asp.search import SearchConfig, Searches
from asp.util.checks import check_bool, check_int, check_number

__all__ = ["PlayConfig", "play_games"]

log = structlog.get_logger("asp.games.play")

_BIG = 2**63 - 1


@dataclass(frozen=True)
class PlayConfig:
    """What :func:`play_games` plays. Invalid values raise :class:`asp.errors.ConfigError`."""

    game: Game[Any]
    """The game (its class importable by module and name: it travels to the workers)."""
    n_games: int = 256
    """Games to play (0 to 10**9)."""
    seed: int = 0
    """Seed of the games' random streams (0 to 2**63 - 1)."""
    first_game: int = 0
    """Id of the first game: games get ids ``first_game .. first_game + n_games - 1``."""
    max_plies: int = 1000
    """Plies after which a game is cut and drawn (1 to 100000)."""
    temperature: float = 1.0
    """Softmax temperature of the model's moves without search: 0.01 to 100, or 0 for the
    likeliest move."""
    opponent_temperature: float | None = None
    """The opponent network's temperature, if not ``temperature`` (same range)."""
    batch_size: int = 64
    """Games played at once, and the most positions per network call (1 to 4096)."""
    openings: tuple[str, ...] = ()
    """Positions to start from, in the game's notation: game ``i`` starts from
    ``openings[i % len(openings)]``; empty: :meth:`Game.start`."""
    random_plies: int = 0
    """The first plies of every game played uniformly at random (0 to 1000), from a stream
    that games ``2k`` and ``2k + 1`` share: against an opponent, each such start is played
    once with each colour. Varied starts for deterministic players (an evaluation between
    two checkpoints); the record starts after them, and they are no samples."""
    vary_random_plies: bool = False
    """Each pair of games plays a number of random plies drawn from 0 to ``random_plies``
    (from the same stream) instead of ``random_plies``: self-play that also learns the
    positions its own openings never reach, and the openings themselves."""
    model_version: int = 0
    """Version of the model's weights, copied into every record (0 to 2**63 - 1)."""
    opponent_version: int = 0
    """Version of the opponent's weights, copied into records of games against it."""
    search: SearchConfig | None = None
    """The model searches before every move (batched Gumbel search over the games in flight),
    or None: it plays its policy. A searching model plays the search's action and keeps the
    improved policy as its target."""
    opponent_search: SearchConfig | None = None
    """The same for a network opponent."""
    fast_search: SearchConfig | None = None
    """Playout cap randomisation (KataGo): a quicker search of the model's for most of its
    moves. Each move of the model is searched with ``search`` with probability
    ``full_search_share`` (drawn from the game's own stream), else with this one, and only the
    moves of the full search are kept as samples: the policy targets all come from full
    searches, while the games, played mostly by quick ones, cost less. None: every move is
    searched with ``search``. Needs ``search``."""
    full_search_share: float = 1.0
    """The share of the model's moves searched with ``search`` where ``fast_search`` is set
    (0.01 to 1)."""
    sample_plies: int = 0
    """In the first ``sample_plies`` plies of each game, the searching model plays a move
    drawn from its search's improved policy (its policy target) instead of the search's own
    choice: in a game of few actions, the search's Gumbel noise seldom changes its choice, and
    self-play would otherwise repeat a few openings (0 to 100000)."""
    samples: bool = True
    """Send back, with each record, the model's plies as training samples
    (:class:`~asp.games.records.Samples`). Evaluation games can do without."""
    take_wins: bool = False
    """A network that moves without search plays an action that wins at once
    (:func:`~asp.games.protocol.winning`) whenever it has one, the likeliest of
    them, instead of sampling (a small network rarely learns to see every such win; a search
    never misses one). Its policy target is that action."""

    def __post_init__(self) -> None:
        if not all(hasattr(self.game, name) for name in ("start", "outcome", "actions", "apply", "encode")):
            raise ConfigError(f"PlayConfig.game must be a Game (asp.games.Game), got {self.game!r}")
        for name, low, high in (
            ("n_games", 0, 10**9),
            ("seed", 0, _BIG),
            ("first_game", 0, _BIG),
            ("max_plies", 1, 100_000),
            ("batch_size", 1, 4096),
            ("random_plies", 0, 1000),
            ("model_version", 0, _BIG),
            ("opponent_version", 0, _BIG),
        ):
            check_int(f"PlayConfig.{name}", getattr(self, name), low, high)
        check_number("PlayConfig.temperature", self.temperature, 0.01, 100, also=(0,))
        check_number("PlayConfig.opponent_temperature", self.opponent_temperature, 0.01, 100, also=(None, 0))
        check_number("PlayConfig.full_search_share", self.full_search_share, 0.01, 1)
        check_int("PlayConfig.sample_plies", self.sample_plies, 0, 100_000)
        check_bool("PlayConfig.samples", self.samples)
        check_bool("PlayConfig.take_wins", self.take_wins)
        check_bool("PlayConfig.vary_random_plies", self.vary_random_plies)
        for name in ("search", "opponent_search", "fast_search"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), SearchConfig):
                raise ConfigError(f"PlayConfig.{name} must be a SearchConfig or None, got {getattr(self, name)!r}")
        if self.fast_search is not None and self.search is None:
            raise ConfigError("PlayConfig.fast_search needs PlayConfig.search: the full search it stands in for")
        if isinstance(self.openings, str) or not isinstance(self.openings, Sequence):
            raise ConfigError(
                f"PlayConfig.openings must be a tuple of positions in the game's notation, got {self.openings!r}"
            )
        openings = tuple(self.openings)
        object.__setattr__(self, "openings", openings)
        try:
            hash((self.game, openings))
        except TypeError:  # a game (or an opening) that cannot be a key: checked every time
            _check_openings(self.game, openings)
        else:  # the coordinator copies a cfg for each shard (dataclasses.replace): checked once
            _check_openings_once(cast(Hashable, self.game), openings)

    def play(self, model: nn.Module, opp: nn.Module | None) -> tuple[list[Record], dict[str, Any]]:
        """Play these games: :func:`play_games` (what :class:`asp.SelfPlay` calls)."""
        return play_games(model, opp, self)

    def summarise(self, records: list[Record]) -> dict[str, Any]:
        """The stats of ``records``: :func:`~asp.games.records.summarise`."""
        return summarise(records)


def _check_openings(game: Game[Any], openings: tuple[str, ...]) -> None:
    """Raise ConfigError unless every opening is a position of ``game`` where a game goes on."""
    for i, text in enumerate(openings):
        if not isinstance(text, str):
            raise ConfigError(
                f"PlayConfig.openings[{i}] must be a position in the game's notation (a str), got {text!r}"
            )
        try:
            state = game.parse_state(text)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"PlayConfig.openings[{i}]: {e}") from None
        if outcome(game, state) is not None:
            raise ConfigError(f"PlayConfig.openings[{i}]: {text!r} is a finished game")


@functools.lru_cache(maxsize=16)
def _check_openings_once(game: Hashable, openings: tuple[str, ...]) -> None:
    """:func:`_check_openings`, remembered for the last games and openings that passed it (a
    check that fails raises again the next time)."""
    _check_openings(cast("Game[Any]", game), openings)


class _Game(Generic[State]):
    """A game in flight: its position, its moves, its random stream and its samples."""

    __slots__ = ("actions", "counts", "failure", "features", "game_id", "guesses", "legal", "model_first", "movers",
                 "moves", "plies", "policy", "rng", "searching", "self_play", "start", "state", "values")  # fmt: skip

    def __init__(self, game_id: int, cfg: PlayConfig, against_opponent: bool) -> None:
        game = cfg.game
        self.game_id = game_id
        self.start = cfg.openings[game_id % len(cfg.openings)] if cfg.openings else ""
        self.state: State = game.parse_state(self.start) if self.start else game.start()
        opening = random.Random(f"asp:{cfg.seed}:opening:{game_id // 2}")
        plies = opening.randrange(cfg.random_plies + 1) if cfg.vary_random_plies else cfg.random_plies
        for _ in range(plies):
            if outcome(game, self.state) is not None:
                break
            actions = legal_actions(game, self.state)
            self.state = applied(game, self.state, actions[opening.randrange(len(actions))])
        self.start = game.state_text(self.state) if cfg.random_plies or not self.start else self.start
        self.rng = random.Random(f"asp:{cfg.seed}:{game_id}")
        self.self_play = not against_opponent
        self.model_first = self.self_play or game_id % 2 == 0
        self.actions: list[int] = []
        self.moves: list[str] = []  # the actions in the game's notation
        self.searching = False  # its mover is searching: its move comes from the searches
        self.failure: MoveFailed | None = None  # a mover could not move: the game ends unscored
        # The model's plies as training samples (cfg.samples)
        self.plies: list[int] = []
        self.movers: list[int] = []
        self.features: list[np.ndarray] = []  # packed (asp.games.protocol.packed)
        self.legal: list[int] = []
        self.counts: list[int] = []
        self.policy: list[float] = []
        self.values: list[float] = []  # the search's root value of each kept ply (NaN: not searched)
        # The game's heuristic of every position, for its first player (None: not kept)
        self.guesses: list[float] | None = [] if cfg.samples and hasattr(game, "heuristic") else None
        self._guess(game)

    def model_to_move(self, game: Game[State]) -> bool:
        return self.self_play or (game.to_move(self.state) == 0) == self.model_first

    def keep(self, features: np.ndarray, legal: Sequence[int], mover: int) -> None:
        """Note that the model (``mover``) is about to move here (encoded, packed, as ``features``)."""
        self.plies.append(len(self.actions))
        self.movers.append(mover)
        self.features.append(features)
        self.legal.extend(legal)
        self.counts.append(len(legal))

    def push(
        self, game: Game[State], action: int, policy: Sequence[float] | None, model: bool, value: float = math.nan
    ) -> None:
        """Play ``action``; for a kept ply of the model, its policy target (the search's
        improved ``policy``, else the action played) and the search's root ``value``."""
        if model and len(self.policy) < len(self.legal):
            legal = self.legal[len(self.policy) :]
            self.policy.extend(policy if policy is not None else [1.0 if a == action else 0.0 for a in legal])
            self.values.append(value)
        self.moves.append(game.action_text(self.state, action))
        self.state = applied(game, self.state, action)
        self.actions.append(int(action))  # numpy's ints too: the records are written as JSON
        self._guess(game)

    def _guess(self, game: Game[State]) -> None:
        if self.guesses is not None:
            guess = heuristic(game, self.state) or 0.0
            self.guesses.append(guess if game.to_move(self.state) == 0 else -guess)

    def record(self, cfg: PlayConfig, against_opponent: bool) -> Record:
        """The record of the game, over or cut at ``max_plies``."""
        game = cfg.game
        value = outcome(game, self.state)
        termination = "rules"
        if self.failure is not None:
            value, termination = 0.0, self.failure.termination
        elif value is None:
            value, termination = adjudicated(game, self.state), "max_plies"
        first = value if game.to_move(self.state) == 0 else -value
        result = (1.0 + first) / 2.0
        first_player, second_player = MODEL, MODEL
        if against_opponent:
            first_player, second_player = (MODEL, OPPONENT) if self.model_first else (OPPONENT, MODEL)
        return Record(
            game_id=self.game_id,
            start=self.start,
            actions=self.actions,
            moves=self.moves,
            result=result,
            termination=termination,
            first=first_player,
            second=second_player,
            model_version=cfg.model_version,
            opponent_version=cfg.opponent_version if against_opponent else None,
            samples=self._samples() if cfg.samples else None,
        )

    def _samples(self) -> Samples:
        features = np.stack(self.features) if self.features else np.zeros((0, 0), np.float32)
        return Samples(
            plies=np.array(self.plies, dtype=np.int32),
            movers=np.array(self.movers, dtype=np.int8),
            features=features,
            legal=np.array(self.legal, dtype=np.int32),
            legal_counts=np.array(self.counts, dtype=np.int32),
            policy=np.array(self.policy, dtype=np.float32),
            values=np.array(self.values, dtype=np.float32),
            heuristic=np.array(self.guesses or [], dtype=np.float32),
        )


def _sample(logits: Sequence[float], temperature: float, rng: random.Random) -> int:
    """A position in ``logits`` sampled from their softmax at ``temperature`` (0: the largest)."""
    if temperature == 0:
        return max(range(len(logits)), key=logits.__getitem__)
    peak, exp = max(logits), math.exp
    weights = [exp((x - peak) / temperature) for x in logits]
    u = rng.random() * sum(weights)
    return min(bisect.bisect_right(list(itertools.accumulate(weights)), u), len(weights) - 1)


def _drawn(weights: Sequence[float], rng: random.Random) -> int:
    """A position in ``weights`` (a distribution) drawn in proportion to them."""
    u = rng.random() * sum(weights)
    return min(bisect.bisect_right(list(itertools.accumulate(weights)), u), len(weights) - 1)


@dataclass(frozen=True)
class _Side:
    """How one side of every game chooses its moves (settled once per call)."""

    net: nn.Module
    is_model: bool
    temperature: float
    search: SearchConfig | None
    mover: Mover | None
    who: str
    """Whose network it is, for a message: ``the model, version 3``."""

    @staticmethod
    def of(model: nn.Module, opp: nn.Module | None, cfg: PlayConfig) -> list[_Side]:
        """The model's side, then the opponent's if there is one."""
        mover = model if isinstance(model, Mover) else None
        sides = [_Side(model, True, cfg.temperature, cfg.search, mover, f"the model, version {cfg.model_version}")]
        if opp is not None:
            temperature = cfg.temperature if cfg.opponent_temperature is None else cfg.opponent_temperature
            mover = opp if isinstance(opp, Mover) else None
            who = f"the opponent, version {cfg.opponent_version}"
            sides.append(_Side(opp, False, temperature, cfg.opponent_search, mover, who))
        return sides


class _Step(Generic[State]):
    """The moving part of :func:`play_games`: each side's moves, and the searches in flight."""

    def __init__(self, sides: list[_Side], cfg: PlayConfig) -> None:
        self.sides = sides
        self.cfg = cfg
        self.searches: dict[bool, Searches[State, _Game[State]]] = {}  # by is_model

    def move(self, games: list[_Game[State]]) -> int:
        """Each of ``games`` (whose movers choose now) moves, or starts a search; returns how many."""
        game, cfg = self.cfg.game, self.cfg
        rows_of = {side.is_model: [g for g in games if g.model_to_move(game) == side.is_model] for side in self.sides}
        fast: set[_Game[State]] = set()  # the model's quick searches of this step: no samples
        if cfg.fast_search is not None:
            fast = {g for g in rows_of[True] if g.rng.random() >= cfg.full_search_share}
        kept = [g for g in rows_of[True] if g not in fast] if cfg.samples else []
        rows = packed_rows(game, [g.state for g in kept]) if kept else None
        for i, g in enumerate(kept):
            assert rows is not None
            g.keep(rows[i], legal_actions(game, g.state), game.to_move(g.state))
        for side in self.sides:
            if rows_of[side.is_model]:
                self._side_moves(side, rows_of[side.is_model], rows if side.is_model and not fast else None, fast)
        return len(games)

    def _side_moves(
        self, side: _Side, games: list[_Game[State]], rows: np.ndarray | None, fast: set[_Game[State]]
    ) -> None:
        """``side`` moves in ``games`` (``rows``: their packed encoding, if already made;
        ``fast``: the games the model searches with ``fast_search``)."""
        game = self.cfg.game
        if side.mover is not None:
            for g in games:
                try:
                    action = side.mover.choose(game, g.state, g.rng)
                except MoveFailed as e:
                    g.failure = e
                    log.warning("mover_failed", game_id=g.game_id, mover=side.mover.opponent_name, ply=len(g.actions),
                                termination=e.termination, error=e.reason)  # fmt: skip
                    continue
                g.push(game, action, None, side.is_model)
        elif side.search is not None:
            if side.is_model not in self.searches:
                search = NetworkSearch(game, side.net, who=side.who)
                self.searches[side.is_model] = Searches(search, side.search, batch=self.cfg.batch_size)
            for g in games:
                g.searching = True
                quick = self.cfg.fast_search if side.is_model and g in fast else None
                self.searches[side.is_model].start(g, search_root(game, g.state), g.rng, quick)
        else:
            encoded = unpacked(game, rows) if rows is not None else game.encode([g.state for g in games])
            logits, _ = network_output(game, side.net, encoded, len(games), who=side.who)
            wins = [winning(game, g.state) if self.cfg.take_wins else () for g in games]
            choices = [won or game.actions(g.state) for g, won in zip(games, wins, strict=True)]
            actions, counts = legal_choices(game, [g.state for g in games], choices)
            # The logits of every game's choices, gathered in one indexing of one array.
            values = logits[np.repeat(np.arange(len(games)), counts), actions].tolist()
            start = 0
            for g, won, options in zip(games, wins, choices, strict=True):
                row, start = values[start : start + len(options)], start + len(options)
                action = options[_sample(row, 0.0 if won else side.temperature, g.rng)]
                g.push(game, action, None, side.is_model)

    def step_searches(self) -> None:
        """One network call of each side's searches; the games whose search ended move."""
        for is_model, searches in self.searches.items():
            if searches:
                for g, result in searches.step():
                    g.searching = False
                    action = result.action
                    if is_model and len(g.actions) < self.cfg.sample_plies:
                        action = result.actions[_drawn(result.policy, g.rng)]
                    g.push(self.cfg.game, action, result.policy, is_model, result.value)

    def search_stats(self) -> dict[str, int]:
        searches = self.searches.get(True)
        if searches is None:
            return {}
        evaluator = searches.game
        assert isinstance(evaluator, NetworkSearch)
        return {"search/evaluations": evaluator.evaluations, "search/boards": evaluator.boards}


def play_games(model: nn.Module, opp: nn.Module | None, cfg: PlayConfig) -> tuple[list[Record], dict[str, Any]]:
    """Play ``cfg.n_games`` games of ``cfg.game`` in this process; return ``(records, stats)``.

    ``opp=None`` is self-play. With an opponent (a network, or a :class:`~asp.games.Mover`),
    the model moves first in the games with an even id and second in the others; an
    opponent's ``opponent_name``, if it has one, is copied into the records. Records are
    sorted by game id; ``stats`` is :func:`~asp.games.records.summarise` of them plus
    ``seconds`` and ``plies_per_s`` (and the search's network calls when the model searched).
    """
    started = time.perf_counter()
    against = opp is not None
    next_id, end_id = cfg.first_game, cfg.first_game + cfg.n_games

    def next_game() -> _Game[Any] | None:
        nonlocal next_id, end_id
        if next_id >= end_id:  # its own games have all begun: games on offer, in a worker of asp
            block = more_games()
            if block is None:
                return None
            next_id, end_id = block[0], block[0] + block[1]
        new: _Game[Any] = _Game(next_id, cfg, against)
        next_id += 1
        return new

    stepper: _Step[Any] = _Step(_Side.of(model, opp, cfg), cfg)
    records: list[Record] = []
    nets = [model] if opp is None else [model, opp]
    was_training = {m: m.training for net in nets for m in net.modules()}
    for net in nets:
        net.eval()
    try:
        with torch.inference_mode():
            _play(cfg, stepper, next_game, records, against)
    finally:
        for module, training in was_training.items():
            module.training = training
    opponent_name = getattr(opp, "opponent_name", None)
    for record in records:
        record.opponent_name = opponent_name if isinstance(opponent_name, str) else None
    records.sort(key=lambda r: r.game_id)
    seconds = time.perf_counter() - started
    stats = summarise(records)
    stats["seconds"] = seconds
    stats["plies_per_s"] = stats["plies"] / seconds if seconds > 0 else 0.0
    stats.update(stepper.search_stats())
    return records, stats


def _play(cfg: PlayConfig, stepper: _Step[Any], next_game: Any, records: list[Record], against: bool) -> None:
    """The loop of :func:`play_games`: finish, refill and move the batch until no game is left."""
    game = cfg.game
    slots: list[_Game[Any]] = []
    while True:
        live: list[_Game[Any]] = []
        for g in slots:
            while not g.searching and _finished(game, g, cfg):
                records.append(g.record(cfg, against))
                if (g := next_game()) is None:
                    break
            else:
                live.append(g)
        while len(live) < cfg.batch_size and (new := next_game()) is not None:
            if _finished(game, new, cfg):  # its random plies ended it
                records.append(new.record(cfg, against))
            else:
                live.append(new)
        slots = live
        if not slots:
            return
        moved = stepper.move([g for g in slots if not g.searching])
        heartbeat(max(moved, 1))  # in a worker: progress for stall detection, and cancellation
        stepper.step_searches()


def _finished(game: Game[Any], g: _Game[Any], cfg: PlayConfig) -> bool:
    return g.failure is not None or len(g.actions) >= cfg.max_plies or outcome(game, g.state) is not None
