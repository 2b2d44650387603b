"""No two modules of the project import each other, directly or round a loop.

The graph is read from the source (no module is imported): every ``import`` and ``from ...
import`` of ``generala_env``, ``generala_agents`` (the folder ``agents/``) or ``generala_training``
(``training/``), at the top of a module or inside a
function, relative ones resolved. ``from P import X`` is an edge to the module ``P.X`` when
there is one, else to ``P``. A package's ``__init__`` that Python runs before one of its
modules is not an edge: only what a module names.

A cycle broken by moving one of its imports into a function still counts: the two modules
still need each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("generala_env", "generala_agents", "generala_training", "generala_play")
FOLDER = {"generala_agents": "agents", "generala_training": "training", "generala_play": "play"}  # pyproject.toml's package-dir


def module_files(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by its dotted name (a package by its own)."""
    out = {}
    for pkg in packages:
        folder = root / FOLDER.get(pkg, pkg)
        for path in sorted(folder.rglob("*.py")):
            parts = [pkg, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Each module of ``packages`` with the modules of ``packages`` it imports."""
    files = module_files(root, packages)

    def module_of(name: str) -> str | None:  # the longest prefix of ``name`` that is a module
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        found = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # imports for type checkers only never run: not part of the graph
            if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                node.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {module_of(a.name) for a in node.names if a.name.split(".")[0] in packages}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ""
                if base.split(".")[0] in packages:
                    found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else module_of(base) for a in node.names}
        graph[mod] = {m for m in found if m is not None and m != mod}
    return graph


def cycles(graph: dict[str, set[str]], within: tuple[str, ...]) -> list[list[str]]:
    """The import cycles among the modules of the packages ``within``: each a group of modules
    that all reach each other (a strongly connected component of more than one module)."""
    inside = lambda m: m.split(".")[0] in within  # noqa: E731
    sub = {m: {d for d in deps if inside(d)} for m, deps in graph.items() if inside(m)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(sub[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(sub):
        if v not in index:
            visit(v)
    return sorted(out)


def say(found: list[list[str]]) -> str:
    return "; ".join(" <-> ".join(group) for group in found)


def test_the_graph_sees_imports_inside_functions_and_relative_ones(tmp_path):
    pkg = tmp_path / "agents"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import os\n\ndef g():\n    from ..a import f\n    import agents.sub\n")
    graph = import_graph(tmp_path, ("agents",))
    assert graph == {"agents": {"agents.a"}, "agents.a": {"agents.sub.b"}, "agents.sub": set(), "agents.sub.b": {"agents.a", "agents.sub"}}
    assert cycles(graph, ("agents",)) == [["agents.a", "agents.sub.b"]]


def test_the_graph_leaves_out_imports_for_type_checkers_only(tmp_path):
    pkg = tmp_path / "agents"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (pkg / "b.py").write_text("from .a import f\n")
    assert import_graph(tmp_path, ("agents",)) == {"agents": set(), "agents.a": set(), "agents.b": {"agents.a"}}


def test_no_import_cycle_in_agents_and_training():
    found = cycles(import_graph(ROOT), ("generala_agents", "generala_training", "generala_play"))
    assert not found, f"modules that import each other: {say(found)}"


def test_no_import_cycle_in_generala_env():
    found = cycles(import_graph(ROOT), ("generala_env",))
    assert not found, f"modules that import each other: {say(found)}"
