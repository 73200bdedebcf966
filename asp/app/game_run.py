"""A run of a game: :class:`GameRun`, the loaded game and the run's config together.

Every command builds one from the game it loaded (``asp train`` from its options, the others
from a checkpoint) and passes it on; nothing after it loads the game again. The configs of
play are derived here and only here from the run's config (plain data,
:class:`~asp.app.run_config.GameRunConfig`): self-play's of an iteration, the evaluations',
the matches against past versions; so are the network, the trainer, the engine a run's
evaluations play, and the games file.

>>> from asp.app.run_config import GameRunConfig
>>> run = GameRun(GameRunConfig(game="connect4", games=8))
>>> run.game.name, run.play_cfg(iteration=2, version=1).first_game
('connect4', 16)
>>> run.search_cfg(sampling=False).simulations
64

A run's games go to an asp games file: one game record a line, as JSON
(:meth:`asp.games.Record.plain`, with the name of its game), which ``asp train`` and ``asp
play`` write (:func:`write_records`) and ``asp show`` reads back (:func:`read_record`).

>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "games.jsonl"
>>> record = Record(0, "", [3, 3], 0.5, "max_plies", "model", "model", model_version=1)
>>> _ = run.write_games([record.plain()], path)
>>> read_record(path, 1)["actions"]
[3, 3]
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from asp.app.evaluation.matches import PAST_VERSION_GAMES
from asp.app.game_loader import load_game
from asp.app.run_config import GameRunConfig, match_starts, network_config
from asp.errors import ConfigError
from asp.games import PlayConfig, Record, Trainer
from asp.games.protocol import engine_config, exported
from asp.search import SearchConfig
from asp.util.atomic import write_text_atomic

__all__ = ["GameRun", "read_record", "write_records"]


class GameRun:
    """The run ``cfg`` of ``game`` (the game ``cfg.game`` names, loaded; None: load it here).

    :raises ConfigError: the config does not fit the game: network fields it does not have,
        or an engine (``eval_engine``) for a game without one.
    """

    def __init__(self, cfg: GameRunConfig, game: Any = None) -> None:
        self.cfg = cfg
        self.game = load_game(cfg.game, option="the run's game") if game is None else game
        self.engine = self._engine(cfg.eval_engine)
        """The config of the engine the evaluations also play (``cfg.eval_engine``), or None."""
        self.network_cfg = network_config(self.game, cfg.network)
        """The config of the run's network: the game's, with ``cfg.network`` over it."""

    def _engine(self, fields: dict[str, Any] | None) -> Any:
        if fields is None:
            return None
        try:
            engine = engine_config(self.game, fields)
        except ConfigError as e:
            raise ConfigError(f"GameRunConfig.eval_engine: {e}") from None
        if engine is None:
            raise ConfigError(f"eval_engine: {self.cfg.game} has no engine")
        return engine

    def with_cfg(self, cfg: GameRunConfig) -> GameRun:
        """The run ``cfg`` of the same game (a resumed run's stored config), not loaded again."""
        return GameRun(cfg, self.game)

    def new_model(self) -> torch.nn.Module:
        """A fresh network of the run's game, of the run's shape."""
        model: torch.nn.Module = self.game.network(self.network_cfg) if self.cfg.network else self.game.network()
        return model

    def new_trainer(self, model: torch.nn.Module) -> Trainer:
        return Trainer(model, self.game, self.cfg.train, calls=self.cfg.iterations)

    def search_cfg(self, *, sampling: bool, simulations: int | None = None) -> SearchConfig | None:
        """The model's search: sampling with ``search`` simulations in self-play; the best
        action with ``eval_search`` when it plays to win (None: the policy alone);
        ``simulations``, where given, instead of either (0: none)."""
        if simulations is None:
            simulations = self.cfg.search if sampling else self.cfg.eval_search
        if simulations == 0:
            return None
        return SearchConfig(simulations, self.cfg.search_considered, gumbel_scale=1.0 if sampling else 0.0)

    def play_cfg(self, iteration: int, version: int) -> PlayConfig:
        """The self-play config of ``iteration``: distinct game ids and seed per iteration."""
        cfg = self.cfg
        return PlayConfig(
            self.game,
            n_games=cfg.games,
            seed=cfg.seed * 1_000_003 + iteration,
            first_game=iteration * cfg.games,
            max_plies=cfg.max_plies,
            batch_size=cfg.play_batch,
            model_version=version,
            search=self.search_cfg(sampling=True),
            fast_search=self.search_cfg(sampling=True, simulations=cfg.fast_search) if cfg.fast_search else None,
            full_search_share=cfg.full_search_share if cfg.fast_search else 1.0,
            sample_plies=cfg.sample_plies,
            random_plies=cfg.random_plies,
            vary_random_plies=True,
        )

    def eval_cfg(self, version: int, *, games: int | None = None, seed: int = 0) -> PlayConfig:
        """The config of an evaluation: the model plays to win (its search without noise),
        half the games first, half second; fixed seed."""
        cfg = self.cfg
        return PlayConfig(
            self.game,
            n_games=cfg.eval_games if games is None else games,
            seed=10**9 + cfg.seed + seed,
            max_plies=cfg.max_plies,
            temperature=0.0,
            opponent_temperature=1.0,
            batch_size=cfg.play_batch,
            model_version=version,
            samples=False,
            search=self.search_cfg(sampling=False),
        )

    def mover_match_cfg(self, version: int) -> PlayConfig:
        """The config of an evaluation against a heuristic mover (not the random one): from
        the game's openings where it has them (:func:`~asp.app.run_config.match_starts`)."""
        return dataclasses.replace(self.eval_cfg(version), **match_starts(self.game, between_networks=False))

    def mover_cfg(self, version: int, mover: str) -> PlayConfig:
        """The config of an evaluation against the game's mover named ``mover``
        (:func:`~asp.games.movers.movers_of`): :meth:`eval_cfg` for the random mover,
        :meth:`mover_match_cfg` for the others."""
        return self.eval_cfg(version) if mover == "random" else self.mover_match_cfg(version)

    def version_match_cfg(self, version: int, opponent_version: int) -> PlayConfig:
        """The config of a match of ``version`` against a version the run keeps, both playing
        to win from varied starts (each played with both colours): at most
        :data:`~asp.app.evaluation.matches.PAST_VERSION_GAMES` games (see
        :mod:`asp.app.evaluation.ladder`)."""
        return dataclasses.replace(
            self.eval_cfg(version, games=min(self.cfg.eval_games, PAST_VERSION_GAMES)),
            opponent_temperature=None,
            opponent_version=opponent_version,
            opponent_search=self.search_cfg(sampling=False),
            **match_starts(self.game, between_networks=True),
        )

    def write_games(self, records: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> Path:
        """Write plain records of the run's games to ``path`` (:func:`write_records`)."""
        return write_records(records, path, game=self.cfg.game, loaded=self.game)


def write_records(
    records: Iterable[dict[str, Any]], path: str | os.PathLike[str], *, game: str, loaded: Any = None
) -> Path:
    """Write plain records (:meth:`asp.games.Record.plain`) of ``game`` (its name or
    ``MODULE:ATTR``, which ``asp show`` loads; ``loaded``: the game itself, where the caller
    has it) to ``path`` as JSON lines, atomically; and, where the game has a file format of
    its own (:func:`asp.games.protocol.exported`), the same games in it beside them
    (TinyChess: ``iter-0001.pgn`` beside ``iter-0001.jsonl``)."""
    target = Path(path)
    plain = list(records)
    write_text_atomic(target, "".join(json.dumps({"game": game, **record}) + "\n" for record in plain))
    export = exported(load_game(game) if loaded is None else loaded, [Record(**record) for record in plain])
    if export is not None and target.with_suffix(export[0]) != target:  # the records are not overwritten
        write_text_atomic(target.with_suffix(export[0]), export[1])
    return target


_LINE_LIMIT = 1 << 20
"""The longest line ``asp show`` reads from a games file: a record is far shorter."""


def read_record(path: Path, number: int) -> dict[str, Any]:
    """The ``number``-th record (from 1) of a JSON-lines games file, read a bounded line at a time.

    :raises ConfigError: ``number`` below 1, no such file or record, or a line that is not a
        record of asp (naming the field: ``game`` a string, ``start`` a string where it is
        given, ``actions`` a list of ints).
    """
    if number < 1:
        raise ConfigError(f"--game must be 1 or more (the games of {path} count from 1), got {number}")
    try:
        with path.open("rb") as f:
            for count in range(1, number + 1):
                line = f.readline(_LINE_LIMIT)
                if not line:
                    raise ConfigError(f"{path}: holds {count - 1} game(s), not {number}")
                if len(line) >= _LINE_LIMIT and not line.endswith(b"\n"):
                    raise ConfigError(f"{path}: line {count} is over {_LINE_LIMIT} bytes: not an asp games file")
    except FileNotFoundError:
        raise ConfigError(f"GAMES: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"GAMES: {path} is a directory") from None
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"{path}: line {number} is not JSON: not an asp games file") from None
    not_record = f"{path}: line {number} is not a game record of asp"
    if not isinstance(record, dict):
        raise ConfigError(f"{not_record}: a JSON {type(record).__name__}, not an object")
    problem = _record_problem(record)
    if problem is not None:
        raise ConfigError(f"{not_record}: {problem}")
    return record


def _record_problem(record: dict[str, Any]) -> str | None:
    """What makes a line's JSON object no record that ``asp show`` replays, naming the field."""
    if not isinstance(record.get("game"), str):
        return f"field game must be the game's name (a string), got {_short(record.get('game'))}"
    if not isinstance(record.get("start", ""), str):
        return f"field start must be a position in the game's notation (a string), got {_short(record['start'])}"
    actions = record.get("actions")
    if not isinstance(actions, list):
        return f"field actions must be a list of ints, got {_short(actions)}"
    bad = next((k for k, action in enumerate(actions) if type(action) is not int), None)
    return None if bad is None else f"field actions must be a list of ints: actions[{bad}] is {_short(actions[bad])}"


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
