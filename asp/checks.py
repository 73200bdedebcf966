"""Checks SelfPlay makes before it sends anything to a worker: what spawn workers can import.

Spawn workers re-import the main module and find every function and class by module and
name. What they could never find is refused here with a ConfigError that says what to do.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from typing import Any

from torch import nn

from asp.errors import ConfigError

__all__ = ["check_cfg", "check_main_module", "check_rebuildable", "check_spawnable", "positive_int", "positive_seconds"]

_NO_ARG_OK: set[type[nn.Module]] = set()


def check_spawnable(obj: object, what: str) -> None:
    """Refuse up front what spawn workers could never import."""
    qualname = getattr(obj, "__qualname__", repr(obj))
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ConfigError(f"{what} must be defined at module level for spawn workers to import it, got {qualname}")
    if getattr(obj, "__module__", None) == "__main__":
        main_file = getattr(sys.modules["__main__"], "__file__", None)
        if main_file is None or not os.path.exists(main_file):
            raise ConfigError(
                f"{what} {qualname} lives in a __main__ module that spawn workers cannot import "
                f"(a script read from standard input or an interactive session): move it into a module file"
            )


def check_rebuildable(net: nn.Module, role: str, *, importable: bool = True) -> None:
    """Workers rebuild a network as ``cls(net.cfg)``, or ``cls()`` when it has no ``cfg``; spawn
    workers (``importable``) must also find ``cls`` by module and name."""
    cls = type(net)
    if importable:
        check_spawnable(cls, f"the {role}'s class")
    if getattr(net, "cfg", None) is None and cls not in _NO_ARG_OK:
        try:
            cls()
        except TypeError as e:
            raise ConfigError(
                f"the {role} ({cls.__qualname__}) cannot be rebuilt in a worker: give it a `cfg` attribute "
                f"so that {cls.__qualname__}(cfg) rebuilds it, or a constructor that needs no arguments ({e})"
            ) from None
        _NO_ARG_OK.add(cls)


def check_main_module() -> None:
    """Refuse a ``__main__`` that spawn workers cannot re-import (a script read from stdin)."""
    main_file = getattr(sys.modules["__main__"], "__file__", None)
    if main_file is not None and not os.path.exists(main_file):
        raise ConfigError(
            f"the __main__ module ({main_file}) cannot be re-imported by spawn workers: run asp from a "
            f"script file (with its top-level code under `if __name__ == '__main__':`) or from a module"
        )


def check_cfg(cfg: Any) -> None:
    """A play_fn config is a dataclass instance with n_games, seed, first_game, model_version."""
    for name in ("n_games", "seed", "first_game", "model_version"):
        if not hasattr(cfg, name):
            raise ConfigError(f"cfg must have a field {name!r} (n_games, seed, first_game, model_version)")
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise ConfigError(f"cfg must be a dataclass instance, got {type(cfg).__name__}")


def positive_int(name: str, value: object, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise ConfigError(f"SelfPlay {name} must be an int in 1..{high}, got {value!r}")


def positive_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"SelfPlay {name} must be a positive number of seconds, got {value!r}")
