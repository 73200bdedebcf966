"""A TinyChess training run on disk: config, checkpoints, metrics, games, curves.

A run directory holds::

    checkpoint.pt    the last complete iteration (atomic rename; torch.load(weights_only=True))
    config.json      the run's configuration, written once when the run starts
    metrics.jsonl    one JSON line per iteration
    log.jsonl        the run's structlog events as JSON lines
    games/iter-NNNN.pgn   each iteration's games
    curves.png       losses, score against a random mover, plies/s

A checkpoint holds the model and optimizer, the index of the next iteration, the model's
version, the versions and weights of the iterations whose self-play had begun (overlapped
runs), the trainer's and torch's random states and the config, so ``--resume`` plays those
iterations again with the same weights and seeds.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from asp.app.outputs import writing
from asp.atomic import save_atomic, write_text_atomic
from asp.checks import check_int
from asp.errors import AspError, ConfigError
from asp.pipeline import MAX_STALENESS
from asp.search import SearchConfig
from asp.tinychess.engine import EngineConfig
from asp.tinychess.model import ModelConfig, TinyChess
from asp.tinychess.openings import match_openings
from asp.tinychess.play import PlayConfig, check_play_field
from asp.tinychess.train import TrainConfig, Trainer

__all__ = [
    "CHECKPOINT",
    "RunConfig",
    "RunDir",
    "RunError",
    "checkpoint_state",
    "load_checkpoint",
    "load_weights",
    "model_from_checkpoint",
    "pending_plays",
]

CHECKPOINT = "checkpoint.pt"
"""The checkpoint's file name inside the run directory."""
FORMAT = "asp-tinychess-run"
FORMAT_VERSION = 2
"""2: the model's input has the attacked-squares planes (a version-1 network cannot read it)."""


class RunError(AspError):
    """A run directory or checkpoint cannot be used: missing, corrupt, foreign or mismatched."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a TinyChess training run. Invalid values raise ConfigError."""

    iterations: int = 16
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
    eval_every: int = 8
    """Evaluate against a random mover every this many iterations, and after the last (1 to 10**6)."""
    eval_games: int = 100
    """Games of each evaluation, against each opponent (1 to 10**6)."""
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
        data = _fields_of("RunConfig", cls, data)
        # A run stored before the field existed played with the policy alone, and evaluated
        # as it played.
        data.setdefault("mate_in_one", False)
        data.setdefault("search", 0)
        data.setdefault("eval_search", None)
        model = ModelConfig(**_fields_of("RunConfig.model", ModelConfig, data.pop("model")))
        train = TrainConfig(**_fields_of("RunConfig.train", TrainConfig, data.pop("train")))
        engine = data.pop("eval_engine", None)
        if engine is not None:
            engine = EngineConfig(**_fields_of("RunConfig.eval_engine", EngineConfig, engine))
        return cls(model=model, train=train, eval_engine=engine, **data)


def _fields_of(owner: str, cls: type, data: Any) -> dict[str, Any]:
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


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and check a run checkpoint (``weights_only=True``).

    :raises RunError: naming the path, if it is missing, truncated, not an asp run checkpoint,
        or holds a config that this asp cannot read.
    """
    path = Path(path)
    if not path.is_file():
        raise RunError(f"{path}: no checkpoint there")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated zip, foreign pickle...: all mean "not a usable checkpoint"
        first_line = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()[0][:200] if str(e) else ""
        raise RunError(f"{path}: not a readable checkpoint ({type(e).__name__}: {first_line})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RunError(f"{path}: not an asp TinyChess run checkpoint")
    if data.get("format_version") != FORMAT_VERSION:
        older = data.get("format_version") == 1
        why = " (made by an older asp, whose network reads no attacked-squares planes)" if older else ""
        raise RunError(
            f"{path}: checkpoint format version {data.get('format_version')!r}, expected {FORMAT_VERSION}{why}"
        )
    try:
        RunConfig.from_dict(data["config"])
    except (ConfigError, KeyError, TypeError) as e:
        raise RunError(f"{path}: its run config is not one this asp reads ({type(e).__name__}: {e})") from None
    _check_fields(path, data)
    return data


_COUNTS = (("next_iteration", 100_000), ("version", 10**9), ("trainer_steps", 10**12))
"""The checkpoint's counters and their largest values (the least is 0)."""


def _check_fields(path: Path, data: dict[str, Any]) -> None:
    """RunError naming the field unless the checkpoint's counters are ints in range and its
    weights are a mapping (``trainer_steps`` may be absent: play and eval need none)."""
    for name, high in _COUNTS:
        if name == "trainer_steps" and name not in data:
            continue
        value = data.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
            raise RunError(f"{path}: checkpoint field {name} must be an int in 0..{high}, got {value!r}")
    if not isinstance(data.get("model"), dict):
        raise RunError(f"{path}: checkpoint holds no model weights")


def checkpoint_state(
    trainer: Trainer,
    cfg: RunConfig,
    *,
    next_iteration: int,
    version: int,
    play_weights: dict[str, Any] | None,
    pending_plays: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The checkpoint of a completed iteration, as a copy: training on afterwards cannot change it.

    A state_dict holds the live tensors; the copy lets another thread write the checkpoint
    while this one goes on. ``pending_plays`` are the ``(version, state_dict)`` of the later
    iterations whose self-play had begun (``play_weights``, the first one's, stays for older
    readers: when it is that very dict, it shares the copy, which ``torch.save`` stores once).
    """
    pending = [(played_by, weights, _detached(weights)) for played_by, weights in pending_plays or []]
    play_copy = next((copied for _, weights, copied in pending if weights is play_weights), None)
    if play_copy is None and play_weights is not None:
        play_copy = _detached(play_weights)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": cfg.to_dict(),
        "next_iteration": next_iteration,
        "version": version,
        "model": _detached(trainer.model.state_dict()),
        "optimizer": copy.deepcopy(trainer.optimizer.state_dict()),
        "play_weights": play_copy,
        "pending_plays": [{"version": played_by, "weights": copied} for played_by, _, copied in pending],
        "trainer_rng": trainer.rng.getstate(),
        "trainer_steps": trainer.steps,
        "torch_rng": torch.get_rng_state(),
    }


def _detached(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v) for k, v in state.items()}


def model_from_checkpoint(path: str | os.PathLike[str]) -> tuple[TinyChess, dict[str, Any]]:
    """The model of a checkpoint file or run directory, and the checkpoint itself."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT
    data = load_checkpoint(path)
    cfg = RunConfig.from_dict(data["config"])
    model = TinyChess(cfg.model)
    load_weights(model, data["model"], path)
    model.eval()
    return model, data


def load_weights(model: torch.nn.Module, weights: Any, path: Path) -> None:
    """``model.load_state_dict(weights)``; weights that do not fit the model (another width, a
    missing or extra tensor, not a mapping) raise RunError naming ``path``."""
    try:
        model.load_state_dict(weights)
    except (RuntimeError, TypeError, AttributeError, KeyError) as e:
        # torch's message is a heading, then one tab-indented line per tensor: name the first tensor.
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        detail = lines[min(1, len(lines) - 1)][:200]
        raise RunError(f"{path}: the checkpoint's weights do not fit its model config ({detail})") from None


def pending_plays(state: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The ``(version, state_dict)`` of the plays a checkpoint says had begun, in order.

    A checkpoint written before ``pending_plays`` existed has only ``play_weights``: the next
    iteration's, one version older than the checkpoint's.
    """
    if "pending_plays" in state:
        return [(int(p["version"]), p["weights"]) for p in state["pending_plays"]]
    if state.get("play_weights") is not None:
        return [(int(state["version"]) - 1, state["play_weights"])]
    return []


class RunDir:
    """The files of one run; see the module docstring."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def log(self) -> Path:
        return self.path / "log.jsonl"

    @property
    def curves(self) -> Path:
        return self.path / "curves.png"

    def games(self, iteration: int) -> Path:
        return self.path / "games" / f"iter-{iteration:04d}.pgn"

    def create(self, cfg: RunConfig) -> None:
        """Start a new run here. Refuses a directory that already holds a run."""
        if self.checkpoint.exists() or (self.path / "config.json").exists():
            raise RunError(
                f"{self.path}: already holds a run; resume it with --resume {self.path} or pick another --run-dir"
            )
        (self.path / "games").mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path / "config.json", json.dumps(cfg.to_dict(), indent=2) + "\n")

    def stored_config(self) -> RunConfig:
        """The config the run was started with (from its checkpoint, else config.json)."""
        if self.checkpoint.exists():
            return RunConfig.from_dict(load_checkpoint(self.checkpoint)["config"])
        config = self.path / "config.json"
        if not config.exists():
            raise RunError(f"{self.path}: no run there (no {CHECKPOINT}, no config.json)")
        try:
            return RunConfig.from_dict(json.loads(config.read_text()))
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise RunError(f"{config}: not a run config ({type(e).__name__}: {e})") from None

    def save(
        self,
        trainer: Trainer,
        cfg: RunConfig,
        *,
        next_iteration: int,
        version: int,
        play_weights: dict[str, Any] | None,
    ) -> None:
        """Write the checkpoint of a completed iteration, atomically."""
        state = checkpoint_state(
            trainer, cfg, next_iteration=next_iteration, version=version, play_weights=play_weights
        )
        self.write_checkpoint(state)

    def write_checkpoint(self, state: dict[str, Any]) -> None:
        """Write a :func:`checkpoint_state` atomically (slow for a large model: a thread may do it)."""
        with writing(self.checkpoint):
            save_atomic(state, self.checkpoint)

    def saved_iterations(self) -> int:
        """Iterations the checkpoint holds: 0 when there is none (or none that loads)."""
        try:
            return int(load_checkpoint(self.checkpoint)["next_iteration"])
        except (RunError, KeyError, TypeError, ValueError):
            return 0

    def append_metrics(self, line: dict[str, Any]) -> None:
        with writing(self.metrics), open(self.metrics, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict[str, Any]]:
        if not self.metrics.exists():
            return []
        lines = []
        for text in self.metrics.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(text))
            except ValueError:
                break  # a line cut by a crash: everything after it is not trusted
        return lines

    def truncate_metrics(self, next_iteration: int) -> list[dict[str, Any]]:
        """Keep the lines of iterations before ``next_iteration`` (those the checkpoint holds)."""
        kept = [m for m in self.read_metrics() if m.get("iteration", -1) < next_iteration]
        with writing(self.metrics):
            write_text_atomic(self.metrics, "".join(json.dumps(m) + "\n" for m in kept))
        return kept
