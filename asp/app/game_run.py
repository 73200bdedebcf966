"""What a training session needs to know of the game it trains: :class:`GameRun`.

The session (:mod:`asp.app.session`) is the same for every game: pipeline, checkpoints,
metrics, curves. What depends on the game is here: the network and trainer a run starts
with, the self-play config of an iteration, the evaluations, and how the games are written.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import structlog
import torch

from asp.app.evaluate import match_result_of
from asp.app.game_config import GameRunConfig
from asp.app.games import load_game
from asp.app.matches import matches_metrics, play_matches
from asp.atomic import write_text_atomic
from asp.errors import ConfigError, ShardFailed
from asp.games import Record, Trainer
from asp.games.protocol import exported, movers
from asp.selfplay import SelfPlay
from asp.tinychess.engine import EngineConfig, EngineFailed, EngineNotFound, EngineOpponent
from asp.tinychess.game import TinyChessGame

__all__ = ["EVAL_PRIORITY", "GameRun", "Past", "write_records"]

log = structlog.get_logger("asp.train")

Past = Sequence[tuple[int, torch.nn.Module]]
"""Versions a run keeps that an evaluation also plays: ``(version, network)``."""


EVAL_PRIORITY = 1
"""Evaluation games go to free workers before self-play's: an iteration's metrics line and
checkpoint wait for its evaluation, not for the next iteration's games."""


def _engine_of(wanted: EngineConfig | None, engine_path: str | None) -> tuple[EngineOpponent | None, str | None]:
    """The engine a run's evaluations play (``wanted``, at ``engine_path``; None: where asp
    looks) and None; or, when the run wants none, None and None; or, when it is not found,
    None and the note that says so (logged: the run goes on without it)."""
    if wanted is None:
        return None, None
    try:  # finds the executable only: each worker starts its own engine when it first plays
        return EngineOpponent(dataclasses.replace(wanted, path=engine_path)), None
    except EngineNotFound as e:
        log.warning("engine_eval_skipped", reason=str(e))
        return None, f"no evaluation against {wanted.describe()}: {e}"


class GameRun:
    """Any :class:`~asp.games.Game`: its default network, :class:`asp.games.Trainer`, one
    evaluation against each of the game's movers (``eval/...`` for the random mover, from the
    start position; ``eval_<name>/...`` for the others, from the game's openings where it has
    them) and, for chess, an engine when the run asks and it is found (``eval_sf/...``); games
    as JSON lines (and in the game's own format where it has one)."""

    games_suffix = ".jsonl"

    def __init__(self, cfg: GameRunConfig, *, engine_path: str | None = None) -> None:
        self.cfg = cfg
        self.game = load_game(cfg.game)
        if cfg.eval_engine is not None and not isinstance(self.game, TinyChessGame):
            raise ConfigError(f"GameRunConfig.eval_engine: an engine plays chess, not {cfg.game}")
        self.engine, self.note = _engine_of(cfg.eval_engine, engine_path)

    def new_model(self) -> torch.nn.Module:
        model: torch.nn.Module = self.cfg.new_network(self.game)
        return model

    def new_trainer(self, model: torch.nn.Module) -> Trainer:
        return Trainer(model, self.game, self.cfg.train)

    def play_cfg(self, iteration: int, version: int) -> Any:
        return self.cfg.play_cfg(self.game, iteration, version)

    async def evaluate(
        self, selfplay: SelfPlay, model: torch.nn.Module, version: int, past: Past = ()
    ) -> dict[str, Any]:
        # The matches against past versions first: the costliest, split between the workers.
        matches: dict[str, tuple[Any, Any]] = {
            f"eval_v{old}": (network, self.cfg.version_match_cfg(self.game, version, old)) for old, network in past
        }
        opponents = movers(self.game)
        matches["eval"] = (opponents["random"], self.cfg.eval_cfg(self.game, version))
        for name, mover in opponents.items():
            if name != "random":
                matches[f"eval_{name}"] = (mover, self.cfg.mover_match_cfg(self.game, version))
        played = await play_matches(selfplay, model, matches, precision=self.cfg.eval_precision, priority=EVAL_PRIORITY)
        line = matches_metrics(played)
        if self.engine is not None:
            line.update(await self._engine_match(selfplay, model, version, self.engine))
        return line

    async def _engine_match(
        self, selfplay: SelfPlay, model: torch.nn.Module, version: int, engine: EngineOpponent
    ) -> dict[str, Any]:
        """The match against the engine: ``eval_sf/...``. An engine that keeps failing, or a
        match with no game finished, is logged and reported as ``eval_sf/error``: it never
        stops training."""
        cfg = self.cfg.mover_match_cfg(self.game, version)
        try:
            played = await play_matches(
                selfplay, model, {"eval_sf": (engine, cfg)}, precision=self.cfg.eval_precision, priority=EVAL_PRIORITY
            )
            failures = match_result_of(played["eval_sf"].records).engine_failures
        except (ShardFailed, EngineFailed, ConfigError) as e:
            log.warning("engine_eval_failed", engine=engine.opponent_name, error=repr(e))
            return {"eval_sf/error": repr(e)[:300]}
        return {"eval_sf/engine": engine.opponent_name, **matches_metrics(played), "eval_sf/engine_failures": failures}

    def games_writer(self) -> Any:
        return functools.partial(write_records, game=self.cfg.game)


def write_records(records: Iterable[dict[str, Any]], path: str | os.PathLike[str], *, game: str) -> Path:
    """Write plain records (:meth:`asp.games.Record.plain`) of ``game`` (its name or
    ``MODULE:ATTR``, which ``asp show`` loads) to ``path`` as JSON lines, atomically; and,
    where the game has a file format of its own (:func:`asp.games.protocol.exported`), the
    same games in it beside them (TinyChess: ``iter-0001.pgn`` beside ``iter-0001.jsonl``)."""
    target = Path(path)
    plain = list(records)
    write_text_atomic(target, "".join(json.dumps({"game": game, **record}) + "\n" for record in plain))
    export = exported(load_game(game), [Record(**record) for record in plain])
    if export is not None and target.with_suffix(export[0]) != target:  # the records are not overwritten
        write_text_atomic(target.with_suffix(export[0]), export[1])
    return target
