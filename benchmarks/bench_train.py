"""Wall time of ``asp train`` under several splits of the cores, back to back on one machine.

Each variant is a fresh ``asp train`` (its own run directory, the same seed) run as a
subprocess; variants alternate within each round, so drift in the machine's load hits them
alike. Reported per variant: median wall seconds, the ratio to the first variant, the final
scores against the random mover and the one-ply greedy mover, the workers' share of the wall time inside shards, the
longest event-loop stall and the search's network batch occupancy in self-play (the mean over
iterations of ``play/search_occupancy``: boards per forward over the play batch), what the
evaluations cost (their wall time, counted whole though all but the last overlap self-play,
and the workers' time in their games, against the run's wall time and workers), and how far
the ladder puts the last version above version 0, all from metrics.jsonl (absent in asp
versions without them); and the peak resident memory of the run's largest process, the
coordinator (``wait4``'s ``ru_maxrss``; its workers are smaller). Wall times are also given in random
playout plies (wall seconds times the machine's python-chess random-playout rate on one core,
measured at the start), the unit of the time budgets.

``--old PATH`` adds a first variant that runs the asp checkout at PATH (``PYTHONPATH=PATH``),
for a before/after comparison: ``git worktree add /tmp/old <commit>``, then::

    python benchmarks/bench_train.py --iterations 8 --runs 1 --old /tmp/old

``--keep DIR`` keeps every run's directory, as ``DIR/<variant number>-<round>`` (the old asp is
variant 0 when there is one), for example to score its final model again with
``benchmarks/eval_endings.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_play import cpu_model, time_random_playouts  # noqa: E402

VARIANTS: dict[str, list[str]] = {
    "default": [],
    # With the default, the cost of evaluations to the run's wall time (see evaluation_cost).
    "final evaluation only": ["--eval-every", "1000000"],
    "search 2": ["--search", "2"],
    "search 4": ["--search", "4"],
    "search 8": ["--search", "8"],
    "search 16": ["--search", "16"],
    "2 workers + trainer 2 threads": ["--workers", "2", "--trainer-threads", "2"],
    "2 workers + trainer 1 thread": ["--workers", "2", "--trainer-threads", "1"],
    "1 worker + trainer 1 thread": ["--workers", "1", "--trainer-threads", "1"],
    "staleness 1": ["--max-staleness", "1"],
    "staleness 2": ["--max-staleness", "2"],
    "staleness 3": ["--max-staleness", "3"],
    "staleness 2, 1 worker + trainer 1 thread": ["--max-staleness", "2", "--workers", "1", "--trainer-threads", "1"],
    "staleness 2, 2 workers + trainer 1 thread": ["--max-staleness", "2", "--workers", "2", "--trainer-threads", "1"],
}


def command_module(pythonpath: str | None) -> str:
    """The module that runs the ``asp`` command with ``python -m`` in this checkout or in the
    older one at ``pythonpath``: ``asp.app`` (its ``__main__``); before it had one,
    ``asp.app.cli``; before asp/app existed, ``asp.cli``."""
    app = Path(pythonpath or Path(__file__).parent.parent) / "asp" / "app"
    if (app / "__main__.py").exists():
        return "asp.app"
    return "asp.app.cli" if (app / "cli.py").exists() else "asp.cli"


def run_once(args: list[str], iterations: int, pythonpath: str | None, keep: Path | None) -> dict[str, Any]:
    """One ``asp train`` in a temporary directory; ``keep``: copy its run directory there."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        module = command_module(pythonpath)
        command = [sys.executable, "-m", module, "train", "--iterations", str(iterations), "--no-progress"]
        command += ["--run-dir", str(run), *args]
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        began = time.perf_counter()
        with open(Path(tmp) / "stderr", "w+") as err:
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp)
            # wait4: the child's resource usage, its peak resident memory (that of its largest
            # process: the coordinator, whose workers are smaller) included
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - began
            err.seek(0)
            stderr = err.read()
        if child.returncode != 0:
            raise SystemExit(f"{command} failed:\n{stderr[-2000:]}")
        lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        if keep is not None:
            shutil.copytree(run, keep)
    walls = sum(line.get("time/wall", 0.0) for line in lines)
    busy = sum(line.get("time/workers_busy", 0.0) * line.get("time/wall", 0.0) for line in lines)
    split = re.search(r"^asp train: \d+ cores: (\d+) workers", stderr, re.M)
    evaluating = sum(line.get("time/evaluation", 0.0) for line in lines)
    eval_work = sum(v for line in lines for k, v in line.items() if k.endswith("/worker_seconds"))
    return {
        "wall": wall,
        "score": lines[-1].get("eval/score"),
        "greedy": lines[-1].get("eval_greedy/score"),
        "busy": busy / walls if walls and "time/workers_busy" in lines[-1] else None,
        "stall": max((line["time/loop_stall_max"] for line in lines if "time/loop_stall_max" in line), default=None),
        # Evaluation: its wall time (counted whole, though it overlaps self-play but the last),
        # and the workers' time in its games, against the workers' time in the run.
        "eval_wall": evaluating / wall if any("time/evaluation" in line for line in lines) else None,
        "eval_work": eval_work / (int(split.group(1)) * wall) if split and eval_work else None,
        "ladder": lines[-1].get("ladder/above_v0"),
        "peak_rss": usage.ru_maxrss / 1024,  # KiB on Linux
        "final_eval": lines[-1].get("time/evaluation"),
        "eval_cost": evaluation_cost_in_run(lines, wall),
        "occupancy": statistics.mean(occupancy)
        if (occupancy := [line["play/search_occupancy"] for line in lines if "play/search_occupancy" in line])
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--old", help="an older asp checkout to run as the first variant")
    parser.add_argument(
        "--keep", metavar="DIR", help="keep each run's directory as DIR/<variant>-<round> (default: removed)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS)[:3],
        metavar="NAME",
        help=f"variants to run, in this order (default the first three; all: {', '.join(map(repr, VARIANTS))})",
    )
    parser.add_argument("--extra", default="", help="more asp train options for every variant, as one string")
    args = parser.parse_args()
    if args.keep is not None and Path(args.keep).exists() and any(Path(args.keep).iterdir()):
        parser.error(f"--keep {args.keep}: not empty (each run's directory is copied there)")
    _, plies, seconds = time_random_playouts(3.0, 200, 0)
    rate = plies / seconds
    print(f"python-chess random playouts: {rate:,.0f} plies/s on one core of {cpu_model()}", flush=True)
    variants: list[tuple[str, list[str], str | None]] = []
    if args.old:
        variants.append((f"old ({args.old})", [], args.old))
    variants += [(name, VARIANTS[name], None) for name in args.only]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
    for round_ in range(args.runs):
        for number, (name, extra, path) in enumerate(variants):
            keep = None if args.keep is None else Path(args.keep) / f"{number}-{round_ + 1}"
            result = run_once([*extra, *args.extra.split()], args.iterations, path, keep)
            results[name].append(result)
            print(
                f"run {round_ + 1}: {name}: {result['wall']:.1f} s ({result['wall'] * rate / 1e6:.1f}M random plies)  "
                f"{describe(result)}",
                flush=True,
            )
    base = statistics.median(r["wall"] for r in results[variants[0][0]])
    print(f"asp train --iterations {args.iterations}, medians of {args.runs} run(s):")
    for name, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        budget = f"{wall * rate / 1e6:.1f}M random plies"
        print(f"  {name:44s} {wall:7.1f} s ({budget})  x{wall / base:.2f}  {describe(median_of(runs))}")
    if "default" in results and "final evaluation only" in results:
        print(evaluation_cost(results["default"], results["final evaluation only"]))


def evaluation_cost_in_run(lines: list[dict[str, Any]], wall: float) -> float | None:
    """What a run's evaluations added to its wall time, as a share of it, from its own lines:
    the last evaluation whole (nothing overlaps it), and for each evaluation before it, how
    much longer than the run's median iteration the iterations it overlapped took (an
    evaluation starts as its iteration ends, and its games take workers from self-play).
    Drift of the machine's speed within the run blurs it by the iterations' own spread."""
    if not lines or "time/evaluation" not in lines[-1]:
        return None
    walls = [line["time/wall"] for line in lines]
    ends = [sum(walls[: i + 1]) for i in range(len(walls))]
    spans = [
        (ends[i], ends[i] + line["time/evaluation"]) for i, line in enumerate(lines[:-1]) if "time/evaluation" in line
    ]
    overlapped = {j for start, end in spans for j in range(len(lines)) if ends[j] - walls[j] < end and ends[j] > start}
    usual = statistics.median(w for j, w in enumerate(walls) if j not in overlapped)
    excess = sum(max(0.0, walls[j] - usual) for j in overlapped)
    return float(excess + lines[-1]["time/evaluation"]) / wall


def evaluation_cost(default: list[dict[str, Any]], final_only: list[dict[str, Any]]) -> str:
    """What the default run's evaluations add to its wall time, from medians of both variants.

    Without evaluations the run would take the wall time of the run that evaluates only after
    its last iteration, less that final evaluation (nothing overlaps it: it is measured whole).
    """
    with_evaluations = statistics.median(r["wall"] for r in default)
    without = statistics.median(r["wall"] - (r["final_eval"] or 0.0) for r in final_only)
    share = (with_evaluations - without) / with_evaluations
    return (
        f"evaluations cost {share:.1%} of the default run's wall time: {with_evaluations:.1f} s with them, "
        f"{without:.1f} s without (the run evaluating only at its end, less that evaluation)"
    )


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the runs that report it (None where none does)."""
    keys = ("wall", "score", "greedy", "busy", "stall", "occupancy", "eval_wall", "eval_work", "eval_cost", "peak_rss")
    known = {key: [r[key] for r in runs if r[key] is not None] for key in keys}
    return {key: statistics.median(values) if values else None for key, values in known.items()}


def describe(result: dict[str, Any]) -> str:
    score = "n/a" if result["score"] is None else f"{result['score']:.3f}"
    if result.get("greedy") is not None:
        score += f"  vs greedy {result['greedy']:.3f}"
    busy = "n/a" if result["busy"] is None else f"{result['busy']:.1%}"
    stall = "n/a" if result["stall"] is None else f"{result['stall'] * 1000:.0f} ms"
    occupancy = "" if result.get("occupancy") is None else f"  search occupancy {result['occupancy']:.3f}"
    evaluation = ""
    if result.get("eval_wall") is not None:
        evaluation = f"  evaluation {result['eval_wall']:.1%} of the wall time"
        if result.get("eval_work") is not None:
            evaluation += f", {result['eval_work']:.1%} of the workers' time"
    if result.get("eval_cost") is not None:
        evaluation += f" (in-run estimate of its cost: {result['eval_cost']:.1%})"
    if result.get("ladder"):
        evaluation += "  last version above v0 by {:+.0f} [95%: {:+.0f}, {:+.0f}]".format(*result["ladder"])
    memory = "" if result.get("peak_rss") is None else f"  peak RSS {result['peak_rss']:.0f} MiB"
    return f"score {score}  workers playing {busy}  longest loop stall {stall}{memory}{occupancy}{evaluation}"


if __name__ == "__main__":
    main()
