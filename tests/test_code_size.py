"""Code a reader can hold in their head, checked on the source: no class of asp over 300 lines,
no function over 60, docstrings not counted."""

from __future__ import annotations

import ast
from pathlib import Path

import asp

ROOT = Path(asp.__file__).parent
CLASS_LINES = 300
FUNCTION_LINES = 60


def _lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The node's lines, its docstring left out."""
    assert node.end_lineno is not None
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        assert first.end_lineno is not None
        lines -= first.end_lineno - first.lineno + 1
    return lines


def oversized(source: str) -> list[str]:
    """The classes and functions of ``source`` over their limits, as ``name (lines)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and _lines(node) > CLASS_LINES:
            found.append(f"class {node.name} ({_lines(node)} lines)")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _lines(node) > FUNCTION_LINES:
            found.append(f"function {node.name} ({_lines(node)} lines)")
    return found


def test_no_class_or_function_of_asp_is_over_its_limit() -> None:
    found = {
        str(path.relative_to(ROOT.parent)): bad
        for path in sorted(ROOT.rglob("*.py"))
        if (bad := oversized(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_counts_code_not_docstrings() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES - 1))  # with its def line: the limit
    docstring = '    """' + "\n" * 40 + '    """\n'
    assert oversized(f"def f():\n{docstring}{body}\n") == []
    assert oversized(f"def f():\n{body}\n    return 0\n") == [f"function f ({FUNCTION_LINES + 1} lines)"]
