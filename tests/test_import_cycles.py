"""No import cycles in the package.

The import graph of ``src/chronomem`` is read with :mod:`ast`: every
``import`` and ``from ... import`` anywhere in a module (function bodies and
``if TYPE_CHECKING:`` blocks included: a cycle only the type checker follows
still ties the modules together), relative imports resolved. ``from pkg import
name`` counts as an import of ``pkg.name`` where that is a module, else of
``pkg``; an import of ``a.b.c`` where ``c`` is not a module counts as one of
the nearest enclosing module. Its strongly connected components with more
than one module are the cycles; any new one fails the test.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Mapping

import chronomem

PACKAGE = Path(chronomem.__file__).resolve().parent

KNOWN_CYCLES: list[list[str]] = []


def _module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _targets(
    module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: Mapping[str, Path]
) -> list[str]:
    """The dotted names ``node`` (in ``module``) imports, before they are
    narrowed to modules of the package."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package at ``root`` it imports (itself excluded)."""
    modules = _module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(name, is_package, node, modules):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm,
    iterative), each sorted; singletons included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []

    def enter(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        work.append((v, iter(sorted(graph.get(v, ())))))

    for start in sorted(graph):
        if start in index:
            continue
        enter(start)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    enter(w)
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component: list[str] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    components.append(sorted(component))
    return components


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The components of more than one module, sorted."""
    return sorted(c for c in strongly_connected(graph) if len(c) > 1)


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {
        "a": {"b"}, "b": {"c"}, "c": {"a", "d"},  # a -> b -> c -> a
        "d": {"e"}, "e": {"d"},  # d <-> e, reached from the first cycle
        "f": {"a", "g"}, "g": set(), "h": {"h"},  # no cycle (a self-import is none)
    }
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d", "e"], ["f"], ["g"], ["h"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .sub import tx\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "store.py").write_text("from . import tx\nfrom ..sub.tx import Tx\n")
    (pkg / "sub" / "tx.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import Store\n"
    )
    (pkg / "util.py").write_text("def f() -> None:\n    import pkg.sub.store\n    import json\n")
    graph = import_graph(pkg)
    assert graph == {
        "pkg": {"pkg.sub.tx"}, "pkg.sub": set(), "pkg.sub.store": {"pkg.sub.tx"},
        "pkg.sub.tx": {"pkg.sub.store"}, "pkg.util": {"pkg.sub.store"},
    }
    assert cycles(graph) == [["pkg.sub.store", "pkg.sub.tx"]]


def test_no_new_import_cycles() -> None:
    graph = import_graph(PACKAGE)
    assert "chronomem.store.sqlite.tx" in graph and graph["chronomem.adapters.web.server"], "the graph looks empty"
    assert cycles(graph) == KNOWN_CYCLES


# -- the direction of imports -------------------------------------------------
# The floors, bottom up: core (the bitemporal model), store (backends behind
# the protocol), service (use cases), the public API (the package, the Memory
# façade, io/copy, errors), adapters (cli, mcp, web, install, demo, eval).
# errors.py is the one exception tree every floor may raise from.
ERRORS = "chronomem.errors"
#: What adapters may use besides their own floor: the public API and the
#: vocabulary it speaks in (times, result types, names), never a service's
#: or a backend's internals.
PUBLIC = {
    "chronomem", "chronomem.errors", "chronomem.memory", "chronomem.io", "chronomem.copy", "chronomem.store",
    "chronomem.core.time", "chronomem.core.models", "chronomem.core.names", "chronomem.core.jsonobj",
    "chronomem.core.phrases", "chronomem.core.basis", "chronomem.core.limits", "chronomem.core.paging",
    "chronomem.core.ids",
    "chronomem.service.evidence",
    # access tokens (chronomem serve): the public module, re-exporting service.tokens
    "chronomem.tokens",
    # the benchmark files' readers: eval.py scores on what ingest reads, with the same parser
    "chronomem.service.ingest.formats.locomo", "chronomem.service.ingest.formats.longmemeval",
    # the learned ranker's features and model file: eval's diagnostics and train-ranker compute
    # and fit them with the very code the search scores with (a copy could drift from it)
    "chronomem.service.evidence.rank_features", "chronomem.service.evidence.ranker",
}
_FLOORS = ("core", "store", "service", "adapters")


def floor(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in _FLOORS else "api"


def allowed(source: str, target: str) -> bool:
    """May module ``source`` import module ``target``?"""
    if target == ERRORS or not target.startswith("chronomem"):
        return True
    src, dst = floor(source), floor(target)
    if src == "core":
        return dst == "core"
    if src == "store":
        return dst in ("store", "core")
    if src == "service":
        return dst in ("service", "core") or target == "chronomem.store.protocol"
    if src == "api":
        return dst != "adapters" or (source == "chronomem.__main__" and target == "chronomem.adapters.cli")
    return dst == "adapters" or target in PUBLIC


def test_the_direction_rules_refuse_what_points_up() -> None:
    assert not allowed("chronomem.core.engine", "chronomem.store.protocol")
    assert not allowed("chronomem.store.sqlite.tx", "chronomem.service.unit_of_work")
    assert not allowed("chronomem.service.facts", "chronomem.store.sqlite.store")
    assert not allowed("chronomem.service.transfer.jsonl", "chronomem.memory")
    assert not allowed("chronomem.memory", "chronomem.adapters.web.app")
    assert not allowed("chronomem.adapters.web.data", "chronomem.core.analysis")
    assert not allowed("chronomem.adapters.cli", "chronomem.store.sqlite.store")
    assert allowed("chronomem.adapters.cli", "chronomem.adapters.web.server")
    assert allowed("chronomem.service.facts", "chronomem.store.protocol")
    assert allowed("chronomem.core.time", "chronomem.errors")


def test_imports_point_down() -> None:
    graph = import_graph(PACKAGE)
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if not allowed(a, b))
    assert wrong == []
