"""The TinyChess trainer, from GameRecords: search targets, or clipped policy gradient.

Games played with search (``PlayConfig.search``) carry the search's improved policy at every
ply the model played; the trainer then learns as AlphaZero-style systems do:

* the policy by cross-entropy to the improved policy over the legal moves;
* the value by mean squared error to the return G below;
* over a replay window: the samples of the last ``replay`` calls of :meth:`Trainer.train`
  (iterations, 4 by default), each sample keeping the model version that played it.

Games played without search train by policy gradient, read top to bottom in :meth:`Trainer._step`:

1. Every ply a model played becomes a sample: the board (encoded as in play), the move's
   policy index, the legal moves, the log-probability the move had when it was played
   (``GameRecord.logprobs``) and its return G = z + material_weight * M: z is the game's
   outcome from the mover's side (1 win, 0 draw, -1 loss; games cut at ``max_plies`` count
   as adjudicated by material) discounted by ``outcome_gamma`` per ply between the move and
   the game's end, and M the discounted material the mover's side won from this ply on.
2. The value head learns G (clipped to [-1, 1]) by mean squared error.
3. The policy learns from the advantage A = G - V(s) (V detached) with PPO's clipped
   objective: with r = pi_new(a|s) / pi_old(a|s), the loss is -min(r A, clip(r, 1-eps, 1+eps) A).
   pi is the softmax over the *legal* moves, as in play. For games played by older weights
   (a pipelined run plays iteration k+1 while training on k) r corrects for the lag, and the
   clip bounds how far one stale game can move the policy.
4. An entropy bonus over the legal moves keeps exploration alive.

>>> from asp.tinychess import PlayConfig, TinyChess, ModelConfig, play_games
>>> model = TinyChess(ModelConfig(hidden=16, blocks=0))
>>> records, _ = play_games(model, None, PlayConfig(n_games=2, max_plies=6))
>>> trainer = Trainer(model, TrainConfig(device="cpu"))
>>> metrics = trainer.train(records)
>>> metrics["train/samples"], metrics["train/steps"]
(12, 1)
"""

from __future__ import annotations

import math
import random
import re
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chess
import numpy as np
import torch
from torch import nn

from asp.checks import check_int, check_number
from asp.errors import ConfigError
from asp.tinychess.features import N_PLANES, encode_boards, placement_key, unpack_boards
from asp.tinychess.moves import legal_move_indices, move_index
from asp.tinychess.play import material_lead
from asp.tinychess.records import MODEL, GameRecord

__all__ = ["Samples", "TrainConfig", "Trainer", "concat_samples", "make_samples", "pick_device"]

_Z = {"1-0": 1.0, "0-1": -1.0, "1/2-1/2": 0.0}


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :class:`Trainer`. Invalid values raise ConfigError."""

    lr: float = 2e-3
    """AdamW learning rate (0 < lr <= 1)."""
    weight_decay: float = 1e-4
    """AdamW weight decay (0 to 1)."""
    batch_size: int = 1024
    """Samples per gradient step (1 to 65536)."""
    epochs: int = 1
    """Passes over the samples of each :meth:`Trainer.train` call (1 to 100): the replay
    window's for games played with search, the call's own for the policy gradient."""
    clip: float = 0.2
    """PPO clip range eps of the probability ratio (0 < clip <= 10)."""
    value_coef: float = 0.5
    """Weight of the value loss (0 to 100)."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus (0 to 10)."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm (0 < x <= 1000)."""
    device: str = "auto"
    """``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    seed: int = 0
    """Seed of the minibatch shuffling (0 to 2**63 - 1)."""
    material_weight: float = 0.05
    """Reward per pawn of material won from a ply on (0 to 1): shaping that gives credit to the
    moves that win or lose material, on top of the game's outcome (see :func:`make_samples`)."""
    gamma: float = 0.95
    """Per-ply discount of the material reward (0 to 1): how far ahead a move gets credit."""
    replay: int = 4
    """Iterations of samples from search trained on at each :meth:`Trainer.train` call: this
    call's and those of the ``replay - 1`` calls before (1 to 64). Each sample is then learned
    from ``replay`` times, as the window moves on. Games played without search train on their
    own call's samples only (the policy gradient is on-policy)."""
    outcome_gamma: float = 0.95
    """Per-ply discount of the game's outcome (0 to 1): a move d plies before the game's end
    gets z * outcome_gamma**d, so a quicker win is worth more and a quicker loss costs more,
    and a move is judged by what followed it closely rather than by a result 100 plies later."""

    def __post_init__(self) -> None:
        for name, low, high, open_low in (
            ("lr", 0.0, 1.0, True),
            ("weight_decay", 0.0, 1.0, False),
            ("clip", 0.0, 10.0, True),
            ("value_coef", 0.0, 100.0, False),
            ("entropy_coef", 0.0, 10.0, False),
            ("max_grad_norm", 0.0, 1000.0, True),
            ("material_weight", 0.0, 1.0, False),
            ("gamma", 0.0, 1.0, False),
            ("outcome_gamma", 0.0, 1.0, False),
        ):
            check_number(f"TrainConfig.{name}", getattr(self, name), low, high, open_low=open_low)
        for name, first, last in (
            ("batch_size", 1, 65536),
            ("epochs", 1, 100),
            ("seed", 0, 2**63 - 1),
            ("replay", 1, 64),
        ):
            check_int(f"TrainConfig.{name}", getattr(self, name), first, last)
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ConfigError(f"TrainConfig.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")


def pick_device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when available, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class Samples:
    """Training samples of many games, as tensors on the CPU."""

    features: torch.Tensor
    """(N, N_FEATURES) encoded boards."""
    actions: torch.Tensor
    """(N,) policy index of the move played."""
    old_logp: torch.Tensor
    """(N,) log-probability the move had when it was played."""
    z: torch.Tensor
    """(N,) outcome from the mover's side: 1 win, 0 draw, -1 loss."""
    material: torch.Tensor
    """(N,) discounted material won from this ply to the end, in pawns, from the mover's side."""
    lead: torch.Tensor
    """(N,) the mover's material lead before the move, in pawns."""
    legal_flat: torch.Tensor
    """(sum of legal moves,) int64: the policy indices of every sample's legal moves, in order."""
    legal_start: torch.Tensor
    """(N + 1,) int64: sample i's legal moves are ``legal_flat[legal_start[i]:legal_start[i + 1]]``."""
    versions: torch.Tensor
    """(N,) int64: the model version that played each sample."""
    targets: torch.Tensor | None = None
    """(sum of legal moves,) float32 beside ``legal_flat``: the search's improved policy, the
    policy's target; None for games played without search."""

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def legal(self) -> list[list[int]]:
        """Per sample, the policy indices of the legal moves (a list per sample: for reading)."""
        flat, start = self.legal_flat.tolist(), self.legal_start.tolist()
        return [flat[a:b] for a, b in zip(start[:-1], start[1:], strict=True)]

    def legal_moves(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The legal moves of the samples ``index`` as a padded table, in torch ops only.

        ``(moves, valid)``, both of shape (len(index), the most legal moves of one of them):
        row r holds sample ``index[r]``'s policy indices, in order, then 0 where ``valid`` is False.
        """
        first = self.legal_start[index]
        counts = self.legal_start[index + 1] - first
        width = int(counts.max()) if len(index) else 0
        rank = torch.arange(width)
        valid = rank < counts.unsqueeze(1)
        position = torch.where(valid, first.unsqueeze(1) + rank, 0)
        moves = torch.where(valid, self.legal_flat[position], 0)
        return moves, valid


def _samples(
    features: torch.Tensor,
    actions: torch.Tensor,
    old_logp: list[float],
    z: list[float],
    gains: list[float],
    leads: list[int],
    legal_flat: torch.Tensor,
    counts: torch.Tensor,
    versions: list[int],
    targets: torch.Tensor | None = None,
) -> Samples:
    start = torch.zeros(len(counts) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=start[1:])
    return Samples(
        features,
        actions,
        torch.tensor(old_logp),
        torch.tensor(z),
        torch.tensor(gains),
        torch.tensor(leads, dtype=torch.float32),
        legal_flat,
        start,
        torch.tensor(versions, dtype=torch.int64),
        targets,
    )


def concat_samples(parts: Sequence[Samples]) -> Samples:
    """One Samples of all ``parts``, in order (targets kept only where every part has them)."""
    if len(parts) == 1:
        return parts[0]
    counts = torch.cat([p.legal_start[1:] - p.legal_start[:-1] for p in parts])
    start = torch.zeros(len(counts) + 1, dtype=torch.int64)
    torch.cumsum(counts, 0, out=start[1:])
    with_targets = all(p.targets is not None for p in parts)
    return Samples(
        torch.cat([p.features for p in parts]),
        torch.cat([p.actions for p in parts]),
        torch.cat([p.old_logp for p in parts]),
        torch.cat([p.z for p in parts]),
        torch.cat([p.material for p in parts]),
        torch.cat([p.lead for p in parts]),
        torch.cat([p.legal_flat for p in parts]),
        start,
        torch.cat([p.versions for p in parts]),
        torch.cat([p.targets for p in parts if p.targets is not None]) if with_targets else None,
    )


def make_samples(records: Sequence[GameRecord], *, gamma: float = 0.95, outcome_gamma: float = 0.95) -> Samples:
    """Turn every ply the model played in ``records`` into a sample.

    Records that carry :class:`~asp.tinychess.records.PlyData` (self-play's default) are
    read from it, with no replay; the others are replayed with python-chess. Both ways give
    the same samples.

    The outcome ``z`` is the game's result from the mover's side times outcome_gamma**d, d
    the plies after the move (0 for the last). Besides it, each sample gets ``material``: the
    material balance's change over the rest of the game, sum over k >= t of
    gamma**(k - t) * (m[k+1] - m[k]), where m is the mover's material minus the opponent's
    (pawn 1, knight 3, bishop 3, rook 5, queen 9), and ``lead``: m[t], the mover's lead
    before the move. With gamma = 1 this is the potential-based shaping whose sum is the final material lead,
    the very criterion of adjudication at the ply cap.
    """
    if records and all(r.samples is not None for r in records):
        return _read_samples(records, gamma, outcome_gamma)
    boards: list[chess.Board] = []
    repetitions: list[int] = []
    actions: list[int] = []
    old_logp: list[float] = []
    z: list[float] = []
    legal: list[list[int]] = []
    gains: list[float] = []
    leads: list[int] = []
    versions: list[int] = []
    for record in records:
        board = chess.Board(record.start_fen)
        seen = Counter([placement_key(board)])
        white_z = _Z[record.result]
        balance = [material_lead(board)]  # White's lead before each ply and after the last
        model_plies: list[tuple[int, bool]] = []
        for ply, (uci, logp) in enumerate(zip(record.moves, record.logprobs, strict=True)):
            mover = record.white if board.turn == chess.WHITE else record.black
            move = chess.Move.from_uci(uci)
            if mover == MODEL:
                boards.append(board.copy(stack=False))
                repetitions.append(seen[placement_key(board)] - 1)
                actions.append(move_index(move, board.turn))
                old_logp.append(logp)
                z.append(_outcome(white_z if board.turn == chess.WHITE else -white_z, ply, record, outcome_gamma))
                legal.append(legal_move_indices(board)[1])
                model_plies.append((ply, board.turn == chess.WHITE))
                versions.append(record.model_version)
            board.push(move)
            seen[placement_key(board)] += 1
            balance.append(material_lead(board))
        gain = _discounted_gains(balance, gamma)
        gains.extend(gain[ply] if white else -gain[ply] for ply, white in model_plies)
        leads.extend(balance[ply] if white else -balance[ply] for ply, white in model_plies)
    features = encode_boards(boards, repetitions) if boards else torch.zeros(0, 0)
    return _samples(
        features,
        torch.tensor(actions, dtype=torch.int64),
        old_logp,
        z,
        gains,
        leads,
        torch.tensor([i for moves in legal for i in moves], dtype=torch.int64),
        torch.tensor([len(moves) for moves in legal], dtype=torch.int64),
        versions,
    )


def _read_samples(records: Sequence[GameRecord], gamma: float, outcome_gamma: float) -> Samples:
    """:func:`make_samples` from the records' PlyData: what play encoded, no replay."""
    data = [r.samples for r in records if r.samples is not None]
    old_logp: list[float] = []
    z: list[float] = []
    gains: list[float] = []
    leads: list[int] = []
    versions: list[int] = []
    for record, ply_data in zip(records, data, strict=True):
        versions += [record.model_version] * len(ply_data.plies)
        white_first = record.start_fen.split()[1] == "w"
        white_z = _Z[record.result]
        balance = ply_data.leads.tolist()
        gain = _discounted_gains(balance, gamma)
        for ply in ply_data.plies.tolist():
            white = white_first == (ply % 2 == 0)
            old_logp.append(record.logprobs[ply])
            z.append(_outcome(white_z if white else -white_z, ply, record, outcome_gamma))
            gains.append(gain[ply] if white else -gain[ply])
            leads.append(balance[ply] if white else -balance[ply])
    features = unpack_boards(np.concatenate([d.bitboards for d in data]), np.concatenate([d.scalars for d in data]))
    policies = [d.policy for d in data]
    targets = None
    if all(p is not None for p in policies):
        targets = torch.from_numpy(np.concatenate([p for p in policies if p is not None]).astype(np.float32))
    return _samples(
        features,
        torch.from_numpy(np.concatenate([d.actions for d in data]).astype(np.int64)),
        old_logp,
        z,
        gains,
        leads,
        torch.from_numpy(np.concatenate([d.legal for d in data]).astype(np.int64)),
        torch.from_numpy(np.concatenate([d.legal_counts for d in data]).astype(np.int64)),
        versions,
        targets,
    )


def _outcome(z: float, ply: int, record: GameRecord, outcome_gamma: float) -> float:
    """The outcome ``z`` discounted by the plies between ``ply`` and the game's end."""
    return z * outcome_gamma ** (len(record.moves) - 1 - ply)


def _discounted_gains(leads: list[int], gamma: float) -> list[float]:
    """gain[t]: the discounted change of White's lead from ply t on, given White's lead before
    each ply and after the last."""
    gain = [0.0] * len(leads)
    for t in range(len(leads) - 2, -1, -1):
        gain[t] = leads[t + 1] - leads[t] + gamma * gain[t + 1]
    return gain


class Trainer:
    """Trains a TinyChess (or any network with the same inputs and outputs) from records."""

    def __init__(self, model: nn.Module, cfg: TrainConfig | None = None) -> None:
        self.cfg = cfg if cfg is not None else TrainConfig()
        self.device = pick_device(self.cfg.device)
        self.model = model.to(self.device)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        self.rng = random.Random(self.cfg.seed)
        self.steps = 0
        self.window: deque[Samples] = deque(maxlen=self.cfg.replay)
        """The samples of the last ``replay`` calls of :meth:`train`."""

    def window_state(self) -> list[dict[str, torch.Tensor]]:
        """The samples of the replay window that the next :meth:`train` call keeps (the newest
        ``replay - 1`` calls'), as tensors for a checkpoint: the board planes bit-packed, so
        that a sample takes a few hundred bytes. :meth:`load_window` reads them back."""
        kept = list(self.window)[len(self.window) - self.cfg.replay + 1 :] if self.cfg.replay > 1 else []
        return [_packed(part) for part in kept]

    def load_window(self, parts: Sequence[dict[str, torch.Tensor]]) -> None:
        """Put back a replay window that :meth:`window_state` gave (the window is emptied first)."""
        self.window.clear()
        for part in parts:
            self.window.append(_unpacked(part))

    def train(self, records: Sequence[GameRecord]) -> dict[str, Any]:
        """Learn from ``records``; return metrics averaged over the gradient steps."""
        started = time.perf_counter()
        fresh = make_samples(records, gamma=self.cfg.gamma, outcome_gamma=self.cfg.outcome_gamma)
        if fresh.targets is None:  # the policy gradient is on-policy: this call's games alone
            self.window.clear()
            samples, step = fresh, self._step
        else:
            self.window.append(fresh)
            samples, step = concat_samples(list(self.window)), self._search_step
        totals: dict[str, float] = {}
        steps = 0
        if len(samples):
            self.model.train()
            order = list(range(len(samples)))
            for _ in range(self.cfg.epochs):
                self.rng.shuffle(order)
                for start in range(0, len(order), self.cfg.batch_size):
                    for key, value in step(samples, order[start : start + self.cfg.batch_size]).items():
                        totals[key] = totals.get(key, 0.0) + value
                    steps += 1
            self.model.eval()
        self.steps += steps
        metrics: dict[str, Any] = {key: value / steps for key, value in totals.items()}
        newest = int(samples.versions.max()) if len(samples) else 0
        metrics.update({
            "train/samples": len(fresh),
            "train/replay_samples": len(samples),
            "train/staleness_mean": float((newest - samples.versions).float().mean()) if len(samples) else 0.0,
            "train/steps": steps,
            "train/seconds": time.perf_counter() - started,
        })  # fmt: skip
        return metrics

    def _search_step(self, samples: Samples, rows: list[int]) -> dict[str, float]:
        """One step toward the search's improved policy (cross-entropy) and the value target
        (MSE): the outcome plus ``material_weight`` times the discounted material lead the
        mover will have (its lead now plus the discounted gain from here on), so that the value
        the search backs up knows what material is on the board."""
        assert samples.targets is not None
        device = self.device
        index = torch.tensor(rows)
        features = samples.features[index].to(device)
        lead = samples.lead[index] + samples.material[index]
        ret = (samples.z[index] + self.cfg.material_weight * lead).to(device)
        moves, valid = (t.to(device) for t in samples.legal_moves(index))
        first = samples.legal_start[index]
        position = torch.where(valid.cpu(), first.unsqueeze(1) + torch.arange(valid.shape[1]), 0)
        target = torch.where(valid.cpu(), samples.targets[position], 0.0).to(device)
        target = target / target.sum(dim=1, keepdim=True).clamp(min=1e-8)  # float16 storage: renormalised

        logits, value = self.model(features)
        legal_logits = logits.float().gather(1, moves).masked_fill(~valid, -math.inf)
        logp_legal = torch.log_softmax(legal_logits, dim=1).masked_fill(~valid, 0.0)
        policy_loss = -(target * logp_legal).sum(dim=1).mean()
        value_loss = torch.mean((value.float() - ret.clamp(-1.0, 1.0)) ** 2)
        entropy = -(logp_legal.exp() * logp_legal).sum(dim=1).mean()
        loss = policy_loss + self.cfg.value_coef * value_loss

        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        self.optimizer.step()
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

    def _step(self, samples: Samples, rows: list[int]) -> dict[str, float]:
        device = self.device
        index = torch.tensor(rows)
        features = samples.features[index].to(device)
        actions = samples.actions[index].to(device)
        old_logp = samples.old_logp[index].to(device)
        # The return: the outcome plus the material this move and what followed won.
        ret = (samples.z[index] + self.cfg.material_weight * samples.material[index]).to(device)
        moves, valid = (t.to(device) for t in samples.legal_moves(index))

        logits, value = self.model(features)
        # The policy is the softmax over the legal moves: only their logits are read, so the
        # softmax, the entropy and their gradients run on a (batch, legal moves) table rather
        # than on all 1858 moves of the vocabulary.
        logits = logits.float()
        legal_logits = logits.gather(1, moves).masked_fill(~valid, -math.inf)
        norm = torch.logsumexp(legal_logits, dim=1)
        logp = logits.gather(1, actions.unsqueeze(1)).squeeze(1) - norm
        logp_legal = legal_logits - norm.unsqueeze(1)
        advantage = ret - value.detach().float()
        ratio = torch.exp(logp - old_logp)
        clipped = torch.clamp(ratio, 1 - self.cfg.clip, 1 + self.cfg.clip)
        policy_loss = -torch.min(ratio * advantage, clipped * advantage).mean()
        value_loss = torch.mean((value.float() - ret.clamp(-1.0, 1.0)) ** 2)
        entropy = -(logp_legal.exp() * logp_legal.masked_fill(~valid, 0.0)).sum(dim=1).mean()
        loss = policy_loss + self.cfg.value_coef * value_loss - self.cfg.entropy_coef * entropy

        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        self.optimizer.step()
        figures = {
            "loss/total": loss,
            "loss/policy": policy_loss,
            "loss/value": value_loss,
            "loss/entropy": entropy,
            "train/ratio_mean": ratio.mean(),
            "train/clip_fraction": ((ratio - 1).abs() > self.cfg.clip).float().mean(),
            "train/grad_norm": grad_norm,
        }
        return {key: float(value.detach()) for key, value in figures.items()}


_PLANE_FEATURES = N_PLANES * 64
"""The board-plane features (0 or 1) at the front of a feature row; the scalars follow."""


def _packed(part: Samples) -> dict[str, torch.Tensor]:
    """``part`` as a dict of tensors, its 0/1 board planes bit-packed (8 to a byte)."""
    fields = {f: getattr(part, f) for f in part.__dataclass_fields__ if f != "features"}
    planes = part.features[:, :_PLANE_FEATURES].numpy()
    packed = {k: v for k, v in fields.items() if v is not None}
    packed["planes"] = torch.from_numpy(np.packbits(planes.astype(np.uint8), axis=1))
    packed["scalars"] = part.features[:, _PLANE_FEATURES:].clone()
    return packed


def _unpacked(data: dict[str, torch.Tensor]) -> Samples:
    planes = np.unpackbits(data["planes"].numpy(), axis=1, count=_PLANE_FEATURES).astype(np.float32)
    features = torch.cat([torch.from_numpy(planes), data["scalars"]], dim=1)
    fields = {k: v for k, v in data.items() if k not in ("planes", "scalars")}
    return Samples(features=features, **fields)
