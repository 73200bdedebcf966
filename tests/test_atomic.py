"""Atomic writes: regular files are replaced whole; devices, FIFOs and links are never replaced.

The device tests use a private node (``mknod DIR/null c 1 3``, a second name for the null
device) in a temporary directory, never the machine's own ``/dev/null``.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from asp.app.run.curves import plot_curves
from asp.games import PlayConfig, play_games
from asp.tinychess import TinyChessGame
from asp.util.atomic import is_special_file, save_atomic, write_bytes_atomic, write_text_atomic

Writer = Callable[[Path], None]


def _pgn(path: Path) -> None:
    torch.manual_seed(0)
    game = TinyChessGame()
    records, _ = play_games(game.network(), None, PlayConfig(game, n_games=1, max_plies=4))
    write_text_atomic(path, game.records_text(records))


def _curves(path: Path) -> None:
    plot_curves([{"iteration": 0, "loss/policy": 1.0, "play/plies_per_s": 10.0}], path)


WRITERS: dict[str, Writer] = {
    "write_text_atomic": lambda p: write_text_atomic(p, "text\n"),
    "write_bytes_atomic": lambda p: write_bytes_atomic(p, b"bytes"),
    "save_atomic": lambda p: save_atomic({"x": torch.ones(3)}, p),
    "records_text": _pgn,
    "plot_curves": _curves,
}


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return path


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_writing_to_a_device_keeps_the_device(writer: Writer, null_device: Path) -> None:
    writer(null_device)
    mode = os.stat(null_device).st_mode
    assert stat.S_ISCHR(mode) and os.stat(null_device).st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(null_device.parent)) == ["null"]  # no temporary file left beside it


@pytest.mark.timeout(30)
@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_writing_to_a_fifo_writes_into_the_pipe(writer: Writer, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    writer(fifo)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert received and received[0], "the reader got nothing through the pipe"


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_a_regular_file_is_replaced_whole_and_no_temporary_file_is_left(writer: Writer, tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_bytes(b"old")
    writer(target)
    assert target.is_file() and target.read_bytes() != b"old"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_is_special_file(tmp_path: Path, null_device: Path) -> None:
    assert is_special_file(null_device)
    assert not is_special_file(tmp_path)
    assert not is_special_file(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    assert not is_special_file(tmp_path / "f")


def test_a_checkpoint_onto_a_full_disk_says_so() -> None:
    # save_atomic streams torch.save into the file: torch.save turns the write's OSError into
    # a RuntimeError without its cause; the OSError is what comes out.
    with pytest.raises(OSError) as raised:
        save_atomic({"x": torch.ones(1 << 20)}, "/dev/full")
    assert raised.value.errno == errno.ENOSPC
