"""Strength per minute: ``asp train`` of a game with given settings, over several seeds, its
kept versions scored against yardsticks that asp's own players are not.

Each seed trains with ``asp train --game GAME --seed S`` (the game's defaults, a ``--config``
file and ``--set KEY=VALUE`` settings over them; a fresh run directory, timed as a
subprocess), then every version the run keeps (one per evaluation: ``eval_every``) is scored
side by side in this script, at the wall time of training at which it was made (the sum of
the iterations' ``time/wall`` up to it). The last version plays the full matches; earlier
versions play ``--curve-games`` games of the curves' yardsticks.

Yardsticks (``net``: the network alone, its likeliest legal move; otherwise the model as it
plays to win, its search with ``eval_search`` simulations and no noise):

* Connect Four: OpenSpiel's ``MCTSBot`` (``open_spiel.python.algorithms.mcts``: random
  rollouts, ``uct_c`` 2, 1,000 simulations a move, its solver on) from random two-ply
  openings, each opening played once with each colour (``mcts``, ``mcts_net``); the share of
  the 400 solver-labelled positions of ``data/connect4_positions.txt`` (``connect4_positions.py``),
  in each of which some move throws the result away, where the model's move keeps the
  perfect-play result (``positions``, ``positions_net``), and of the 138 of them where the side
  to move cannot win at once (``positions_quiet``, ``positions_net_quiet``: in the others any
  search finds the win).
* OpenSpiel's games (``--game openspiel:NAME``): OpenSpiel's C++ ``MCTSBot`` with 1,000
  simulations a move (:class:`asp.openspiel.MCTSMover`: random rollouts, ``uct_c`` 2, its
  solver on), 40 games from two random plies, each start once with each colour (``mcts1000``,
  ``mcts1000_net``).
* TinyChess, from the ten bundled openings with both colours: the one-ply greedy mover
  (``greedy_net``), the two-ply material searcher with quiescence
  (:class:`asp.tinychess.opponents.MaterialSearchMover`, ``material2``), Stockfish at skill 0
  and ``go depth 1`` (``sf0``; at one node its strength is not calibrated).

It prints each seed's figures, then the median and the spread (lowest, highest) of each,
writes them as JSON (``--out``) and draws strength against minutes of training, every seed
and the median (``--png``); ``--plot A.json B.json`` draws several settings on one picture.
Wall times are also given in python-chess random-playout plies (seconds times the machine's
rate on one core, measured at the start), the unit that compares machines::

    python benchmarks/bench_learning.py --game connect4 --seeds 0 1 2 --label default --out c4-default.json
    python benchmarks/bench_learning.py --game connect4 --set train.lr=0.001 --label lr1e-3 --out c4-lr.json
    python benchmarks/bench_learning.py --plot c4-default.json c4-lr.json --png c4.png

Needs open-spiel for Connect Four's MCTSBot (``pip install open-spiel``) and Stockfish for
TinyChess's (``apt-get install stockfish``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from asp import SelfPlay
from asp.app.config_file import config_text
from asp.app.evaluation.elo import match_result_of
from asp.app.game_run import GameRun
from asp.app.run import RunDir
from asp.app.run.directory import kept_versions, run_from_checkpoint, version_path
from asp.connect4.rules import Board, from_columns, winning_columns
from asp.games import PlayConfig
from asp.games.movers import BaseMover

sys.path.insert(0, str(Path(__file__).parent))
from bench_play import cpu_model, time_random_playouts  # noqa: E402
from connect4_positions import read  # noqa: E402

POSITIONS = Path(__file__).parent / "data" / "connect4_positions.txt"


@dataclass(frozen=True)
class MCTSConfig:
    simulations: int = 1000
    """Simulations a move."""


class MCTSMover(BaseMover):
    """OpenSpiel's MCTSBot with random rollouts (its solver on) over its own ``connect_four``,
    as an asp mover; its random state seeded per move from the game's own stream."""

    opponent_name = "mcts"

    def __init__(self, cfg: MCTSConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg if cfg is not None else MCTSConfig()

    def choose(self, game: Any, state: Board, rng: random.Random) -> int:
        import pyspiel
        from open_spiel.python.algorithms import mcts

        spiel_game = pyspiel.load_game("connect_four")
        spiel_state = spiel_game.new_initial_state()
        for column in state.moves:
            spiel_state.apply_action(column)
        seed = rng.getrandbits(32)
        evaluator = mcts.RandomRolloutEvaluator(1, np.random.RandomState(seed))
        bot = mcts.MCTSBot(
            spiel_game, 2, self.cfg.simulations, evaluator, solve=True, random_state=np.random.RandomState(seed)
        )
        return int(bot.step(spiel_state))


@dataclass(frozen=True)
class Yardstick:
    """One match (or position set) a version is scored on."""

    name: str
    opponent: Callable[[], nn.Module] | None
    """The opponent, built in this process (None: the positions of ``connect4_positions``)."""
    games: int
    """Games of the last version's match."""
    curve_games: int
    """Games of an earlier version's match (0: the last version only)."""
    net: bool
    """The network alone (its likeliest legal move), or the model's search as it plays to win."""


def yardsticks(game: str) -> list[Yardstick]:
    if game.startswith("openspiel:"):
        from asp.openspiel import MCTSConfig as SpielMCTS
        from asp.openspiel import MCTSMover as SpielMCTSMover

        def bot() -> nn.Module:
            return SpielMCTSMover(SpielMCTS(1000))

        return [Yardstick("mcts1000", bot, 40, 0, net=False), Yardstick("mcts1000_net", bot, 40, 0, net=True)]
    if game == "connect4":
        return [
            Yardstick("mcts", MCTSMover, 100, 40, net=False),
            Yardstick("mcts_net", MCTSMover, 100, 0, net=True),
            Yardstick("positions", None, 400, 400, net=False),
            Yardstick("positions_net", None, 400, 400, net=True),
        ]
    from asp.tinychess.engine import EngineConfig
    from asp.tinychess.opponents import GreedyChessMover, MaterialSearchMover

    return [
        Yardstick("greedy_net", GreedyChessMover, 200, 40, net=True),
        Yardstick("material2", MaterialSearchMover, 100, 40, net=False),
        Yardstick("sf0", lambda: EngineConfig(skill=0, nodes=None, depth=1).opponent(), 100, 0, net=False),
    ]


def game_name(text: str) -> str:
    if text in ("connect4", "tinychess") or text.startswith("openspiel:"):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: connect4, tinychess or openspiel:NAME")


def match_cfg(run: GameRun, version: int, stick: Yardstick, games: int) -> PlayConfig:
    """The model plays to win (its search, or its network alone), from the game's openings (a
    game without: two random plies), each start once with each colour."""
    cfg = run.version_match_cfg(version, 0)  # varied starts, both colours, as two networks play
    search = run.search_cfg(sampling=False, simulations=0 if stick.net else None)
    return dataclasses.replace(
        cfg, n_games=games, search=search, opponent_search=None, opponent_temperature=None, opponent_version=0
    )


def positions_cfg(run: GameRun, stick: Yardstick) -> tuple[PlayConfig, list[Any]]:
    positions = read(POSITIONS)
    cfg = PlayConfig(
        run.game,
        n_games=len(positions),
        openings=tuple(p.columns for p in positions),
        max_plies=1,
        temperature=0.0,
        search=run.search_cfg(sampling=False, simulations=0 if stick.net else None),
        samples=False,
    )
    return cfg, positions


async def score(
    selfplay: SelfPlay, path: Path, sticks: list[Yardstick], last: bool, eval_search: int | None
) -> dict[str, Any]:
    """``path``'s scores on ``sticks`` (the full matches where ``last``), its search with
    ``eval_search`` simulations (None: its run's)."""
    run, model, state = run_from_checkpoint(path)
    if eval_search is not None:
        run = run.with_cfg(dataclasses.replace(run.cfg, eval_search=eval_search))
    result: dict[str, Any] = {}
    for stick in sticks:
        games = stick.games if last else stick.curve_games
        if not games:
            continue
        started = time.perf_counter()
        if stick.opponent is None:
            cfg, positions = positions_cfg(run, stick)
            records, _ = await selfplay.play(model, None, cfg)
            kept = [p.results[r.actions[0]] == max(p.results.values()) for p, r in zip(positions, records, strict=True)]
            result[stick.name] = {"score": sum(kept) / len(kept), "games": len(kept)}
            # Where the side to move cannot win at once (in most positions it can, and any search wins)
            quiet = [k for k, p in zip(kept, positions, strict=True) if not winning_columns(from_columns(p.columns))]
            result[f"{stick.name}_quiet"] = {"score": sum(quiet) / len(quiet), "games": len(quiet)}
        else:
            records, _ = await selfplay.play(model, stick.opponent(), match_cfg(run, state["version"], stick, games))
            match = match_result_of(records)
            result[stick.name] = {"score": match.score, "games": match.games,
                                  "wdl": [match.wins, match.draws, match.losses]}  # fmt: skip
        result[stick.name]["seconds"] = round(time.perf_counter() - started, 1)
    return result


def calibrate() -> float:
    """python-chess random playouts from the start position, plies/s on one core (3 s)."""
    _, plies, seconds = time_random_playouts(3.0, 200, seed=0)
    return plies / seconds


def settings_file(game: str, config: Path | None, sets: list[str], where: Path) -> Path:
    """A config file of ``config``'s settings (if any) with each ``KEY=VALUE`` of ``sets``
    over them (``train.lr=0.001``: the key ``lr`` of the table ``train``; a value in TOML)."""
    data: dict[str, Any] = tomllib.loads(config.read_text()) if config else {}
    for item in sets:
        key, _, value = item.partition("=")
        *tables, name = key.strip().split(".")
        table = data
        for part in tables:
            table = table.setdefault(part, {})
        table[name] = tomllib.loads(f"v = {value}")["v"]
    data["game"] = game
    where.write_text(config_text(data))
    return where


def train(settings: Path, seed: int, run: Path) -> float:
    started = time.perf_counter()
    command = [sys.executable, "-m", "asp.app", "train", "--config", str(settings), "--seed", str(seed),
               "--no-progress", "--run-dir", str(run)]  # fmt: skip
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def made_at(run: Path) -> dict[int, float]:
    """The wall seconds of training at which each kept version was made."""
    elapsed, at = 0.0, {0: 0.0}
    for line in RunDir(run).read_metrics():
        elapsed += line["time/wall"]
        if "eval/version" in line:
            at[line["eval/version"]] = elapsed
    return at


async def score_run(
    run: Path, game: str, curves: bool, eval_search: int | None, only: list[str] | None = None
) -> list[dict[str, Any]]:
    sticks = [s for s in yardsticks(game) if only is None or s.name in only]
    at = made_at(run)
    versions = kept_versions(run)
    points = []
    async with SelfPlay(workers=2) as selfplay:
        for version in versions if curves else versions[-1:]:
            last = version == versions[-1]
            scores = await score(selfplay, version_path(run, version), sticks, last, eval_search)
            points.append({"version": version, "minutes": round(at.get(version, float("nan")) / 60, 3), **scores})
    return points


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median and spread of every final figure over the seeds."""
    figures: dict[str, list[float]] = {
        "wall_s": [r["wall_s"] for r in runs],
        "wall_plies": [r["wall_plies"] for r in runs],
    }
    for r in runs:
        for name, value in r["points"][-1].items():
            if isinstance(value, dict):
                figures.setdefault(name, []).append(value["score"])
    return {name: {"median": statistics.median(v), "low": min(v), "high": max(v), "seeds": v}
            for name, v in figures.items()}  # fmt: skip


def plot(files: list[Path], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [json.loads(f.read_text()) for f in files]
    names = sorted({n for r in results for run in r["runs"] for p in run["points"] for n, v in p.items()
                    if isinstance(v, dict)})  # fmt: skip
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names, strict=False):
        for colour, result in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], results, strict=False):
            for run in result["runs"]:
                xs = [p["minutes"] for p in run["points"] if name in p]
                ys = [p[name]["score"] for p in run["points"] if name in p]
                ax.plot(xs, ys, "o-", color=colour, alpha=0.35, linewidth=1)
            finals = result["summary"].get(name)
            if finals:
                minutes = statistics.median(r["points"][-1]["minutes"] for r in result["runs"])
                ax.errorbar([minutes], [finals["median"]], yerr=[[finals["median"] - finals["low"]],
                            [finals["high"] - finals["median"]]], fmt="s", color=colour, capsize=4,
                            label=f"{result['label']}: {finals['median']:.3f}")  # fmt: skip
        ax.set_title(name)
        ax.set_xlabel("minutes of training")
        ax.set_ylim(0, 1)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", type=game_name, default="connect4", help="connect4, tinychess or openspiel:NAME")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to train (default 0 1 2)")
    parser.add_argument("--config", type=Path, help="a config file of the settings to train with")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting over the config")
    parser.add_argument("--label", default="default", help="the settings' name in the output")
    parser.add_argument("--no-curves", action="store_true", help="score the last version only")
    parser.add_argument("--only", nargs="+", metavar="YARDSTICK", help="score on these yardsticks only")
    parser.add_argument("--eval-search", type=int, help="score with this many simulations (default: the run's)")
    parser.add_argument("--keep", type=Path, help="keep the run directories here")
    parser.add_argument("--score", type=Path, nargs="+", help="score these run directories instead of training")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    parser.add_argument("--png", type=Path, help="draw the curves here")
    parser.add_argument("--plot", type=Path, nargs="+", help="draw these results files (with --png) and exit")
    args = parser.parse_args()
    if args.plot:
        plot(args.plot, args.png or Path("learning.png"))
        return
    torch.set_num_threads(1)
    rate = calibrate()
    print(f"machine: {cpu_model()}; python-chess random playouts: {rate:,.0f} plies/s on one core", flush=True)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="bench-learning-"))
    keep.mkdir(parents=True, exist_ok=True)
    settings = settings_file(args.game, args.config, args.set, keep / f"{args.label}.toml")
    runs: list[dict[str, Any]] = []
    todo = [(None, run) for run in args.score] if args.score else [(s, keep / f"{args.label}-{s}") for s in args.seeds]
    for seed, run in todo:
        wall = train(settings, seed, run) if seed is not None else 0.0
        # The machine's speed drifts (a shared host): its rate before and after the run, averaged
        rates = [rate, calibrate()] if seed is not None else [rate]
        rate = rates[-1]
        points = asyncio.run(
            score_run(run, args.game, curves=not args.no_curves, eval_search=args.eval_search, only=args.only)
        )
        result = {"seed": seed, "run": str(run), "wall_s": round(wall, 1), "rates": [round(r) for r in rates],
                  "wall_plies": round(wall * statistics.fmean(rates)), "points": points}  # fmt: skip
        print(json.dumps(result), flush=True)
        runs.append(result)
    figures = summary(runs)
    print(f"{args.label}: medians over {len(runs)} run(s) (lowest-highest):")
    for name, f in figures.items():
        print(f"  {name}: {f['median']:.3f} ({f['low']:.3f}-{f['high']:.3f})")
    output = {"label": args.label, "game": args.game, "rate": rate, "settings": settings.read_text(),
              "runs": runs, "summary": figures}  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(output, indent=1))
    if args.png and args.out:
        plot([args.out], args.png)
    if not args.keep and not args.score:
        shutil.rmtree(keep, ignore_errors=True)


if __name__ == "__main__":
    main()
