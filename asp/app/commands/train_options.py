"""The run that ``asp train``'s options ask for: :func:`train_config`, the game loaded once and
the run's config built from the game's defaults, the ``--config`` file and the options, each
mistake named where it was made (the option, or the file and its key)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from asp.errors import ConfigError

if TYPE_CHECKING:
    from asp.app.game_run import GameRun
    from asp.app.run import RunDir
    from asp.app.run_config import GameRunConfig

__all__ = ["print_config", "resumed_run", "train_config"]

T = TypeVar("T")

_ENGINE_NAMES = {"skill": "--eval-skill", "nodes": "--eval-nodes", "depth": "--eval-depth", "path": "--engine",
                 "name": "--eval-vs"}  # fmt: skip
"""The engine's fields and the ``asp train`` options that set them (``--engine``: where it is,
not part of the run), for a game with an engine only, with ``--eval-vs ENGINE``."""

_OPTIONS = ("iterations", "games", "seed", "max_plies", "eval_every", "eval_games", "eval_precision",
            "max_staleness", "search", "eval_search")  # fmt: skip
"""``asp train``'s options that set the config field of the same name."""


def train_config(args: argparse.Namespace) -> tuple[GameRun, dict[str, Any]]:
    """The run that ``asp train``'s options ask for, and the config fields the options changed.

    The config starts from the game's defaults, with the settings of ``--config FILE`` over
    them (:mod:`asp.app.config_file`); the options override both.

    :raises ConfigError: for an option out of its range, named as the option; for a key of
        the file that the config does not have or a value out of range, named as the key.
    """
    from asp.app.config_file import read_config_file
    from asp.app.game_loader import TINYCHESS, check_named_game, load_game
    from asp.app.game_run import GameRun
    from asp.app.run_config import defaults_for

    given = read_config_file(args.config) if args.config else {}
    spec = args.game or given.get("game", TINYCHESS)
    if not args.game:  # the file's: a module it names is imported only when the user asks
        check_named_game(spec, f"--config {args.config}", trusted=args.trust_game)
    # A game that cannot be loaded is the user's mistake, said before anything else and
    # named where it was given: the option, else the config file.
    game = load_game(spec, option="--game" if args.game else f"--config {args.config}: game")
    _check_refused(args, game, spec)
    base = _with_file(defaults_for(spec, game), given, args.config)
    try:
        checked = GameRun(base, game)  # the file's network and engine, checked against the game's
    except ConfigError as e:
        raise ConfigError(f"--config {args.config}: {e}") from None
    if checked.engine is not None:  # each of its fields, as a run stores them (TOML writes no None)
        base = dataclasses.replace(base, eval_engine=dataclasses.asdict(checked.engine))
    changes: dict[str, Any] = {"game": spec} if args.game else {}  # a resumed run keeps its own
    for option in _OPTIONS:
        _take_option(args, option, base, changes)
    if args.sequential:
        changes["overlap"] = False
    if (engine := _engine_fields(args, game)) is not None:
        changes["eval_engine"] = engine
    if args.device is not None:
        changes["train"] = _named_option("device", lambda: dataclasses.replace(base.train, device=args.device))
    if args.hidden is not None:
        changes["network"] = {**base.network, "hidden": args.hidden}
    make = functools.partial(GameRun, dataclasses.replace(base, **changes), game)
    return (make() if args.hidden is None else _named_option("hidden", make)), changes


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


def _with_file(defaults: GameRunConfig, given: dict[str, Any], where: str | None) -> GameRunConfig:
    """``defaults`` (a run config) with the settings ``given`` by the config file ``where``
    over them; ConfigError naming the file and the key."""
    from asp.app.config_file import merged
    from asp.app.run_config import GameRunConfig

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


def resumed_run(args: argparse.Namespace, rundir: RunDir, asked: GameRun, changes: dict[str, Any]) -> GameRun:
    """The run a resume of ``rundir`` runs: the stored one, as long as the options ask (only its
    length may change: anything else would be another run), its game trusted; of ``asked``'s
    game where the stored run names the same, else loaded now."""
    from asp.app.game_loader import check_named_game
    from asp.app.game_run import GameRun
    from asp.app.run.checkpoint import RunError

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
