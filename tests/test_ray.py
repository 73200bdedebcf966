"""What only the Ray backend does: a two-node cluster, a private instance, shipping by value.

The backend-independent contract (every game once, fresh weights, kill, hang, cancel, close)
is in ``tests/test_backends.py``. Every Ray here listens on 127.0.0.1 (conftest sets
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` before Ray is imported) with no dashboard.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from helpers import asp, left_after, pid_alive, wait_until
from selfplay_helpers import tiny
from torch import nn

from asp import SelfPlay
from asp.testing import FaultConfig, fault_play

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.timeout(240)

Children = Callable[[], list[int]]


def ray_processes() -> list[str]:
    """Command lines of this test's descendants that belong to Ray (raylet, GCS, workers)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(p.cmdline())[:120])
        except psutil.NoSuchProcess:
            continue
    return [c for c in found if "ray" in c.lower() and "resource_tracker" not in c]


async def gone(check: Callable[[], list[Any]], seconds: float = 20.0) -> list[Any]:
    deadline = time.monotonic() + seconds
    while (left := check()) and time.monotonic() < deadline:  # noqa: ASYNC110 (polling processes)
        await asyncio.sleep(0.1)
    return left


@pytest.mark.asyncio
@pytest.mark.slow
async def test_shards_land_on_both_nodes_of_a_two_node_cluster_and_close_leaves_it_running() -> None:
    assert not ray.is_initialized()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        async with SelfPlay(
            workers=2, play_fn=fault_play, shard_games=1, backend="ray", address=cluster.address
        ) as selfplay:
            nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
            assert len(nodes) == 2
            shards = [s async for s in selfplay.stream(tiny(), None, FaultConfig(n_games=8, plies=3, delay=0.01))]
            assert sorted(i for s in shards for i in [r.game_id for r in s.records]) == list(range(8))
            # one actor per node (each node has one CPU, each actor needs one): both nodes play
            assert {s.node for s in shards} == nodes
        # the SelfPlay connected to the cluster and disconnected; the cluster itself runs on
        assert not ray.is_initialized()
        assert all(node.remaining_processes_alive() for node in cluster.list_all_nodes())
    finally:
        cluster.shutdown()
    assert await gone(ray_processes) == []


def _closure_play_fn() -> Callable[..., tuple[list[Any], dict[str, Any]]]:
    offset = 1000

    def play(model: nn.Module, opp: nn.Module | None, cfg: FaultConfig) -> tuple[list[Any], dict[str, Any]]:
        records, stats = fault_play(model, opp, cfg)
        return records, {**stats, "offset": offset}

    return play


def _users_of(directory: Path) -> list[str]:
    """Processes other than this one that hold a file in ``directory``."""
    inside = str(directory.resolve()) + "/"
    found = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and any(f.path.startswith(inside) for f in p.open_files()):
                found.append(f"{p.pid} {p.name()}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_private_instance_ships_play_fn_by_value_replaces_an_idle_dead_actor_and_leaves_nothing(
    children: Children,
) -> None:
    assert not ray.is_initialized()
    play = _closure_play_fn()  # defined in a function: spawn workers could never import it
    async with SelfPlay(workers=2, play_fn=play, shard_games=2, backend="ray") as selfplay:
        assert ray.is_initialized()
        pattern = f"asp-{os.getpid()}-ray-*"
        [directory] = await asyncio.to_thread(lambda: list(Path(tempfile.gettempdir()).glob(pattern)))
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=4, plies=2))
        assert [r.game_id for r in records] == [0, 1, 2, 3] and stats["offset"] == 2000
        actors = [pid for pid in selfplay.pids if pid is not None]
        assert len(actors) == 2
        # An actor that dies between calls costs no shard a retry: it is replaced before it gets one.
        # SIGKILL is delivered at once, but the process takes a moment to end (it frees its memory
        # first): the actor is dead once its pid says so.
        os.kill(actors[0], signal.SIGKILL)
        await wait_until(lambda: not pid_alive(actors[0]), seconds=20)
        records, stats = await selfplay.play(tiny(), None, FaultConfig(n_games=4, plies=2))
        assert [r.game_id for r in records] == [0, 1, 2, 3]
        assert (stats["retries"], stats["respawns"]) == (0, 1)
        actors += [pid for pid in selfplay.pids if pid is not None and pid not in actors]  # the new one, if started
    assert not ray.is_initialized()  # it started Ray, so it stopped it
    assert await gone(lambda: [pid for pid in actors if psutil.pid_exists(pid)]) == []
    assert await gone(ray_processes) == []
    assert await gone(children) == []
    # and nothing outside this process's tree either (Ray's agents once outlived it)
    assert await gone(lambda: _users_of(directory)) == []
    assert not directory.exists()


@pytest.mark.slow
def test_import_asp_needs_no_ray_and_backend_ray_names_the_extra() -> None:
    script = (
        "import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
        "import asp\n"
        "assert 'ray' not in [m.split('.')[0] for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    asp.SelfPlay(workers=1, backend='ray')\n"
        "except asp.ConfigError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert "pip install 'asp[ray]'" in out.stdout


def test_bad_backend_and_address_are_config_errors_naming_the_field() -> None:
    from asp import ConfigError

    with pytest.raises(ConfigError, match="backend must be one of local, ray, got 'dask'"):
        SelfPlay(workers=1, backend="dask")
    with pytest.raises(ConfigError, match="address is for backend='ray' only"):
        SelfPlay(workers=1, address="auto")


def _ray_system_processes() -> list[str]:
    """Ray's own processes anywhere on this machine (raylet, GCS, actors), with their pids."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if any(mark in line for mark in ("raylet", "gcs_server", "ray::", "default_worker.py")):
            found.append(f"{p.info['pid']} {line[:100]}")
    return found


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_asp_train_on_the_ray_backend_runs_and_leaves_no_ray_process(tmp_path: Path) -> None:
    before = _ray_system_processes()
    run = tmp_path / "run"
    args = ["train", "--backend", "ray", "--iterations", "1", "--games", "8", "--max-plies", "20"]
    args += ["--eval-games", "4", "--hidden", "16", "--workers", "2", "--no-progress", "--run-dir", str(run)]
    result = asp(*args, cwd=tmp_path, seconds=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1
    events = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    started = [e for e in events if e["event"] == "pool_started"]
    assert started and started[0]["backend"] == "ray" and len(started[0]["pids"]) == 2
    left_after(lambda: _ray_system_processes() != before, seconds=20, interval=0.2)
    assert _ray_system_processes() == before
