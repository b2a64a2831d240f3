"""The analyses behind the web views: timeline bars (``fact_bars``) and
``diff`` / ``conflicts`` / ``neighbors`` / ``paths`` pinned in system time."""

from __future__ import annotations

import json

import pytest

from chronomem import EntityNotFoundError, InvalidInputError, Memory
from chronomem.core.time import TimeLike

from ._helpers import US, utc


def _rows(mem: Memory, entity: str, *, as_of: TimeLike | None = None,
          known_at: TimeLike | None = None) -> list[tuple[object, ...]]:
    """(group, label, status, corrected, ended_by) of each bar, in order."""
    return [(b.group, b.label, b.status, b.corrected, b.ended_by)
            for b in mem.fact_bars(entity, as_of=as_of, known_at=known_at)]


# -- timeline bars -----------------------------------------------------------------


def _acme(mem: Memory) -> dict[str, str]:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")  # supersedes Alice at 2022
    mem.add_fact("Acme", "based_in", "Oslo", "2010", "2012")  # ended
    perl = mem.add_fact("Acme", "uses", "Perl", "2000")
    mem.invalidate("Acme", "uses", "Perl", "2020")  # invalidated
    mem.add_fact("Acme", "plans", "Mars", "2030")  # future
    tea = mem.add_fact("Acme", "likes", "Tea")
    mem.retract(tea.id)  # retracted
    sector = mem.add_fact("Acme", "sector", "Retail", "2016")
    mem.correct(sector.id, object="Finance")  # corrected
    mem.add_fact("Acme", "employees", 120, "2019")  # a literal
    kai = mem.add_fact("Kai", "works_at", "Acme", "2019")  # incoming
    return {"alice": alice.id, "bob": bob.id, "perl": perl.id, "tea": tea.id, "sector": sector.id,
            "kai": kai.id}


def test_bar_status_for_each_kind_of_fact(mem: Memory) -> None:
    ids = _acme(mem)
    assert _rows(mem, "Acme") == [
        ("based_in", "Oslo", "ended", False, None),
        ("ceo", "Alice", "superseded", False, "superseded"),
        ("ceo", "Bob", "valid", False, None),
        ("employees", "120", "valid", False, None),
        ("likes", "Tea", "retracted", False, None),
        ("plans", "Mars", "not_yet", False, None),
        ("sector", "Finance", "valid", True, None),
        ("uses", "Perl", "invalidated", False, "invalidated"),
        ("← works_at", "Kai", "valid", False, None),
    ]
    bars = {b.fact_id: b for b in mem.fact_bars("acme")}  # a name resolves like any read
    alice = bars[ids["alice"]]
    assert (alice.start, alice.end) == (utc(2015), utc(2022))
    assert alice.target == "Alice"
    assert alice.title == f"Acme -ceo-> Alice [2015, 2022) [{ids['alice']}] — superseded (by {ids['bob']})"
    # a bar is judged at the cursor: its title leaves out the line's "(current)" (true now)
    assert bars[ids["sector"]].title.endswith("[2016, …) [" + ids["sector"] + "] — valid, corrected")
    assert bars[ids["kai"]].target == "Kai"
    assert next(b for b in bars.values() if b.group == "employees").target is None
    tea = bars[ids["tea"]]
    assert (tea.start, tea.end, tea.status) == (None, None, "retracted")
    d = alice.to_dict()
    assert d["start"] == "2015-01-01T00:00:00Z" and d["end"] == "2022-01-01T00:00:00Z"
    assert d["status"] == "superseded" and d["ended_by"] == "superseded"
    json.dumps([b.to_dict() for b in bars.values()])


def test_bar_status_is_judged_at_as_of(mem: Memory) -> None:
    _acme(mem)
    assert [(g, lab, st) for g, lab, st, _, _ in _rows(mem, "Acme", as_of="2018")] == [
        ("based_in", "Oslo", "ended"),
        ("ceo", "Alice", "valid"),
        ("ceo", "Bob", "not_yet"),
        ("employees", "120", "not_yet"),
        ("likes", "Tea", "retracted"),
        ("plans", "Mars", "not_yet"),
        ("sector", "Finance", "valid"),
        ("uses", "Perl", "valid"),
        ("← works_at", "Kai", "not_yet"),
    ]


def test_bars_as_known_before_a_correction_and_a_supersession(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    retail = mem.add_fact("Acme", "sector", "Retail", "2016")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    fixed = mem.correct(retail.id, object="Finance")
    assert _rows(mem, "Acme", known_at=fixed.system_from - US) == [
        ("ceo", "Alice", "superseded", False, "superseded"),
        ("ceo", "Bob", "valid", False, None),
        ("sector", "Retail", "valid", False, None),
    ]
    assert _rows(mem, "Acme", known_at=bob.system_from - US) == [
        ("ceo", "Alice", "valid", False, None),
        ("sector", "Retail", "valid", False, None),
    ]
    assert _rows(mem, "Acme", known_at=alice.system_from) == [("ceo", "Alice", "valid", False, None)]
    assert _rows(mem, "Acme", known_at=alice.system_from - US) == []
    assert _rows(mem, "Acme", known_at=fixed.system_from)[-1] == ("sector", "Finance", "valid", True, None)


def test_retracting_a_new_value_restores_the_old_bar_uncorrected(mem: Memory) -> None:
    mem.define_predicate("lives in", "one")
    berlin = mem.add_fact("Dana", "lives in", "Berlin", "2021-05")
    paris = mem.add_fact("Dana", "lives in", "Paris", "2023-02")
    assert _rows(mem, "Dana") == [("lives in", "Berlin", "superseded", False, "superseded"),
                                  ("lives in", "Paris", "valid", False, None)]
    mem.retract(paris.id)
    bars = mem.fact_bars("Dana")
    assert [(b.fact_id, b.status, b.corrected, b.end) for b in bars] == [
        (berlin.id, "valid", False, None), (paris.id, "retracted", False, None)]


def test_fact_bars_of_an_unknown_entity(mem: Memory) -> None:
    with pytest.raises(EntityNotFoundError):
        mem.fact_bars("Nobody")


# -- diff pinned on the other axis ---------------------------------------------------


def test_diff_valid_axis_as_known_at(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    bea = mem.correct(bob.id, object="Bea")
    now = mem.diff("2020", "2023", "Acme", "ceo")
    assert [(c.old.object, c.new.object) for c in now.changed] == [("Alice", "Bea")]
    before = mem.diff("2020", "2023", "Acme", "ceo", known_at=bea.system_from - US)
    assert [(c.old.object, c.new.object) for c in before.changed] == [("Alice", "Bob")]
    assert (before.added, before.removed) == ((), ())
    early = mem.diff("2020", "2023", "Acme", "ceo", known_at=alice.system_from)
    assert early.empty and [f.object for f in early.unchanged] == ["Alice"]


def test_diff_system_axis_as_of(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    t1, t2 = alice.system_from, bob.system_from
    anywhere = mem.diff(t1, t2, axis="system")
    assert [f.object for f in anywhere.added] == ["Bob"] and anywhere.removed == ()
    assert [(c.old.valid_to, c.new.valid_to) for c in anywhere.changed] == [(None, utc(2022))]
    at_2023 = mem.diff(t1, t2, axis="system", as_of="2023")
    assert [f.object for f in at_2023.added] == ["Bob"]
    assert [f.object for f in at_2023.removed] == ["Alice"]
    assert at_2023.changed == ()
    at_2016 = mem.diff(t1, t2, axis="system", as_of="2016")
    assert at_2016.added == () and at_2016.removed == ()
    assert [(c.old.valid_to, c.new.valid_to) for c in at_2016.changed] == [(None, utc(2022))]


def test_diff_rejects_the_other_axis_parameter(mem: Memory) -> None:
    mem.add_fact("Acme", "ceo", "Alice", "2015")
    with pytest.raises(InvalidInputError, match="known_at"):
        mem.diff("2020", "2023", axis="system", known_at="2025")
    with pytest.raises(InvalidInputError, match="as_of"):
        mem.diff("2020", "2023", axis="valid", as_of="2020")
    with pytest.raises(InvalidInputError, match="as_of"):
        mem.diff("2020", "2023", as_of="2020")
    with pytest.raises(InvalidInputError, match="axis"):
        mem.diff("2020", "2023", axis="both")


# -- conflicts, neighbours and paths as known at -------------------------------------


def test_conflicts_as_known_before_the_correction_that_removed_them(mem: Memory) -> None:
    oslo = mem.add_fact("Acme", "hq", "Oslo", "2010")
    bergen = mem.add_fact("Acme", "hq", "Bergen", "2015")
    fixed = mem.correct(oslo.id, valid_to="2015")
    assert mem.conflicts() == []
    found = mem.conflicts(known_at=fixed.system_from - US)
    assert [(c.subject, c.predicate, c.kind, {f.id for f in c.facts}, c.overlap_from, c.overlap_to)
            for c in found] == [("Acme", "hq", "review", {oslo.id, bergen.id}, utc(2015), None)]
    assert len(mem.conflicts("2016", known_at=fixed.system_from - US)) == 1
    assert mem.conflicts("2012", known_at=fixed.system_from - US) == []
    assert mem.conflicts(known_at=oslo.system_from) == []


def test_neighbors_and_paths_as_known_before_an_edge(mem: Memory) -> None:
    first = mem.add_fact("Kai", "works_at", "Acme", "2019")
    later = mem.add_fact("Kai", "knows", "Ana", "2019")
    assert [n.entity for n in mem.neighbors("Kai")] == ["Acme", "Ana"]
    assert [n.entity for n in mem.neighbors("Kai", known_at=first.system_from)] == ["Acme"]
    assert [n.entity for n in mem.neighbors("Kai", known_at=later.system_from - US)] == ["Acme"]
    assert [(n.entity, n.hops) for n in mem.neighbors("Acme", 2)] == [("Kai", 1), ("Ana", 2)]
    assert [(n.entity, n.hops) for n in mem.neighbors("Acme", 2, known_at=first.system_from)] == [("Kai", 1)]
    assert [n.entity for n in mem.neighbors("Kai", as_of="2018", known_at=later.system_from)] == []
    assert [p.entities for p in mem.paths("Ana", "Acme")] == [("Ana", "Kai", "Acme")]
    assert mem.paths("Ana", "Acme", known_at=later.system_from - US) == []
