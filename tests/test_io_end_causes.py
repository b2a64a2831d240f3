"""Typed end causes survive export / import and copy, on both backends, and an
export written before they were typed (format 3) still imports.

``data/export_format3_end_causes.jsonl`` was written by chronomem at export
format 3 (commit d2e72b7) for::

    invalidate("Priya", "works_at", "Helix", "2023-05", reason="resigned")
    invalidate("Kai", "works_at", "Orion", "2022")
    add_fact("Acme", "ceo", "Alice", "2015"); add_fact("Acme", "ceo", "Bob", "2022")
    retract(paris.id)

Its ``invalidated_by`` holds "resigned" and "invalidated" beside Bob's id.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem import CloseKind, FakeClock, InvalidInputError, Memory
from chronomem.copy import copy_store
from chronomem.io import EXPORT_VERSION, export_jsonl, import_jsonl
from conftest import store_target
from contract._helpers import MemoryFactory

FORMAT3 = Path(__file__).parent / "data" / "export_format3_end_causes.jsonl"


@pytest.fixture
def other(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Memory]:
    """A memory on a second fresh store of this test's backend (fact ids are unique per store)."""
    (tmp_path / "other").mkdir()
    with chronomem.open(store_target(backend, tmp_path / "other", request)) as mem:
        yield mem


def _causes(mem: Memory) -> list[tuple[Any, ...]]:
    return sorted((f.subject, f.object, f.version, f.ended_by, f.ended_reason, f.invalidated_by)
                  for e in mem.entities() for f in mem.history(e.name))


def _story(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    mem.define_predicate("database", "one")
    mem.invalidate_fact(mem.add_fact("Priya", "works_at", "Helix", "2020").id, "2023-05", reason="resigned")
    mem.invalidate_fact(mem.add_fact("Kai", "works_at", "Orion", "2019").id, "2022")
    mem.add_fact("Acme", "ceo", "Alice", "2015")
    mem.add_fact("Acme", "ceo", "Bob", "2022")
    mem.retract(mem.add_fact("Dana", "lives_in", "Paris", "2023").id, reason="a joke")
    oslo = mem.add_fact("Dana", "lives_in", "Oslo", "2020")
    mem.correct(oslo.id, valid_from="2021", reason="wrong year")
    mem.add_fact("Atlas", "database", "PostgreSQL", "2020")
    mem.retract(mem.add_fact("Atlas", "database", "MySQL", "2024-01").id)


def _export(mem: Memory) -> str:
    buf = io.StringIO()
    export_jsonl(mem, buf)
    return buf.getvalue()


def test_export_import_keeps_every_end_cause(make_memory: MemoryFactory, other: Memory) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    _story(src)
    text = _export(src)
    facts = [json.loads(x) for x in text.splitlines() if '"type":"fact"' in x.replace(" ", "")]
    priya = [r for r in facts if r["subject"] == "priya"]
    assert [(r["end_kind"], r["end_reason"], r["invalidated_by"]) for r in priya] == [
        (None, None, None), ("invalidated", "resigned", None)]
    import_jsonl(other, io.StringIO(text))
    dst = other
    assert _causes(dst) == _causes(src)
    assert ("Priya", "Helix", 2, CloseKind.INVALIDATED, "resigned", None) in _causes(dst)
    assert ("Dana", "Oslo", 1, CloseKind.CORRECTED, "wrong year", None) in _causes(dst)


def test_copy_keeps_every_end_cause(make_memory: MemoryFactory, tmp_path: Path) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    _story(src)
    with chronomem.open(tmp_path / "copy.db") as dst:
        copy_store(src.store, dst.store)
        assert _causes(dst) == _causes(src)


def test_a_format_3_export_imports_with_typed_causes(make_memory: MemoryFactory, other: Memory) -> None:
    dst = make_memory()
    import_jsonl(dst, io.StringIO(FORMAT3.read_text(encoding="utf-8")))
    inv, sup, ret = CloseKind.INVALIDATED, CloseKind.SUPERSEDED, CloseKind.RETRACTED
    bob = dst.facts("Acme", "ceo", "Bob")[0].id
    assert _causes(dst) == [
        ("Acme", "Alice", 1, sup, None, None), ("Acme", "Alice", 2, sup, None, bob),
        ("Acme", "Bob", 1, None, None, None),
        ("Dana", "Paris", 1, ret, None, None),
        ("Kai", "Orion", 1, inv, None, None), ("Kai", "Orion", 2, inv, None, None),
        ("Priya", "Helix", 1, inv, "resigned", None), ("Priya", "Helix", 2, inv, "resigned", None),
    ]
    # exported again it is a current-format file with the same causes
    text = _export(dst)
    assert json.loads(text.splitlines()[0])["format_version"] == EXPORT_VERSION
    import_jsonl(other, io.StringIO(text))
    assert _causes(other) == _causes(dst)


@pytest.mark.parametrize("change, message", [
    ({"end_kind": "retracted"}, "end_kind 'retracted' is not one of"),
    ({"close_kind": "vanished"}, "close_kind 'vanished' is not one of"),
    ({"end_kind": "invalidated", "invalidated_by": "resigned"}, "invalidated_by names the superseding fact"),
])
def test_a_bad_end_cause_is_refused_before_anything_is_written(make_memory: MemoryFactory,
                                                              change: dict[str, Any], message: str) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    _story(src)
    lines = [json.loads(x) for x in _export(src).splitlines()]
    first = next(x for x in lines if x["type"] == "fact")
    first.update(change)
    dst = make_memory("restored")
    with pytest.raises(InvalidInputError, match=message):
        import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
    assert dst.entities() == [] and dst.stats().versions == 0
