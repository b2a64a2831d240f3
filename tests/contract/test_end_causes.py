"""Typed end causes: what ended a version, on every backend.

``Fact.ended_by`` is a :class:`~chronomem.CloseKind`: for a version no longer
believed, why it stopped being believed; for a believed one, what cut its
valid interval short (``superseded`` / ``invalidated``), ``None`` while
open. ``invalidated_by`` is only ever a fact id; ``ended_reason`` is the
free-text reason given to invalidate / retract / correct.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from chronomem import CloseKind, Fact, InvalidInputError, Memory

from ._helpers import snapshot

INV, SUP, COR, RET = CloseKind.INVALIDATED, CloseKind.SUPERSEDED, CloseKind.CORRECTED, CloseKind.RETRACTED


def cause(f: Fact) -> tuple[Any, ...]:
    return (f.ended_by, f.ended_reason, f.invalidated_by)


def causes(mem: Memory, fact_id: str) -> list[tuple[Any, ...]]:
    """``(version, ended_by, ended_reason, invalidated_by)`` of every version."""
    return [(f.version, *cause(f)) for f in mem.versions(fact_id)]


def test_close_kind_is_a_str_enum_rendered_as_its_value() -> None:
    assert isinstance(SUP, str) and SUP == "superseded" and json.dumps({"k": SUP}) == '{"k": "superseded"}'


def test_invalidate_with_a_reason(mem: Memory) -> None:
    f = mem.add_fact("Priya", "works_at", "Helix", "2020")
    assert cause(f) == (None, None, None)
    g = mem.invalidate("Priya", "works_at", "Helix", "2023-05", reason="resigned")
    assert cause(g) == (INV, "resigned", None) and isinstance(g.ended_by, CloseKind)
    assert [cause(x) for x in mem.facts("Priya")] == [(INV, "resigned", None)]
    # the version it replaced stopped being believed for the same cause
    assert causes(mem, f.id) == [(1, INV, "resigned", None), (2, INV, "resigned", None)]
    d = g.to_dict()
    assert (d["ended_by"], d["ended_reason"], d["invalidated_by"]) == ("invalidated", "resigned", None)
    assert json.loads(json.dumps(d))["ended_by"] == "invalidated"


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_invalidate_without_a_reason(mem: Memory, reason: str | None) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2019")
    g = mem.invalidate_fact(f.id, "2022", reason=reason)
    assert cause(g) == (INV, None, None)
    assert causes(mem, f.id) == [(1, INV, None, None), (2, INV, None, None)]


def test_a_reason_that_is_not_text_is_refused_before_anything_is_written(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2019")
    before = snapshot(mem)
    calls: list[Callable[[], object]] = [
        lambda: mem.invalidate("Kai", "works_at", "Orion", "2022", reason=42),  # type: ignore[arg-type]
        lambda: mem.invalidate_fact(f.id, "2022", reason=["x"]),  # type: ignore[arg-type]
        lambda: mem.retract(f.id, reason=1.5),  # type: ignore[arg-type]
        lambda: mem.correct(f.id, object="Vega", reason=0),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="reason must be a string"):
            call()
    assert snapshot(mem) == before


def test_supersede(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    assert causes(mem, alice.id) == [(1, SUP, None, None), (2, SUP, None, bob.id)]
    assert causes(mem, bob.id) == [(1, None, None, None)]


def test_an_out_of_order_arrival_ends_where_the_later_value_begins(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    assert alice.valid_to_text == "2022" and cause(alice) == (SUP, None, bob.id)


def test_correct(mem: Memory) -> None:
    f = mem.add_fact("Priya", "works_at", "Helix", "2020")
    ended = mem.invalidate_fact(f.id, "2023-05", reason="resigned")
    fixed = mem.correct(f.id, object="Helix Labs", reason="the full name")
    # the corrected version keeps what ended it; the old one was corrected, for the reason given
    assert cause(fixed) == (INV, "resigned", None)
    assert [x for x in causes(mem, f.id) if x[0] == ended.version] == [(ended.version, COR, "the full name", None)]
    # a new end is written with the fact: no cause
    moved = mem.correct(f.id, valid_to="2023-06")
    assert cause(moved) == (None, None, None) and moved.valid_to_text == "2023-06"
    assert causes(mem, f.id)[-2] == (fixed.version, COR, None, None)


def test_retract(mem: Memory) -> None:
    a = mem.add_fact("Dana", "lives_in", "Paris", "2023")
    b = mem.add_fact("Dana", "lives_in", "Rome", "2023")
    assert cause(mem.retract(a.id, reason="a joke")) == (RET, "a joke", None)
    assert cause(mem.retract(b.id)) == (RET, None, None)


def test_restore(mem: Memory) -> None:
    mem.define_predicate("database", "one")
    pg = mem.add_fact("Atlas", "database", "PostgreSQL", "2020")
    mysql = mem.add_fact("Atlas", "database", "MySQL", "2024-01")
    mem.retract(mysql.id, reason="never happened")
    assert causes(mem, pg.id) == [
        (1, SUP, None, None),
        (2, CloseKind.RESTORED, None, mysql.id),  # the cut version, given its interval back
        (3, None, None, None),                    # believed again, open
    ]
    assert causes(mem, mysql.id) == [(1, RET, "never happened", None)]


def test_restore_gives_back_the_earlier_end_and_its_cause(mem: Memory) -> None:
    mem.define_predicate("database", "one")
    pg = mem.add_fact("Atlas", "database", "PostgreSQL", "2020")
    mem.invalidate_fact(pg.id, "2025", reason="sunset")
    mysql = mem.add_fact("Atlas", "database", "MySQL", "2024-01")
    assert cause(mem.fact(pg.id)) == (SUP, None, mysql.id)
    mem.retract(mysql.id)
    back = mem.fact(pg.id)
    assert back.valid_to_text == "2025" and cause(back) == (INV, "sunset", None)


def test_coalesce(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lived_in", "Oslo", "2010", "2015")
    g = mem.add_fact("Kai", "lived_in", "Oslo", "2014", "2018")
    assert g.id == f.id and cause(g) == (None, None, None)
    assert causes(mem, f.id)[0] == (1, CloseKind.COALESCED, None, None)


def test_merge_and_unmerge(mem: Memory) -> None:
    f = mem.add_fact("Priya", "works_at", "Orbit", "2021-03")
    mem.invalidate_fact(f.id, "2024-02", reason="laid off")
    mem.add_fact("Orbit Labs", "based_in", "Berlin")
    op = mem.merge("Orbit Labs", "Orbit")
    # the moved version keeps its end cause; the one it replaced was merged
    assert [cause(x) for x in mem.facts("Priya")] == [(INV, "laid off", None)]
    assert [(v, k, r) for v, k, r, _ in causes(mem, f.id)][-2:] == [(2, CloseKind.MERGED, None), (3, INV, "laid off")]
    mem.unmerge(op)
    assert causes(mem, f.id)[-2][1] == CloseKind.UNMERGED
    assert cause(mem.fact(f.id)) == (INV, "laid off", None)


def test_to_dict_carries_the_cause(mem: Memory) -> None:
    """The JSON form names the kind by its value, and ``invalidated_by`` is a fact id or null."""
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    rows = [{k: d[k] for k in ("ended_by", "ended_reason", "invalidated_by")}
            for d in (f.to_dict() for f in mem.history("Acme"))]
    assert {"ended_by": "superseded", "ended_reason": None, "invalidated_by": bob.id} in rows
    assert {"ended_by": None, "ended_reason": None, "invalidated_by": None} in rows
    assert all(r["invalidated_by"] in (None, bob.id) for r in rows)
    assert [f.ended_by for f in mem.versions(alice.id)] == [SUP, SUP]


def test_timeline_sentences(mem: Memory) -> None:
    mem.define_predicate("works_at", "one")
    mem.define_predicate("database", "one")
    helix = mem.add_fact("Priya", "works_at", "Helix", "2020")
    mem.invalidate_fact(helix.id, "2021-03", reason="resigned")
    orbit = mem.add_fact("Priya", "works_at", "Orbit Labs", "2021-03")
    mem.add_fact("Priya", "works_at", "Nimbus", "2024-02")
    kite = mem.add_fact("Priya", "lives_in", "Kyoto", "2019")
    mem.invalidate_fact(kite.id, "2022")
    mem.add_fact("Priya", "studied_at", "ETH", "2010", "2014")
    oops = mem.add_fact("Priya", "likes", "Jazz")
    mem.retract(oops.id, reason="misheard")
    mem.correct(orbit.id, source="payroll", reason="the source was missing")
    texts = {e.text for e in mem.timeline("Priya")}
    assert "ended: Priya -works_at-> Helix [2020, 2021-03): resigned" in texts
    assert "ended: Priya -works_at-> Orbit Labs [2021-03, 2024-02): superseded by Nimbus" in texts
    assert "ended: Priya -lives_in-> Kyoto [2019, 2022): invalidated" in texts
    assert "ended: Priya -studied_at-> ETH [2010, 2014)" in texts  # an end written with the fact
    assert "retracted: Priya -likes-> Jazz […, …): misheard" in texts
    assert ("corrected: Priya -works_at-> Orbit Labs [2021-03, 2024-02) -> Priya -works_at-> Orbit Labs "
            "[2021-03, 2024-02): the source was missing") in texts
    assert not any("(by " in t for t in texts)
    # the timeline of an object names the value that superseded it, though that one does not touch it
    mem.define_predicate("ceo", "one")
    mem.add_fact("Acme", "ceo", "Alice", "2015")
    mem.add_fact("Acme", "ceo", "Bob", "2022")
    assert [e.text for e in mem.timeline("Alice") if e.kind == "ended"] == [
        "ended: Acme -ceo-> Alice [2015, 2022): superseded by Bob"]

    mem.add_fact("Atlas", "database", "PostgreSQL", "2020")
    mysql = mem.add_fact("Atlas", "database", "MySQL", "2024-01")
    mem.retract(mysql.id)
    sqlite = mem.add_fact("Atlas", "database", "SQLite", "2025")
    mem.correct(sqlite.id, valid_from="2026")
    restored = [e.text for e in mem.timeline("Atlas") if e.kind == "restored"]
    assert restored == [
        "restored: Atlas -database-> PostgreSQL [2020, …) after the retraction of MySQL [2024-01, …) "
        "(was [2020, 2024-01))",
        "restored: Atlas -database-> PostgreSQL [2020, 2026) after the correction of SQLite [2025, …) "
        "(was [2020, 2025))",
    ]
