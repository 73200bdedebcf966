"""asp.util.checks: what is refused before anything reaches a worker. Here, the rule that a worker
rebuilds a network as ``type(net)(net.cfg)``: a network it would not rebuild faithfully is
refused, naming the rule, before any shard is sent."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from asp import ConfigError, SelfPlay
from asp.connect4 import ConnectFour
from asp.games import PlayConfig
from asp.util.checks import check_rebuildable


class NoCfg(nn.Module):
    """A network whose width is a constructor argument that it does not keep."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.fc = nn.Linear(84, hidden)
        self.out = nn.Linear(hidden, 7)
        self.v = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc(x))
        return self.out(h), torch.tanh(self.v(h)).squeeze(-1)


@dataclass(frozen=True)
class Width:
    hidden: int = 32


class KeepsCfg(NoCfg):
    def __init__(self, cfg: Width | None = None) -> None:
        super().__init__((cfg or Width()).hidden)
        self.cfg = cfg or Width()


class NeedsArgument(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Linear(2, hidden)


def test_a_network_rebuilt_with_other_shapes_is_refused_naming_the_rule() -> None:
    with pytest.raises(ConfigError) as raised:
        check_rebuildable(NoCfg(64), "model")
    assert str(raised.value) == (
        "the model (NoCfg) is rebuilt in a worker as NoCfg(), which gives another network (fc.weight: (64, 84) "
        "here, (32, 84) rebuilt): keep every constructor argument in `net.cfg`, so that NoCfg(net.cfg) builds "
        "the same network"
    )
    with pytest.raises(ConfigError, match=r"cannot be rebuilt in a worker as NeedsArgument\(\)"):
        check_rebuildable(NeedsArgument(3), "opponent")


def test_a_network_rebuilt_faithfully_passes_and_the_check_draws_nothing_from_torchs_generator() -> None:
    nets = [NoCfg(), KeepsCfg(Width(64))]
    state = torch.get_rng_state()
    for net in nets:
        check_rebuildable(net, "model")
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_selfplay_refuses_it_before_any_shard_is_sent() -> None:
    async with SelfPlay(workers=1) as selfplay:
        with pytest.raises(ConfigError, match="keep every constructor argument in `net.cfg`"):
            await selfplay.play(NoCfg(64), None, PlayConfig(ConnectFour(), n_games=2))
        records, _ = await selfplay.play(KeepsCfg(Width(64)), None, PlayConfig(ConnectFour(), n_games=2))
    assert len(records) == 2
