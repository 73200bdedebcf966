"""``asp train``: the run directory made and locked, the options and the stored run checked,
then the training session with its live display.

Everything a user can get wrong is checked before the run directory changes: the options, the
trainer's device, the files of the run that must be files or directories, and, for
``--resume``, the whole checkpoint (:func:`asp.app.session.check_resumable`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from asp.app.entry import EXIT_INTERRUPTED
from asp.app.outputs import check_output_directory
from asp.checks import check_int
from asp.errors import ConfigError
from asp.log import configure_logging

if TYPE_CHECKING:
    from asp.app.game_config import GameRunConfig
    from asp.app.run import RunDir
    from asp.tinychess.engine import EngineConfig

__all__ = ["engine_from_options", "train_command", "train_config"]

T = TypeVar("T")


_TRAIN_ENGINE_OPTIONS = {"skill": "--eval-skill", "nodes": "--eval-nodes"}
"""EngineConfig's fields and the ``asp train`` options that set them."""


def _train_engine_config(args: argparse.Namespace) -> EngineConfig | None:
    """The engine of ``asp train --eval-vs stockfish`` (its path is not part of the run)."""

    given = [f"--{o.replace('_', '-')}" for o in ("eval_skill", "eval_nodes", "engine") if getattr(args, o) is not None]
    if args.eval_vs != "stockfish":
        if given:
            raise ConfigError(f"{given[0]} applies to --eval-vs stockfish only")
        return None
    return engine_from_options(
        _TRAIN_ENGINE_OPTIONS,
        skill=0 if args.eval_skill is None else args.eval_skill,
        nodes=100 if args.eval_nodes is None else args.eval_nodes,
    )


def engine_from_options(options: dict[str, str], **fields: Any) -> EngineConfig:
    """``EngineConfig(**fields)``, the fields that ``options`` maps to command-line options
    checked first under those options' names."""
    from asp.tinychess.engine import EngineConfig, check_engine_field

    for name, option in options.items():
        if name in fields:
            check_engine_field(name, fields[name], name=option)
    return EngineConfig(**fields)


_ENGINE_OPTIONS = ("eval_skill", "eval_nodes", "engine")
"""``asp train``'s options of an engine opponent, for a game of chess only (besides
``--eval-vs stockfish``)."""


def train_config(args: argparse.Namespace) -> tuple[GameRunConfig, dict[str, Any]]:
    """The run's config from ``asp train``'s options, and the fields the options changed.

    The config starts from the game's defaults, with the settings of ``--config FILE`` over
    them (:mod:`asp.app.config_file`); the options override both.

    :raises ConfigError: for an option out of its range, named as the option; for a key of
        the file that the config does not have or a value out of range, named as the key.
    """
    from asp.app.config_file import read_config_file
    from asp.app.game_config import defaults_for, network_config
    from asp.app.games import TINYCHESS, check_named_game, load_game
    from asp.tinychess.game import TinyChessGame

    given = read_config_file(args.config) if args.config else {}
    game = args.game or given.get("game", TINYCHESS)
    if not args.game:  # the file's: a module it names is imported only when the user asks
        check_named_game(game, f"--config {args.config}", trusted=args.trust_game)
    # A game that cannot be loaded is the user's mistake, said before anything else and
    # named where it was given: the option, else the config file.
    loaded = load_game(game, option="--game" if args.game else f"--config {args.config}: game")
    engine = [o for o in _ENGINE_OPTIONS if getattr(args, o) is not None]
    engine += ["eval_vs stockfish"] if args.eval_vs == "stockfish" else []
    if engine and not isinstance(loaded, TinyChessGame):
        raise ConfigError(f"--{engine[0].replace('_', '-')} applies to a game of chess only, not --game {game}")
    if args.policy_only:
        raise ConfigError(
            "--policy-only: asp train always searches (it trains on the search's improved policy); "
            "asp eval, play and moves --policy-only play the network alone"
        )
    if args.search == 0:
        raise ConfigError("--search must be in 1..10000: asp train trains on the search's improved policy")
    base = _with_file(defaults_for(game), given, args.config)
    if base.eval_engine is not None and not isinstance(loaded, TinyChessGame):
        raise ConfigError(f"--config {args.config}: eval_engine: an engine plays chess, not {game}")
    changes: dict[str, Any] = {"game": game} if args.game else {}  # a resumed run keeps its own
    for option in ("iterations", "games", "seed", "max_plies", "eval_every", "eval_games", "eval_precision",
                   "max_staleness", "search", "eval_search"):  # fmt: skip
        _take_option(args, option, base, changes)
    if args.sequential:
        changes["overlap"] = False
    if (engine_cfg := _train_engine_config(args)) is not None:
        changes["eval_engine"] = engine_cfg
    if args.device is not None:
        changes["train"] = _named_option("device", lambda: dataclasses.replace(base.train, device=args.device))
    if base.network:  # the config file's, checked against the game's network before the run starts
        try:
            network_config(loaded, base.network)
        except ConfigError as e:
            raise ConfigError(f"--config {args.config}: {e}") from None
    if args.hidden is not None:
        changes["network"] = {**base.network, "hidden": args.hidden}
        _named_option("hidden", functools.partial(network_config, loaded, changes["network"]))
    return dataclasses.replace(base, **changes), changes


def _with_file(defaults: GameRunConfig, given: dict[str, Any], where: str | None) -> GameRunConfig:
    """``defaults`` (a run config) with the settings ``given`` by the config file ``where``
    over them; ConfigError naming the file and the key."""
    from asp.app.config_file import merged
    from asp.app.game_config import GameRunConfig

    if not given:
        return defaults
    data = merged(defaults.to_dict(), {**given, "game": defaults.game}, str(where))
    try:
        return GameRunConfig.from_dict(data)
    except ConfigError as e:
        raise ConfigError(f"--config {where}: {e}") from None


def _take_option(args: argparse.Namespace, option: str, base: Any, changes: dict[str, Any]) -> None:
    """Put ``--option``'s value, when given, in ``changes`` under the config field of the same
    name, checked on ``base`` under the option's name."""
    value = getattr(args, option)
    if value is not None:
        changes[option] = value
        _named_option(option, functools.partial(dataclasses.replace, base, **{option: value}))


def _named_option(option: str, make: Callable[[], T]) -> T:
    """``make()``; its ConfigError (which names a config field) is prefixed with the option
    that set the field, so that the user sees what to change on the command line."""
    try:
        return make()
    except ConfigError as e:
        raise ConfigError(f"--{option.replace('_', '-')}: {e}") from None


def train_command(args: argparse.Namespace) -> int:
    """Run ``asp train`` with its parsed ``args``; return the exit code."""
    from asp.app.checkpoint import RunError
    from asp.app.lock import RunLock
    from asp.app.run import RunDir
    from asp.app.tensorboard import TENSORBOARD

    cfg, changes = train_config(args)
    if args.config and args.resume:
        raise ConfigError("--config starts a new run: a resumed run keeps the config it started with")
    if args.print_config:
        return _print_config(args, cfg, changes)
    for option, most in (("workers", 1024), ("threads_per_worker", 256), ("trainer_threads", 256)):
        value = getattr(args, option)
        if value is not None:  # SelfPlay's limits, said before the run directory changes
            check_int(f"--{option.replace('_', '-')}", value, 1, most)
    _check_device(cfg.train.device)  # a resumed run's stored device too, below
    if args.tensorboard:
        from asp.app.tensorboard import check_tensorboard

        check_tensorboard()
    made: list[Path] = []  # the directories made here, deepest first
    if args.resume:
        run = RunDir(args.resume)
        if not run.path.is_dir():
            raise RunError(f"{run.path}: no run directory to resume")
    else:
        run = RunDir(args.run_dir or Path("runs") / (args.name or _game_name(cfg)))
        made = [p for p in (run.path, *run.path.parents) if not p.exists()]
        check_output_directory("--run-dir", run.path)  # made, and files can be created in it
    # The run directory is this process's from here on: nothing in it is written before.
    lock = RunLock(run.path)
    locked_before = lock.file.exists()
    try:
        lock.acquire()
    except OSError as e:
        raise RunError(f"run directory {run.path} cannot be written: {e.strerror or e}") from None
    try:
        try:
            cfg = _checked_config(args, run, cfg, changes)
        except BaseException:  # refused: nothing of this command stays behind
            if not locked_before:
                lock.discard()
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()  # only if empty
            raise
        if args.resume and not args.tensorboard and (run.path / TENSORBOARD).is_dir():
            args = argparse.Namespace(**{**vars(args), "tensorboard": True})  # it wrote events: it goes on
        return _train_locked(args, run, cfg)
    finally:
        lock.release()


def _print_config(args: argparse.Namespace, cfg: Any, changes: dict[str, Any]) -> int:
    """``asp train --print-config``: the run's whole config as a file for ``--config`` (a
    resumed run's: the one it started with, and the iterations asked for)."""
    from asp.app.config_file import config_text
    from asp.app.run import RunDir

    if args.resume:
        cfg = _resumed_config(args, RunDir(args.resume), changes)
    print(config_text(cfg.to_dict()), end="")  # noqa: T201 (the command line's own output, as in cli.py)
    return 0


def _game_name(cfg: GameRunConfig) -> str:
    """The name of the run's game: the default run directory's name."""
    from asp.app.games import load_game

    return str(load_game(cfg.game).name)


def _check_run_files(run: RunDir) -> None:
    """RunError naming the first path of the run that is in the way of a file it writes."""
    from asp.app.checkpoint import RunError

    for path in (run.metrics, run.log, run.checkpoint, run.path / "config.json", run.curves):
        if path.is_dir():
            raise RunError(f"{path} is a directory: the run writes a file there")
    games = run.games(0).parent
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


def _train_locked(args: argparse.Namespace, run: RunDir, cfg: Any) -> int:
    """``asp train`` once the run directory's lock is held and ``cfg`` checked: run."""
    from asp.app.display import TrainDisplay

    configure_logging(fmt=args.log_format, level=args.log_level, json_file=run.log)
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
            history = runner.run(_session(args, run, cfg, budget, progress, stopped_by))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # The run has stopped and cleaned up: another Ctrl-C now must not cut the hint short.
        with _sigint_ignored():
            # The checkpoint, not this process, knows: a resumed run began with iterations done.
            saved = run.saved_iterations()
            print(  # noqa: T201 (the command line's own output, as in cli.py)
                f"asp train: interrupted; the checkpoint holds {saved} complete iteration(s) of {cfg.iterations}; "
                f"resume with: {_resume_hint(args, run)}",
                file=sys.stderr,
            )
        return 128 + signal.SIGTERM if stopped_by == [signal.SIGTERM] else EXIT_INTERRUPTED
    print(_final_line(run, history))  # noqa: T201 (the command line's own output, as in cli.py)
    return 0


def _checked_config(args: argparse.Namespace, run: RunDir, cfg: Any, changes: dict[str, Any]) -> Any:
    """The config to run: a resumed run's stored one (only its length may change); RunError or
    ConfigError for anything that cannot run, before anything in the run directory changes."""
    from asp.app.session import check_resumable

    if args.resume:
        cfg = _resumed_config(args, run, changes)
    _check_device(cfg.train.device)
    _check_run_files(run)
    if args.resume:
        check_resumable(run, cfg)  # before anything in the run directory changes
    return cfg


def _resumed_config(args: argparse.Namespace, run: RunDir, changes: dict[str, Any]) -> GameRunConfig:
    """The config a resume of ``run`` runs: the stored one, as long as the options ask (only
    its length may change: anything else would be another run), its game trusted."""
    from asp.app.checkpoint import RunError
    from asp.app.games import check_named_game

    stored = run.stored_config()
    check_named_game(stored.game, f"--resume {run.path}", trusted=args.trust_game or args.game == stored.game)
    clash = {k: v for k, v in changes.items() if k != "iterations" and getattr(stored, k, None) != v}
    if clash:
        named = ", ".join(f"{k}={v!r}" for k, v in clash.items())
        raise RunError(f"{run.path}: belongs to another config ({named} differs from the stored run)")
    return dataclasses.replace(stored, iterations=changes.get("iterations", stored.iterations))


def _core_budget(args: argparse.Namespace, cfg: Any) -> Any:
    """How the cores are shared between the workers and the trainer."""
    from asp.cores import split_cores

    if args.backend == "local":
        return split_cores(
            overlap=cfg.overlap and cfg.max_staleness >= 1,
            workers=args.workers,
            threads_per_worker=args.threads_per_worker,
            trainer_threads=args.trainer_threads,
        )
    # the workers run elsewhere: the cores here are the trainer's
    return split_cores(overlap=False, workers=args.workers, trainer_threads=args.trainer_threads)


def _resume_hint(args: argparse.Namespace, run: RunDir) -> str:
    hint = f"asp train --resume {run.path}"
    if args.backend != "local":
        hint += f" --backend {args.backend}" + (f" --address {args.address}" if args.address else "")
    if args.tensorboard:
        hint += " --tensorboard"
    return hint


async def _session(
    args: argparse.Namespace, run: RunDir, cfg: Any, budget: Any, progress: Any, stopped_by: list[int]
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
        run,
        cfg,
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


def _final_line(run: RunDir, history: Sequence[dict[str, Any]]) -> str:
    """The last line of ``asp train``: the final scores, how the time went, where the curves are."""
    from asp.app.metrics import mover_scores

    final = history[-1] if history else {}
    score = final.get("eval/score")
    others = "".join(f", against the {name} mover: {value:.3f}" for name, value in mover_scores(final).items())
    return (
        f"trained {len(history)} iterations in {run.path}; last score against a random mover: "
        f"{'n/a' if score is None else f'{score:.3f}'}{others}; {_time_summary(history)}; curves: {run.curves}"
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
