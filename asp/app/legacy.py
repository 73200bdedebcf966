"""Runs of an older asp, whose TinyChess trained with its own loop: read, never resumed.

Until TinyChess trained through the game seam (:class:`asp.games.Game`), its runs had a
config of their own and checkpoints of format ``asp-tinychess-run``. Their network is the
one :class:`~asp.tinychess.game.TinyChessGame` builds, so ``asp eval``, ``asp play`` and
``asp moves`` read them: :func:`from_legacy` gives their config as a
:class:`~asp.app.game_config.GameRunConfig` of ``tinychess``. Their trainer was another one,
so ``asp train --resume`` refuses them (:data:`NOT_RESUMED`).

What the old config said maps as follows: the network's shape (``model``) to ``network``;
the fields both configs have, as they are; ``eval_search`` unset (as in self-play) to the
self-play search; a self-play search of 0 (the policy alone) to 1 simulation, which with
Gumbel noise at the root samples the policy (the Gumbel-max trick); the rest (the sampling
temperatures, the mate-in-one rule, the old trainer's settings) has no counterpart and is
left out.

>>> old = {"game": "tinychess", "search": 0, "eval_search": None, "model": {"hidden": 64, "blocks": 2},
...        "temperature": 1.0, "mate_in_one": True, "train": {"lr": 0.001}}
>>> is_legacy(old)
True
>>> cfg = from_legacy(old)
>>> cfg.game, cfg.search, cfg.eval_search, cfg.network
('tinychess', 1, 0, {'hidden': 64})
"""

from __future__ import annotations

import dataclasses
from typing import Any

from asp.app.game_config import GAME_DEFAULTS, GameRunConfig, fields_of
from asp.app.games import TINYCHESS
from asp.errors import ConfigError
from asp.tinychess.engine import EngineConfig
from asp.tinychess.model import ModelConfig

__all__ = ["LEGACY_FORMAT", "LEGACY_FORMAT_VERSION", "NOT_RESUMED", "from_legacy", "is_legacy"]

LEGACY_FORMAT = "asp-tinychess-run"
"""The ``format`` of an older asp's TinyChess checkpoints (format version 2)."""
LEGACY_FORMAT_VERSION = 2
"""The one version of :data:`LEGACY_FORMAT` this asp reads (version 1's network reads no
attacked-squares planes)."""
NOT_RESUMED = (
    "a TinyChess run of an older asp, trained by its own loop: asp eval, play and moves read it, "
    "but it does not resume; start a new run"
)
"""What ``asp train --resume`` says of such a run (after its path)."""

_KEPT = ("iterations", "games", "seed", "max_plies", "play_batch", "overlap", "max_staleness", "search_considered",
         "eval_every", "eval_games", "eval_precision")  # fmt: skip
"""The old config's fields that :class:`GameRunConfig` has, with the same meaning."""
_DROPPED = ("game", "temperature", "mate_in_one", "eval_temperature", "train")
"""The old config's fields with no counterpart (``game`` is always ``tinychess``)."""
_FIELDS = (*_KEPT, *_DROPPED, "search", "eval_search", "eval_engine", "model")


def is_legacy(data: Any) -> bool:
    """Whether a stored config (``config.json``, a checkpoint's ``config``) is an older
    asp's TinyChess config: it has the network's shape as ``model``."""
    return isinstance(data, dict) and "model" in data


def from_legacy(data: dict[str, Any]) -> GameRunConfig:
    """The :class:`GameRunConfig` an older asp's TinyChess config plays as (see the module).

    :raises ConfigError: a field that config never had, or a value out of range, named.
    """
    if data.get("game", TINYCHESS) != TINYCHESS:
        raise ConfigError(f"RunConfig.game must be 'tinychess', got {data['game']!r}")
    unknown = [repr(name) for name in data if name not in _FIELDS]
    if unknown:
        raise ConfigError(f"RunConfig has no field {', '.join(unknown)} (a run of another version of asp?)")
    kept = {name: data[name] for name in _KEPT if name in data}
    kept.setdefault("eval_precision", 0.0)  # stored before it existed: every game was played
    search = data.get("search", 0)
    eval_search = data.get("eval_search")
    model = ModelConfig(**fields_of("RunConfig.model", ModelConfig, data.get("model", {})))
    shape, default = dataclasses.asdict(model), dataclasses.asdict(ModelConfig())
    engine = data.get("eval_engine")
    if engine is not None:
        engine = EngineConfig(**fields_of("RunConfig.eval_engine", EngineConfig, engine))
    return GameRunConfig(
        game=TINYCHESS,
        **kept,
        search=max(search, 1) if isinstance(search, int) else search,
        eval_search=search if eval_search is None else eval_search,
        eval_engine=engine,
        network={name: value for name, value in shape.items() if value != default[name]},
        train=GAME_DEFAULTS[TINYCHESS]["train"],
    )
