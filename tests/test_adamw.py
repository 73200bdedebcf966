"""asp's AdamW (``asp.games.adamw``): torch.optim.AdamW's arithmetic and state, without torch.optim."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from asp.games.adamw import AdamW


def _net(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 5))


def _steps(model: nn.Module, optimizer: object, count: int, *, seed: int = 1, lr: float | None = None) -> None:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(count):
        if lr is not None:
            for group in optimizer.param_groups:  # type: ignore[attr-defined]
                group["lr"] = lr
        x = torch.randn(32, 7, generator=generator)
        loss = model(x).logsumexp(dim=1).mean()
        optimizer.zero_grad(set_to_none=True)  # type: ignore[attr-defined]
        loss.backward()
        optimizer.step()  # type: ignore[attr-defined]


def _same(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def _twins(count: int, *, lr: float, weight_decay: float) -> tuple[nn.Module, AdamW, nn.Module, torch.optim.AdamW]:
    """The same network twice, one trained ``count`` steps by asp's AdamW, one by torch's."""
    ours, theirs = _net(), _net()
    mine = AdamW(ours.parameters(), lr=lr, weight_decay=weight_decay)
    torch_s = torch.optim.AdamW(theirs.parameters(), lr=lr, weight_decay=weight_decay)
    _steps(ours, mine, count)
    _steps(theirs, torch_s, count)
    return ours, mine, theirs, torch_s


def test_its_steps_give_torch_s_adamw_weights_bit_for_bit() -> None:
    ours, mine, theirs, torch_s = _twins(20, lr=3e-3, weight_decay=1e-4)
    assert _same(ours, theirs)
    _steps(ours, mine, 5, seed=2, lr=5e-4)  # the trainer's schedule changes the group's lr
    _steps(theirs, torch_s, 5, seed=2, lr=5e-4)
    assert _same(ours, theirs)


def test_its_state_dict_is_torch_s_and_each_resumes_from_the_other_s() -> None:
    ours, mine, theirs, torch_s = _twins(3, lr=1e-3, weight_decay=1e-2)
    a, b = mine.state_dict(), torch_s.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for i, state in b["state"].items():
        assert state.keys() == a["state"][i].keys()
        assert all(torch.equal(value, a["state"][i][key]) for key, value in state.items())
        assert all(value.dtype == a["state"][i][key].dtype for key, value in state.items())
    # A checkpoint of an earlier asp (torch's optimizer) resumes on asp's, and the other way.
    resumed, back = _net(7), _net(7)
    resumed.load_state_dict(theirs.state_dict())
    back.load_state_dict(ours.state_dict())
    on_ours = AdamW(resumed.parameters(), lr=0.5)
    on_ours.load_state_dict(torch_s.state_dict())
    on_torch = torch.optim.AdamW(back.parameters(), lr=0.5)
    on_torch.load_state_dict(mine.state_dict())
    assert on_ours.param_groups[0]["lr"] == 1e-3  # the saved hyperparameters, as torch's
    _steps(resumed, on_ours, 4, seed=3)
    _steps(back, on_torch, 4, seed=3)
    _steps(theirs, torch_s, 4, seed=3)
    assert _same(resumed, theirs) and _same(back, theirs)


def test_a_state_of_other_parameters_is_refused() -> None:
    optimizer = AdamW(_net().parameters())
    other = torch.optim.AdamW(nn.Linear(2, 2).parameters())
    with pytest.raises(ValueError, match="one group of 4 parameters"):
        optimizer.load_state_dict(other.state_dict())


def test_zero_grad_sets_to_none_or_zero_and_a_parameter_without_a_gradient_stays() -> None:
    model = _net()
    frozen = model[2].bias
    optimizer = AdamW(model.parameters(), weight_decay=0.5)
    model(torch.ones(1, 7))[:, 0].sum().backward()
    frozen.grad = None
    before = frozen.detach().clone()
    optimizer.step()
    assert torch.equal(frozen, before) and frozen not in optimizer.state
    optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())
    optimizer.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.timeout(120)
def test_training_imports_no_torch_compiler() -> None:
    # torch.optim.AdamW imported torch._dynamo and sympy on its first call: about 60 MiB of
    # the coordinator's peak, in every asp train.
    code = (
        "import sys\n"
        "from asp.connect4 import ConnectFour\n"
        "from asp.games import PlayConfig, Trainer, play_games\n"
        "game = ConnectFour()\n"
        "model = game.network()\n"
        "records, _ = play_games(model, None, PlayConfig(game, n_games=2, seed=0))\n"
        "trainer = Trainer(model, game)\n"
        "trainer.train(records)\n"
        "trainer.optimizer.load_state_dict(trainer.optimizer.state_dict())\n"
        "assert trainer.steps > 0\n"
        "found = [m for m in ('torch._dynamo', 'sympy') if m in sys.modules]\n"
        "sys.exit(f'imported {found}' if found else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr[-2000:]
