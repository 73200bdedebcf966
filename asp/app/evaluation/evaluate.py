"""The evaluation of a version during training: one match against each of the game's movers
(``eval/...`` against the random mover, from the start position; ``eval_<name>/...`` against
the others, from the game's openings where it has them), against the versions the run keeps
that it picks (``eval_vNNN/...``), and against the game's engine where the run asks for one
and it is found (``eval_sf/...``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import structlog
import torch

from asp.app.evaluation.elo import match_result_of
from asp.app.evaluation.matches import matches_metrics, play_matches
from asp.app.game_run import GameRun
from asp.errors import ConfigError, NotRetried, OpponentNotFound, ShardFailed
from asp.games.movers import movers_of as all_movers
from asp.selfplay import SelfPlay

__all__ = ["EVAL_PRIORITY", "Past", "engine_opponent", "evaluate"]

log = structlog.get_logger("asp.train")

Past = Sequence[tuple[int, torch.nn.Module]]
"""Versions a run keeps that an evaluation also plays: ``(version, network)``."""

EVAL_PRIORITY = 1
"""Evaluation games go to free workers before self-play's: an iteration's metrics line and
checkpoint wait for its evaluation, not for the next iteration's games."""


def engine_opponent(run: GameRun, path: str | None) -> tuple[Any, str | None]:
    """The engine the run's evaluations play (``run.engine``, at ``path``; None: where the
    game looks) and None; or, when the run wants none, None and None; or, when it is not
    found, None and the note that says so (logged: the run goes on without it)."""
    if run.engine is None:
        return None, None
    try:  # finds the executable only: each worker starts its own engine when it first plays
        return run.engine.opponent(path), None
    except OpponentNotFound as e:
        log.warning("engine_eval_skipped", reason=str(e))
        return None, f"no evaluation against {run.engine.describe()}: {e}"


async def evaluate(
    run: GameRun,
    selfplay: SelfPlay,
    model: torch.nn.Module,
    version: int,
    past: Past = (),
    engine: Any = None,
    *,
    seconds: float | None = None,
) -> dict[str, Any]:
    """The metrics of the evaluation of ``model`` as ``version``: its matches against
    ``past`` versions, the game's movers and ``engine`` (see the module docstring). Where
    ``seconds`` is given, no match starts a round after that long: each plays one round at
    least, and more only while the time lasts (a slow mover costs the run its first round)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    # The matches against past versions first: the costliest, split between the workers.
    matches: dict[str, tuple[Any, Any]] = {
        f"eval_v{old}": (network, run.version_match_cfg(version, old)) for old, network in past
    }
    for name, mover in all_movers(run.game).items():  # the random mover first: ``eval``
        matches["eval" if name == "random" else f"eval_{name}"] = (mover, run.mover_cfg(version, name))
    played = await play_matches(
        selfplay, model, matches, precision=run.cfg.eval_precision, priority=EVAL_PRIORITY, deadline=deadline
    )
    line = matches_metrics(played)
    if engine is not None:
        line.update(await _engine_match(run, selfplay, model, version, engine, deadline))
    return line


async def _engine_match(
    run: GameRun, selfplay: SelfPlay, model: torch.nn.Module, version: int, engine: Any, deadline: float | None
) -> dict[str, Any]:
    """The match against the engine: ``eval_sf/...``. An engine that keeps failing, or a
    match with no game finished, is logged and reported as ``eval_sf/error``: it never
    stops training."""
    cfg = run.mover_match_cfg(version)
    try:
        played = await play_matches(
            selfplay,
            model,
            {"eval_sf": (engine, cfg)},
            precision=run.cfg.eval_precision,
            priority=EVAL_PRIORITY,
            deadline=deadline,
        )
        failures = match_result_of(played["eval_sf"].records).engine_failures
    except (ShardFailed, NotRetried, ConfigError) as e:
        log.warning("engine_eval_failed", engine=engine.opponent_name, error=repr(e))
        return {"eval_sf/error": repr(e)[:300]}
    return {"eval_sf/engine": engine.opponent_name, **matches_metrics(played), "eval_sf/engine_failures": failures}
