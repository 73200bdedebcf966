"""``asp train``: the run its options ask for (:func:`train_config`: the game loaded once and the
run's config built from the game's defaults, the ``--config`` file and the options, each mistake
named where it was made, the option or the file and its key), the run directory made and
locked, the stored run checked, then the training session with its live display.

Everything a user can get wrong is checked before the run directory changes: the options, the
trainer's device, the files of the run that must be files or directories, and, for
``--resume``, the whole checkpoint (:func:`asp.app.session.check_resumable`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asp.app.commands import EXIT_INTERRUPTED
from asp.app.outputs import check_output_directory
from asp.errors import ConfigError
from asp.util.checks import check_int
from asp.util.log import configure_logging

if TYPE_CHECKING:
    from asp.app.game_run import GameRun
    from asp.app.run import RunDir

__all__ = [
    "HELP",
    "MAX_STALENESS",
    "add_arguments",
    "directory_name",
    "print_config",
    "resumed_run",
    "run",
    "train_config",
]

HELP = "train a game (TinyChess by default) by pipelined self-play (the main job)"
"""The command's line in ``asp --help``."""

MAX_STALENESS = 16
"""``asp.pipeline.MAX_STALENESS``, for the help text: importing the pipeline imports torch,
which ``asp --help`` should not wait for (tests/test_cli_help.py keeps the two equal)."""


def directory_name(name: str) -> str:
    """A game's name as the name of its default run directory: each run of characters other
    than letters, digits, ``.``, ``_`` and ``-`` written ``-``.

    >>> directory_name("connect4"), directory_name("openspiel:breakthrough(rows=6,columns=6)")
    ('connect4', 'openspiel-breakthrough-rows-6-columns-6')
    """
    return re.sub(r"[^\w.-]+", "-", name, flags=re.ASCII).strip("-") or "run"


def add_arguments(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options."""
    train.add_argument(
        "--game",
        help="the game: tinychess (default), connect4, openspiel:NAME (one of OpenSpiel's board games, "
        "parameters as OpenSpiel writes them: 'openspiel:hex(board_size=7)'), or MODULE:ATTR, a game of your own "
        "(an asp.games.Game class or object; the current directory is importable)",
    )
    train.add_argument(
        "--iterations", type=int, help="iterations to train (default 24; Connect Four: 19; other games: 20)"
    )
    train.add_argument("--games", type=int, help="self-play games per iteration (default 160; other games: 200)")
    train.add_argument("--seed", type=int, help="seed of model, games and trainer (default 0)")
    train.add_argument("--max-plies", type=int, help="ply cap of a game (default 200; other games: 1000)")
    train.add_argument(
        "--eval-every",
        type=int,
        help="evaluate every N iterations, and after the last (default 24; Connect Four: 19; other games: 4)",
    )
    train.add_argument(
        "--eval-games",
        type=int,
        help="the most games of an evaluation, against each opponent (default 100; Connect Four: 20; other games: 100)",
    )
    train.add_argument(
        "--eval-precision",
        type=float,
        help="an evaluation stops once its score is known to +- this (95%%; default 0.1; 0: play every game)",
    )
    train.add_argument("--sequential", action="store_true", help="do not overlap play and training")
    train.add_argument(
        "--max-staleness",
        type=int,
        help=f"versions a game may lag behind the weights that train on it (0-{MAX_STALENESS}; default 1: the next "
        "iteration is played while training; N >= 2: self-play runs up to N iterations ahead)",
    )
    train.add_argument(
        "--search",
        type=int,
        help="simulations of the model's search per move, trained on its improved policy "
        "(1-10000; default 8; other games: 16)",
    )
    train.add_argument(
        "--eval-search",
        type=int,
        help="simulations of the model's search when it plays to win (evaluations, asp eval); "
        "0: the policy alone (default 64; Connect Four: 256; other games: 64)",
    )
    train.add_argument("--policy-only", action="store_true", help=argparse.SUPPRESS)  # refused, with what to do
    train.add_argument(
        "--hidden",
        type=int,
        help="width of the network's trunk (default: the game's; 256 for TinyChess, 32 for Connect Four's "
        "convolutions)",
    )
    _add_engine_options(train)
    _add_file_options(train)
    _add_machine_options(train)


def _add_engine_options(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options of an engine that the evaluations also play."""
    train.add_argument(
        "--eval-vs",
        default="random",
        metavar="random|ENGINE",
        help="opponents of every evaluation: the game's movers (random and the game's own; default), or an engine "
        "of the game as well (docs/cli.md)",
    )
    train.add_argument("--eval-skill", type=int, help="--eval-vs ENGINE: its skill level (default: the engine's)")
    train.add_argument("--eval-nodes", type=int, help="--eval-vs ENGINE: nodes per move (default: the engine's)")
    train.add_argument("--eval-depth", type=int, help="--eval-vs ENGINE: plies per move (default: the engine's)")
    train.add_argument(
        "--engine", help="--eval-vs ENGINE: the engine's executable (default: where the game looks for it)"
    )


def _add_file_options(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options of the files a run reads and writes besides its own."""
    train.add_argument(
        "--config",
        metavar="FILE",
        help="the run's settings from a TOML file (or a run's config.json); the options override it",
    )
    train.add_argument(
        "--print-config",
        action="store_true",
        help="print the run's whole config as a file for --config, and exit",
    )
    train.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write every metric as TensorBoard scalars in RUN/tensorboard (needs asp[tensorboard])",
    )


def _add_machine_options(train: argparse.ArgumentParser) -> None:
    """``asp train``'s options of where and how it runs, rather than what it trains."""
    train.add_argument("--workers", type=int, help="worker processes (default: cores // threads)")
    train.add_argument("--threads-per-worker", type=int, default=1, help="torch threads per worker (default 1)")
    train.add_argument(
        "--trainer-threads", type=int, help="torch threads of the trainer (default: every core; the split is printed)"
    )
    train.add_argument("--backend", choices=("local", "ray"), default="local", help="where workers run (default local)")
    train.add_argument(
        "--address",
        help="Ray only: 'auto' joins this machine's Ray cluster, ray://HOST:PORT a Ray client (default: "
        "a private Ray instance on this machine)",
    )
    train.add_argument("--run-dir", help="run directory (default runs/<name>, the game's name)")
    train.add_argument("--name", help="run name, for the default run directory (default: the game's name)")
    train.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR where it stopped")
    train.add_argument("--device", help="trainer device: auto, cpu, cuda (default auto)")
    train.add_argument("--no-progress", action="store_true", help="no live display, one line per iteration")


def run(args: argparse.Namespace) -> int:
    """Run ``asp train`` with its parsed ``args``; return the exit code."""
    from asp.app.run import RunDir
    from asp.app.run.directory import RunError
    from asp.app.run.lock import RunLock
    from asp.app.run.tensorboard import TENSORBOARD

    run, changes = train_config(args)
    if args.config and args.resume:
        raise ConfigError("--config starts a new run: a resumed run keeps the config it started with")
    if args.print_config:
        return print_config(args, run, changes)
    for option, most in (("workers", 1024), ("threads_per_worker", 256), ("trainer_threads", 256)):
        value = getattr(args, option)
        if value is not None:  # SelfPlay's limits, said before the run directory changes
            check_int(f"--{option.replace('_', '-')}", value, 1, most)
    _check_device(run.cfg.train.device)  # a resumed run's stored device too, below
    if args.tensorboard:
        from asp.app.run.tensorboard import check_tensorboard

        check_tensorboard()
    made: list[Path] = []  # the directories made here, deepest first
    if args.resume:
        rundir = RunDir(args.resume)
        if not rundir.path.is_dir():
            raise RunError(f"{rundir.path}: no run directory to resume")
    else:
        rundir = RunDir(args.run_dir or Path("runs") / (args.name or directory_name(str(run.game.name))))
        made = [p for p in (rundir.path, *rundir.path.parents) if not p.exists()]
        check_output_directory("--run-dir", rundir.path)  # made, and files can be created in it
    # The run directory is this process's from here on: nothing in it is written before.
    lock = RunLock(rundir.path)
    locked_before = lock.file.exists()
    try:
        lock.acquire()
    except OSError as e:
        raise RunError(f"run directory {rundir.path} cannot be written: {e.strerror or e}") from None
    try:
        try:
            run = _checked_run(args, rundir, run, changes)
        except BaseException:  # refused: nothing of this command stays behind
            if not locked_before:
                lock.discard()
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()  # only if empty
            raise
        if args.resume and not args.tensorboard and (rundir.path / TENSORBOARD).is_dir():
            args = argparse.Namespace(**{**vars(args), "tensorboard": True})  # it wrote events: it goes on
        return _train_locked(args, rundir, run)
    finally:
        lock.release()


def _check_run_files(rundir: RunDir) -> None:
    """RunError naming the first path of the run that is in the way of a file it writes."""
    from asp.app.run.directory import RunError

    for path in (rundir.metrics, rundir.log, rundir.checkpoint, rundir.path / "config.json", rundir.curves):
        if path.is_dir():
            raise RunError(f"{path} is a directory: the run writes a file there")
    games = rundir.games(0).parent
    if games.exists() and not games.is_dir():
        raise RunError(f"{games} is not a directory: the run writes its games there")
    for path in sorted(games.glob("iter-*")) if games.is_dir() else []:
        if path.is_dir():
            raise RunError(f"{path} is a directory: the run writes its games file there")


def _check_device(device: str) -> None:
    """ConfigError when the trainer's device is a CUDA one and this torch has none."""
    if not device.startswith("cuda"):
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        have = f"{count} CUDA device(s)" if count else "no CUDA device (torch.cuda.is_available() is False)"
        raise ConfigError(f"--device {device}: this torch has {have}; use --device cpu or auto")


def _train_locked(args: argparse.Namespace, rundir: RunDir, run: GameRun) -> int:
    """``asp train`` once the run directory's lock is held and the run checked: run."""
    from asp.app.display import TrainDisplay

    configure_logging(fmt=args.log_format, level=args.log_level, json_file=rundir.log)
    cfg = run.cfg
    budget = _core_budget(args, cfg)
    display = TrainDisplay(cfg.iterations, live=not args.no_progress and sys.stderr.isatty())

    def progress(kind: str, fields: dict[str, Any]) -> None:
        if kind == "started":  # the run directory is ours: say how the cores are shared
            display.console.print(f"asp train: {budget.describe()}", highlight=False)
            if fields.get("note"):
                display.console.print(f"asp train: {fields['note']}", highlight=False)
        display.update(kind, fields)

    stopped_by: list[int] = []
    try:
        with display, asyncio.Runner() as runner:
            history = runner.run(_cancellable_session(args, rundir, run, budget, progress, stopped_by))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # The run has stopped and cleaned up: another Ctrl-C now must not cut the hint short.
        with _sigint_ignored():
            # The checkpoint, not this process, knows: a resumed run began with iterations done.
            saved = rundir.saved_iterations()
            print(  # noqa: T201 (the command line's own output, as in cli.py)
                f"asp train: interrupted; the checkpoint holds {saved} complete iteration(s) of {cfg.iterations}; "
                f"resume with: {_resume_hint(args, rundir)}",
                file=sys.stderr,
            )
        return 128 + signal.SIGTERM if stopped_by == [signal.SIGTERM] else EXIT_INTERRUPTED
    print(_final_line(rundir, history))  # noqa: T201 (the command line's own output, as in cli.py)
    return 0


def _checked_run(args: argparse.Namespace, rundir: RunDir, run: GameRun, changes: dict[str, Any]) -> GameRun:
    """The run to train: a resumed run's stored one (only its length may change); RunError or
    ConfigError for anything that cannot run, before anything in the run directory changes."""
    from asp.app.session import check_resumable

    if args.resume:
        run = resumed_run(args, rundir, run, changes)
    _check_device(run.cfg.train.device)
    _check_run_files(rundir)
    if args.resume:
        check_resumable(rundir, run)  # before anything in the run directory changes
    return run


def _core_budget(args: argparse.Namespace, cfg: Any) -> Any:
    """How the cores are shared between the workers and the trainer."""
    from asp.util.cores import split_cores

    if args.backend == "local":
        return split_cores(
            overlap=cfg.overlap and cfg.max_staleness >= 1,
            workers=args.workers,
            threads_per_worker=args.threads_per_worker,
            trainer_threads=args.trainer_threads,
        )
    # the workers run elsewhere: the cores here are the trainer's
    return split_cores(overlap=False, workers=args.workers, trainer_threads=args.trainer_threads)


def _resume_hint(args: argparse.Namespace, rundir: RunDir) -> str:
    hint = f"asp train --resume {rundir.path}"
    if args.backend != "local":
        hint += f" --backend {args.backend}" + (f" --address {args.address}" if args.address else "")
    if args.tensorboard:
        hint += " --tensorboard"
    return hint


async def _cancellable_session(
    args: argparse.Namespace, rundir: RunDir, run: GameRun, budget: Any, progress: Any, stopped_by: list[int]
) -> list[dict[str, Any]]:
    """The training session, cancelled by the first Ctrl-C or SIGTERM (noted in ``stopped_by``)."""
    from asp.app.session import train_session

    task = asyncio.current_task()
    assert task is not None

    def on_signal(signum: int) -> None:
        # The first Ctrl-C or SIGTERM cancels the session; later ones must not break into its
        # clean-up (asyncio.Runner turns a second Ctrl-C into a KeyboardInterrupt anywhere).
        if stopped_by:
            print(  # noqa: T201 (the command line's own output, as in cli.py)
                "asp train: stopping; waiting for the workers to stop and the files to be removed", file=sys.stderr
            )
            return
        stopped_by.append(signum)
        task.cancel()

    # Signal handlers belong to the main thread; run elsewhere (an application embedding
    # asp, a test), signals stay the application's business. A signal this process was
    # started ignoring (SIGINT of a shell script's background job) stays ignored.
    if threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                loop.add_signal_handler(signum, on_signal, signum)
    return await train_session(
        rundir,
        run,
        resume=bool(args.resume),
        workers=budget.workers,
        threads_per_worker=args.threads_per_worker,
        trainer_threads=budget.trainer_threads,
        progress=progress,
        backend=args.backend,
        address=args.address,
        engine_path=args.engine,
        tensorboard=args.tensorboard,
    )


def _final_line(rundir: RunDir, history: Sequence[dict[str, Any]]) -> str:
    """The last line of ``asp train``: the final scores, how the time went, where the curves are."""
    from asp.app.run.metrics import mover_scores

    final = history[-1] if history else {}
    score = final.get("eval/score")
    others = "".join(f", against the {name} mover: {value:.3f}" for name, value in mover_scores(final).items())
    return (
        f"trained {len(history)} iterations in {rundir.path}; last score against a random mover: "
        f"{'n/a' if score is None else f'{score:.3f}'}{others}; {_time_summary(history)}; curves: {rundir.curves}"
    )


def _time_summary(history: Sequence[dict[str, Any]]) -> str:
    """How the run used its time: the workers' share inside shards, the loop's longest stall."""
    wall = sum(line.get("time/wall", 0.0) for line in history)
    busy = sum(line.get("time/workers_busy", 0.0) * line.get("time/wall", 0.0) for line in history)
    stall = max((line.get("time/loop_stall_max", 0.0) for line in history), default=0.0)
    share = f"{busy / wall:.0%}" if wall > 0 else "n/a"
    return f"workers playing {share} of the wall time; longest event-loop stall {stall * 1000:.0f} ms"


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT inside the block (main thread only: elsewhere signals are not ours)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


_ENGINE_NAMES = {"skill": "--eval-skill", "nodes": "--eval-nodes", "depth": "--eval-depth", "path": "--engine",
                 "name": "--eval-vs"}  # fmt: skip
"""The engine's fields and the ``asp train`` options that set them (``--engine``: where it is,
not part of the run), for a game with an engine only, with ``--eval-vs ENGINE``."""

_OPTIONS = ("iterations", "games", "seed", "max_plies", "eval_every", "eval_games", "eval_precision",
            "max_staleness", "search", "eval_search")  # fmt: skip
"""``asp train``'s options that set the config field of the same name."""


def train_config(args: argparse.Namespace) -> tuple[GameRun, dict[str, Any]]:
    """The run that ``asp train``'s options ask for, and the config fields the options changed.

    One pass: the game's defaults, the settings of ``--config FILE`` over them
    (:mod:`asp.app.config_file`), the options over both; the game loaded once and the whole
    config checked once. Only where that check fails are the layers checked one by one, to
    name the first that makes the config wrong.

    :raises ConfigError: for an option out of its range, named as the option; for a key of
        the file that the config does not have or a value out of range, named as the key.
    """
    from asp.app.config_file import merged, read_config_file
    from asp.app.game_loader import TINYCHESS, check_named_game, load_game
    from asp.app.run_config import defaults_for

    given = read_config_file(args.config) if args.config else {}
    spec = args.game or given.get("game", TINYCHESS)
    if not args.game:  # the file's: a module it names is imported only when the user asks
        check_named_game(spec, f"--config {args.config}", trusted=args.trust_game)
    # A game that cannot be loaded is the user's mistake, said before anything else and
    # named where it was given: the option, else the config file.
    game = load_game(spec, option="--game" if args.game else f"--config {args.config}: game")
    _check_refused(args, game, spec)
    layers = [("", defaults_for(spec, game).to_dict())]
    if given:  # its keys checked here, each named with the file
        layers.append((f"--config {args.config}", merged(layers[-1][1], {**given, "game": spec}, str(args.config))))
    options = _option_settings(args, game)
    for option, settings in options:
        layers.append((option, _over(layers[-1][1], settings)))
    run = _checked(layers, game)
    changes: dict[str, Any] = {"game": spec} if args.game else {}  # a resumed run keeps its own
    changes.update({key: getattr(run.cfg, key) for _, settings in options for key in settings})
    return run, changes


def _option_settings(args: argparse.Namespace, game: Any) -> list[tuple[str, dict[str, Any]]]:
    """The settings each given option sets, with the option's name."""
    settings = [(f"--{name.replace('_', '-')}", {name: getattr(args, name)}) for name in _OPTIONS
                if getattr(args, name) is not None]  # fmt: skip
    if args.sequential:
        settings.append(("--sequential", {"overlap": False}))
    if (engine := _engine_fields(args, game)) is not None:
        settings.append(("--eval-vs", {"eval_engine": engine}))
    if args.device is not None:
        settings.append(("--device", {"train": {"device": args.device}}))
    if args.hidden is not None:
        settings.append(("--hidden", {"network": {"hidden": args.hidden}}))
    return settings


def _over(data: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a config's ``to_dict()``) with an option's ``settings`` over it: a field of
    the trainer or the network set alone, any other field replaced whole."""
    out = dict(data)
    for key, value in settings.items():
        out[key] = {**out[key], **value} if key in ("train", "network") else value
    return out


def _checked(layers: list[tuple[str, dict[str, Any]]], game: Any) -> GameRun:
    """The run of the last of ``layers`` (each a name and the config so far); where it is
    wrong, ConfigError naming the first layer that is."""
    try:
        return _run_of(layers[-1][1], game)
    except ConfigError as error:
        for where, data in layers:
            try:
                _run_of(data, game)
            except ConfigError as e:
                raise ConfigError(f"{where}: {e}" if where else str(e)) from None
        raise error from None


def _run_of(data: dict[str, Any], game: Any) -> GameRun:
    from asp.app.game_run import GameRun
    from asp.app.run_config import GameRunConfig

    run = GameRun(GameRunConfig.from_dict(data), game)
    if run.engine is not None:  # each of its fields, as a run stores them (TOML writes no None)
        run.cfg = dataclasses.replace(run.cfg, eval_engine=dataclasses.asdict(run.engine))
    return run


def _check_refused(args: argparse.Namespace, game: Any, spec: str) -> None:
    """ConfigError for the options that ``asp train`` refuses whatever their values."""
    from asp.app.commands.options import engine_options
    from asp.games.protocol import engine_names

    engines = engine_names(game)
    if args.eval_vs != "random" and args.eval_vs not in engines:
        known = f"its engines: {', '.join(engines)}" if engines else "it has none"
        raise ConfigError(f"--eval-vs {args.eval_vs}: not an engine of {spec}; {known} (random: its movers only)")
    given = engine_options(args, _ENGINE_NAMES)
    if given and not engines:
        option = _ENGINE_NAMES[next(iter(given))]
        raise ConfigError(f"{option} applies to a game with an engine only, not --game {spec}")
    if args.policy_only:
        raise ConfigError(
            "--policy-only: asp train always searches (it trains on the search's improved policy); "
            "asp eval, play and moves --policy-only play the network alone"
        )
    if args.search == 0:
        raise ConfigError("--search must be in 1..10000: asp train trains on the search's improved policy")


def _engine_fields(args: argparse.Namespace, game: Any) -> dict[str, Any] | None:
    """The engine of ``asp train --eval-vs ENGINE``, as the run keeps it (its path is not
    part of the run); its errors name the options."""
    from asp.app.commands.options import engine_options
    from asp.games.protocol import engine_config

    given = engine_options(args, _ENGINE_NAMES)
    if args.eval_vs == "random":
        if given:
            raise ConfigError(f"{_ENGINE_NAMES[next(iter(given))]} applies to --eval-vs ENGINE only")
        return None
    stored = dataclasses.asdict(engine_config(game, {"name": args.eval_vs, **given}, _ENGINE_NAMES))
    if "path" in stored:
        stored["path"] = None  # where the program is: --engine at each start, not part of the run
    return stored


def resumed_run(args: argparse.Namespace, rundir: RunDir, asked: GameRun, changes: dict[str, Any]) -> GameRun:
    """The run a resume of ``rundir`` runs: the stored one, as long as the options ask (only its
    length may change: anything else would be another run), its game trusted; of ``asked``'s
    game where the stored run names the same, else loaded now."""
    from asp.app.game_loader import check_named_game
    from asp.app.game_run import GameRun
    from asp.app.run.directory import RunError

    stored = rundir.stored_config()
    check_named_game(stored.game, f"--resume {rundir.path}", trusted=args.trust_game or args.game == stored.game)
    clash = {k: v for k, v in changes.items() if k != "iterations" and getattr(stored, k, None) != v}
    if clash:
        named = ", ".join(f"{k}={v!r}" for k, v in clash.items())
        raise RunError(f"{rundir.path}: belongs to another config ({named} differs from the stored run)")
    cfg = dataclasses.replace(stored, iterations=changes.get("iterations", stored.iterations))
    return asked.with_cfg(cfg) if cfg.game == asked.cfg.game else GameRun(cfg)


def print_config(args: argparse.Namespace, run: GameRun, changes: dict[str, Any]) -> int:
    """``asp train --print-config``: the run's whole config as a file for ``--config`` (a
    resumed run's: the one it started with, and the iterations asked for)."""
    from asp.app.config_file import config_text
    from asp.app.run import RunDir

    if args.resume:
        run = resumed_run(args, RunDir(args.resume), run, changes)
    print(config_text(run.cfg.to_dict()), end="")  # noqa: T201 (the command line's own output, as in cli.py)
    return 0
