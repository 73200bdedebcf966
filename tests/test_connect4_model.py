"""The Connect Four network's derived planes (asp.connect4.model.planes_of) against a count by
hand on random positions: the threats of either side and the playable cells, cell by cell."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from asp.connect4 import ConnectFour
from asp.connect4.model import N_PLANES, C4Config, C4Net, planes_of
from asp.connect4.rules import HEIGHT, WIDTH, Board, cell, is_over, legal_columns, play
from asp.errors import ConfigError
from asp.games import Game
from asp.tinychess import TinyChessGame

GAME = ConnectFour()
DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1))


def random_positions(count: int, seed: int) -> list[Board]:
    rng = random.Random(seed)
    found: list[Board] = []
    while len(found) < count:
        board = GAME.start()
        for _ in range(rng.randrange(0, 30)):
            if is_over(board):
                break
            board = play(board, rng.choice(legal_columns(board)))
        if not is_over(board):
            found.append(board)
    return found


def completes_four(grid: list[list[int]], column: int, row: int, player: int) -> bool:
    """Whether a stone of ``player`` at the empty cell completes four in a row (by hand)."""
    for dc, dr in DIRECTIONS:
        run = 1
        for sign in (1, -1):
            c, r = column + sign * dc, row + sign * dr
            while 0 <= c < WIDTH and 0 <= r < HEIGHT and grid[c][r] == player:
                run, c, r = run + 1, c + sign * dc, r + sign * dr
        if run >= 4:
            return True
    return False


def test_the_planes_are_the_stones_the_threats_of_either_side_and_the_playable_cells() -> None:
    boards = random_positions(300, seed=7)
    planes = planes_of(GAME.encode(boards))
    assert planes.shape == (300, N_PLANES, WIDTH, HEIGHT)
    for board, got in zip(boards, planes, strict=True):
        mover = 1 + board.to_move  # cell() says 1 for the first player, 2 for the second
        grid = [[cell(board, c, r) for r in range(HEIGHT)] for c in range(WIDTH)]
        for c in range(WIDTH):
            for r in range(HEIGHT):
                empty = grid[c][r] == 0
                assert got[0, c, r] == (grid[c][r] == mover) and got[1, c, r] == (grid[c][r] == 3 - mover)
                assert got[2, c, r] == (empty and completes_four(grid, c, r, mover)), (board, c, r)
                assert got[3, c, r] == (empty and completes_four(grid, c, r, 3 - mover)), (board, c, r)
                assert got[4, c, r] == (empty and (r == 0 or grid[c][r - 1] != 0))


def test_the_network_is_rebuilt_from_its_config_alone() -> None:
    net = C4Net(C4Config(hidden=32, blocks=1, channels=4))
    rebuilt = type(net)(net.cfg)
    assert {k: v.shape for k, v in net.state_dict().items()} == {k: v.shape for k, v in rebuilt.state_dict().items()}
    logits, value = net(GAME.encode(random_positions(3, seed=1)))
    assert logits.shape == (3, WIDTH) and value.shape == (3,) and bool((value.abs() <= 1).all())
    assert torch.isfinite(logits).all()


class _Devices(TorchDispatchMode):
    """The devices of every tensor that an operation reads, while the mode is on."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        for value in pytree.tree_leaves((args, kwargs or {})):
            if isinstance(value, torch.Tensor):
                self.seen.add(value.device.type)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("game", [ConnectFour(), TinyChessGame()], ids=repr)
def test_a_network_moved_to_a_device_computes_there_alone(game: Game[Any]) -> None:
    # A trainer on a GPU moves the network there (asp train --device cuda, or auto on a machine
    # with one): a tensor that forward makes on the CPU fails there. The "meta" device (shapes
    # without data) stands in for the GPU on a machine without one; every tensor that forward
    # reads must be on it.
    net = game.network().to("meta")
    features = game.encode([game.start()]).to("meta")
    with _Devices() as devices:
        logits, value = net(features)
    assert devices.seen == {"meta"}
    assert logits.device.type == value.device.type == "meta"


def test_the_convolutional_tower_is_rebuilt_from_its_config_and_starts_as_its_stem() -> None:
    net = C4Net(C4Config(tower=2, hidden=8))
    rebuilt = type(net)(net.cfg)
    assert {k: v.shape for k, v in net.state_dict().items()} == {k: v.shape for k, v in rebuilt.state_dict().items()}
    assert not any(name.startswith(("windows", "stem", "trunk")) for name in net.state_dict())
    features = GAME.encode(random_positions(3, seed=2))
    logits, value = net(features)
    assert logits.shape == (3, WIDTH) and value.shape == (3,) and bool((value.abs() <= 1).all())
    # each block's last convolution starts at zero: the blocks pass the stem's output through
    planes = torch.cat([planes_of(features), torch.ones(3, 1, WIDTH, HEIGHT)], dim=1)
    stem = torch.relu(net.tower.stem(planes))
    assert torch.equal(net.tower.blocks(stem), stem)


@pytest.mark.parametrize(("field", "value"), [("tower", 33), ("tower", -1)])
def test_a_bad_tower_is_refused_by_name(field: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"C4Config.{field}"):
        C4Config(**{field: value})  # type: ignore[arg-type]
