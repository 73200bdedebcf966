"""WeightStore: atomic, once-per-change publication; safe loading; clean removal."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from asp.backends.weights import WeightRef, WeightStore, load_state_dict
from asp.tinychess import ModelConfig, TinyChess
from asp.util.atomic import save_atomic

_loaded_payloads: list[str] = []


def _run_payload(message: str) -> None:
    _loaded_payloads.append(message)


class _Payload:
    """An object whose unpickling runs code: what a malicious weight file would carry."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (_run_payload, ("pickle code ran",))


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def store(tmp_path: Path) -> WeightStore:
    return WeightStore(tmp_path / "weights")


def test_publish_writes_one_complete_file_and_no_temporary_file(store: WeightStore) -> None:
    model = TinyChess(ModelConfig(hidden=8, blocks=0))
    ref = store.publish("model", model, version=4)
    assert _files(store.directory) == ["model-v4-1.pt"]  # nothing like .model-v4-1.pt.tmp<pid>
    assert Path(ref.location) == store.directory / "model-v4-1.pt"
    assert (ref.version, ref.publication, ref.model_class, ref.model_cfg) == (4, 1, TinyChess, model.cfg)
    state = load_state_dict(ref)
    assert state.keys() == model.state_dict().keys()
    for name, tensor in model.state_dict().items():
        assert torch.equal(state[name], tensor)
    rebuilt = ref.model_class(ref.model_cfg)
    rebuilt.load_state_dict(state)  # what a worker does


def test_save_atomic_leaves_the_previous_file_intact_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "w.pt"
    save_atomic({"x": torch.ones(2)}, target)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        save_atomic({"x": lambda: 0}, target)  # cannot be pickled: fails mid-write
    assert _files(tmp_path) == ["w.pt"]
    assert torch.equal(torch.load(target, weights_only=True)["x"], torch.ones(2))


def test_unchanged_model_is_published_once(store: WeightStore, logs: list[dict[str, Any]]) -> None:
    model = nn.Linear(3, 2)
    first = store.publish("model", model, version=1)
    again = store.publish("model", model, version=1)
    assert again is first
    assert [e["event"] for e in logs] == ["weights_published"]
    assert _files(store.directory) == ["model-v1-1.pt"]


def test_a_new_version_of_the_same_weights_is_a_new_publication(store: WeightStore) -> None:
    model = nn.Linear(3, 2)
    first = store.publish("model", model, version=1)
    second = store.publish("model", model, version=2)
    assert second is not first
    assert (second.version, second.publication) == (2, 2)


def test_optimizer_step_gives_a_new_publication_with_the_new_weights(store: WeightStore) -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    first = store.publish("model", model, version=0)
    before = load_state_dict(first)["weight"]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5)
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    second = store.publish("model", model, version=0)  # same version, new weights
    assert second is not first
    assert second.publication == first.publication + 1
    after = load_state_dict(second)["weight"]
    assert torch.equal(after, model.weight.detach())
    assert not torch.equal(after, before)


@pytest.mark.parametrize(
    "change",
    ["no_grad_fill", "init_constant", "load_state_dict", "state_dict_copy"],
)
def test_in_place_change_gives_a_new_publication(store: WeightStore, change: str) -> None:
    model = nn.Linear(3, 2)
    first = store.publish("model", model, version=0)
    if change == "no_grad_fill":
        with torch.no_grad():
            model.weight.fill_(7.0)
    elif change == "init_constant":
        nn.init.constant_(model.weight, 7.0)
    elif change == "load_state_dict":
        other = nn.Linear(3, 2)
        nn.init.constant_(other.weight, 7.0)
        model.load_state_dict(other.state_dict())
    else:
        model.state_dict()["weight"].copy_(torch.full((2, 3), 7.0))
    second = store.publish("model", model, version=0)
    assert second is not first
    assert torch.equal(load_state_dict(second)["weight"], torch.full((2, 3), 7.0))


def test_in_place_change_through_dot_data_gives_a_new_publication(store: WeightStore) -> None:
    # `target.data.copy_(online.data)` and `p.data.mul_(...)` are common in RL code (target
    # networks, Polyak averaging, hand-written updates).
    model = nn.Linear(3, 2)
    first = store.publish("model", model, version=0)
    model.weight.data.fill_(7.0)
    second = store.publish("model", model, version=0)
    assert torch.equal(load_state_dict(second)["weight"], torch.full((2, 3), 7.0)), "stale weights published"
    assert second is not first


def test_a_new_publication_removes_the_previous_file(store: WeightStore) -> None:
    model = nn.Linear(3, 2)
    refs = []
    for version in range(3):
        refs.append(store.publish("model", model, version=version))
        assert _files(store.directory) == [Path(refs[-1].location).name]
    assert not any(Path(ref.location).exists() for ref in refs[:-1])
    # roles are independent: publishing the opponent keeps the model's file
    opp = store.publish("opponent", nn.Linear(3, 2), version=0)
    assert _files(store.directory) == sorted([Path(refs[-1].location).name, Path(opp.location).name])
    assert len({ref.publication for ref in [*refs, opp]}) == 4


def test_load_refuses_a_file_carrying_arbitrary_pickled_code(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"weight": torch.ones(1), "payload": _Payload()}, path)
    ref = WeightRef(str(path), 0, 1, nn.Linear, None)
    with pytest.raises(pickle.UnpicklingError, match="[Ww]eights only load failed"):
        load_state_dict(ref)
    assert _loaded_payloads == []  # the pickled code never ran
    # (torch.load without weights_only=True would have run it)
    torch.load(path, weights_only=False)
    assert _loaded_payloads == ["pickle code ran"]
    _loaded_payloads.clear()


def test_close_removes_the_directory(store: WeightStore) -> None:
    store.publish("model", nn.Linear(3, 2), version=0)
    store.publish("opponent", nn.Linear(3, 2), version=0)
    assert len(os.listdir(store.directory)) == 2
    store.close()
    assert not store.directory.exists()
    store.close()  # twice is fine
