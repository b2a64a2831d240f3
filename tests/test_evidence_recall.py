"""``recall``'s fact read: a LIMITed read of one entity's facts returns exactly
the first rows of the full, ordered read (the SQLite store bounds it with a
``valid_from`` cut-off found per predicate instead of sorting every row of a
busy entity). Real stores on every backend (``tests/conftest.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from chronomem import FakeClock, Memory
from chronomem.service.evidence import default_embedder


@pytest.fixture
def busy(make_memory: Any) -> Memory:
    """One entity with many predicates, tied start times, values ended in
    valid time (a single-valued predicate), entity and literal objects, and
    incoming edges that interleave with its own facts."""
    mem: Memory = make_memory(clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0))
    mem.define_predicate("status", cardinality="one")
    rows: list[Any] = []
    for i in range(240):
        year = 2015 + i % 9
        month = 1 + (i * 7) % 12
        rows.append(("Ada", f"rel{i % 7}", f"thing {i % 31}", f"{year}-{month:02d}"))
    for i in range(60):
        rows.append((f"Person {i % 13}", "knows", "Ada", f"{2016 + i % 8}-{1 + i % 12:02d}"))
    rows.append(("Ada", "rel0", "thing 0", "2015-01"))  # a re-add: deduplicated, not a new row
    mem.add_facts(rows)
    for i in range(12):  # each value ends where the next starts
        mem.add_fact("Ada", "status", f"state {i}", f"{2014 + i}-03-01", literal=True)
    mem.add_fact("Ada", "note", "x", "2013-05", "2014-01", literal=True)  # ended long ago
    return mem


def _key(facts: list[Any]) -> list[tuple[str, int]]:
    return [(f.id, f.version) for f in facts]


@pytest.mark.parametrize("direction", ["out", "both"])
@pytest.mark.parametrize("as_of", [None, "2013-06-01", "2016-02-01", "2019-07-15", "2024-12-31"])
def test_limited_read_is_the_prefix_of_the_full_read(busy: Memory, direction: str, as_of: str | None) -> None:
    full = busy.facts("Ada", as_of=as_of, direction=direction)
    assert full, "the fixture must give every as_of some facts"
    for limit in (0, 1, 2, 7, 40, len(full) - 1, len(full), len(full) + 3):
        if limit < 0:
            continue
        got = busy.facts("Ada", as_of=as_of, direction=direction, limit=limit)
        assert _key(got) == _key(full[:limit]), (limit, as_of, direction)


def test_limited_read_with_ties_at_the_cut_off(make_memory: Any) -> None:
    """Many facts start at the same instant: rows tied with the limit-th one
    must still come in the full read's order."""
    mem: Memory = make_memory(clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0))
    mem.add_facts([("Bo", f"p{i % 3}", f"v {i}", "2020-01" if i % 2 else "2021-01") for i in range(90)])
    full = mem.facts("Bo", as_of="2024-01-01", direction="both")
    assert len(full) == 90
    for limit in (1, 10, 44, 45, 46, 89):
        assert _key(mem.facts("Bo", as_of="2024-01-01", direction="both", limit=limit)) == _key(full[:limit])


def test_recall_reads_the_same_facts_as_the_full_read(busy: Memory) -> None:
    busy.use_embedder(default_embedder())
    busy.add_episode("Ada said the project is on track.", occurred_at="2024-05-01", speaker="Ada")
    r = busy.recall("What do we know about Ada?", at="2024-12-31", budget_tokens=100_000)
    assert r.entities == ("Ada",)
    expected = busy.facts("Ada", as_of="2024-12-31", direction="both")[:40]
    assert [f.id for f in r.facts] == [f.id for f in expected]


def test_limited_read_inside_a_read_snapshot(busy: Memory) -> None:
    """The cut-off and the read share one snapshot; inside a caller's snapshot
    they use that one (no nested BEGIN)."""
    full = busy.facts("Ada", as_of="2019-07-15", direction="both")
    with busy.store.read():
        got = busy.facts("Ada", as_of="2019-07-15", direction="both", limit=9)
    assert _key(got) == _key(full[:9])
    busy.add_fact("Ada", "rel0", "thing 99", "2014-02")  # an earlier start moves into the first rows
    after = busy.facts("Ada", as_of="2019-07-15", direction="both", limit=9)
    assert _key(after) == _key(busy.facts("Ada", as_of="2019-07-15", direction="both")[:9])
    assert after[0].object == "thing 99"
