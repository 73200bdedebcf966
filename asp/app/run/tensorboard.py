"""TensorBoard scalars of a run: ``asp train --tensorboard``, with the ``asp[tensorboard]``
extra installed.

Each metrics line (``metrics.jsonl``) becomes scalars at its iteration, in event files under
``RUN/tensorboard``: every number of the line under its own key (``loss/policy``,
``eval/score``, ``time/wall``...), counts by kind (``play/results/1-0``) and the ladder's
ratings (``ladder/v8``, ``ladder/winblock``). ``tensorboard --logdir runs`` shows every run.

>>> scalars({"iteration": 3, "loss/policy": 2.5, "overlap": True, "play/results": {"1-0": 7},
...          "ladder": {"v4": [185.0, 63.0, 307.0, 40]}, "eval_sf/engine": "an engine"})
{'loss/policy': 2.5, 'play/results/1-0': 7.0, 'ladder/v4': 185.0}
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any

from asp.errors import ConfigError

__all__ = ["TENSORBOARD", "check_tensorboard", "scalars", "write_scalars"]

TENSORBOARD = "tensorboard"
"""The folder of the run directory that holds its event files."""


def check_tensorboard() -> None:
    """ConfigError unless TensorBoard's writer can be imported (the ``asp[tensorboard]`` extra)."""
    if importlib.util.find_spec("tensorboard") is None:
        raise ConfigError(
            "--tensorboard needs the tensorboard package: pip install 'asp[tensorboard]' (or tensorboard)"
        )


def scalars(line: dict[str, Any]) -> dict[str, float]:
    """The scalars of a metrics line: its finite numbers but the iteration, the numbers of
    its mappings under ``key/name``, and each ladder rating's Elo under ``ladder/name``."""
    out: dict[str, float] = {}
    for key, value in line.items():
        if key == "iteration":
            continue
        if key == "ladder" and isinstance(value, dict):
            out.update({f"ladder/{name}": float(rating[0]) for name, rating in value.items()})
        elif isinstance(value, dict):
            out.update({f"{key}/{name}": float(v) for name, v in value.items() if _number(v)})
        elif _number(value):
            out[key] = float(value)
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def write_scalars(logdir: str | os.PathLike[str], line: dict[str, Any]) -> None:
    """Append a metrics line's :func:`scalars` at its iteration to a new event file in
    ``logdir``. Events that an earlier file holds at this iteration or later (a run that
    stopped after them and resumed from an earlier checkpoint) are dropped by TensorBoard."""
    from torch.utils.tensorboard import SummaryWriter

    step = int(line["iteration"])
    writer = SummaryWriter(os.fspath(logdir), purge_step=step, filename_suffix=f".{step:06d}")
    try:
        for key, value in scalars(line).items():
            writer.add_scalar(key, value, step)
    finally:
        writer.close()
