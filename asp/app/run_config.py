"""The configuration of a TinyChess training run: :class:`RunConfig`.

A run's config is written to its ``config.json`` when it starts and into every checkpoint;
:meth:`RunConfig.from_dict` reads both back, a field added since a run was stored taking the
value that run played with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from asp.app.matches import PAST_VERSION_GAMES
from asp.checks import check_int, check_number
from asp.errors import ConfigError
from asp.pipeline import MAX_STALENESS
from asp.search import SearchConfig
from asp.tinychess.engine import EngineConfig
from asp.tinychess.model import ModelConfig
from asp.tinychess.openings import match_openings
from asp.tinychess.play import PlayConfig, check_play_field
from asp.tinychess.train import TrainConfig

__all__ = ["RunConfig"]


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a TinyChess training run. Invalid values raise ConfigError."""

    game: str = "tinychess"
    """The game: always ``tinychess`` (other games' runs have a
    :class:`~asp.app.game_config.GameRunConfig`). A stored config without it reads as TinyChess."""
    iterations: int = 20
    """Iterations to train (1 to 100000)."""
    games: int = 160
    """Self-play games per iteration (1 to 10**6)."""
    seed: int = 0
    """Seed of the model's initialisation, the games and the trainer (0 to 2**31 - 1)."""
    max_plies: int = 200
    """Ply cap of self-play games (adjudicated by material, see PlayConfig)."""
    temperature: float = 1.0
    """Sampling temperature of self-play."""
    play_batch: int = 64
    """Games played at once in each worker."""
    overlap: bool = True
    """Play later iterations while training (False: sequential, as ``max_staleness=0``)."""
    max_staleness: int = 1
    """The most versions a game may lag behind the weights that train on it (0 to 16): 1 plays
    iteration k+1 while training on k; N >= 2 lets self-play run up to N iterations ahead of
    a slow trainer (see :class:`asp.Pipeline`)."""
    mate_in_one: bool = True
    """Without search: the model plays a mate in one whenever it has one, in self-play and in
    evaluations (:attr:`PlayConfig.mate_in_one`); the random mover does not. A stored config
    without this field (a run of an asp before it) reads as False. A searching model never
    misses a mate in one anyway."""
    search: int = 8
    """Simulations of the model's search before each move in self-play (:mod:`asp.search`;
    the trainer then learns the search's improved policy), or 0: the policy alone, trained by
    policy gradient (0 to 10000). A stored config without this field reads as 0."""
    search_considered: int = 16
    """Root actions the search considers (Gumbel top-k; 1 to 1024)."""
    eval_search: int | None = 64
    """Simulations of the model's search when it plays to win: in evaluations during training
    and in ``asp eval`` (0 to 10000: 0 plays the policy alone); None: as ``search``. Self-play
    can search little and still train the policy (the improved policy is a good target after
    a few simulations), while the strength of a player grows with the depth it searches."""
    eval_every: int = 10
    """Evaluate against a random mover every this many iterations, and after the last (1 to 10**6)."""
    eval_games: int = 100
    """The most games of each evaluation, against each opponent (1 to 10**6)."""
    eval_precision: float = 0.1
    """An evaluation against the random or the greedy mover stops, after a round of 20 games,
    once the 95% interval of its score is at most this much either side (0 to 0.5: 0 plays
    every game; see :mod:`asp.app.matches`). A stored config without it reads as 0."""
    eval_temperature: float = 0.1
    """Sampling temperature of the model in evaluation games (the random mover samples at 1)."""
    eval_engine: EngineConfig | None = None
    """Also evaluate against this engine (Stockfish) at every evaluation, from the bundled
    openings with both colours (``asp train --eval-vs stockfish``); None: the random mover only.
    Its ``path`` is None here (where the engine lives is the machine's business, not the run's)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The network."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """The trainer."""

    def __post_init__(self) -> None:
        if self.game != "tinychess":
            raise ConfigError(f"RunConfig.game must be 'tinychess' (other games: GameRunConfig), got {self.game!r}")
        for name, low, high in (
            ("iterations", 1, 100_000),
            ("games", 1, 10**6),
            ("seed", 0, 2**31 - 1),
            ("eval_every", 1, 10**6),
            ("eval_games", 1, 10**6),
            ("max_staleness", 0, MAX_STALENESS),
            ("search", 0, 10_000),
            ("search_considered", 1, 1024),
        ):
            check_int(f"RunConfig.{name}", getattr(self, name), low, high)
        if self.eval_search is not None:
            check_int("RunConfig.eval_search", self.eval_search, 0, 10_000)
        check_number("RunConfig.eval_precision", self.eval_precision, 0, 0.5)
        # The settings passed on to PlayConfig, by PlayConfig's rules under RunConfig's names.
        for play_field, name in (
            ("max_plies", "max_plies"),
            ("temperature", "temperature"),
            ("temperature", "eval_temperature"),
            ("batch_size", "play_batch"),
            ("mate_in_one", "mate_in_one"),
        ):
            check_play_field(play_field, getattr(self, name), name=f"RunConfig.{name}")

    def search_cfg(self, *, sampling: bool) -> SearchConfig | None:
        """The model's search: sampling (Gumbel noise at the root) with ``search`` simulations
        in self-play, the best action with ``eval_search`` when it plays to win; None without
        search."""
        simulations = self.search if sampling or self.eval_search is None else self.eval_search
        if simulations == 0:
            return None
        return SearchConfig(simulations, self.search_considered, gumbel_scale=1.0 if sampling else 0.0)

    def play_cfg(self, iteration: int, version: int) -> PlayConfig:
        """The self-play config of ``iteration``: distinct game ids and seed per iteration."""
        return PlayConfig(
            n_games=self.games,
            seed=self.seed * 1_000_003 + iteration,
            first_game=iteration * self.games,
            max_plies=self.max_plies,
            temperature=self.temperature,
            batch_size=self.play_batch,
            model_version=version,
            mate_in_one=self.mate_in_one,
            search=self.search_cfg(sampling=True),
        )

    def eval_cfg(self, version: int) -> PlayConfig:
        """The config of an evaluation against the random mover (fixed seed: same openings of chance)."""
        return PlayConfig(
            n_games=self.eval_games,
            seed=10**9 + self.seed,
            max_plies=self.max_plies,
            temperature=self.eval_temperature,
            opponent_temperature=1.0,
            batch_size=self.play_batch,
            model_version=version,
            mate_in_one=self.mate_in_one,
            opponent_mate_in_one=False,  # the random mover stays uniform
            samples=False,  # scored, never trained on
            search=self.search_cfg(sampling=False),
        )

    def engine_eval_cfg(self, version: int) -> PlayConfig:
        """The config of an evaluation against ``eval_engine``: the bundled openings, each with
        both colours; the engine samples nothing."""
        return dataclasses.replace(self.eval_cfg(version), openings=match_openings(), opponent_temperature=None)

    def version_match_cfg(self, version: int, opponent_version: int) -> PlayConfig:
        """The config of a match of ``version`` against a version the run keeps, both playing
        as in evaluations, from the bundled openings: at most :data:`~asp.app.matches.
        PAST_VERSION_GAMES` games (see :mod:`asp.app.ladder`)."""
        return dataclasses.replace(
            self.engine_eval_cfg(version),
            n_games=min(self.eval_games, PAST_VERSION_GAMES),
            opponent_temperature=None,
            opponent_mate_in_one=None,
            opponent_version=opponent_version,
            opponent_search=self.search_cfg(sampling=False),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """The config that :meth:`to_dict` wrote. A field this asp does not know (a run made by
        another version of asp, a hand-edited config.json) raises ConfigError naming it.

        >>> RunConfig.from_dict({**RunConfig().to_dict(), "train": {"gae_lambda": 0.8}})
        Traceback (most recent call last):
        ...
        asp.errors.ConfigError: RunConfig.train has no field 'gae_lambda' (a run of another version of asp?); ...
        """
        data = fields_of("RunConfig", cls, data)
        # A run stored before the field existed played with the policy alone, evaluated as it
        # played, and played every evaluation game.
        data.setdefault("mate_in_one", False)
        data.setdefault("search", 0)
        data.setdefault("eval_search", None)
        data.setdefault("eval_precision", 0.0)
        model = ModelConfig(**fields_of("RunConfig.model", ModelConfig, data.pop("model")))
        train = TrainConfig(**fields_of("RunConfig.train", TrainConfig, data.pop("train")))
        engine = data.pop("eval_engine", None)
        if engine is not None:
            engine = EngineConfig(**fields_of("RunConfig.eval_engine", EngineConfig, engine))
        return cls(model=model, train=train, eval_engine=engine, **data)


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
