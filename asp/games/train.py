"""The trainer of any :class:`~asp.games.Game`, from its records, as AlphaZero-style systems learn:

* the policy by cross-entropy to each ply's policy target over the legal actions: the
  search's improved policy (or, for a ply played without search, the action played);
* the value by mean squared error to the game's result from the mover's side (1 won, 0
  drawn, -1 lost), discounted by ``outcome_gamma`` a ply to the game's end; where the game has a
  heuristic (:func:`asp.games.protocol.heuristic`) and ``heuristic_weight`` is above 0, plus
  that weight times the heuristic the mover will have, discounted by ``heuristic_gamma`` (its
  value now plus the discounted changes from here on), the sum clipped to [-1, 1]; with
  ``value_mix`` above 0, mixed with the value the ply's search found;
* over a replay window: the samples of the last ``replay`` calls of :meth:`Trainer.train`
  (iterations), each keeping the model version that played it;
* each sample seen through a symmetry of the board drawn at random (the game's
  :func:`~asp.games.protocol.symmetries`, the identity included), so that one game teaches
  every image of its positions.

>>> from asp.connect4 import ConnectFour
>>> from asp.games.play import PlayConfig, play_games
>>> from asp.search import SearchConfig
>>> game = ConnectFour()
>>> model = game.network()
>>> records, _ = play_games(model, None, PlayConfig(game, n_games=2, max_plies=6, search=SearchConfig(4)))
>>> metrics = Trainer(model, game, TrainConfig(device="cpu")).train(records)
>>> metrics["train/samples"], metrics["train/steps"]
(12, 1)
"""

from __future__ import annotations

import math
import random
import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
from torch import nn

from asp.errors import ConfigError, NonFiniteError
from asp.games.adamw import AdamW
from asp.games.checked import output_shapes
from asp.games.protocol import Game, symmetries, unpacked
from asp.games.records import Record, Samples
from asp.util.checks import check_bool, check_int, check_number

__all__ = ["TrainConfig", "TrainSamples", "Trainer", "make_samples"]


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :class:`Trainer`. Invalid values raise ConfigError."""

    lr: float = 2e-3
    """AdamW learning rate (0 < lr <= 1)."""
    lr_final: float | None = None
    """The learning rate of the run's last iteration, where the trainer knows how many there
    are (``Trainer(calls=...)``; ``asp train``: its iterations): from ``lr`` it falls along a
    half cosine, one value per :meth:`Trainer.train` call; None: ``lr`` throughout (0 < x <= 1)."""
    weight_decay: float = 1e-4
    """AdamW weight decay (0 to 1)."""
    batch_size: int = 256
    """Samples per gradient step (1 to 65536)."""
    epochs: int = 1
    """Passes over the replay window at each :meth:`Trainer.train` call (1 to 100)."""
    value_coef: float = 1.0
    """Weight of the value loss (0 to 100)."""
    outcome_gamma: float = 1.0
    """Per-ply discount of the result in the value target (0 to 1): a ply d plies before the
    game's end learns the result times outcome_gamma**d, so a quick win is worth more than a
    slow one, and a ply is judged by what followed it closely rather than 100 plies later."""
    heuristic_weight: float = 0.0
    """Weight of the game's heuristic in the value target (0 to 1; 0: the result alone)."""
    heuristic_gamma: float = 1.0
    """Per-ply discount of the heuristic's changes from a ply on (0 to 1): how far ahead a
    ply gets credit for what the heuristic gains."""
    value_mix: float = 0.0
    """Weight of the search's root value in the value target (0 to 1): a searched ply learns
    ``(1 - value_mix)`` times the result (as discounted, with the heuristic) plus
    ``value_mix`` times the value its search found (:attr:`asp.games.Samples.values`); a ply
    played without a search learns the result alone. The result of one game is a noisy
    verdict on each of its positions; the search's value is a less noisy, biased one."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm (0 < x <= 1000)."""
    replay: int = 4
    """Calls of :meth:`Trainer.train` whose samples are trained on at each call: this call's
    and those of the ``replay - 1`` before (1 to 64)."""
    symmetries: bool = True
    """See each sample through a symmetry of the board drawn at random (the game's, and the
    identity)."""
    merge_repeats: bool = False
    """Train on each position of the replay window once, its targets the mean of those of
    its repeats (the same encoding; a game's first positions recur in most games): a
    position's weight in the loss no longer grows with how often self-play reaches it, and its
    value target averages the results of every game through it."""
    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    seed: int = 0
    """Seed of the minibatch shuffling and the symmetries drawn (0 to 2**63 - 1)."""

    def __post_init__(self) -> None:
        for name, low, high, open_low in (
            ("lr", 0.0, 1.0, True),
            ("weight_decay", 0.0, 1.0, False),
            ("value_coef", 0.0, 100.0, False),
            ("max_grad_norm", 0.0, 1000.0, True),
            ("outcome_gamma", 0.0, 1.0, False),
            ("heuristic_weight", 0.0, 1.0, False),
            ("heuristic_gamma", 0.0, 1.0, False),
            ("value_mix", 0.0, 1.0, False),
        ):
            check_number(f"TrainConfig.{name}", getattr(self, name), low, high, open_low=open_low)
        check_number("TrainConfig.lr_final", self.lr_final, 0.0, 1.0, open_low=True, also=(None,))
        for name, first, last in (
            ("batch_size", 1, 65536),
            ("epochs", 1, 100),
            ("replay", 1, 64),
            ("seed", 0, 2**63 - 1),
        ):
            check_int(f"TrainConfig.{name}", getattr(self, name), first, last)
        check_bool("TrainConfig.symmetries", self.symmetries)
        check_bool("TrainConfig.merge_repeats", self.merge_repeats)
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ConfigError(f"TrainConfig.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")


@dataclass
class TrainSamples:
    """Training samples of many games, as tensors on the CPU."""

    features: torch.Tensor
    """(N, ...) encoded positions, in the game's compact form where it has one
    (:func:`asp.games.protocol.packed`)."""
    legal_flat: torch.Tensor
    """(sum of legal actions,) int64: every sample's legal actions, in order."""
    legal_start: torch.Tensor
    """(N + 1,) int64: sample i's legal actions are ``legal_flat[legal_start[i]:legal_start[i + 1]]``."""
    targets: torch.Tensor
    """(sum of legal actions,) float32 beside ``legal_flat``: the policy target."""
    z: torch.Tensor
    """(N,) the value target: the game's result from the mover's side (1 won, 0 drawn, -1
    lost), as :func:`make_samples` discounts it and adds the heuristic."""
    versions: torch.Tensor
    """(N,) int64: the model version that played each sample."""

    def __len__(self) -> int:
        return len(self.z)

    def state(self) -> dict[str, torch.Tensor]:
        """The samples as a dict of tensors (for a checkpoint); ``TrainSamples(**state)`` reads it back."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def make_samples(records: Sequence[Record], cfg: TrainConfig | None = None) -> TrainSamples:
    """Every ply the model played in ``records``, read from their :class:`~asp.games.Samples`,
    with the value target of ``cfg`` (see the module's docstring).

    :raises ValueError: a record has no samples (played with ``PlayConfig.samples=False``).
    """
    cfg = cfg if cfg is not None else TrainConfig()
    if any(r.samples is None for r in records):
        raise ValueError("make_samples: every record needs its samples (play with PlayConfig.samples=True)")
    data = [r.samples for r in records if r.samples is not None]
    z: list[np.ndarray] = []
    versions: list[int] = []
    for record, part in zip(records, data, strict=True):
        z.append(_value_targets(record, part, cfg))
        versions += [record.model_version] * len(part.plies)
    features = [d.features for d in data if len(d.plies)]
    counts = torch.from_numpy(np.concatenate([d.legal_counts for d in data] or [np.zeros(0)]).astype(np.int64))
    start = torch.zeros(len(counts) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=start[1:])
    return TrainSamples(
        features=torch.from_numpy(np.concatenate(features)) if features else torch.zeros(0, 0),
        legal_flat=torch.from_numpy(np.concatenate([d.legal for d in data] or [np.zeros(0)]).astype(np.int64)),
        legal_start=start,
        targets=torch.from_numpy(np.concatenate([d.policy for d in data] or [np.zeros(0)]).astype(np.float32)),
        z=torch.from_numpy(np.concatenate(z or [np.zeros(0)]).astype(np.float32)),
        versions=torch.tensor(versions, dtype=torch.int64),
    )


def _value_targets(record: Record, part: Samples, cfg: TrainConfig) -> np.ndarray:
    """The value target of each of the game's samples, from its mover's side."""
    plies = part.plies.astype(np.int64)
    sign = np.where(part.movers == 0, 1.0, -1.0)
    to_end = len(record.actions) - 1 - plies
    target = sign * (2.0 * record.result - 1.0) * cfg.outcome_gamma ** to_end.astype(np.float64)
    guesses = part.heuristic.astype(np.float64)
    if cfg.heuristic_weight > 0 and len(guesses) == len(record.actions) + 1:
        # ahead[k]: the heuristic's changes from position k on, discounted: sum over j >= k of
        # heuristic_gamma**(j - k) * (guesses[j + 1] - guesses[j]).
        ahead = np.zeros(len(guesses))
        for k in range(len(guesses) - 2, -1, -1):
            ahead[k] = guesses[k + 1] - guesses[k] + cfg.heuristic_gamma * ahead[k + 1]
        target = target + cfg.heuristic_weight * sign * (guesses[plies] + ahead[plies])
        target = np.clip(target, -1.0, 1.0)
    if cfg.value_mix > 0 and len(part.values) == len(plies):
        searched = np.isfinite(part.values)
        mixed = (1.0 - cfg.value_mix) * target + cfg.value_mix * part.values.astype(np.float64)
        target = np.where(searched, mixed, target)
    return target


def _concat(parts: Sequence[TrainSamples]) -> TrainSamples:
    if len(parts) == 1:
        return parts[0]
    counts = torch.cat([p.legal_start[1:] - p.legal_start[:-1] for p in parts])
    start = torch.zeros(len(counts) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=start[1:])
    return TrainSamples(
        features=torch.cat([p.features for p in parts if len(p)]),
        legal_flat=torch.cat([p.legal_flat for p in parts]),
        legal_start=start,
        targets=torch.cat([p.targets for p in parts]),
        z=torch.cat([p.z for p in parts]),
        versions=torch.cat([p.versions for p in parts]),
    )


def _gathered(parts: Sequence[TrainSamples], rows: list[int]) -> tuple[TrainSamples, list[int]]:
    """The samples ``rows`` of ``parts`` taken as one (their rows in order), as samples and
    rows within them: ``parts[0]`` and ``rows`` where there is one part, else a copy of just
    those rows, grouped by part, and where each row went."""
    if len(parts) == 1:
        return parts[0], rows
    ends = np.cumsum([len(part) for part in parts])
    index = np.asarray(rows, dtype=np.int64)
    owner = np.searchsorted(ends, index, side="right")
    order = np.argsort(owner, kind="stable")
    pieces = [_taken(parts[k], index[owner == k] - (ends[k] - len(parts[k]))) for k in np.unique(owner)]
    place = np.empty(len(rows), dtype=np.int64)
    place[order] = np.arange(len(rows))
    return _concat(pieces), place.tolist()


def _taken(part: TrainSamples, rows: np.ndarray) -> TrainSamples:
    """The samples ``rows`` of ``part``, in that order."""
    index = torch.from_numpy(rows)
    counts = part.legal_start[index + 1] - part.legal_start[index]
    start = torch.zeros(len(rows) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=start[1:])
    position = torch.from_numpy(_actions_of(part.legal_start.numpy(), rows))
    return TrainSamples(part.features[index], part.legal_flat[position], start, part.targets[position],
                        part.z[index], part.versions[index])  # fmt: skip


def _actions_of(legal_start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Where the legal actions of the samples ``rows`` lie in the flat arrays that
    ``legal_start`` cuts (``legal_flat``, ``targets``): row after row, each row's in order."""
    first = legal_start[rows]
    counts = legal_start[rows + 1] - first
    return np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


def merged(*parts: TrainSamples) -> TrainSamples:
    """The samples of ``parts`` (one at least) with each repeated position (the same encoding
    and legal actions) once, in order of first appearance: its policy target and result the
    mean of its repeats', its version the newest. Built part by part into arrays of the
    result's size: beside the parts and the result, it holds a few ints a sample and one a
    legal action of each repeat.

    >>> rows = TrainSamples(torch.tensor([[1.0], [2.0], [1.0]]), torch.tensor([0, 1, 0, 1, 0, 1]),
    ...     torch.tensor([0, 2, 4, 6]), torch.tensor([1.0, 0.0, 0.5, 0.5, 0.0, 1.0]),
    ...     torch.tensor([1.0, 0.0, 0.0]), torch.tensor([3, 4, 5]))
    >>> once = merged(rows)
    >>> once.features.flatten().tolist(), once.targets.tolist(), once.z.tolist(), once.versions.tolist()
    ([1.0, 2.0], [0.5, 0.5, 0.5, 0.5], [0.5, 0.0], [5, 4])
    """
    if not any(len(p) for p in parts):
        return parts[0]
    parts = tuple(p for p in parts if len(p))
    counts = [(p.legal_start[1:] - p.legal_start[:-1]).numpy().astype(np.int64) for p in parts]
    group, keep = _groups(parts, counts)
    kept_counts = np.concatenate(counts)[keep]
    start = np.zeros(len(kept_counts) + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=start[1:])
    features = np.empty((len(kept_counts), *parts[0].features.shape[1:]), dtype=parts[0].features.numpy().dtype)
    legal = np.empty(start[-1], dtype=parts[0].legal_flat.numpy().dtype)
    targets = np.empty(start[-1], dtype=np.float32)
    row = action = offset = 0
    for part, count in zip(parts, counts, strict=True):  # the first of each group, as it is
        firsts = keep[offset : offset + len(part)]
        actions = np.repeat(firsts, count)
        rows, width = int(firsts.sum()), int(actions.sum())
        np.compress(firsts, part.features.numpy(), axis=0, out=features[row : row + rows])
        np.compress(actions, part.legal_flat.numpy(), out=legal[action : action + width])
        np.compress(actions, part.targets.numpy(), out=targets[action : action + width])
        row, action, offset = row + rows, action + width, offset + len(part)
    offset = 0
    for part in parts:  # each repeat's targets added to its group's, action by action: repeats list their actions alike
        repeats = np.flatnonzero(~keep[offset : offset + len(part)])
        source = _actions_of(part.legal_start.numpy(), repeats)
        np.add.at(targets, _actions_of(start, group[offset + repeats]), part.targets.numpy()[source])
        offset += len(part)
    size = np.bincount(group, minlength=len(kept_counts)).astype(np.float32)
    targets /= np.repeat(size, kept_counts)
    z = np.bincount(group, np.concatenate([p.z.numpy() for p in parts]), len(kept_counts)) / size
    versions = np.zeros(len(kept_counts), dtype=np.int64)
    np.maximum.at(versions, group, np.concatenate([p.versions.numpy() for p in parts]))
    return TrainSamples(
        features=torch.from_numpy(features),
        legal_flat=torch.from_numpy(legal),
        legal_start=torch.from_numpy(start),
        targets=torch.from_numpy(targets),
        z=torch.from_numpy(z.astype(np.float32)),
        versions=torch.from_numpy(versions),
    )


def _groups(parts: Sequence[TrainSamples], counts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's group (the samples of one encoding and number of legal actions), numbered
    in order of first appearance, and whether the sample is its group's first."""
    keys = []
    for part, count in zip(parts, counts, strict=True):
        n = len(part)
        rows = np.concatenate([part.features.reshape(n, -1).numpy().view(np.uint8).reshape(n, -1),
                               count.view(np.uint8).reshape(n, -1)], axis=1)  # fmt: skip
        keys.append(np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1]))).ravel())
    _, first, inverse = np.unique(np.concatenate(keys), return_index=True, return_inverse=True)
    number = np.empty(len(first), dtype=np.int64)
    number[np.argsort(first)] = np.arange(len(first))
    keep = np.zeros(len(inverse), dtype=bool)
    keep[first] = True
    return number[inverse.ravel()], keep


def pick_device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when available, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Trainer:
    """Trains ``model``, a network of ``game``, from the records of its games; ``calls``: how
    many :meth:`train` calls the run will make, over which ``cfg.lr_final`` schedules the
    learning rate (None: not known, the rate stays ``cfg.lr``)."""

    def __init__(
        self, model: nn.Module, game: Game[Any], cfg: TrainConfig | None = None, *, calls: int | None = None
    ) -> None:
        self.cfg = cfg if cfg is not None else TrainConfig()
        self.planned_calls = calls
        self.calls = 0
        """:meth:`train` calls so far (a resumed run: its iterations done)."""
        self.game = game
        self.device = pick_device(self.cfg.device)
        self.model = model.to(self.device)
        self.optimizer = AdamW(model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        self.rng = random.Random(self.cfg.seed)
        self.steps = 0
        self.window: deque[TrainSamples] = deque(maxlen=self.cfg.replay)
        """The samples of the last ``replay`` calls of :meth:`train`."""
        self._symmetries = list(symmetries(game)) if self.cfg.symmetries else []
        self._images = [torch.tensor(s.actions) for s in self._symmetries]

    def learning_rate(self) -> float:
        """The learning rate of the next :meth:`train` call (see ``TrainConfig.lr_final``)."""
        cfg = self.cfg
        if cfg.lr_final is None or not self.planned_calls:
            return cfg.lr
        done = min(self.calls / max(self.planned_calls - 1, 1), 1.0)
        return cfg.lr_final + (cfg.lr - cfg.lr_final) * 0.5 * (1.0 + math.cos(math.pi * done))

    def window_state(self) -> list[dict[str, torch.Tensor]]:
        """The samples of the replay window that the next :meth:`train` call keeps (the newest
        ``replay - 1`` calls'), for a checkpoint; :meth:`load_window` reads them back."""
        kept = list(self.window)[len(self.window) - self.cfg.replay + 1 :] if self.cfg.replay > 1 else []
        return [part.state() for part in kept]

    def load_window(self, parts: Sequence[dict[str, torch.Tensor]]) -> None:
        """Put back a replay window that :meth:`window_state` gave (the window is emptied first)."""
        self.window.clear()
        for part in parts:
            self.window.append(TrainSamples(**part))

    def train(self, records: Sequence[Record]) -> dict[str, Any]:
        """Learn from ``records``; return metrics averaged over the gradient steps.

        :raises GameError: the network's output breaks the protocol (:mod:`asp.games.checked`).
        :raises NonFiniteError: a step's loss or gradient is NaN or infinite: that step is not
            taken (the model keeps the steps of this call before it).
        """
        started = time.perf_counter()
        lr = self.learning_rate()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.calls += 1
        fresh = make_samples(records, self.cfg)
        self.window.append(fresh)
        # The window's parts as they are: training draws its batches from them, never from a
        # copy of the whole window (merged: one part, made anew).
        parts = [merged(*self.window)] if self.cfg.merge_repeats else list(self.window)
        size = sum(len(part) for part in parts)
        totals: dict[str, float] = {}
        steps = 0
        if size:
            self.model.train()
            try:
                order = list(range(size))
                for _ in range(self.cfg.epochs):
                    self.rng.shuffle(order)
                    for start in range(0, len(order), self.cfg.batch_size):
                        batch = _gathered(parts, order[start : start + self.cfg.batch_size])
                        for key, value in self._step(*batch).items():
                            totals[key] = totals.get(key, 0.0) + value
                        steps += 1
            finally:
                self.model.eval()
        self.steps += steps
        metrics: dict[str, Any] = {key: value / steps for key, value in totals.items()}
        versions = torch.cat([part.versions for part in parts])
        newest = int(versions.max()) if size else 0
        metrics.update({
            "train/samples": len(fresh),
            "train/replay_samples": size,
            "train/staleness_mean": float((newest - versions).float().mean()) if size else 0.0,
            "train/steps": steps,
            "train/lr": lr,
            "train/seconds": time.perf_counter() - started,
        })  # fmt: skip
        return metrics

    def _batch(self, samples: TrainSamples, rows: list[int]) -> tuple[torch.Tensor, ...]:
        """The rows' features, their legal actions as a padded table ``(len(rows), most
        legal actions)`` with its policy targets and validity mask, and their results; each
        row seen through a symmetry drawn at random (its features and its actions mapped)."""
        index = torch.tensor(rows)
        first = samples.legal_start[index]
        counts = samples.legal_start[index + 1] - first
        rank = torch.arange(int(counts.max()))
        valid = rank < counts.unsqueeze(1)
        position = torch.where(valid, first.unsqueeze(1) + rank, 0)
        actions = torch.where(valid, samples.legal_flat[position], 0)
        target = torch.where(valid, samples.targets[position], 0.0)
        features = unpacked(self.game, samples.features[index].numpy())
        if self._symmetries:
            drawn = torch.tensor([self.rng.randrange(len(self._symmetries) + 1) for _ in rows])
            features = features.clone()
            for k, symmetry in enumerate(self._symmetries, 1):
                chosen = drawn == k
                if chosen.any():
                    features[chosen] = symmetry.features(features[chosen])
                    actions[chosen] = self._images[k - 1][actions[chosen]]
        return features, actions, target, valid, samples.z[index]

    def _step(self, samples: TrainSamples, rows: list[int]) -> dict[str, float]:
        """One step toward the policy targets (cross-entropy over the legal actions) and the
        results (MSE)."""
        device = self.device
        features, actions, target, valid, z = (t.to(device) for t in self._batch(samples, rows))
        target = target / target.sum(dim=1, keepdim=True).clamp(min=1e-8)
        logits, value = output_shapes(self.game, self.model(features), len(rows))
        legal_logits = logits.float().gather(1, actions).masked_fill(~valid, -torch.inf)
        logp = torch.log_softmax(legal_logits, dim=1).masked_fill(~valid, 0.0)
        policy_loss = -(target * logp).sum(dim=1).mean()
        value_loss = torch.mean((value.float() - z) ** 2)
        loss = policy_loss + self.cfg.value_coef * value_loss
        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        if not bool(torch.isfinite(loss) & torch.isfinite(grad_norm)):
            raise self._non_finite(policy_loss.detach(), value_loss.detach(), grad_norm)
        self.optimizer.step()
        entropy = -(logp.exp() * logp).sum(dim=1).mean()
        target_entropy = -(target * target.clamp(min=1e-12).log()).sum(dim=1).mean()
        figures = {
            "loss/total": loss,
            "loss/policy": policy_loss,
            "loss/value": value_loss,
            "loss/entropy": entropy,
            "train/target_entropy": target_entropy,
            "train/grad_norm": grad_norm,
        }
        return {key: float(value.detach()) for key, value in figures.items()}

    def _non_finite(self, policy: torch.Tensor, value: torch.Tensor, grad_norm: torch.Tensor) -> NonFiniteError:
        """The error of a step whose loss or gradient is not finite, which is not taken."""
        what = "gradient" if bool(torch.isfinite(policy) & torch.isfinite(value)) else "loss"
        return NonFiniteError(
            f"{self.game.name}: network: training gave a non-finite {what} (policy loss {policy.item():.4g}, "
            f"value loss {value.item():.4g}, gradient norm {grad_norm.item():.4g}); the step was not taken: "
            "a network's outputs must be finite"
        )
