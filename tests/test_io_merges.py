"""Merges survive a JSONL export/restore: the restored store answers ``known_at``
reads by a name a merge moved exactly as the source, and ``unmerge`` undoes a
restored merge by its original operation id. Sources on both backends, each
restored into both backends."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Callable

import pytest

import chronomem
from chronomem import ConflictError, FakeClock, InvalidInputError, Memory
from chronomem.service.transfer.jsonl import EXPORT_VERSION, export_jsonl, import_jsonl
from conftest import BACKENDS, store_target
from contract._helpers import MemoryFactory

NAMES = ("Bob", "Bobby", "Robert", "Dana", "Ed", "Edward", "Acme")


def merge_story(mem: Memory, clock: FakeClock) -> tuple[list[str], str, str]:
    """Two merges: ``active`` (Bob into Robert, still in force) and ``undone``
    (Ed into Edward, undone). Returns the system times (ISO) between the
    steps and the two operation ids."""
    marks: list[str] = []

    def mark() -> None:
        marks.append(clock.peek().isoformat())
        clock.advance(10)

    mem.define_predicate("lives in", "one")
    mem.add_fact("Bob", "lives in", "Paris", "2019")
    mem.add_fact("Bob", "knows", "Carol", "2018", source="chat")
    mem.add_fact("Robert", "lives in", "Rome", "2021")  # single-valued: the merge splices Paris before it
    mem.add_fact("Dana", "knows", "Bob", "2020")  # the folded entity as an object
    mem.alias("Bob", "Bobby")
    mem.add_fact("Ed", "lives in", "Oslo")
    mem.add_fact("Edward", "age", 40)
    mark()
    active = mem.merge("Robert", "Bob")
    mark()
    mem.add_fact("Bobby", "works at", "Acme", "2022")  # by a moved name: lands on Robert
    undone = mem.merge("Edward", "Ed")
    mark()
    mem.unmerge(undone)
    mark()
    return marks, active, undone


def _dicts(facts: list[chronomem.Fact], drop: tuple[str, ...] = ("current",)) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.to_dict().items() if k not in drop} for f in facts]


def name_answers(mem: Memory, known: list[str | None]) -> dict[str, Any]:
    """Every read by name, as known at each time: the folded names included."""
    out: dict[str, Any] = {}
    for name in NAMES:
        out[f"entity {name}"] = mem.entity(name).name
        out[f"history {name}"] = _dicts(mem.history(name, direction="both"))
        for k in known:
            out[f"{name} known_at={k}"] = _dicts(mem.facts(name, known_at=k, direction="both"))
            out[f"{name} as_of=2020 known_at={k}"] = _dicts(mem.facts(name, as_of="2020", known_at=k))
    return out


def believed(mem: Memory) -> dict[str, Any]:
    """What each name says now, without the system times (an unmerge runs at
    each store's own clock)."""
    drop = ("current", "system_from", "system_to")
    return {name: (mem.entity(name).name, _dicts(mem.facts(name, direction="both"), drop)) for name in NAMES}


def check_unmerge(src: Memory, dst: Memory, active: str, undone: str) -> None:
    """Undo the active merge in both stores: same result; the undone one is refused in both."""
    for m in (src, dst):
        with pytest.raises(InvalidInputError, match="already undone"):
            m.unmerge(undone)
        m.unmerge(active)
    assert dst.entity("Bob").name == "Bob" and dst.entity("Bobby").name == "Bob"
    assert [f.object for f in dst.facts("Bob", "lives in")] == ["Paris"]
    assert believed(dst) == believed(src)


@pytest.mark.parametrize("dst_backend", BACKENDS)
def test_restore_keeps_merges_for_known_at_and_unmerge(make_memory: MemoryFactory, dst_backend: str,
                                                      tmp_path: Path, request: pytest.FixtureRequest) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z")
    src = make_memory(clock=clock)
    marks, active, undone = merge_story(src, clock)
    buf = io.StringIO()
    exported = export_jsonl(src, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["format_version"] == EXPORT_VERSION == 7
    assert exported.operations == 2 and [x["id"] for x in lines if x["type"] == "operation"] == [active, undone]

    (tmp_path / "dst").mkdir()
    dst = chronomem.open(store_target(dst_backend, tmp_path / "dst", request), clock=FakeClock("2030-01-01"))
    try:
        restored = import_jsonl(dst, io.BytesIO(buf.getvalue().encode()))
        assert restored.operations == 2
        known: list[str | None] = [None, *marks]
        expected = name_answers(src, known)
        # the point of carrying merges: before the merge "Bob" named the folded entity
        assert [f.object for f in src.facts("Bob", "lives in", known_at=marks[0])] == ["Paris"]
        assert name_answers(dst, known) == expected
        # the restored store exports the same file (payloads mapped back to keys and versions)
        again = io.StringIO()
        export_jsonl(dst, again)
        assert again.getvalue().splitlines()[1:] == buf.getvalue().splitlines()[1:]
        check_unmerge(src, dst, active, undone)
    finally:
        dst.close()


def _export_lines(mem: Memory) -> list[dict[str, Any]]:
    buf = io.StringIO()
    export_jsonl(mem, buf)
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def _first_op(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return next(x for x in lines if x["type"] == "operation")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda ls: _first_op(ls).__setitem__("kind", "split"), "unknown operation kind 'split'"),
        (lambda ls: ls.append(dict(_first_op(ls))), "appears twice"),
        (lambda ls: _first_op(ls)["payload"].__setitem__("keep", "nobody"), "keep entity 'nobody' is not defined"),
        (lambda ls: _first_op(ls)["payload"].__setitem__("closed", [["no-such-fact", 1]]),
         "not a version the merge closed"),
        (lambda ls: _first_op(ls)["payload"].__setitem__("keys", "bob"), "keys must be a list"),
        (lambda ls: _first_op(ls).__setitem__("undone_at", "2000-01-01T00:00:00Z"), "undone before it was made"),
        (lambda ls: _first_op(ls).__setitem__("payload", None), "needs a 'payload'"),
    ],
)
def test_corrupt_operation_lines_are_rejected_and_nothing_written(
        make_memory: MemoryFactory, tmp_path: Path, mutate: Callable[[list[dict[str, Any]]], None],
        message: str) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z")
    src = make_memory(clock=clock)
    merge_story(src, clock)
    lines = _export_lines(src)
    mutate(lines)
    dst = chronomem.open(tmp_path / "dst.db")
    try:
        with pytest.raises(InvalidInputError, match=message):
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
        assert dst.stats().versions == 0 and dst.entities() == []
    finally:
        dst.close()


def test_an_operation_id_cannot_be_restored_twice_into_one_store(make_memory: MemoryFactory) -> None:
    a = make_memory("a")
    a.set_entity("Bob")
    a.set_entity("Robert")
    op = a.merge("Robert", "Bob")  # no facts: only the operation can clash
    text = "\n".join(json.dumps(x) for x in _export_lines(a)) + "\n"
    b = make_memory("b")
    with pytest.raises(ConflictError, match=f"operation {op} already exists"):
        import_jsonl(b, io.StringIO(text))
    assert b.entities() == []


def test_version_1_exports_still_restore(tmp_path: Path) -> None:
    """A version-1 file (no operation lines) restores as before; only the
    merges' undo records are missing from it."""
    clock = FakeClock("2025-01-01T00:00:00Z")
    src = chronomem.open(tmp_path / "src.db", clock=clock)
    merge_story(src, clock)
    lines = _export_lines(src)
    assert lines[0]["format_version"] == EXPORT_VERSION and any(x["type"] == "operation" for x in lines)
    old = [dict(lines[0], format_version=1)] + [x for x in lines[1:] if x["type"] != "operation"]
    dst = chronomem.open(tmp_path / "dst.db")
    result = import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in old) + "\n"))
    assert (result.operations, result.versions) == (0, src.stats().versions)
    assert _dicts(dst.history("Robert")) == _dicts(src.history("Robert"))
    src.close()
    dst.close()


def test_a_merge_naming_an_erased_entity_still_restores(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """Erasing an entity leaves the merges that name it; the export carries
    them with a null entity and reads by the other names answer as before."""
    clock = FakeClock("2025-01-01T00:00:00Z")
    src = make_memory(clock=clock)
    marks, active, undone = merge_story(src, clock)
    src.erase(entity="Ed", confirm=True)  # the folded entity of the undone merge
    marks.append(clock.peek().isoformat())
    lines = _export_lines(src)
    payload = next(x for x in lines if x["type"] == "operation" and x["id"] == undone)["payload"]
    assert (payload["keep"], payload["fold"]) == ("edward", None)
    dst = chronomem.open(tmp_path / "dst.db")
    try:
        import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
        known: list[str | None] = [None, *marks]
        for name in ("Bob", "Robert", "Edward"):
            for k in known:
                assert _dicts(dst.facts(name, known_at=k)) == _dicts(src.facts(name, known_at=k)), (name, k)
        assert _export_lines(dst)[1:] == lines[1:]
        dst.unmerge(active)
        assert dst.entity("Bob").name == "Bob"
    finally:
        dst.close()
