"""The run that ``asp train``'s options ask for: :func:`train_config`, the game loaded once and
the run's config built from the game's defaults, the ``--config`` file and the options, each
mistake named where it was made (the option, or the file and its key)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from asp.errors import ConfigError

if TYPE_CHECKING:
    from asp.app.game_run import GameRun
    from asp.app.run import RunDir

__all__ = ["print_config", "resumed_run", "train_config"]

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
