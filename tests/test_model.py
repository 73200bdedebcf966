"""TinyChess: config validation, output shapes and ranges, rebuilding from the config."""

from __future__ import annotations

import dataclasses

import chess
import pytest
import torch

from asp.errors import AspError, ConfigError
from asp.tinychess import N_FEATURES, POLICY_SIZE, ModelConfig, TinyChess, encode_boards

# Tiny networks run fastest on one thread, and do not stall when the machine is busy.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _boards() -> list[chess.Board]:
    board = chess.Board()
    boards = [board.copy()]
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]:
        board.push_uci(uci)
        boards.append(board.copy())
    return boards


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"hidden": 7}, "hidden"),
        ({"hidden": 4097}, "hidden"),
        ({"hidden": 64.0}, "hidden"),
        ({"hidden": "64"}, "hidden"),
        ({"hidden": True}, "hidden"),
        ({"blocks": -1}, "blocks"),
        ({"blocks": 33}, "blocks"),
        ({"blocks": None}, "blocks"),
        ({"value_hidden": 0}, "value_hidden"),
        ({"value_hidden": 5000}, "value_hidden"),
    ],
)
def test_bad_model_config_raises_config_error_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"ModelConfig\.{field}\b") as info:
        ModelConfig(**kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError) and isinstance(info.value, AspError)
    assert repr(kwargs[field]) in str(info.value)


@pytest.mark.parametrize(
    "kwargs", [{"hidden": 8}, {"hidden": 4096}, {"blocks": 0}, {"blocks": 32}, {"value_hidden": 1}]
)
def test_model_config_bounds_are_inclusive(kwargs: dict[str, int]) -> None:
    cfg = ModelConfig(**kwargs)
    assert dataclasses.asdict(cfg) == {**dataclasses.asdict(ModelConfig()), **kwargs}


def test_model_config_is_frozen() -> None:
    cfg = ModelConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.hidden = 64  # type: ignore[misc]


@pytest.mark.parametrize("cfg", [ModelConfig(hidden=32, blocks=1), ModelConfig(hidden=16, blocks=0, value_hidden=4)])
def test_output_shapes_and_value_range(cfg: ModelConfig) -> None:
    torch.manual_seed(0)
    model = TinyChess(cfg).eval()
    features = encode_boards(_boards())
    with torch.no_grad():
        logits, value = model(features)
    assert logits.shape == (len(features), POLICY_SIZE)
    assert value.shape == (len(features),)
    assert logits.dtype == value.dtype == torch.float32
    assert torch.isfinite(logits).all()
    assert ((value >= -1) & (value <= 1)).all()


def test_value_stays_in_range_for_extreme_inputs() -> None:
    torch.manual_seed(1)
    model = TinyChess(ModelConfig(hidden=32, blocks=1)).eval()
    with torch.no_grad():
        big = torch.randn(64, N_FEATURES) * 1e4
        _, value = model(big)
    assert ((value >= -1) & (value <= 1)).all()
    assert value.abs().max() > 0.99  # such inputs saturate the tanh


def test_default_model() -> None:
    torch.manual_seed(0)
    model = TinyChess()
    assert model.cfg == ModelConfig()
    n_params = sum(p.numel() for p in model.parameters())
    assert 800_000 <= n_params <= 1_200_000


def test_rebuilt_from_cfg_with_state_dict_gives_identical_outputs() -> None:
    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=48, blocks=2, value_hidden=16)).eval()
    torch.manual_seed(123)  # the copy starts from different weights ...
    copy = TinyChess(model.cfg).eval()
    features = encode_boards(_boards())
    with torch.no_grad():
        assert not torch.equal(copy(features)[0], model(features)[0])
        copy.load_state_dict(model.state_dict())  # ... until it loads the original's
        logits, value = model(features)
        copy_logits, copy_value = copy(features)
    assert copy.cfg == model.cfg
    assert torch.equal(logits, copy_logits)
    assert torch.equal(value, copy_value)


def test_state_dict_does_not_fit_a_differently_shaped_model() -> None:
    torch.manual_seed(0)
    model = TinyChess(ModelConfig(hidden=32, blocks=1))
    with pytest.raises(RuntimeError):
        TinyChess(ModelConfig(hidden=32, blocks=2)).load_state_dict(model.state_dict())


def test_same_seed_same_weights() -> None:
    torch.manual_seed(5)
    a = TinyChess(ModelConfig(hidden=32, blocks=1))
    torch.manual_seed(5)
    b = TinyChess(ModelConfig(hidden=32, blocks=1))
    for (name_a, pa), (name_b, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert name_a == name_b and torch.equal(pa, pb)
