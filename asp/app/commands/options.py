"""What ``asp play``, ``asp eval`` and ``asp moves`` share: the model's search as the options
ask, and the ranges of their options."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asp.errors import ConfigError
from asp.util.checks import check_number

if TYPE_CHECKING:
    from asp.app.game_run import GameRun
    from asp.search import SearchConfig

__all__ = [
    "POLICY_ONLY_HELP",
    "SEARCH_HELP",
    "check_game_options",
    "check_search_options",
    "engine_options",
    "play_search",
]

POLICY_ONLY_HELP = "the model plays its policy network alone: no search"
"""The help of ``--policy-only``."""
SEARCH_HELP = "simulations of the model's search before each move, 0 for none (default: as its run was configured)"
"""The help of ``--search``."""

_GAME_OPTIONS = (("games", 1, 10**6), ("max_plies", 1, 10_000), ("seed", 0, 2**63 - 1), ("workers", 1, 4096))
"""The integer options of ``asp play`` and ``asp eval`` and their ranges."""


def check_search_options(args: argparse.Namespace) -> None:
    """ConfigError for ``--search`` out of its range, or given with ``--policy-only``."""
    if args.search is not None and not 0 <= args.search <= 10_000:
        raise ConfigError(f"--search must be in 0..10000 (simulations; 0: no search), got {args.search}")
    if args.search and args.policy_only:
        raise ConfigError(f"--policy-only plays without search: drop --search {args.search} or --policy-only")


def check_game_options(args: argparse.Namespace) -> None:
    """ConfigError naming the first option of ``asp play``/``asp eval`` out of its range."""
    for name, low, high in _GAME_OPTIONS:
        value = getattr(args, name)
        if value is not None and not low <= value <= high:
            raise ConfigError(f"--{name.replace('_', '-')} must be in {low}..{high}, got {value}")
    check_search_options(args)
    if args.temperature is not None:
        check_number("--temperature", args.temperature, 0.01, 100, also=(0,))


def play_search(run: GameRun, args: argparse.Namespace, *, sampling: bool = False) -> SearchConfig | None:
    """The search a run's model plays to win with, or with ``sampling`` as it plays in
    self-play (its self-play simulations, Gumbel noise at the root): as the run was
    configured, unless ``--search N`` (0: none) or ``--policy-only`` says otherwise."""
    simulations = 0 if getattr(args, "policy_only", False) else args.search
    return run.search_cfg(sampling=sampling, simulations=simulations)


def engine_options(args: argparse.Namespace, names: Mapping[str, str]) -> dict[str, Any]:
    """The fields of an engine that the options given set, by field: ``names`` maps each
    field to its option (``{"skill": "--skill"}``); the engine's ``name`` is not among them
    (``--vs``), and the game's engine applies its own defaults to the fields not given."""
    fields = {field: getattr(args, option[2:].replace("-", "_")) for field, option in names.items() if field != "name"}
    return {field: value for field, value in fields.items() if value is not None}
