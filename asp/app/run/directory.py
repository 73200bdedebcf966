"""A training run on disk: config, checkpoint, metrics, games, curves.

A run directory holds::

    checkpoint.pt    the last complete iteration (see :mod:`asp.app.run.checkpoint`)
    config.json      the run's configuration, written once when the run starts
    metrics.jsonl    one JSON line per iteration
    log.jsonl        the run's structlog events as JSON lines
    games/iter-NNNN.jsonl each iteration's games, a record a line (chess: the same as PGN beside)
    versions/vNNNNNN.pt   the weights of version 0 and of each evaluated version (RUN@VERSION)
    curves.png       losses, score against a random mover, plies/s

:class:`RunDir` names these files, starts a run, reads its config back and keeps its
metrics; the checkpoint's format lives in :mod:`asp.app.run.checkpoint`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from asp.app.outputs import writing
from asp.app.run.checkpoint import (
    CHECKPOINT,
    RunError,
    kept_version_state,
    load_checkpoint,
    run_config_of,
    version_path,
    write_checkpoint,
)
from asp.app.run.metrics import metrics_problem
from asp.app.run_config import GameRunConfig
from asp.util.atomic import write_text_atomic

__all__ = ["RunDir"]


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
        :func:`~asp.app.run.checkpoint.kept_version_state` (a copy, then written atomically)."""
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
