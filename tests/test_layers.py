"""The layers, checked on the source: no module imports a layer above its own.

* the search, ``asp.search`` (batched tree search over a small game protocol): of asp it may
  import only itself, ``asp.progress``, ``asp.errors`` and ``asp.util.checks`` (the range checks
  of config fields); it knows no game;
* the game protocol, ``asp.games`` (the protocol, and the play loop, trainer and movers every
  game shares): of asp it may import only itself, the search, ``asp.progress`` (the heartbeat
  and ``more_games``), ``asp.errors`` and ``asp.util.checks``; it knows no particular game;
* a game, ``asp.tinychess``, ``asp.connect4`` or ``asp.openspiel`` (rules, encoding, model, opponents...): of asp
  it may import only itself, the game protocol and what the protocol may import; no game
  imports another;
* the orchestrator, every other module of ``asp`` outside ``asp.app``: it knows no game and no
  command line, so it imports neither the game protocol, nor a game, nor ``asp.app``;
* the application, ``asp.app`` (the ``asp`` command, run directory, session, evaluation
  matches, display, curves, PGN files): it may import anything;
* under every layer, ``asp.util`` (range checks, logging, atomic files, clean-up under
  cancellation...): of asp it may import only itself and ``asp.errors``.

The root of the package holds the public modules only (:data:`PUBLIC_ROOT`); the rest lives in
packages named for what they hold.

Every import counts, at module level or inside a function (a lazy import is still a tie);
docstrings (doctest examples) do not.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import asp

ROOT = Path(asp.__file__).parent
SEARCH_MAY_IMPORT = ("asp.search", "asp.progress", "asp.errors", "asp.util.checks")
PROTOCOL_MAY_IMPORT = ("asp.games", *SEARCH_MAY_IMPORT)
UTIL_MAY_IMPORT = ("asp.util", "asp.errors")
GAMES = ("asp.tinychess", "asp.connect4", "asp.openspiel")
"""The games asp ships: each a package of its own."""
PUBLIC_ROOT = {"__init__.py", "errors.py", "progress.py", "pipeline.py", "testing.py"}
"""The modules at the root of ``asp``: the package's front, its errors, the heartbeat a game's
loop calls, the pipeline, and the helpers of a user's tests; every other module is in a package."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(source: str, module: str, *, package: bool) -> list[str]:
    """Every module ``source`` (the text of ``module``) imports, relative imports resolved."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return names


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer(module: str) -> str:
    if any(_within(module, game) for game in GAMES):
        return "game"
    if _within(module, "asp.games"):
        return "protocol"
    if module == "asp.app" or module.startswith("asp.app."):
        return "application"
    if module == "asp.search" or module.startswith("asp.search."):
        return "search"
    if _within(module, "asp.util"):
        return "util"
    return "orchestrator"


def violations(module: str, imports: list[str]) -> list[str]:
    """The imports of ``module`` that reach a layer it must not import."""
    own = layer(module)
    bad = []
    for name in imports:
        if name != "asp" and not name.startswith("asp."):
            continue
        own_game = [game for game in GAMES if _within(module, game)]
        allowed = {"game": (*own_game, *PROTOCOL_MAY_IMPORT), "protocol": PROTOCOL_MAY_IMPORT}.get(own)
        allowed = SEARCH_MAY_IMPORT if own == "search" else UTIL_MAY_IMPORT if own == "util" else allowed
        if allowed is not None and not any(name == ok or name.startswith(ok + ".") for ok in allowed):
            if name != "asp":  # ``from asp import x`` is judged by its full name, asp.x
                bad.append(name)
        elif own == "orchestrator" and layer(name) not in ("orchestrator", "util"):
            bad.append(name)
    return bad


def all_modules() -> list[tuple[str, Path]]:
    return [(module_name(p), p) for p in sorted(ROOT.rglob("*.py"))]


@pytest.mark.parametrize(("module", "path"), all_modules(), ids=[m for m, _ in all_modules()])
def test_no_module_imports_a_layer_above_its_own(module: str, path: Path) -> None:
    imports = imported(path.read_text(encoding="utf-8"), module, package=path.name == "__init__.py")
    assert violations(module, imports) == [], f"{path} ({layer(module)} layer) imports above its layer"


def test_every_layer_has_modules() -> None:
    layers = {layer(m) for m, _ in all_modules()}
    assert layers == {"search", "protocol", "game", "orchestrator", "application", "util"}


def test_the_root_of_the_package_holds_the_public_modules_only() -> None:
    assert {p.name for p in ROOT.glob("*.py")} == PUBLIC_ROOT


@pytest.mark.parametrize(
    ("module", "source", "bad"),
    [
        ("asp.tinychess.game", "from asp.selfplay import SelfPlay", ["asp.selfplay", "asp.selfplay.SelfPlay"]),
        (
            "asp.tinychess.pgn",
            "from asp.util.atomic import write_text_atomic",
            ["asp.util.atomic", "asp.util.atomic.write_text_atomic"],
        ),
        ("asp.tinychess.game", "from asp import SelfPlay", ["asp.SelfPlay"]),
        ("asp.tinychess.game", "from .. import selfplay", ["asp.selfplay"]),
        (
            "asp.selfplay",
            "def f():\n    from asp.tinychess import TinyChessGame",
            ["asp.tinychess", "asp.tinychess.TinyChessGame"],
        ),
        ("asp.backends.worker", "import asp.app.cli", ["asp.app.cli"]),
        ("asp.tinychess.game", "from asp.progress import heartbeat\nfrom asp.errors import ConfigError", []),
        ("asp.app.session", "from asp.selfplay import SelfPlay\nfrom asp.tinychess import TinyChess", []),
        ("asp.search.gumbel", "from asp.tinychess import moves", ["asp.tinychess", "asp.tinychess.moves"]),
        (
            "asp.search.gumbel",
            "from asp.selfplay.dispatch import Dispatcher",
            ["asp.selfplay.dispatch", "asp.selfplay.dispatch.Dispatcher"],
        ),
        ("asp.tinychess.game", "from asp.search import search", []),
        ("asp.selfplay", "from asp.search import search", ["asp.search", "asp.search.search"]),
        ("asp.selfplay", "from asp.games import PlayConfig", ["asp.games", "asp.games.PlayConfig"]),
        ("asp.pipeline", "import asp.connect4", ["asp.connect4"]),
        ("asp.games.play", "from asp.connect4 import ConnectFour", ["asp.connect4", "asp.connect4.ConnectFour"]),
        ("asp.games.train", "from asp.pipeline import Pipeline", ["asp.pipeline", "asp.pipeline.Pipeline"]),
        ("asp.util.checks", "from asp.selfplay import SelfPlay", ["asp.selfplay", "asp.selfplay.SelfPlay"]),
        ("asp.util.cleanup", "from asp.errors import ConfigError", []),
        ("asp.selfplay.dispatch", "from asp.util.cleanup import finish", []),
        ("asp.connect4.game", "from asp.games import Symmetry\nfrom asp.search import Status", []),
        ("asp.connect4.game", "from asp.tinychess import moves", ["asp.tinychess", "asp.tinychess.moves"]),
        ("asp.search.gumbel", "from asp.games import Game", ["asp.games", "asp.games.Game"]),
    ],
)
def test_the_check_catches_an_import_across_the_layers(module: str, source: str, bad: list[str]) -> None:
    assert violations(module, imported(source, module, package=False)) == bad


def import_graph() -> dict[str, set[str]]:
    """Every module of asp and the modules of asp it imports (a module's own packages left
    out: a package that re-exports its modules is no circle)."""
    modules = dict(all_modules())
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = set()
        for name in imported(path.read_text(encoding="utf-8"), module, package=path.name == "__init__.py"):
            while name and name not in modules:  # ``from asp.x import y``: y is a name in asp.x
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                graph[module].add(name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of imports in ``graph``: for each, the modules along it, first repeated last."""
    found, done, path = [], set(), []

    def visit(module: str) -> None:
        if module in path:
            found.append(path[path.index(module) :] + [module])
            return
        if module in done:
            return
        path.append(module)
        for name in sorted(graph[module]):
            visit(name)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(import_graph()) == []


def test_the_check_finds_a_circle_of_lazy_imports() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"]]


CHESS_WORDS = re.compile(r"\b(python-chess|import chess|from chess|greedy|stockfish|uci)\b", re.IGNORECASE)
"""What the application must not name: TinyChess's library, its movers and its engines are the
game's own (its help and errors name a game's movers and engines through the protocol)."""


def chess_words(source: str) -> list[str]:
    """The words of :data:`CHESS_WORDS` in ``source``, code, comments and docstrings alike."""
    return [match.group(0) for match in CHESS_WORDS.finditer(source)]


def test_the_application_names_no_chess_library_mover_or_engine() -> None:
    found = {
        path.relative_to(ROOT.parent).as_posix(): words
        for path in sorted((ROOT / "app").rglob("*.py"))
        if (words := chess_words(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_finds_a_chess_word() -> None:
    assert chess_words('import chess\nhelp="--vs stockfish: its Skill Level"  # the UCI engine') == [
        "import chess",
        "stockfish",
        "UCI",
    ]
    assert chess_words('HELP = "the greedy mover"') == ["greedy"] and chess_words("a game of TinyChess") == []
