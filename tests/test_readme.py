"""The README's Python examples run as written (each as a script, in its own process)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.timeout(180)
@pytest.mark.parametrize("index", range(len(BLOCKS)))
@pytest.mark.slow
def test_readme_example_runs(index: int, tmp_path: Path) -> None:
    script = tmp_path / f"readme_example_{index}.py"  # a file: spawn workers re-import __main__
    script.write_text(BLOCKS[index], encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=150, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
