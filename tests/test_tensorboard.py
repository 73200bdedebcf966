"""TensorBoard scalars (asp.app.run.tensorboard): every metric of a line reads back from the
event files at its iteration, a resumed run's lines replace the ones it played again, and
``--tensorboard`` without the package is one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from helpers import read_scalars

from asp.app.run.tensorboard import check_tensorboard, write_scalars
from asp.errors import ConfigError


def line(iteration: int, policy: float) -> dict[str, object]:
    return {"iteration": iteration, "loss/policy": policy, "play/results": {"1-0": 3, "0-1": 1},
            "ladder": {"v2": [120.5, 60.0, 181.0, 40], "random": [0.0, 0.0, 0.0, 40]}}  # fmt: skip


def test_every_metric_reads_back_at_its_iteration_and_a_resume_replaces_what_it_played_again(tmp_path: Path) -> None:
    for iteration, policy in ((0, 3.0), (1, 2.5), (2, 2.25)):
        write_scalars(tmp_path, line(iteration, policy))
    # stopped after iteration 2, resumed from the checkpoint of iteration 1: 2 is played again
    write_scalars(tmp_path, line(2, 2.0))
    write_scalars(tmp_path, line(3, 1.75))
    read = read_scalars(tmp_path)
    assert read["loss/policy"] == [(0, 3.0), (1, 2.5), (2, 2.0), (3, 1.75)]
    assert read["play/results/1-0"] == [(i, 3.0) for i in range(4)]
    assert read["ladder/v2"] == [(i, 120.5) for i in range(4)] and "ladder/random" in read


def test_without_the_package_tensorboard_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    check_tensorboard()  # installed with the test extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'asp\[tensorboard\]'"):
        check_tensorboard()
