"""An iteration's artefacts on disk: its metrics line and checkpoint, together; the kept
versions; the curves."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from asp.app.run import RunDir
from asp.app.run.checkpoint import kept_version_state, version_path, write_checkpoint

__all__ = ["commit_iteration", "keep_version", "plot_history"]


def commit_iteration(rundir: RunDir, line: dict[str, Any], checkpoint: dict[str, Any]) -> float:
    """Append the metrics line, then write the checkpoint; return the seconds the checkpoint took.

    The line goes first: a resumed run drops the lines past its checkpoint. One call, so that
    a cancellation waits for both rather than falling between them.
    """
    rundir.append_metrics(line)
    started = time.perf_counter()
    write_checkpoint(checkpoint, rundir.checkpoint)
    return time.perf_counter() - started


def keep_version(rundir: RunDir, cfg: Any, *, version: int, next_iteration: int, weights: dict[str, Any]) -> None:
    """Keep ``version`` of the run ``cfg`` in ``rundir``: the weights and config, as
    :func:`~asp.app.run.checkpoint.kept_version_state` (a copy, then written atomically)."""
    path = version_path(rundir.path, version)
    path.parent.mkdir(exist_ok=True)
    write_checkpoint(kept_version_state(cfg, version=version, next_iteration=next_iteration, weights=weights), path)


def plot_history(history: list[dict[str, Any]], path: Path) -> str | None:
    """Draw the curves (in the writer process); return what went wrong, if anything."""
    from asp.app.run.curves import plot_curves

    try:
        plot_curves(history, path)
    except Exception as e:  # noqa: BLE001 (reported by the caller, never raised)
        return repr(e)
    return None
