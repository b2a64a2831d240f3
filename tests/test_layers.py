"""Layering: backend differences live in ``store/`` only.

Outside ``src/chronomem/store/`` no module probes a store or a transaction
for a method or attribute (``hasattr`` / ``getattr``: a store declares what it
can do in ``Store.capabilities``), compares anything with a backend name, or
reads a ``.backend`` attribute. Path/URL parsing and the dispatch to a backend
are in ``store/`` too (``resolve_url``, ``open_store``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chronomem

PACKAGE = Path(chronomem.__file__).resolve().parent
STORE = PACKAGE / "store"
BACKEND_NAMES = {"sqlite", "postgresql", "postgres"}
STORE_WORDS = ("store", "tx", "_es")


def _modules_outside_store() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if STORE not in p.parents)


def _violations(source: str, where: str) -> list[str]:
    tree = ast.parse(source, filename=where)
    found: list[str] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("hasattr", "getattr") and node.args):
            first = ast.get_source_segment(source, node.args[0]) or ""
            if any(word in first for word in STORE_WORDS):
                found.append(f"{where}:{node.lineno}: {node.func.id}({first}, ...) duck-types a store")
        elif isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                for const in ast.walk(part):
                    if isinstance(const, ast.Constant) and const.value in BACKEND_NAMES:
                        found.append(f"{where}:{node.lineno}: compares with the backend name {const.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr == "backend" and isinstance(node.ctx, ast.Load):
            found.append(f"{where}:{node.lineno}: reads .backend")
    return found


def test_the_rule_sees_what_it_forbids() -> None:
    bad = (
        'hasattr(store, "lexical_search")\n'
        'getattr(self._store, "path", None)\n'
        'hasattr(self.tx, "restore_episode")\n'
        'getattr(mem.store, "entity_names_with_prefix", None)\n'
        'backend == "sqlite"\n'
        'x in ("postgresql", "y")\n'
        "mem.store.backend\n"
    )
    assert len(_violations(bad, "probe.py")) == 7
    fine = 'getattr(route, "path", "")\nhasattr(os, "register_at_fork")\nstore.capabilities.episodes\n'
    assert _violations(fine, "probe.py") == []


@pytest.mark.parametrize("path", _modules_outside_store(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_backend_knowledge_outside_store(path: Path) -> None:
    where = str(path.relative_to(PACKAGE.parent))
    assert _violations(path.read_text(encoding="utf-8"), where) == []


def test_there_are_modules_to_check() -> None:
    names = {p.name for p in _modules_outside_store()}
    assert {"memory.py", "_open.py", "portable.py", "episodes.py", "_common.py"} <= names
