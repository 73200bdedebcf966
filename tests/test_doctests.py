"""The doctests of asp/ clean up after themselves, as every test does: the files their
examples make with :mod:`tempfile` go in a directory removed after each (conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_the_doctests_that_make_files_leave_none_in_the_temporary_directory(tmp_path: Path) -> None:
    modules = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "asp").rglob("*.py")
        if "tempfile.mkdtemp()" in path.read_text(encoding="utf-8")
    )
    assert len(modules) >= 5  # atomic, weights, and the application's show, lock...
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted(path.name for path in tmp_path.iterdir()) == []
