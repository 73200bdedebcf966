"""The docs site covers the package: every module of asp has a reference page entry, and the
README's links into the docs land on pages that exist. (``mkdocs build --strict`` in CI checks
the links inside the site and the cross-references in docstrings.)"""

from __future__ import annotations

import re
from pathlib import Path

import asp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def modules() -> set[str]:
    """Every module of the asp package, by dotted name (packages by their own name)."""
    package = Path(asp.__file__).parent
    names = set()
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.add(".".join(parts))
    return names


def documented() -> list[str]:
    """The modules named by a mkdocstrings directive (``::: asp.x``) on a reference page."""
    text = "\n".join(page.read_text(encoding="utf-8") for page in sorted((DOCS / "reference").glob("*.md")))
    return re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE)


def test_every_module_has_one_reference_entry() -> None:
    named = documented()
    assert sorted(modules() - set(named)) == [], "modules with no '::: name' line in docs/reference/*.md"
    assert sorted(set(named) - modules()) == [], "'::: name' lines naming no module of asp"
    assert sorted(name for name in set(named) if named.count(name) > 1) == [], "modules documented twice"


def test_the_readmes_relative_links_exist() -> None:
    for readme in (ROOT / "README.md", ROOT / "benchmarks" / "README.md"):
        links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8"))
        relative = [link for link in links if "://" not in link]
        assert relative, readme
        missing = [link for link in relative if not (readme.parent / link).exists()]
        assert missing == [], f"{readme.name} links to missing files"
