"""asp.util.memory: the peak resident memory, as the run's metrics report it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_peak_rss_is_in_mib() -> None:
    code = "from asp.util.memory import peak_rss_mb as p; b = bytearray(256 << 20); print(p())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert 256 < float(done.stdout) < 2000  # the 256 MiB, zeroed: every page touched


FRAGMENTED = """
import ctypes, sys
from asp.util.memory import lean_heap
if sys.argv[1] == "lean":
    assert lean_heap()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size = 8 << 20
first = libc.malloc(size)
ctypes.memset(first, 1, size)
libc.free(first)  # glibc's own threshold rises to the largest block freed: blocks this big come from the heap now
blocks = [libc.malloc(size) for _ in range(30)]
for block in blocks:
    ctypes.memset(block, 1, size)
for block in blocks[:-1]:  # freed below the last, which glibc's heap cannot give back
    libc.free(block)
print(int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_lean_heap_gives_freed_blocks_back() -> None:
    # Before, the coordinator of asp train kept what it freed (tens of MB an iteration): a
    # process that frees 29 blocks of 8 MiB below one it keeps held them all.
    held = {}
    for how in ("default", "lean"):
        done = subprocess.run([sys.executable, "-c", FRAGMENTED, how], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        held[how] = int(done.stdout)
    assert held["default"] - held["lean"] > 150, held
