"""The configuration of a training run of any game: :class:`GameRunConfig`.

A run's config is written to its ``config.json`` when it starts and into every checkpoint;
:meth:`GameRunConfig.from_dict` reads both back.

>>> cfg = GameRunConfig(game="connect4", iterations=2)
>>> GameRunConfig.from_dict(cfg.to_dict()) == cfg
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asp.app.game_loader import load_game
from asp.errors import ConfigError
from asp.games import TrainConfig
from asp.games.protocol import openings, run_defaults
from asp.pipeline import MAX_STALENESS
from asp.util.checks import check_bool, check_int, check_number

__all__ = [
    "VERSION_MATCH_RANDOM_PLIES",
    "GameRunConfig",
    "defaults_for",
    "fields_of",
    "match_starts",
    "network_config",
]

VERSION_MATCH_RANDOM_PLIES = 2
"""Random plies that open each game between two versions of a run, or two checkpoints, of a
game without openings: two players that play to win would otherwise play the same two games
over and over."""


def match_starts(game: Any, *, between_networks: bool) -> dict[str, Any]:
    """The :class:`~asp.games.PlayConfig` fields that vary the starts of a match against a
    heuristic mover, or ``between_networks`` (two versions, two checkpoints): the game's
    openings (:func:`asp.games.protocol.openings`), each twice in a row so that games ``2k``
    and ``2k + 1`` play it with both colours; a game without openings starts from its start
    position, with :data:`VERSION_MATCH_RANDOM_PLIES` random plies between networks.

    >>> from asp.tinychess.game import TinyChessGame
    >>> starts = match_starts(TinyChessGame(), between_networks=True)["openings"]
    >>> len(starts), starts[0] == starts[1] != starts[2]
    (20, True)
    >>> from asp.connect4 import ConnectFour
    >>> match_starts(ConnectFour(), between_networks=True), match_starts(ConnectFour(), between_networks=False)
    ({'random_plies': 2}, {})
    """
    listed = openings(game)
    if listed:
        return {"openings": tuple(text for text in listed for _ in range(2))}
    return {"random_plies": VERSION_MATCH_RANDOM_PLIES} if between_networks else {}


def network_config(game: Any, fields: dict[str, Any]) -> Any:
    """The config of ``game``'s network with ``fields`` over its defaults: the ``cfg`` of
    ``game.network()`` (a dataclass) with those fields replaced, checked by its own
    validation; with no fields, ``game.network()``'s own.

    >>> from asp.connect4 import ConnectFour
    >>> network_config(ConnectFour(), {"hidden": 64})
    C4Config(hidden=64, blocks=2, channels=16, tower=0)
    >>> network_config(ConnectFour(), {"width": 64})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    asp.errors.ConfigError: GameRunConfig.network: connect4's network has no field 'width'; its fields: hidden, ...

    :raises ConfigError: a field the network's config does not have, or a value out of range.
    """
    default = getattr(game.network(), "cfg", None)
    if not fields:
        return default
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        raise ConfigError(
            f"GameRunConfig.network: {game.name}'s network keeps no dataclass as its cfg: it takes no fields"
        )
    known = [f.name for f in dataclasses.fields(default)]
    for name in fields:
        if name not in known:
            raise ConfigError(
                f"GameRunConfig.network: {game.name}'s network has no field {name!r}; its fields: {', '.join(known)}"
            )
    try:
        return dataclasses.replace(default, **fields)
    except ConfigError:
        raise
    except (TypeError, ValueError) as e:  # a config that checks its values with other errors
        raise ConfigError(f"GameRunConfig.network: {e}") from None


@dataclass(frozen=True)
class GameRunConfig:
    """Everything that defines a training run of a game (:class:`asp.games.Game`); ``asp
    train`` starts from :func:`defaults_for` its game. Invalid values raise ConfigError."""

    game: str = "connect4"
    """The game: a shipped game's name, or ``MODULE:ATTR`` (see :func:`asp.app.game_loader.load_game`)."""
    iterations: int = 20
    """Iterations to train (1 to 100000)."""
    games: int = 200
    """Self-play games per iteration (1 to 10**6)."""
    seed: int = 0
    """Seed of the model's initialisation, the games and the trainer (0 to 2**31 - 1)."""
    max_plies: int = 1000
    """Plies after which a game is cut and drawn (1 to 100000)."""
    play_batch: int = 64
    """Games played at once in each worker (1 to 4096)."""
    overlap: bool = True
    """Play the next iteration while training (False: sequential)."""
    max_staleness: int = 1
    """The most versions a game may lag behind the weights that train on it (0 to 16)."""
    search: int = 16
    """Simulations of the model's search before each move in self-play (1 to 10000): the
    trainer learns the search's improved policy."""
    search_considered: int = 16
    """Root actions the search considers (Gumbel top-k; 1 to 1024)."""
    fast_search: int = 0
    """Playout cap randomisation: simulations of the quick searches that play the self-play
    moves not kept as samples (0: every move is searched with ``search`` and kept; 1 to 10000;
    see :attr:`asp.games.PlayConfig.fast_search`)."""
    full_search_share: float = 1.0
    """With ``fast_search``: the share of the model's self-play moves searched with ``search``
    and kept as samples (0.01 to 1)."""
    sample_plies: int = 0
    """Plies at the start of each self-play game whose move is drawn from the search's
    improved policy rather than chosen by it: varied openings (0 to 100000; see
    :attr:`asp.games.PlayConfig.sample_plies`)."""
    random_plies: int = 0
    """The most plies at the start of a self-play game played uniformly at random (each pair
    of games draws from 0 to this many; they are no samples): the model learns positions that
    its own openings never reach (0 to 1000; see :attr:`asp.games.PlayConfig.vary_random_plies`)."""
    eval_search: int = 64
    """Simulations of the model's search when it plays to win: evaluations during training,
    ``asp eval``, ``asp moves`` (0 to 10000: 0 plays the policy alone)."""
    eval_every: int = 4
    """Evaluate every this many iterations, and after the last (1 to 10**6)."""
    eval_games: int = 100
    """The most games of each evaluation, against each of the game's movers (2 to 10**6)."""
    eval_precision: float = 0.1
    """An evaluation stops, after a round of 20 games, once the 95% interval of its score is
    at most this much either side (0 to 0.5: 0 plays every game; see :mod:`asp.app.evaluation.matches`)."""
    eval_budget: float = 0.5
    """The most time an evaluation may take, as a share of the training's wall time since the
    evaluation before (0 to 10; 0: no limit): past it, no match starts another round (each
    plays one round at least), so that a slow mover costs the run no more than this share."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """The trainer."""
    eval_engine: dict[str, Any] | None = None
    """The fields of an engine that the evaluations also play (``eval_sf/...``), from the
    game's openings: a game with an engine only (the protocol's optional ``engine``; TinyChess:
    :class:`~asp.tinychess.engine.EngineConfig`'s fields). Its path is not part of the run
    (``asp train --engine``)."""
    network: dict[str, Any] = field(default_factory=dict)
    """Fields of the game's network config that differ from its defaults (``asp train
    --hidden 128``: ``{"hidden": 128}``); see :func:`network_config`."""

    def __post_init__(self) -> None:
        if not isinstance(self.game, str) or not self.game:
            raise ConfigError(f"GameRunConfig.game must be a game's name or MODULE:ATTR, got {self.game!r}")
        for name, low, high in (
            ("iterations", 1, 100_000),
            ("games", 1, 10**6),
            ("seed", 0, 2**31 - 1),
            ("max_plies", 1, 100_000),
            ("play_batch", 1, 4096),
            ("max_staleness", 0, MAX_STALENESS),
            ("search", 1, 10_000),
            ("search_considered", 1, 1024),
            ("fast_search", 0, 10_000),
            ("sample_plies", 0, 100_000),
            ("random_plies", 0, 1000),
            ("eval_search", 0, 10_000),
            ("eval_every", 1, 10**6),
            ("eval_games", 2, 10**6),
        ):
            check_int(f"GameRunConfig.{name}", getattr(self, name), low, high)
        check_number("GameRunConfig.eval_precision", self.eval_precision, 0, 0.5)
        check_number("GameRunConfig.eval_budget", self.eval_budget, 0, 10)
        check_number("GameRunConfig.full_search_share", self.full_search_share, 0.01, 1)
        check_bool("GameRunConfig.overlap", self.overlap)
        if not isinstance(self.train, TrainConfig):
            raise ConfigError(f"GameRunConfig.train must be an asp.games.TrainConfig, got {self.train!r}")
        if self.eval_engine is not None and (
            not isinstance(self.eval_engine, dict) or not all(isinstance(name, str) for name in self.eval_engine)
        ):
            raise ConfigError(
                f"GameRunConfig.eval_engine must map the engine's fields to values, got {self.eval_engine!r}"
            )
        if not isinstance(self.network, dict) or not all(isinstance(name, str) for name in self.network):
            raise ConfigError(
                f"GameRunConfig.network must map the network config's fields to values, got {self.network!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRunConfig:
        """The config that :meth:`to_dict` wrote; a field this asp does not know raises
        ConfigError naming it. A stored config without ``eval_precision`` or ``eval_budget``
        reads it as 0 (every evaluation game played, no limit of time), as it was run."""
        data = fields_of("GameRunConfig", cls, data)
        if "game" not in data:
            raise ConfigError("GameRunConfig.game is missing: a run's config names its game")
        data.setdefault("eval_precision", 0.0)  # a run stored before it played every evaluation game
        data.setdefault("eval_budget", 0.0)  # a run stored before its evaluations had a budget of time
        train = TrainConfig(**fields_of("GameRunConfig.train", TrainConfig, data.pop("train", {})))
        engine = data.pop("eval_engine", None)
        if engine is not None and not isinstance(engine, dict):
            raise ConfigError(f"GameRunConfig.eval_engine must be a mapping of its fields, got {type(engine).__name__}")
        return cls(train=train, eval_engine=engine, **data)


def defaults_for(spec: str, game: Any = None) -> GameRunConfig:
    """The config of a run of the game ``spec`` names (``game``, where the caller loaded it)
    before any option: the game's own settings
    (:func:`~asp.games.protocol.run_defaults`) over :class:`GameRunConfig`'s.

    :raises ConfigError: the game's settings name something that is not a setting of a run,
        or a value out of its range.
    """
    owner = f"{spec}: the game's run_defaults()"
    data = run_defaults(load_game(spec) if game is None else game)
    _check_settings(owner, GameRunConfig, data, "")
    train = data.pop("train", TrainConfig())
    if not isinstance(train, TrainConfig):  # a mapping of its fields
        _check_settings(owner, TrainConfig, train, "train.")
        train = TrainConfig(**train)
    return GameRunConfig(game=spec, train=train, **data)


def _check_settings(owner: str, cls: type, given: Any, where: str) -> None:
    """ConfigError unless ``given`` is a mapping of fields of the dataclass ``cls`` (its
    ``game`` aside), named ``where`` (``train.``) in the message of ``owner``."""
    if not isinstance(given, Mapping):
        what = where.rstrip(".") or "the settings"
        raise ConfigError(f"{owner}: {what} must be a mapping, got {type(given).__name__}")
    names = [f.name for f in dataclasses.fields(cls) if f.name != "game"]
    unknown = [f"{where}{key}" for key in given if key not in names]
    if unknown:
        raise ConfigError(f"{owner}: no setting {', '.join(map(repr, unknown))}; the settings: {', '.join(names)}")


def fields_of(owner: str, cls: type, data: Any) -> dict[str, Any]:
    """``data`` as keyword arguments of the dataclass ``cls``; ConfigError names what is not one."""
    if not isinstance(data, dict):
        raise ConfigError(f"{owner} must be a mapping of its fields, got {type(data).__name__}")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [repr(key) for key in data if key not in names]
    if unknown:
        raise ConfigError(
            f"{owner} has no field {', '.join(unknown)} (a run of another version of asp?); "
            f"its fields: {', '.join(names)}"
        )
    return dict(data)
