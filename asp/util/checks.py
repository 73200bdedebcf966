"""Checks of options and config fields, each failure a :class:`~asp.errors.ConfigError`.

* Ranges, for every layer (the game and the search import them too): :func:`check_int`,
  :func:`check_number`, :func:`check_bool`. Each message is one line that names the field
  (``Owner.field``, or the name the caller gives it: the field of an enclosing config, the
  command-line option that set it), the values allowed and the value got:

  >>> check_int("ModelConfig.hidden", 7, 8, 4096)
  Traceback (most recent call last):
  ...
  asp.errors.ConfigError: ModelConfig.hidden must be an int in 8..4096, got 7
  >>> check_number("EngineConfig.time", 0, 0, 60, open_low=True, also=(None,), what=SECONDS)
  Traceback (most recent call last):
  ...
  asp.errors.ConfigError: EngineConfig.time must be None or a number of seconds in (0, 60], got 0

* What spawn workers can import, checked by SelfPlay before it sends anything to a worker:
  spawn workers re-import the main module and find every function and class by module and
  name. What they could never find is refused with a ConfigError that says what to do.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from asp.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "SECONDS",
    "check_bool",
    "check_cfg",
    "check_int",
    "check_main_module",
    "check_number",
    "check_rebuildable",
    "check_spawnable",
]

SECONDS = "a number of seconds"
"""``what`` of :func:`check_number` for a duration."""

_FAITHFUL: set[tuple[type[nn.Module], str, tuple[tuple[str, tuple[int, ...]], ...]]] = set()
"""The networks found rebuilt faithfully: by class, config and tensor shapes."""


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
    """Workers rebuild a network as ``cls(net.cfg)``, or ``cls()`` when it has no ``cfg``, and
    load its weights: refuse a network that this would not rebuild with the same tensors (names
    and shapes). Spawn workers (``importable``) must also find ``cls`` by module and name."""
    cls = type(net)
    if importable:
        check_spawnable(cls, f"the {role}'s class")
    cfg = getattr(net, "cfg", None)
    shapes = tuple((name, tuple(t.shape)) for name, t in net.state_dict().items())
    key = (cls, repr(cfg), shapes)
    if key in _FAITHFUL:
        return
    name = cls.__qualname__
    rebuild = f"{name}(net.cfg)" if cfg is not None else f"{name}()"
    import torch  # here: the checks of plain values need no torch

    try:
        with torch.random.fork_rng(devices=[]):  # building draws from torch's generator: not the caller's
            rebuilt = cls(cfg) if cfg is not None else cls()
    except TypeError as e:
        raise ConfigError(
            f"the {role} ({name}) cannot be rebuilt in a worker as {rebuild}: give it a `cfg` attribute "
            f"so that {name}(cfg) rebuilds it, or a constructor that needs no arguments ({e})"
        ) from None
    theirs = {k: tuple(t.shape) for k, t in rebuilt.state_dict().items()}
    ours = dict(shapes)
    if theirs != ours:
        differ = sorted(set(ours) ^ set(theirs)) or [k for k in ours if ours[k] != theirs[k]]
        what = differ[0]
        got = f"{ours.get(what, 'missing')} here, {theirs.get(what, 'missing')} rebuilt"
        raise ConfigError(
            f"the {role} ({name}) is rebuilt in a worker as {rebuild}, which gives another network "
            f"({what}: {got}): keep every constructor argument in `net.cfg`, so that {name}(net.cfg) "
            "builds the same network"
        )
    _FAITHFUL.add(key)


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


def check_int(name: str, value: object, low: int, high: int) -> None:
    """ConfigError unless ``value`` is an int (not a bool) in ``low..high``; ``name`` is what
    the message calls it (``Owner.field``, or the option that set it)."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{name} must be an int in {low}..{high}, got {value!r}")


def check_number(
    name: str,
    value: object,
    low: float,
    high: float,
    *,
    open_low: bool = False,
    also: tuple[float | None, ...] = (),
    what: str = "a number",
) -> None:
    """ConfigError unless ``value`` is a finite int or float (not a bool) in ``[low, high]``
    (``(low, high]`` when ``open_low``; ``high`` may be ``math.inf``), or one of ``also``
    (None, or a number outside the range such as a temperature's 0). ``what`` says what the
    number is in the message (``a number of seconds``)."""
    if value is None:
        ok = None in also
    elif isinstance(value, bool) or not isinstance(value, int | float):
        ok = False
    else:
        inside = (low < value if open_low else low <= value) and value <= high
        ok = value in also or (math.isfinite(value) and inside)
    if ok:
        return
    if high == math.inf:
        span = f"above {low:g}" if open_low else f"at least {low:g}"
    else:
        span = f"in {'(' if open_low else '['}{low:g}, {high:g}]"
    allowed = [repr(v) for v in also] + [f"{what} {span}"]
    choices = ", ".join(allowed[:-1]) + " or " + allowed[-1] if len(allowed) > 1 else allowed[0]
    raise ConfigError(f"{name} must be {choices}, got {value!r}")


def check_bool(name: str, value: object) -> None:
    """ConfigError unless ``value`` is True or False (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
