"""``curves.png``: a run's losses, scores on the ladder (random mover, greedy mover, an engine)
and plies/s, by iteration."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from asp.app.evaluate import score_from_elo
from asp.atomic import write_bytes_atomic

__all__ = ["plot_curves"]


def plot_curves(history: list[dict[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Draw the metrics lines of ``history`` into a PNG at ``path`` (written atomically).

    Safe in any thread: a figure of its own on an Agg canvas, none of pyplot's global state.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    its = [m["iteration"] for m in history]
    fig = Figure(figsize=(13, 3.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    for key, label in (("loss/policy", "policy"), ("loss/value", "value"), ("loss/entropy", "entropy / 10")):
        scale = 0.1 if key == "loss/entropy" else 1.0
        axes[0].plot(its, [m.get(key, float("nan")) * scale for m in history], label=label)
    axes[0].set_title("losses")
    axes[0].legend()
    evaluated = [m for m in history if "eval/score" in m]
    axes[1].plot([m["iteration"] for m in evaluated], [m["eval/score"] for m in evaluated], "o-")
    axes[1].fill_between(
        [m["iteration"] for m in evaluated],
        [score_from_elo(m["eval/elo_low"]) for m in evaluated],
        [score_from_elo(m["eval/elo_high"]) for m in evaluated],
        alpha=0.2,
    )
    rungs = [("eval_greedy", "s-", "greedy mover"), ("eval_sf", "^-", None)]
    shown = []
    for prefix, style, rung in rungs:
        scored = [m for m in history if f"{prefix}/score" in m]
        if scored:
            name = rung or str(scored[-1].get(f"{prefix}/engine", "engine"))
            axes[1].plot([m["iteration"] for m in scored], [m[f"{prefix}/score"] for m in scored], style, label=name)
            shown.append(name)
    if shown:
        axes[1].plot([], [], "o-", color="C0", label="random mover")
        axes[1].legend()
    axes[1].axhline(0.9, color="grey", linestyle="--", linewidth=1)
    axes[1].set_ylim(0, 1)
    axes[1].set_title("score against " + ", ".join(["a random mover", *shown]))
    axes[2].plot(its, [m.get("play/plies_per_s", 0.0) for m in history])
    axes[2].set_title("self-play plies/s")
    for ax in axes:
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=80)
    write_bytes_atomic(path, png.getvalue())
    return Path(path)
