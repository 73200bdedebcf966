"""Speed of asp's batched Gumbel search against OpenSpiel's python ``MCTSBot``, side by side.

Both sides search the same positions with the same TinyChess network (the default
``TinyChess()`` after ``torch.manual_seed(0)``) and the same simulations per move, on one
thread, in one process:

1. peer: ``open_spiel.python.algorithms.mcts.MCTSBot`` over OpenSpiel's C++ chess, the
   network as its evaluator written as a user would write it: one batch-1 forward per new
   leaf, cached per FEN (``evaluate`` and ``prior`` of a node share one forward; the cache is
   emptied before each move). The prior is the softmax of the logits of the legal moves,
   mapped through ``pyspiel.chess.action_to_move(...).to_lan()`` (UCI) to TinyChess's policy
   indices: the cheapest of the mappings tried, so the glue does not slow the peer down.
   PUCT selection (``SearchNode.puct_value``, ``uct_c`` 2, as OpenSpiel's AlphaZero uses it)
   by default; ``--peer-selection uct`` for the bot's default UCT, which ignores the prior.
   Timed: ``bot.step(state)`` for each position, one after the other;
2. asp: ``asp.search.search(NetworkSearch(TinyChessGame(), net), roots, SearchConfig(simulations=S),
   rngs, batch=N)`` over all N positions at once (one batch: the new leaves of every tree in
   network calls of N boards), each root ``game.search_root(game.parse_state(fen))``, as
   ``asp.games.play_games`` starts a search.

simulations/s = positions * S * searches / seconds, for each side; the ratio asp / peer (target >= 3)
factors out the machine. asp's batch occupancy is ``NetworkSearch.boards / evaluations`` over
the number of positions N, the batch: the last calls of a search are part full, as the
searches of the positions end (a position with few legal moves takes more rounds than the
others). That is a single move of every position; in self-play a game whose search has ended
moves on and its next search fills those calls, and ``bench_train.py`` reports the occupancy
there (the target, >= 0.9).

Positions: seeded random play from the start position (python-chess), 8 to 80 plies, kept
only where the game goes on and the mover has no mate in one (so that neither side stops a
search early); each is passed to OpenSpiel as its FEN, and the legal moves of both rule
engines are checked to agree before anything is timed. Each run times every S twice on each
side, in the order asp, peer, peer, asp (peer, asp, asp, peer in even runs), so that a drift
in the machine's load weighs on both alike; medians of runs are reported, with python-chess
random playouts per second for the machine's scale (``bench_play.time_random_playouts``). It
always exits 0, or 2 when open-spiel is missing.

open-spiel is not a dependency of asp; install it for this benchmark only:

    pip install open-spiel
    python benchmarks/bench_search.py [--runs 3] [--positions 64] [--simulations 8 32] [--cpu K] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import chess
import numpy as np
import torch

from asp.games.network_search import NetworkSearch
from asp.search import SearchConfig, search
from asp.tinychess import TinyChess, TinyChessGame, encode_boards, move_index
from asp.tinychess.mates import mating_moves

sys.path.insert(0, str(Path(__file__).parent))

from bench_play import cpu_model, time_random_playouts  # noqa: E402

TARGET_RATIO = 3.0
PLAYOUT_SECONDS = 1.0
REPEATS = 2
"""Searches of each side in a run, timed in the order A B B A."""
INSTALL = "pip install open-spiel"


def make_positions(n: int, seed: int) -> list[chess.Board]:
    """``n`` boards from seeded random play (8 to 80 plies) where the game goes on and the
    mover has no mate in one."""
    boards: list[chess.Board] = []
    game = 0
    while len(boards) < n:
        rng = random.Random(seed * 1_000_003 + game)
        game += 1
        board = chess.Board()
        for _ in range(rng.randint(8, 80)):
            board.push(rng.choice(list(board.generate_legal_moves())))
            if board.is_game_over():
                break
        if board.is_game_over() or mating_moves(board, list(board.legal_moves)):
            continue
        boards.append(chess.Board(board.fen()))  # no move stack: both sides see no history
    return boards


def peer_evaluator(net: TinyChess) -> Any:
    """An OpenSpiel ``mcts.Evaluator`` running ``net`` on one board per new leaf, cached per FEN."""
    import pyspiel.chess as spiel_chess
    from open_spiel.python.algorithms import mcts

    class TinyChessEvaluator(mcts.Evaluator):  # type: ignore[misc]
        def __init__(self) -> None:
            self.cache: dict[str, tuple[torch.Tensor, float, chess.Color]] = {}
            self.forwards = 0

        def _forward(self, state: Any) -> tuple[torch.Tensor, float, chess.Color]:
            fen = str(state)  # OpenSpiel's chess state prints as its FEN
            entry = self.cache.get(fen)
            if entry is None:
                board = chess.Board(fen)
                with torch.inference_mode():
                    logits, value = net(encode_boards([board]))
                entry = self.cache[fen] = (logits[0], float(value[0]), board.turn)
                self.forwards += 1
            return entry

        def evaluate(self, state: Any) -> list[float]:
            _, value, _ = self._forward(state)
            returns = [-value, -value]
            returns[state.current_player()] = value  # TinyChess values the side to move
            return returns

        def prior(self, state: Any) -> list[tuple[int, float]]:
            logits, _, turn = self._forward(state)
            board = state.board()
            actions = state.legal_actions()
            indices = [
                move_index(chess.Move.from_uci(spiel_chess.action_to_move(a, board).to_lan()), turn) for a in actions
            ]
            return list(zip(actions, torch.softmax(logits[indices], 0).tolist(), strict=True))

    return TinyChessEvaluator()


class Peer:
    """OpenSpiel's ``MCTSBot`` with the TinyChess evaluator, over the benchmark's positions."""

    def __init__(self, net: TinyChess, boards: list[chess.Board], *, selection: str, uct_c: float) -> None:
        import pyspiel
        import pyspiel.chess as spiel_chess
        from open_spiel.python.algorithms import mcts

        self.mcts = mcts
        self.game = pyspiel.load_game("chess")
        self.fens = [board.fen() for board in boards]
        self.evaluator = peer_evaluator(net)
        self.select = mcts.SearchNode.puct_value if selection == "puct" else mcts.SearchNode.uct_value
        self.uct_c = uct_c
        for board, fen in zip(boards, self.fens, strict=True):
            state = self.game.new_initial_state(fen)
            theirs = {spiel_chess.action_to_move(a, state.board()).to_lan() for a in state.legal_actions()}
            if theirs != {m.uci() for m in board.legal_moves}:
                raise RuntimeError(f"OpenSpiel and python-chess disagree on the legal moves of {fen}")

    def time(self, simulations: int, seed: int, count: int | None = None) -> tuple[float, int]:
        """``(seconds, network forwards)`` of one ``bot.step`` on each of the first ``count`` positions."""
        bot = self.mcts.MCTSBot(
            self.game,
            self.uct_c,
            max_simulations=simulations,
            evaluator=self.evaluator,
            random_state=np.random.RandomState(seed),
            child_selection_fn=self.select,
        )
        states = [self.game.new_initial_state(fen) for fen in self.fens[:count]]
        forwards_before = self.evaluator.forwards
        seconds = 0.0
        for state in states:
            self.evaluator.cache.clear()
            started = time.perf_counter()
            bot.step(state)
            seconds += time.perf_counter() - started
        return seconds, self.evaluator.forwards - forwards_before


def time_asp(net: TinyChess, boards: list[chess.Board], simulations: int, seed: int) -> dict[str, float]:
    """One ``search`` over all ``boards`` at once: seconds, simulations spent, network calls and boards."""
    game = TinyChessGame()
    evaluator = NetworkSearch(game, net)
    roots = [game.search_root(game.parse_state(board.fen())) for board in boards]
    rngs = [random.Random(seed * 1_000_003 + i) for i in range(len(boards))]
    started = time.perf_counter()
    results = search(evaluator, roots, SearchConfig(simulations=simulations), rngs, batch=len(boards))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "simulations": sum(r.simulations for r in results),
        "evaluations": evaluator.evaluations,
        "boards": evaluator.boards,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description="Time asp's search against OpenSpiel's MCTSBot on TinyChess.")
    parser.add_argument("--runs", type=int, default=3, help="runs: asp, peer, peer, asp at each S (default 3)")
    parser.add_argument("--positions", type=int, default=64, help="positions searched, N (default 64)")
    parser.add_argument(
        "--simulations", type=int, nargs="+", default=[8, 32], help="simulations per move, S (default 8 32)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions and of both searches")
    parser.add_argument("--peer-selection", choices=("puct", "uct"), default="puct", help="MCTSBot child selection")
    parser.add_argument("--uct-c", type=float, default=2.0, help="MCTSBot's uct_c (default 2)")
    parser.add_argument("--cpu", type=int, default=-1, help="CPU to pin to; -1 to not pin (default -1)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1 or args.positions < 1 or min(args.simulations) < 1:
        parser.error("--runs, --positions and --simulations must be at least 1")
    if importlib.util.find_spec("pyspiel") is None:
        print(f"open-spiel is not installed (it is not a dependency of asp); install it with: {INSTALL}")
        parser.exit(2, f"bench_search: open-spiel is missing: {INSTALL}\n")

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    pinned = "no"
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
        pinned = f"CPU {args.cpu}"

    torch.manual_seed(0)
    net = TinyChess().eval()
    boards = make_positions(args.positions, args.seed)
    peer = Peer(net, boards, selection=args.peer_selection, uct_c=args.uct_c)

    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "pinned": pinned,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python_chess": chess.__version__,
        "open_spiel": _version("open_spiel"),
    }
    for key, value in info.items():
        print(f"{key:>13}: {value}")
    print(
        f"{'config':>13}: positions={len(boards)} simulations={args.simulations} "
        f"peer=MCTSBot({args.peer_selection}, uct_c={args.uct_c}) asp=SearchConfig(simulations=S) defaults"
    )

    started = time.perf_counter()
    time_asp(net, boards[:8], min(args.simulations), seed=args.seed)
    peer.time(min(args.simulations), seed=args.seed, count=2)
    print(f"{'warm-up':>13}: {time.perf_counter() - started:.2f} s (untimed below)")

    runs: dict[int, list[dict[str, float]]] = {s: [] for s in args.simulations}
    playouts: list[float] = []
    n = len(boards)
    for i in range(args.runs):
        for s in args.simulations:
            run: dict[str, float] = dict.fromkeys(
                ("asp_seconds", "asp_simulations", "asp_evaluations", "asp_boards", "peer_seconds", "peer_forwards"),
                0.0,
            )
            # A B B A: a drift in the machine's load over the run weighs on both sides alike.
            for side in ("asp", "peer", "peer", "asp") if i % 2 == 0 else ("peer", "asp", "asp", "peer"):
                if side == "asp":
                    a = time_asp(net, boards, s, seed=args.seed + i)
                    if a["simulations"] != n * s:
                        raise RuntimeError(f"asp spent {a['simulations']} simulations, not {n * s}")
                    for key, value in a.items():
                        run[f"asp_{key}"] += value
                else:
                    seconds, forwards = peer.time(s, seed=args.seed + i)
                    run["peer_seconds"] += seconds
                    run["peer_forwards"] += forwards
            run["asp_sims_per_s"] = REPEATS * n * s / run["asp_seconds"]
            run["peer_sims_per_s"] = REPEATS * n * s / run["peer_seconds"]
            run["ratio"] = run["asp_sims_per_s"] / run["peer_sims_per_s"]
            run["occupancy"] = run["asp_boards"] / run["asp_evaluations"] / n
            runs[s].append(run)
            print(
                f"run {i + 1} S={s:>3}: peer {run['peer_sims_per_s']:>8,.0f} sims/s "
                f"({run['peer_forwards'] / REPEATS:.0f} forwards) | asp {run['asp_sims_per_s']:>8,.0f} sims/s "
                f"({run['asp_evaluations'] / REPEATS:.0f} calls, {run['asp_boards'] / REPEATS:.0f} boards) | "
                f"ratio {run['ratio']:.2f} | occupancy {run['occupancy']:.3f}"
            )
        games, plies, secs = time_random_playouts(PLAYOUT_SECONDS, 200, seed=i)
        playouts.append(plies / secs)
        print(f"run {i + 1} random playouts: {plies / secs:,.0f} plies/s ({games} games)")

    medians: dict[str, Any] = {"random_plies_per_s": statistics.median(playouts)}
    print(f"median python-chess random playouts: {medians['random_plies_per_s']:,.0f} plies/s (one core)")
    for s in args.simulations:
        m = {k: statistics.median(r[k] for r in runs[s]) for k in runs[s][0]}
        medians[str(s)] = m
        print(
            f"median S={s:>3}: peer {m['peer_sims_per_s']:,.0f} sims/s | asp {m['asp_sims_per_s']:,.0f} sims/s | "
            f"ratio {m['ratio']:.2f} | occupancy {m['occupancy']:.3f}"
        )
        print(f"  {verdict(m['ratio'] >= TARGET_RATIO)}: ratio {m['ratio']:.2f} >= {TARGET_RATIO}")

    if args.json is not None:
        report = {
            "machine": info,
            "config": {
                "positions": n,
                "simulations": args.simulations,
                "seed": args.seed,
                "peer_selection": args.peer_selection,
                "uct_c": args.uct_c,
            },
            "fens": [board.fen() for board in boards],
            "runs": {str(s): r for s, r in runs.items()},
            "random_plies_per_s": playouts,
            "median": medians,
            "targets": {"ratio": TARGET_RATIO},
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {args.json}")


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in (package, package.replace("_", "-")):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return "unknown"


if __name__ == "__main__":
    main()
