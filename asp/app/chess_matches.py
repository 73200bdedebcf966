"""TinyChess's evaluations during training: matches against the random mover, the greedy
mover and an engine, with their metrics."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import structlog
import torch

from asp.app.evaluate import match_result_of
from asp.app.matches import matches_metrics, play_matches
from asp.app.metrics import match_metrics
from asp.app.run_config import RunConfig
from asp.errors import ConfigError, ShardFailed
from asp.selfplay import SelfPlay
from asp.tinychess.engine import EngineFailed, EngineOpponent
from asp.tinychess.opponents import GreedyMover, RandomMover
from asp.tinychess.records import GameRecord

__all__ = ["EVAL_PRIORITY", "endings", "evaluate_vs_engine", "evaluate_vs_movers"]

log = structlog.get_logger("asp.train")


EVAL_PRIORITY = 1
"""Evaluation games go to free workers before self-play's: an iteration's metrics line and
checkpoint wait for its evaluation, not for the next iteration's games."""


async def evaluate_vs_movers(
    selfplay: SelfPlay,
    model: torch.nn.Module,
    cfg: RunConfig,
    version: int,
    past: Sequence[tuple[int, torch.nn.Module]] = (),
) -> dict[str, Any]:
    """Score of ``model`` against the uniformly random mover (``eval/...`` metrics), against
    the one-ply material-greedy mover from the bundled openings, each with both colours
    (``eval_greedy/...``), and against each ``(version, network)`` of ``past``
    (``eval_v<N>/...``): matches at once, each of at most ``cfg.eval_games`` games, which stop
    early once their score is known to ``cfg.eval_precision`` (:mod:`asp.app.matches`)."""
    # The matches against past versions first: the costliest, split between the workers.
    matches: dict[str, tuple[Any, Any]] = {
        f"eval_v{old}": (network, cfg.version_match_cfg(version, old)) for old, network in past
    }
    matches["eval"] = (RandomMover(), cfg.eval_cfg(version))
    matches["eval_greedy"] = (GreedyMover(), cfg.engine_eval_cfg(version))
    played = await play_matches(selfplay, model, matches, precision=cfg.eval_precision, priority=EVAL_PRIORITY)
    return matches_metrics(played) | {f"{prefix}/endings": endings(match.records) for prefix, match in played.items()}


async def evaluate_vs_engine(
    selfplay: SelfPlay, model: torch.nn.Module, cfg: RunConfig, version: int, engine: EngineOpponent
) -> dict[str, Any]:
    """Score of ``model`` against ``engine`` over ``cfg.eval_games`` games from the bundled
    openings: ``eval_sf/...`` metrics. An engine that keeps failing, or a match with no
    finished game, is logged and reported as ``eval_sf/error``: it never stops training."""
    started = time.perf_counter()
    try:
        records, _ = await selfplay.play(model, engine, cfg.engine_eval_cfg(version), priority=EVAL_PRIORITY)
        result = match_result_of(records)
    except (ShardFailed, EngineFailed, ConfigError) as e:
        log.warning("engine_eval_failed", engine=engine.opponent_name, error=repr(e))
        return {"eval_sf/error": repr(e)[:300]}
    return {
        "eval_sf/engine": engine.opponent_name,
        **match_metrics("eval_sf", result),
        "eval_sf/endings": endings(records),
        "eval_sf/engine_failures": result.engine_failures,
        "eval_sf/seconds": time.perf_counter() - started,
    }


def endings(records: Sequence[GameRecord]) -> dict[str, int]:
    """How the scored games against an opponent ended, from the model's side: counts keyed
    ``outcome/termination``. A win or loss by ``max_plies`` is an adjudication by material at
    the ply cap, not a mate; games that ended by engine failure are left out, as in the score.

    >>> from asp.tinychess import GameRecord
    >>> game = lambda result, termination: GameRecord(0, [], result, termination, "", "model", "random", 0)
    >>> endings([game("1-0", "max_plies"), game("0-1", "checkmate"), game("1-0", "max_plies")])
    {'loss/checkmate': 1, 'win/max_plies': 2}
    """
    names = {1.0: "win", 0.5: "draw", 0.0: "loss"}
    counts = Counter(
        f"{names[points]}/{record.termination}"
        for record in records
        if record.termination != "engine_failure" and (points := record.model_score()) is not None
    )
    return dict(sorted(counts.items()))
