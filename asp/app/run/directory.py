"""A training run on disk: config, checkpoint, metrics, games, curves.

A run directory holds::

    checkpoint.pt    the last complete iteration (below)
    config.json      the run's configuration, written once when the run starts
    metrics.jsonl    one JSON line per iteration
    log.jsonl        the run's structlog events as JSON lines
    games/iter-NNNN.jsonl each iteration's games, a record a line (chess: the same as PGN beside)
    versions/vNNNNNN.pt   the weights of version 0 and of each evaluated version (RUN@VERSION)
    curves.png       losses, score against a random mover, plies/s

:class:`RunDir` names these files, starts a run, reads its config back and keeps its
metrics.

The checkpoint of a training run, its format, and the only code that reads it, are here too.

A checkpoint is the state after a completed iteration, one ``torch.save`` of a dict of plain
values and tensors, so that ``torch.load(weights_only=True)`` reads it without running any
pickled code::

    format, format_version   "asp-game-run", GAME_FORMAT_VERSION
    config                   the run's GameRunConfig, as its to_dict writes it (it names
                             the run's game)
    next_iteration           the first iteration still to play
    version                  the model's version
    model, optimizer         the state_dicts of the network and of the trainer's optimizer
    pending_plays            [{"version": v, "weights": state_dict}]: the later iterations
                             whose self-play had begun (overlapped runs), in order
    trainer_rng, trainer_steps, torch_rng
                             the trainer's random state and step count, torch's random state
    replay_window            the samples the trainer's next call replays (Trainer.window_state:
                             the last replay - 1 iterations'; TinyChess's board planes bit-packed)

so that ``asp train --resume`` plays the pending iterations again with the same weights and
seeds. :func:`checkpoint_state` builds it (a copy), :func:`write_checkpoint` writes it
atomically, :func:`load_checkpoint` reads and checks it, and
:func:`restore_checkpoint` loads it into a model and trainer to resume
(:meth:`RunDir.commit_iteration <asp.app.run.directory.RunDir.commit_iteration>` writes it
with the iteration's metrics line).

A run also keeps the weights of version 0 and of every version it evaluated, in ``versions/``
(:func:`kept_version_state`: the same format without the trainer's fields), which ``asp
eval``, ``play`` and ``moves`` read as ``RUN@VERSION`` (:func:`checkpoint_path`).

Compatibility: this asp reads every checkpoint of format version ``GAME_FORMAT_VERSION``,
and a config stored before a field existed reads as :meth:`GameRunConfig.from_dict` says;
one without ``trainer_steps`` plays and evaluates but does not resume. A checkpoint of any
other format or version, an older asp's TinyChess runs (format ``asp-tinychess-run``)
among them, is refused with a :class:`RunError` that names it. A change that a reader of this
version could not read takes a new ``GAME_FORMAT_VERSION``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from asp.app.game_loader import check_named_game
from asp.app.outputs import writing
from asp.app.run.metrics import metrics_problem
from asp.app.run_config import GameRunConfig
from asp.errors import AspError, ConfigError
from asp.games import Trainer
from asp.util.atomic import save_atomic, write_text_atomic

if TYPE_CHECKING:
    from asp.app.game_run import GameRun

__all__ = [
    "CHECKPOINT",
    "GAME_FORMAT",
    "GAME_FORMAT_VERSION",
    "VERSIONS",
    "Restored",
    "RunDir",
    "RunError",
    "checkpoint_path",
    "checkpoint_state",
    "kept_version_state",
    "kept_versions",
    "kept_versions_line",
    "load_checkpoint",
    "load_weights",
    "pending_plays",
    "restore_checkpoint",
    "run_from_checkpoint",
    "run_config_of",
    "version_path",
    "write_checkpoint",
]


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

    def games(self, iteration: int, *, suffix: str = ".jsonl") -> Path:
        return self.path / "games" / f"iter-{iteration:04d}{suffix}"

    def create(self, cfg: GameRunConfig) -> None:
        """Start a new run here. Refuses a directory that already holds a run."""
        if self.checkpoint.exists() or (self.path / "config.json").exists():
            raise RunError(
                f"{self.path}: already holds a run; resume it with --resume {self.path} or pick another --run-dir"
            )
        (self.path / "games").mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path / "config.json", json.dumps(cfg.to_dict(), indent=2) + "\n")

    def stored_config(self) -> GameRunConfig:
        """The config the run was started with (from its checkpoint, else config.json), to
        resume it.

        :raises RunError: no run there, or a checkpoint or config that this asp does not read.
        """
        if self.checkpoint.exists():
            return run_config_of(load_checkpoint(self.checkpoint))
        config = self.path / "config.json"
        if not config.exists():
            raise RunError(f"{self.path}: no run there (no {CHECKPOINT}, no config.json)")
        try:
            return GameRunConfig.from_dict(json.loads(config.read_text(encoding="utf-8-sig")))  # a BOM skipped
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise RunError(f"{config}: not a run config ({type(e).__name__}: {e})") from None

    def saved_iterations(self) -> int:
        """Iterations the checkpoint holds: 0 when there is none (or none that loads)."""
        try:
            return int(load_checkpoint(self.checkpoint)["next_iteration"])
        except RunError:  # load_checkpoint checked the field: an int
            return 0

    def append_metrics(self, line: dict[str, Any]) -> None:
        with writing(self.metrics), open(self.metrics, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def commit_iteration(self, line: dict[str, Any], checkpoint: dict[str, Any]) -> float:
        """Append the metrics line, then write the checkpoint; return the seconds the
        checkpoint took.

        The line goes first: a resumed run drops the lines past its checkpoint. One call, so
        that a cancellation waits for both rather than falling between them.
        """
        self.append_metrics(line)
        started = time.perf_counter()
        write_checkpoint(checkpoint, self.checkpoint)
        return time.perf_counter() - started

    def keep_version(self, cfg: Any, *, version: int, next_iteration: int, weights: dict[str, Any]) -> None:
        """Keep ``version`` of the run ``cfg``: the weights and config in ``versions/``, as
        :func:`~asp.app.run.directory.kept_version_state` (a copy, then written atomically)."""
        path = version_path(self.path, version)
        path.parent.mkdir(exist_ok=True)
        state = kept_version_state(cfg, version=version, next_iteration=next_iteration, weights=weights)
        write_checkpoint(state, path)

    def read_metrics(self) -> list[dict[str, Any]]:
        """The lines of metrics.jsonl, in order, each checked whole: a JSON object that
        :func:`~asp.app.run.metrics.metrics_problem` finds fit. A last line without its newline
        that is ASCII (as every line asp writes) but no JSON is one that a crash cut short, or
        one being written now: it is left out.

        :raises RunError: the file cannot be read, or a line is not an iteration's metrics,
            naming the file, the line and the field.
        """
        try:
            data = self.metrics.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise RunError(f"{self.metrics}: cannot be read: {e.strerror or e}") from None
        *whole, last = data.split(b"\n")
        if whole:
            whole[0] = whole[0].removeprefix(_BOM)  # an editor's byte order mark before the first line
        elif last:
            last = last.removeprefix(_BOM)
        lines = [_metrics_line(self.metrics, number, raw) for number, raw in enumerate(whole, 1)]
        if last:
            try:
                lines.append(_metrics_line(self.metrics, len(whole) + 1, last))
            except RunError:
                if not _cut_short(last):
                    raise
        return lines

    def truncate_metrics(self, next_iteration: int) -> list[dict[str, Any]]:
        """Keep the lines of iterations before ``next_iteration`` (those the checkpoint holds)."""
        kept = [m for m in self.read_metrics() if m.get("iteration", -1) < next_iteration]
        with writing(self.metrics):
            write_text_atomic(self.metrics, "".join(json.dumps(m) + "\n" for m in kept))
        return kept


_BOM = "\ufeff".encode()
"""A UTF-8 byte order mark, which some editors write before the first line of a file they save."""


def _metrics_line(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    """Line ``number`` of the metrics file ``path``, checked (:meth:`RunDir.read_metrics`)."""
    try:
        line = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise RunError(f"{path}: line {number} is not text (UTF-8): a damaged metrics file") from None
    except ValueError:
        raise RunError(f"{path}: line {number} is not JSON: a damaged metrics file") from None
    if not isinstance(line, dict):
        raise RunError(f"{path}: line {number} is a JSON {type(line).__name__}, not an iteration's metrics (an object)")
    problem = metrics_problem(line)
    if problem is not None:
        raise RunError(f"{path}: line {number}: {problem}")
    return line


def _cut_short(raw: bytes) -> bool:
    """Whether ``raw`` is what a write cut short leaves of a line asp writes: ASCII, no JSON."""
    if not raw.isascii():
        return False
    try:
        json.loads(raw)
    except ValueError:
        return True
    return False


CHECKPOINT = "checkpoint.pt"
"""The checkpoint's file name inside the run directory."""
VERSIONS = "versions"
"""The folder of a run directory where it keeps the weights of its evaluated versions."""
GAME_FORMAT = "asp-game-run"
"""The ``format`` field of every checkpoint: what tells one from another torch file."""
GAME_FORMAT_VERSION = 1
"""The version of the ``asp-game-run`` format this asp writes and reads."""
_OLDER_FORMAT = "asp-tinychess-run"
"""The format of an older asp's TinyChess runs, trained by TinyChess's own loop: refused, by name."""

_COUNTS = (("next_iteration", 100_000), ("version", 10**9), ("trainer_steps", 10**12))
"""The checkpoint's counters and their largest values (the least is 0)."""


class RunError(AspError):
    """A run directory or checkpoint cannot be used: missing, corrupt, foreign or mismatched."""


@dataclass(frozen=True)
class Restored:
    """Where the run of a restored checkpoint stopped."""

    next_iteration: int
    """The first iteration still to play."""
    version: int
    """The model's version."""
    pending_plays: list[tuple[int, torch.nn.Module]]
    """``(version, weights)`` of the iterations whose self-play had begun, in order: to play
    again with the same weights (``first_plays`` of :meth:`asp.Pipeline.run`)."""


# -- writing ---------------------------------------------------------------------------------


def checkpoint_state(
    trainer: Trainer,
    cfg: GameRunConfig,
    *,
    next_iteration: int,
    version: int,
    pending_plays: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The checkpoint of a completed iteration, as a copy: training on afterwards cannot change it.

    A state_dict holds the live tensors; the copy lets another thread write the checkpoint
    while this one goes on. The replay window is the one part shared, not copied: the trainer
    never writes a sample it has made, it only drops the oldest. ``pending_plays`` are the
    ``(version, state_dict)`` of the later iterations whose self-play had begun.
    """
    return {
        **_weights_of(cfg, version, next_iteration, trainer.model.state_dict()),
        "optimizer": copy.deepcopy(trainer.optimizer.state_dict()),
        "pending_plays": [
            {"version": played_by, "weights": _detached(weights)} for played_by, weights in pending_plays or []
        ],
        "trainer_rng": trainer.rng.getstate(),
        "trainer_steps": trainer.steps,
        "replay_window": trainer.window_state(),
        "torch_rng": torch.get_rng_state(),
    }


def kept_version_state(
    cfg: GameRunConfig, *, version: int, next_iteration: int, weights: dict[str, Any]
) -> dict[str, Any]:
    """A kept version of a run: the weights of ``version`` (trained by the iterations before
    ``next_iteration``) and the run's config, in the checkpoint format without the trainer.
    ``asp eval``, ``play`` and ``moves`` read it as a checkpoint (``RUN@VERSION``); a run
    resumes from its checkpoint only."""
    return {**_weights_of(cfg, version, next_iteration, weights), "pending_plays": []}


def _weights_of(cfg: GameRunConfig, version: int, next_iteration: int, weights: dict[str, Any]) -> dict[str, Any]:
    """The fields every checkpoint holds: its format, the run's config, where it stands, and
    a copy of the weights."""
    return {
        "format": GAME_FORMAT,
        "format_version": GAME_FORMAT_VERSION,
        "config": cfg.to_dict(),
        "next_iteration": next_iteration,
        "version": version,
        "model": _detached(weights),
    }


def _detached(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v) for k, v in state.items()}


def write_checkpoint(state: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a :func:`checkpoint_state` to ``path`` atomically (a temporary file, then a
    rename); slow for a large model, so a thread may do it. An OSError names ``path``."""
    with writing(path):
        save_atomic(state, Path(path))


# -- reading ---------------------------------------------------------------------------------


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
    if isinstance(data, dict) and data.get("format") == _OLDER_FORMAT:
        raise RunError(
            f"{path}: a TinyChess run of an older asp (format {_OLDER_FORMAT}), which this asp does not read: "
            "train a new run"
        )
    if not isinstance(data, dict) or data.get("format") != GAME_FORMAT:
        raise RunError(f"{path}: not an asp run checkpoint")
    if data.get("format_version") != GAME_FORMAT_VERSION:
        raise RunError(
            f"{path}: checkpoint format version {data.get('format_version')!r}, expected {GAME_FORMAT_VERSION}"
        )
    try:
        run_config_of(data)
    except (ConfigError, KeyError, TypeError) as e:
        raise RunError(f"{path}: its run config is not one this asp reads ({type(e).__name__}: {e})") from None
    _check_fields(path, data)
    return data


def _check_fields(path: Path, data: dict[str, Any]) -> None:
    """RunError naming the field unless the checkpoint's counters are ints in range, its
    weights a mapping and its pending plays a list of ``{"version": int, "weights": mapping}``
    (``trainer_steps`` may be absent: play and eval need none)."""
    for name, high in _COUNTS:
        if name == "trainer_steps" and name not in data:
            continue
        value = data.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
            raise RunError(f"{path}: checkpoint field {name} must be an int in 0..{high}, got {value!r}")
    if not isinstance(data.get("model"), dict):
        raise RunError(f"{path}: checkpoint holds no model weights")
    plays = data.get("pending_plays")
    if not isinstance(plays, list) or not all(
        isinstance(p, dict) and type(p.get("version")) is int and isinstance(p.get("weights"), dict) for p in plays
    ):
        raise RunError(f"{path}: checkpoint field pending_plays must be a list of {{version: int, weights: mapping}}")


def run_config_of(state: dict[str, Any]) -> GameRunConfig:
    """The run config of a checkpoint that :func:`load_checkpoint` returned."""
    return GameRunConfig.from_dict(state["config"])


def pending_plays(state: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The ``(version, state_dict)`` of the plays a checkpoint that :func:`load_checkpoint`
    returned says had begun, in order."""
    return [(int(p["version"]), p["weights"]) for p in state["pending_plays"]]


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


def run_from_checkpoint(
    path: str | os.PathLike[str], *, trust_game: bool = False, run: GameRun | None = None
) -> tuple[GameRun, torch.nn.Module, dict[str, Any]]:
    """The run of a checkpoint file, a run directory or a kept version ``RUN@VERSION``, its
    model (in eval mode) and the checkpoint itself. A game outside asp that the checkpoint
    names is imported only with ``trust_game`` (the command line's ``--trust-game``); where
    ``run``, the run that reads it, is given, the checkpoint must be of its game, which is not
    loaded again.

    :raises RunError: the checkpoint does not load (see :func:`load_checkpoint`), is not of
        ``run``'s game, or its weights do not fit its config.
    :raises ConfigError: it names a game outside asp that is not trusted
        (:func:`~asp.app.game_loader.check_named_game`), or its game does not load.
    """
    from asp.app.game_run import GameRun

    path = checkpoint_path(path)
    data = load_checkpoint(path)
    cfg = run_config_of(data)
    if run is not None and cfg.game != run.cfg.game:
        raise RunError(f"{path}: a checkpoint of {cfg.game!r}, not of the run's game {run.cfg.game!r}")
    if run is None:
        check_named_game(cfg.game, str(path), trusted=trust_game)
    loaded = GameRun(cfg) if run is None else run.with_cfg(cfg)
    model = loaded.new_model()
    load_weights(model, data["model"], path)
    model.eval()
    return loaded, model, data


def checkpoint_path(where: str | os.PathLike[str]) -> Path:
    """The checkpoint file that ``where`` names: a file, a run directory (its last
    checkpoint), or ``RUN@VERSION``, a version that the run directory keeps.

    :raises RunError: ``RUN@VERSION`` of a run directory where VERSION is not a version the
        run keeps (not an int >= 0, or one it does not keep), naming those it does.
    """
    path = Path(where)
    if path.is_dir():
        return path / CHECKPOINT
    run, at, version = os.fspath(where).rpartition("@")
    if not at or not Path(run).is_dir() or path.exists():
        return path
    kept = kept_versions(run)
    have = ", ".join(map(str, kept)) or "none"
    if not re.fullmatch("[0-9]+", version):
        raise RunError(
            f"{where}: VERSION must be a version that {run} keeps, an int >= 0 (it keeps: {have}), got {version!r}"
        )
    if int(version) not in kept:
        raise RunError(f"{where}: {run} keeps no version {int(version)} (it keeps: {have})")
    return version_path(run, int(version))


def version_path(run: str | os.PathLike[str], version: int) -> Path:
    """Where the run directory ``run`` keeps ``version``."""
    return Path(run) / VERSIONS / f"v{version:06d}.pt"


def kept_versions(run: str | os.PathLike[str]) -> list[int]:
    """The versions that the run directory ``run`` keeps, in order: its files ``vN.pt``, N in
    ASCII digits (another file there, ``v².pt`` or ``v٣.pt``, is none of them)."""
    found = (p.name for p in (Path(run) / VERSIONS).glob("v*.pt"))
    return sorted(int(name[1:-3]) for name in found if name[1:-3].isascii() and name[1:-3].isdigit())


def kept_versions_line(where: str | os.PathLike[str]) -> str | None:
    """What ``asp eval`` says of the versions a run directory keeps (None: ``where`` is no run
    directory, or keeps none)."""
    kept = kept_versions(where) if Path(where).is_dir() else []
    if not kept:
        return None
    return f"{os.fspath(where)} keeps versions {', '.join(map(str, kept))}: play one as --vs {os.fspath(where)}@VERSION"


# -- resuming --------------------------------------------------------------------------------


def restore_checkpoint(
    path: str | os.PathLike[str],
    run: GameRun,
    model: torch.nn.Module,
    trainer: Trainer,
) -> Restored:
    """Load the checkpoint at ``path`` into ``model`` (the one ``trainer`` trains), the trainer
    and torch's random state, and say where its run stopped. Only ``run.cfg.iterations`` may
    differ from the config the checkpoint holds: a resumed run may be made longer or shorter.

    :raises RunError: naming the path, if the checkpoint does not load (see
        :func:`load_checkpoint`), holds another config, or does not fit its config.
    """
    path = Path(path)
    state = load_checkpoint(path)
    if dataclasses.replace(run_config_of(state), iterations=run.cfg.iterations) != run.cfg:
        raise RunError(f"{path}: holds another run config than the one to resume with")
    plays: list[tuple[int, torch.nn.Module]] = []
    try:
        load_weights(model, state["model"], path)
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.rng.setstate(_as_rng_state(state["trainer_rng"]))
        trainer.steps = state["trainer_steps"]
        trainer.calls = state["next_iteration"]
        trainer.load_window(state.get("replay_window", []))
        for played_by, weights in pending_plays(state):
            playing = run.new_model()
            load_weights(playing, weights, path)
            plays.append((played_by, playing))
        # Last: building a model draws from torch's generator.
        torch.set_rng_state(state["torch_rng"])
    except (KeyError, RuntimeError, ValueError, TypeError, AttributeError) as e:
        raise RunError(f"{path}: checkpoint does not match its config ({type(e).__name__}: {e})") from None
    return Restored(next_iteration=state["next_iteration"], version=state["version"], pending_plays=plays)


def _as_rng_state(state: Any) -> tuple[Any, ...]:
    # torch.load gives the tuple back as it was saved; lists only if a tool rewrote it.
    version, internal, gauss = state
    return (version, tuple(internal), gauss)
