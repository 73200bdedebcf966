"""The size rule of asp's code, checked on the source: no class over 300 lines and no
function over 60 (docstrings included), so that each fits in a reader's head."""

from __future__ import annotations

import ast
from pathlib import Path

import asp

ROOT = Path(asp.__file__).parent
MAX_CLASS = 300
MAX_FUNCTION = 60


def too_long(source: str, path: str) -> list[str]:
    """``path:name (lines)`` of each class and function of ``source`` over its limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
            if lines > limit:
                found.append(f"{path}:{node.name} ({lines} lines)")
    return found


def test_no_class_or_function_of_asp_is_over_its_limit() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT.parent).as_posix()
        found += too_long(path.read_text(encoding="utf-8"), name)
    assert not found, f"over {MAX_CLASS} lines a class or {MAX_FUNCTION} a function: {found}"


def test_the_check_finds_a_long_function() -> None:
    source = "def f():\n" + "    x = 1\n" * MAX_FUNCTION
    assert too_long(source, "m.py") == [f"m.py:f ({MAX_FUNCTION + 1} lines)"]
    assert too_long("def g():\n    pass\n", "m.py") == []
