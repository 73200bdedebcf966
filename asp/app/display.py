"""The live display of ``asp train`` (rich): iteration, games done, plies/s, loss, last score.

Without a terminal (CI, a pipe) it prints one plain line per iteration instead.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from asp.app.evaluation.ladder import ladder_text
from asp.app.run.metrics import mover_scores, version_scores

__all__ = ["TrainDisplay"]


class TrainDisplay:
    """Follows a training session through its ``progress(kind, fields)`` callback."""

    def __init__(self, iterations: int, *, live: bool) -> None:
        self.iterations = iterations
        # Lines whole: a terminal wraps them itself; a log file or a pipe must not get them cut at 80 columns.
        self.console = Console(stderr=True, soft_wrap=True)
        self.last_line: dict[str, Any] = {}
        self.score: float | None = None
        self.evaluating = False
        """An evaluation plays (beside the next iterations' games) until its line comes."""
        self.progress: Progress | None = None
        self.task: Any = None
        if live:
            self.progress = Progress(
                TextColumn("[bold]iteration {task.fields[iteration]}/{task.fields[iterations]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("games  {task.fields[status]}"),
                TimeElapsedColumn(),
                console=self.console,
            )

    def __enter__(self) -> TrainDisplay:
        if self.progress is not None:
            self.progress.start()
            self.task = self.progress.add_task("play", total=None, iteration=1, iterations=self.iterations, status="")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _status(self) -> str:
        line = self.last_line
        parts = []
        if "play/plies_per_s" in line:
            parts.append(f"{line['play/plies_per_s']:,.0f} plies/s")
        if "loss/total" in line:
            parts.append(f"loss {line['loss/total']:.3f}")
        parts.append(f"score vs random {'-' if self.score is None else f'{self.score:.2f}'}")
        return "  ".join(parts) + ("  (evaluating)" if self.evaluating else "")

    def update(self, kind: str, fields: dict[str, Any]) -> None:
        if kind == "games" and self.progress is not None:
            self.progress.update(
                self.task,
                completed=fields["done"],
                total=fields["total"],
                iteration=fields["iteration"] + 1,
                status=self._status(),
            )
        elif kind == "evaluating":
            self.evaluating = True
            if self.progress is not None:
                self.progress.update(self.task, status=self._status())
        elif kind == "iteration":
            self.last_line = fields
            self.evaluating = self.evaluating and "eval/version" not in fields
            if "eval/score" in fields:
                self.score = fields["eval/score"]
            text = (
                f"iteration {fields['iteration'] + 1}/{self.iterations}: {fields['play/games']} games, "
                f"{fields['play/plies_per_s']:,.0f} plies/s, loss {fields.get('loss/total', float('nan')):.3f}, "
                f"staleness {fields['staleness']}, play {fields['time/play']:.1f}s train {fields['time/train']:.1f}s "
                f"overlap {fields['time/overlap']:.1f}s"
            )
            if "eval/score" in fields:
                text += f", score vs random {fields['eval/score']:.3f} (Elo {_elo(fields, 'eval')})"
            text += "".join(f", vs {name} {score:.3f}" for name, score in mover_scores(fields).items())
            text += "".join(f", vs v{version} {score:.3f}" for version, score in version_scores(fields).items())
            if "eval_sf/score" in fields:
                engine, score = fields["eval_sf/engine"], fields["eval_sf/score"]
                text += f", vs {engine} {score:.3f} (Elo {_elo(fields, 'eval_sf')})"
            elif "eval_sf/error" in fields:
                text += f", engine evaluation failed: {fields['eval_sf/error']}"
            if (ladder := ladder_text(fields)) is not None:
                text += f"; ladder {ladder}"
            if "time/evaluation" in fields:
                text += f"; evaluation {fields['time/evaluation']:.1f}s"
            self.console.print(text, highlight=False)


def _elo(fields: dict[str, Any], prefix: str) -> str:
    """A match's Elo in a metrics line: ``+191``, or ``> +317`` where it is a one-sided bound."""
    bound = fields.get(f"{prefix}/elo_bound", "")
    if bound:
        return f"{bound} {fields[f'{prefix}/elo_low' if bound == '>' else f'{prefix}/elo_high']:+.0f}"
    return f"{fields[f'{prefix}/elo']:+.0f}"
