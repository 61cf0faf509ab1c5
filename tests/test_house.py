"""The house keeps its shape (docs/architecture.md): wikigr's import graph — imports inside
functions counted, those under ``if TYPE_CHECKING:`` left out — has no cycle, the ground floor
(``wikigr/pack``) imports nothing from above it, no module is over 600 lines, no private name is
imported across modules, and nothing outside a pack kind's own package branches on the kind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "wikigr"
MAX_LINES = 600
# What the ground floor may import besides itself: modules that import no floor of wikigr's.
BASE = frozenset(
    {
        "wikigr",
        "wikigr.errors",
        "wikigr.schema",
        "wikigr.progress",
        "wikigr.home",
        "wikigr.embed",
        "wikigr.lang",
    }
)
# A pack kind's package may branch on its own kind; nothing else may (a registry lookup is no branch).
KIND_PACKAGES = ("wikigr.openml", "wikigr.documents_kind")
KIND_BRANCH = re.compile(
    r"""source_kind\s*[!=]=|[!=]=\s*["'](?:openml|documents)["']|["'](?:openml|documents)["']\s*[!=]="""
)
Graph = dict[str, list[tuple[str, str | None, int]]]


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(mods: dict[str, Path]) -> Graph:
    """For each module, (module imported, name imported or None, line) for every import of a module
    of ``mods``: inside functions too, not under ``if TYPE_CHECKING:``."""
    graph: Graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(n) for n in ast.walk(node))
        found: list[tuple[str, str | None, int]] = []
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                found += [(a.name, None, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join(package + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.append(
                        (full, None, node.lineno) if full in mods else (base, alias.name, node.lineno)
                    )
        edges = []
        for target, imported, line in found:
            while target not in mods and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in mods and target != name:
                edges.append((target, imported, line))
        graph[name] = edges
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def on_ground_floor(name: str) -> bool:
    return name == "wikigr.pack" or name.startswith("wikigr.pack.")


MODULES = modules(ROOT)
GRAPH = import_graph(MODULES)


def test_the_import_graph_has_no_cycle() -> None:
    found = cycles(GRAPH)
    edges = "; ".join(" ".join(f"{m}:{n}->{t}" for m in c for t, _, n in GRAPH[m] if t in c) for c in found)
    assert not found, f"import cycles (module:line->imported): {edges}"


def test_the_ground_floor_imports_nothing_from_above() -> None:
    upward = [
        f"{name}:{line} imports {target}"
        for name, edges in GRAPH.items()
        if on_ground_floor(name)
        for target, _, line in edges
        if not on_ground_floor(target) and target not in BASE
    ]
    assert not upward, upward
    under = [f"{name}:{n} imports {t}" for name in BASE for t, _, n in GRAPH[name] if on_ground_floor(t)]
    assert not under, f"the base under the ground floor imports it: {under}"


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT.parent)): lines
        for path in MODULES.values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_no_private_name_is_imported_across_modules() -> None:
    private = [
        f"{name}:{line} imports {target}.{imported}"
        for name, edges in GRAPH.items()
        for target, imported, line in edges
        if imported and imported.startswith("_") and not imported.startswith("__")
    ]
    assert not private, private


def test_nothing_outside_a_kind_package_branches_on_the_kind() -> None:
    sites = [
        f"{path.relative_to(ROOT.parent)}:{n}"
        for name, path in MODULES.items()
        if not name.startswith(KIND_PACKAGES)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if KIND_BRANCH.search(line)
    ]
    assert not sites, sites


def test_the_checks_see_what_they_must(tmp_path: Path) -> None:
    """The checks above would pass vacuously if the graph missed imports: on a small package, an
    import inside a function closes a cycle, a relative import and a private name are seen, and an
    import under TYPE_CHECKING is not."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from pkg import a\n")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom .b import _hidden\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    graph = import_graph(modules(package))
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]
    assert graph["pkg.sub.c"] == [("pkg.sub.b", "_hidden", 2)]
    assert KIND_BRANCH.search('if manifest.source_kind == "openml":')
    assert not KIND_BRANCH.search("kind = pack_kind(manifest.source_kind)")
