"""``curves.png``: a run's losses, scores against the movers (random, the game's own, an
engine), its rating ladder and plies/s, by iteration."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from asp.app.evaluation.elo import score_from_elo
from asp.app.evaluation.ladder import version_of
from asp.app.run.metrics import mover_scores
from asp.util.atomic import write_bytes_atomic

__all__ = ["plot_curves", "plot_history"]


def plot_curves(history: list[dict[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Draw the metrics lines of ``history`` into a PNG at ``path`` (written atomically).

    Safe in any thread: a figure of its own on an Agg canvas, none of pyplot's global state.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    its = [m["iteration"] for m in history]
    fig = Figure(figsize=(17, 3.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 4)
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
    movers = list(dict.fromkeys(name for m in history for name in mover_scores(m)))
    rungs = [(f"eval_{name}", "s-", f"{name} mover") for name in movers] + [("eval_sf", "^-", None)]
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
    _plot_ladder(axes[2], next((m["ladder"] for m in reversed(history) if "ladder" in m), {}))
    axes[3].plot(its, [m.get("play/plies_per_s", 0.0) for m in history])
    axes[3].set_title("self-play plies/s")
    for ax in axes:
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    axes[2].set_xlabel("version (iterations trained)")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=80)
    write_bytes_atomic(path, png.getvalue())
    return Path(path)


def _plot_ladder(ax: Any, ladder: dict[str, list[float]]) -> None:
    """The latest ladder: each kept version's Elo with its 95% interval, by version (the
    iterations it trained), and the movers' as lines across."""
    versions = sorted((v, rating) for name, rating in ladder.items() if (v := version_of(name)) is not None)
    if versions:
        x = [v for v, _ in versions]
        elo = [r[0] for _, r in versions]
        ax.errorbar(x, elo, yerr=[[r[0] - r[1] for _, r in versions], [r[2] - r[0] for _, r in versions]],
                    fmt="o-", capsize=3, label="versions")  # fmt: skip
    for k, (name, rating) in enumerate(item for item in ladder.items() if version_of(item[0]) is None):
        ax.axhline(rating[0], color=f"C{k + 1}", linestyle="--", linewidth=1, label=f"{name} mover")
    if ladder:
        ax.legend(fontsize="small")
    ax.set_title("ladder: Elo (random mover = 0) by version")


def plot_history(history: list[dict[str, Any]], path: Path) -> str | None:
    """Draw the curves (in the writer process); return what went wrong, if anything."""
    try:
        plot_curves(history, path)
    except Exception as e:  # noqa: BLE001 (reported by the caller, never raised)
        return repr(e)
    return None
