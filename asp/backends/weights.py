"""Versioned weight files: written once per version with an atomic rename, loaded safely.

On the local backend a publication is a file ``<role>-v<version>-<n>.pt`` holding a
``state_dict`` (the Ray backend puts it in Ray's object store instead). It is written to
a temporary name and renamed into place, so a reader never sees half a file, and read back
with ``torch.load(weights_only=True)``, which loads tensors and plain containers only (no
arbitrary pickle code).

>>> import tempfile, torch
>>> store = WeightStore(tempfile.mkdtemp())
>>> ref = store.publish("model", torch.nn.Linear(2, 2), version=3)
>>> ref.version, sorted(load_state_dict(ref))
(3, ['bias', 'weight'])
>>> store.publish("model", torch.nn.Linear(2, 2), version=3) is ref  # a new module: new file
False
>>> store.close()
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import torch
from torch import nn

from asp.util.atomic import save_atomic

__all__ = ["Publications", "WeightRef", "WeightStore", "load_state_dict"]

log = structlog.get_logger("asp.backends.weights")


@dataclass(frozen=True)
class WeightRef:
    """Where a worker finds one published version of a network, and how to build it."""

    location: Any
    """Where the state_dict is: a file path (local backend) or an object reference (Ray)."""

    version: int
    """The version the caller gave these weights (``cfg.model_version``)."""

    publication: int
    """Unique number of this publication within its store: a worker reloads when it differs."""

    model_class: type[nn.Module]
    """The network's class, importable by module and name in the worker."""

    model_cfg: Any
    """The network's ``.cfg`` (``model_class(model_cfg)`` rebuilds it), or None (no-arg class)."""


def load_state_dict(ref: WeightRef) -> dict[str, torch.Tensor]:
    """Load a file publication's state_dict with ``weights_only=True`` onto the CPU."""
    state: dict[str, torch.Tensor] = torch.load(ref.location, map_location="cpu", weights_only=True)
    return state


def _same_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a
    )


class Publications:
    """Publishes networks' weights once per (role, weights) change; subclasses say where to.

    ``publish`` returns the previous :class:`WeightRef` when the module, the version and every
    tensor's contents are unchanged (compared against a copy of the last publication: exact,
    whatever way the weights were changed), so a loop that plays many calls with one set of
    weights publishes it once. An older publication is dropped as a newer one replaces it,
    or, when it is held (``publish(..., hold=True)``, one hold per open call that names it),
    at its last :meth:`release`.
    """

    def __init__(self) -> None:
        self._count = 0
        self._last: dict[str, tuple[tuple[int, int], WeightRef, dict[str, torch.Tensor]]] = {}
        self._lock = threading.Lock()  # SelfPlay publishes from a thread
        self._holds: dict[int, int] = {}
        """Open holds per publication number."""
        self._replaced: dict[int, Any] = {}
        """Locations of held publications that a newer one replaced: dropped at their last release."""
        self.first_model: tuple[type[nn.Module], Any] | None = None
        """Class and cfg of the first network published as ``"model"``: what new workers build first."""

    def publish(self, role: str, model: nn.Module, *, version: int, hold: bool = False) -> WeightRef:
        """Make ``model``'s current weights available to workers as ``role`` at ``version``;
        with ``hold``, keep them until :meth:`release` even if a newer publication replaces them."""
        with self._lock:
            ref = self._publish(role, model, version)
            if hold:
                self._holds[ref.publication] = self._holds.get(ref.publication, 0) + 1
            return ref

    def release(self, ref: WeightRef) -> None:
        """Let go of one hold on ``ref``; a replaced publication is dropped at its last."""
        with self._lock:
            holds = self._holds.pop(ref.publication, 0) - 1
            if holds > 0:
                self._holds[ref.publication] = holds
                return
            location = self._replaced.pop(ref.publication, None)
            if location is not None:
                self._drop(location)

    def _put(self, name: str, state: dict[str, torch.Tensor]) -> Any:
        """Store ``state`` under ``name``; return its location."""
        raise NotImplementedError

    def _drop(self, location: Any) -> None:
        """Release a location that no new shard will name."""
        raise NotImplementedError

    def _publish(self, role: str, model: nn.Module, version: int) -> WeightRef:
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        last = self._last.get(role)
        if last is not None and last[0] == (id(model), version) and _same_tensors(last[2], state):
            return last[1]
        started = time.perf_counter()
        self._count += 1
        location = self._put(f"{role}-v{version}-{self._count}", state)
        ref = WeightRef(location, version, self._count, type(model), getattr(model, "cfg", None))
        if role == "model" and self.first_model is None:
            self.first_model = (ref.model_class, ref.model_cfg)
        if last is not None:
            # Safe: a worker that has the old weights keeps them; new shards name the new ones.
            if self._holds.get(last[1].publication):
                self._replaced[last[1].publication] = last[1].location
            else:
                self._drop(last[1].location)
        # A private copy: the caller's tensors may change in place under any name (.data too).
        self._last[role] = ((id(model), version), ref, {k: v.clone() for k, v in state.items()})
        log.info(
            "weights_published",
            role=role,
            version=version,
            publication=self._count,
            bytes=sum(t.numel() * t.element_size() for t in state.values()),
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return ref

    def close(self) -> None:
        """Drop every publication."""
        for _, ref, _ in self._last.values():
            self._drop(ref.location)
        for location in self._replaced.values():
            self._drop(location)
        self._last.clear()
        self._replaced.clear()


class WeightStore(Publications):
    """Publishes weights as files ``<role>-v<version>-<n>.pt`` in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _put(self, name: str, state: dict[str, torch.Tensor]) -> str:
        path = self.directory / f"{name}.pt"
        save_atomic(state, path)
        return str(path)

    def _drop(self, location: Any) -> None:
        Path(location).unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the directory and every file in it."""
        shutil.rmtree(self.directory, ignore_errors=True)
