"""A Griffe extension for the docs build: asp's reST-flavoured docstrings read as Markdown.

asp's docstrings use Sphinx fields (``:param x:``, ``:raises E:``), which mkdocstrings parses
itself (``docstring_style: sphinx``), and two things it leaves as text:

* cross-reference roles (``:class:`~asp.errors.LoopError```, ``:func:`heartbeat```) become
  links to the documented object, found from the docstring's scope as Python would (the
  object, its parents, its module's names, then the ``asp`` package); a target inside asp
  that no public page documents is a broken link, which ``mkdocs build --strict`` reports;
  a name outside asp (``asyncio.TaskGroup``) stays code;
* doctest blocks (``>>>`` lines and their output) become fenced ``pycon`` code, which
  Markdown would otherwise read as nested block quotes, and literal blocks (``text::`` and
  an indented block) fenced text.

It also warns (so that ``mkdocs build --strict`` fails) about every name in a module's
``__all__`` that has no docstring, except those listed in its ``undocumented`` option.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import griffe

log = logging.getLogger("mkdocs.plugins.griffe_rst")  # a warning here fails a strict build

ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|attr|data|exc|obj):`(~?)([^`<>]+?)`")


def _lookup(scope: griffe.Object, dotted: str) -> griffe.Object | griffe.Alias | None:
    """The object ``dotted`` names from ``scope``: its members first, then each parent's."""
    node: griffe.Object | None = scope
    while node is not None:
        found = _member(node, dotted)
        if found is not None:
            return found
        node = node.parent
    return None


def _member(node: griffe.Object, dotted: str) -> griffe.Object | griffe.Alias | None:
    obj: Any = node
    for part in dotted.split("."):
        try:
            obj = obj.members[part]
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    return obj  # type: ignore[no-any-return]


def _target(scope: griffe.Object, dotted: str) -> str | None:
    """The documented path of ``dotted``, or None for a name outside asp."""
    root = scope.package
    if dotted == root.path or dotted.startswith(root.path + "."):
        found = _member(root, dotted.removeprefix(root.path).lstrip(".")) if dotted != root.path else root
        if found is None:
            return dotted  # a broken reference: let the strict build name it
    else:
        found = _lookup(scope, dotted)
        if found is None:
            return None
    try:
        path = found.final_target.path if isinstance(found, griffe.Alias) else found.path
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return path if path.startswith(root.path + ".") or path == root.path else None


def _is_documented(pkg: griffe.Module, path: str) -> bool:
    """Whether a page renders ``path``: every step of it public (``__all__`` or no underscore)."""
    obj: Any = pkg
    for part in path.split(".")[1:]:
        try:
            child = obj.members[part]
        except KeyError:
            return False
        if not child.is_public and not (child.is_module and not part.startswith("_")):
            return False
        obj = child
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _blocks(text: str) -> str:
    """Fence every doctest block (``>>>`` up to a blank line or a dedent) as ``pycon``, and
    every reST literal block (a paragraph ending in ``::``, then lines indented deeper) as text."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            start = i + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            if start < len(lines) and _indent(lines[start]) > _indent(line):
                head = line.rstrip()[:-2].rstrip()
                if head.strip():
                    out.append(head + ":")
                end = start
                while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(line)):
                    end += 1
                while not lines[end - 1].strip():
                    end -= 1
                block = lines[start:end]
                depth = min(_indent(b) for b in block if b.strip())
                pad = " " * _indent(line)
                out += ["", f"{pad}```text", *(pad + b[depth:] for b in block), f"{pad}```"]
                i = end
                continue
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(lines[i][len(indent) :])
                i += 1
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrites every docstring of the package once it is loaded (see the module docstring).

    :param undocumented: dotted names of public objects known to lack a docstring, not warned about.
    """

    def __init__(self, undocumented: list[str] | None = None) -> None:
        super().__init__()
        self.undocumented = set(undocumented or ())

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for module in _walk(pkg):
            if module.is_module:
                self._check_exports(module)
        for obj in _walk(pkg):
            if obj.docstring is None:
                continue

            def link(match: re.Match[str], obj: griffe.Object = obj) -> str:
                short, dotted = match.group(1), match.group(2).strip()
                shown = dotted.rsplit(".", 1)[-1] if short else dotted
                target = _target(obj, dotted)
                if target is None or (not _is_documented(pkg, target) and _member_exists(pkg, target)):
                    return f"`{shown}`"
                return f"[`{shown}`][{target}]"

            obj.docstring.value = _blocks(ROLE.sub(link, obj.docstring.value))

    def _check_exports(self, module: griffe.Module) -> None:
        """Warn about each name of ``module.__all__`` that is missing, or defined there with no docstring."""
        for name in map(str, module.exports or ()):
            member = module.members.get(name)
            if member is None:
                log.warning("%s.__all__ names %s, which it does not define", module.path, name)
            elif not member.is_alias and not member.docstring and member.path not in self.undocumented:
                log.warning("%s is in __all__ but has no docstring", member.path)


def _member_exists(pkg: griffe.Module, path: str) -> bool:
    return _member(pkg, path.removeprefix(pkg.path).lstrip(".")) is not None


def _walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias and member.parent is obj:
            yield from _walk(member)
