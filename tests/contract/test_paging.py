"""Paging on both backends: ``limit`` / ``offset`` of ``facts``, ``history``,
``timeline`` and ``conflicts`` tile the unpaged answer (same order, no row
twice, nothing lost), a page past the end is empty, and a bad ``offset`` is
a typed error."""

from __future__ import annotations

import pytest

from chronomem import InvalidInputError, Memory


@pytest.fixture
def busy(mem: Memory) -> Memory:
    mem.add_facts([{"subject": "Hub", "predicate": f"p{i % 3}", "object": f"v{i}", "literal": True,
                    "valid_from": f"{2000 + i % 7}-01-01"} for i in range(40)])
    mem.add_facts([{"subject": f"E{i}", "predicate": "knows", "object": "Hub", "valid_from": "2001"}
                   for i in range(5)])
    return mem


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_facts_pages_tile_the_answer(busy: Memory, direction: str) -> None:
    whole = [f.id for f in busy.facts("Hub", direction=direction)]
    paged: list[str] = []
    for offset in range(0, len(whole) + 7, 7):
        paged += [f.id for f in busy.facts("Hub", direction=direction, limit=7, offset=offset)]
    assert paged == whole
    assert [f.id for f in busy.facts("Hub", direction=direction, offset=3)] == whole[3:]
    assert busy.facts("Hub", direction=direction, limit=5, offset=len(whole)) == []


def test_analyses_page_in_their_order(busy: Memory) -> None:
    events = busy.timeline("Hub")
    assert busy.timeline("Hub", limit=10, offset=5) == events[5:15]
    assert busy.timeline("Hub", limit=10, offset=len(events)) == []
    history = busy.history("Hub", direction="both")
    assert busy.history("Hub", direction="both", limit=4, offset=40) == history[40:44]
    conflicts = busy.conflicts()
    assert len(conflicts) >= 3 and busy.conflicts(limit=1, offset=1) == conflicts[1:2]


@pytest.mark.parametrize("bad", [-1, True, "2", 1.0])
def test_bad_offset_is_typed(busy: Memory, bad: object) -> None:
    for read in (lambda: busy.facts("Hub", limit=5, offset=bad), lambda: busy.timeline("Hub", offset=bad),
                 lambda: busy.history("Hub", offset=bad), lambda: busy.conflicts(offset=bad)):
        with pytest.raises(InvalidInputError, match="offset"):
            read()
