"""The docs site covers the package: every module of asp has a reference page entry, the
README's links into the docs land on pages that exist, and the walk of one game in
docs/development.md follows the imports. (``mkdocs build --strict`` in CI checks the links
inside the site and the cross-references in docstrings.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from test_layers import all_modules, imported

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


def test_every_path_the_docs_name_in_the_repo_exists() -> None:
    # Before, docs/development.md said that tests/test_development_walk.py held the walk to
    # the code, a file that did not exist (the test is in this one).
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted(DOCS.rglob("*.md"))]
    missing = []
    for page in pages:
        for path in re.findall(r"`((?:asp|tests|benchmarks|examples|docs|\.ci)/[\w./-]+)`", page.read_text("utf-8")):
            if not (ROOT / path.rstrip("/.")).exists():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert missing == [], "paths in the docs that the repo does not have"


WALK = "## One game, from `asp train` to a worker and back"


def walk() -> list[str]:
    """The modules of the walk in docs/development.md, in order: the first path of each
    numbered line of its section (numbered 1, 2, 3...), as dotted names."""
    text = (DOCS / "development.md").read_text(encoding="utf-8")
    section = text[text.index(WALK) :].split("\n## ", 1)[0]
    steps = re.findall(r"^(\d+)\. (.*)$", section, flags=re.MULTILINE)
    assert [int(number) for number, _ in steps] == list(range(1, len(steps) + 1)), "the walk's numbers"
    paths = [re.match(r"`(asp/[\w/]+)\.py`", line) for _, line in steps]
    assert all(paths), "a step of the walk that does not start with a module's path"
    return [path.group(1).replace("/", ".") for path in paths if path]


def reached() -> dict[str, set[str]]:
    """Each module of asp and the modules it reaches: those it imports (at the top or inside a
    function), or names as a game to load (``"asp.x:Attr"``), and through a package those its
    ``__init__`` imports."""
    modules = dict(all_modules())
    direct: dict[str, set[str]] = {}
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        names = imported(source, module, package=path.name == "__init__.py")
        names += re.findall(r"\"(asp\.[\w.]+):\w+\"", source)
        direct[module] = set()
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                direct[module].add(name)
    reach: dict[str, set[str]] = {}
    for module in modules:
        seen, todo = set(), list(direct[module])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                if modules[name].name == "__init__.py":  # a package passes on what it imports
                    todo += direct[name]
        reach[module] = seen
    return reach


def test_the_walk_of_one_game_starts_at_the_console_script_and_follows_the_imports() -> None:
    steps = walk()
    script = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["asp"]
    assert steps[0] == script.partition(":")[0]
    assert len(steps) == len(set(steps)), "a module named twice in the walk"
    assert len(steps) <= 15, "a walk of more than 15 modules"
    reach = reached()
    assert [step for step in steps if step not in reach] == [], "modules of the walk that asp does not have"
    unreached = [step for i, step in enumerate(steps[1:], 1) if not any(step in reach[s] for s in steps[:i])]
    assert unreached == [], "modules of the walk that no module before them imports"


def test_the_tree_in_the_design_names_the_modules_and_packages_asp_has() -> None:
    # Before, docs/design.md's tree named selfplay.py, flights.py and shield.py at asp's root,
    # long since moved into packages or renamed, and left out asp.util.
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    tree = text[text.index("```text\nasp/\n") :].split("```")[1]
    asp = ROOT / "asp"
    files = {path.name for path in asp.rglob("*.py")}
    folders = {path.name for path in asp.rglob("*") if path.is_dir() and path.name != "__pycache__"}
    named_files = set(re.findall(r"\b(\w+\.py)\b", tree))
    named_folders = set(re.findall(r"\b(\w+)/(?![\w])", tree)) - {"asp", "benchmarks", "docs", "examples", "tests"}
    assert sorted(named_files - files) == [] and sorted(named_folders - folders) == []
    root = {path.name for path in asp.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    unnamed = sorted(name for name in root if name not in named_files and name not in named_folders)
    assert unnamed == [], "modules and packages at asp's root that the tree leaves out"
