"""Backends: where SelfPlay's workers run. See :mod:`asp.backends.base` for the contract.

>>> create("spark", workers=1, threads_per_worker=1, start_timeout=1.0, play_fn=print, address=None)
Traceback (most recent call last):
...
asp.errors.ConfigError: SelfPlay backend must be one of local, ray, got 'spark'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from asp.backends.base import Backend
from asp.errors import ConfigError

__all__ = ["NAMES", "Backend", "create"]

NAMES = ("local", "ray")


def create(
    name: str,
    *,
    workers: int,
    threads_per_worker: int,
    start_timeout: float,
    play_fn: Callable[..., Any],
    address: str | None,
) -> Backend:
    """The backend called ``name``, not started yet.

    :raises ConfigError: for an unknown name, an address without Ray, or Ray not installed.
    """
    if name not in NAMES:
        raise ConfigError(f"SelfPlay backend must be one of {', '.join(NAMES)}, got {name!r}")
    if address is not None and name != "ray":
        raise ConfigError(f"SelfPlay address is for backend='ray' only, got address={address!r} with {name!r}")
    if name == "local":
        from asp.backends.local import LocalBackend

        return LocalBackend(
            workers=workers, threads_per_worker=threads_per_worker, start_timeout=start_timeout, play_fn=play_fn
        )
    # Before Ray is imported (it reads both when imported): send no usage reports, and let a
    # private instance on this machine listen on loopback only.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address is None and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        from asp.backends.ray_backend import RayBackend
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] != "ray":
            raise
        raise ConfigError("SelfPlay backend='ray' needs Ray, which is not installed: pip install 'asp[ray]'") from None
    return RayBackend(
        workers=workers, threads_per_worker=threads_per_worker, start_timeout=start_timeout, address=address
    )
