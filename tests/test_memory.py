"""asp.util.memory: the peak resident memory, as the run's metrics report it."""

from __future__ import annotations

import subprocess
import sys


def test_peak_rss_is_in_mib() -> None:
    code = "from asp.util.memory import peak_rss_mb as p; b = bytearray(256 << 20); print(p())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert 256 < float(done.stdout) < 2000  # the 256 MiB, zeroed: every page touched
