"""Analyses over reads: timeline, diff, conflicts, volatility, neighbors, paths."""

from __future__ import annotations

import json

import pytest

from chronomem import Conflict, EntityNotFoundError, InvalidInputError, Memory

from ._helpers import utc

# -- timeline --------------------------------------------------------------------


def test_timeline_events_are_sorted_and_have_sentences(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice", "2020")
    b = mem.add_fact("Acme", "ceo", "Bob", "2022")
    events = mem.timeline("Acme")
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert all(e.text and e.kind and e.axis in ("valid", "system") for e in events)
    valid = [(e.kind, e.at, e.fact_id) for e in events if e.axis == "valid"]
    assert ("started", utc(2020), a.id) in valid
    assert ("ended", utc(2022), a.id) in valid
    assert ("started", utc(2022), b.id) in valid
    recorded = [e for e in events if e.kind == "recorded"]
    assert {e.fact_id for e in recorded} == {a.id, b.id}
    assert all(e.axis == "system" for e in recorded)
    ended = next(e for e in events if e.kind == "ended")
    assert "Alice" in ended.text and "Acme" in ended.text
    json.dumps([e.to_dict() for e in events])


def test_timeline_includes_incoming_edges_and_corrections(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2019")
    mem.correct(f.id, valid_from="2018")
    r = mem.add_fact("Ana", "likes", "Orion")
    mem.retract(r.id)
    events = mem.timeline("Orion")
    kinds = [e.kind for e in events]
    assert "corrected" in kinds and "retracted" in kinds
    corrected = next(e for e in events if e.kind == "corrected")
    assert "2019" in corrected.text and "2018" in corrected.text
    started = next(e for e in events if e.kind == "started")
    assert started.at == utc(2018) and started.precision is not None and started.precision.label == "year"


def test_timeline_window(mem: Memory) -> None:
    mem.add_fact("Kai", "lived_in", "Oslo", "2010", "2015")
    mem.add_fact("Kai", "lived_in", "Rome", "2015", "2020")
    events = mem.timeline("Kai", start="2012", end="2018")
    assert [(e.kind, e.at) for e in events] == [("ended", utc(2015)), ("started", utc(2015))]


def test_timeline_unknown_entity(mem: Memory) -> None:
    with pytest.raises(EntityNotFoundError):
        mem.timeline("Nobody")


# -- diff ------------------------------------------------------------------------


def test_diff_single_valued_reports_changed(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    mem.add_fact("Acme", "ceo", "Bob", "2022")
    d = mem.diff("2021", "2023", subject="Acme")
    assert [(c.subject, c.predicate, c.old.object, c.new.object) for c in d.changed] == [
        ("Acme", "ceo", "Alice", "Bob")]
    assert d.added == () and d.removed == ()
    assert not d.empty
    assert (d.t1, d.t2, d.axis) == (utc(2021), utc(2023), "valid")
    json.dumps(d.to_dict())


def test_diff_many_valued_reports_added_and_removed_one_by_one(mem: Memory) -> None:
    mem.add_fact("Kai", "speaks", "Norwegian", "2000")
    mem.add_fact("Kai", "speaks", "German", "2005", "2015")
    mem.add_fact("Kai", "speaks", "English", "2010")
    d = mem.diff("2008", "2020", subject="Kai")
    assert d.changed == ()
    assert [f.object for f in d.added] == ["English"]
    assert [f.object for f in d.removed] == ["German"]
    assert [f.object for f in d.unchanged] == ["Norwegian"]


def test_diff_with_nothing_changed_is_empty(mem: Memory) -> None:
    mem.add_fact("Kai", "speaks", "Norwegian", "2000")
    d = mem.diff("2001", "2002")
    assert d.empty and [f.object for f in d.unchanged] == ["Norwegian"]


def test_diff_predicate_filter(mem: Memory) -> None:
    mem.add_fact("Kai", "speaks", "Norwegian", "2000")
    mem.add_fact("Kai", "lives_in", "Oslo", "2005")
    d = mem.diff("2001", "2006", subject="Kai", predicate="lives_in")
    assert [f.object for f in d.added] == ["Oslo"] and d.unchanged == ()


def test_diff_on_the_system_axis(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    t1 = f.system_from
    g = mem.correct(f.id, object="Bergen")
    h = mem.add_fact("Kai", "likes", "Tea")
    d = mem.diff(t1, h.system_from, subject="Kai", axis="system")
    assert d.axis == "system"
    assert [(c.old.object, c.new.object) for c in d.changed] == [("Oslo", "Bergen")]
    assert [x.object for x in d.added] == ["Tea"]
    assert d.removed == ()
    r = mem.retract(h.id)
    d2 = mem.diff(g.system_from, r.system_to, axis="system")  # type: ignore[arg-type]
    assert d2.empty  # Tea came and went in between
    d3 = mem.diff(h.system_from, r.system_to, axis="system")  # type: ignore[arg-type]
    assert [x.object for x in d3.removed] == ["Tea"]


def test_diff_bad_axis(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mem.diff("2020", "2021", axis="sideways")


# -- conflicts -------------------------------------------------------------------


def test_api_writes_never_produce_a_cardinality_conflict(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    for name, start, end in [("A", "2010", None), ("B", "2012", "2014"), ("C", None, "2011"), ("D", "2011-06", None),
                             ("A", "2013", None), ("E", "2009", "2030")]:
        mem.add_fact("Acme", "ceo", name, start, end)
    mem.add_facts([("Acme", "ceo", "F", "2016"), ("Acme", "ceo", "G", "2015", "2017")])
    f = mem.add_fact("Globex", "ceo", "H", "2018")
    mem.correct(f.id, valid_from="2017")
    assert [c for c in mem.conflicts() if c.kind == "cardinality"] == []
    for when in ("2009", "2011", "2013", "2015", "2016-06", "2020", "2040"):
        assert mem.conflicts(as_of=when) == []


def test_undeclared_predicate_with_two_values_is_a_review_conflict(mem: Memory) -> None:
    mem.add_fact("Kai", "lives_in", "Oslo", "2010")
    mem.add_fact("Kai", "lives_in", "Rome", "2015", "2018")
    (c,) = mem.conflicts()
    assert isinstance(c, Conflict)
    assert (c.subject, c.predicate, c.kind) == ("Kai", "lives_in", "review")
    assert sorted(str(f.object) for f in c.facts) == ["Oslo", "Rome"]
    assert (c.overlap_from, c.overlap_to) == (utc(2015), utc(2018))
    assert mem.conflicts(as_of="2012") == []
    assert len(mem.conflicts(as_of="2016")) == 1
    json.dumps(c.to_dict())


def test_consecutive_values_are_no_conflict(mem: Memory) -> None:
    mem.add_fact("Kai", "lives_in", "Oslo", "2010", "2015")
    mem.add_fact("Kai", "lives_in", "Rome", "2015")
    assert mem.conflicts() == []


def test_declared_many_predicate_is_never_a_conflict(mem: Memory) -> None:
    mem.define_predicate("speaks", cardinality="many")
    mem.add_fact("Kai", "speaks", "Norwegian")
    mem.add_fact("Kai", "speaks", "English")
    assert mem.conflicts() == []


# -- volatility ------------------------------------------------------------------


def test_volatility_orders_by_changes(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    for name, year in [("A", 2010), ("B", 2012), ("C", 2014), ("D", 2016)]:
        mem.add_fact("Acme", "ceo", name, str(year))
    mem.add_fact("Globex", "ceo", "X", "2010")
    mem.add_fact("Globex", "ceo", "Y", "2020")
    vols = mem.volatility()
    assert [(v.subject, v.predicate, v.changes, v.values) for v in vols] == [
        ("Acme", "ceo", 3, 4), ("Globex", "ceo", 1, 2)]
    acme = vols[0]
    assert acme.mean_duration_days == pytest.approx((730 + 731 + 730) / 3)  # 2012 is a leap year
    assert len(mem.volatility(top=1)) == 1
    json.dumps([v.to_dict() for v in vols])


def test_volatility_window(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    for name, year in [("A", 2010), ("B", 2012), ("C", 2014), ("D", 2016)]:
        mem.add_fact("Acme", "ceo", name, str(year))
    (v,) = mem.volatility(start="2015", end="2017")
    assert (v.changes, v.values) == (1, 2)


# -- neighbors and paths ---------------------------------------------------------------


@pytest.fixture
def network(mem: Memory) -> Memory:
    mem.add_fact("Ana", "knows", "Ben", "2010")
    mem.add_fact("Ben", "works_at", "Orion", "2015", "2020")
    mem.add_fact("Cleo", "works_at", "Orion", "2018")
    mem.add_fact("Cleo", "knows", "Dan", "2019")
    mem.add_fact("Ana", "age", 40)
    return mem


def test_neighbors_one_hop(network: Memory) -> None:
    got = network.neighbors("Ben", as_of="2016")
    assert sorted(n.entity for n in got) == ["Ana", "Orion"]
    assert all(n.hops == 1 and len(n.via) == 1 for n in got)


def test_neighbors_two_hops_respect_valid_time(network: Memory) -> None:
    at_2016 = {n.entity: n.hops for n in network.neighbors("Ana", hops=2, as_of="2016")}
    assert at_2016 == {"Ben": 1, "Orion": 2}
    at_2019 = {n.entity: n.hops for n in network.neighbors("Ana", hops=3, as_of="2019")}
    assert at_2019 == {"Ben": 1, "Orion": 2, "Cleo": 3}
    at_2021 = {n.entity: n.hops for n in network.neighbors("Ana", hops=3, as_of="2021")}
    assert at_2021 == {"Ben": 1}


def test_neighbors_errors(network: Memory) -> None:
    with pytest.raises(EntityNotFoundError):
        network.neighbors("Nobody")
    with pytest.raises(InvalidInputError):
        network.neighbors("Ana", hops=0)


def test_path_valid_at_one_time_but_not_another(network: Memory) -> None:
    paths = network.paths("Ana", "Dan", max_hops=5, as_of="2019-06")
    assert [p.entities for p in paths] == [("Ana", "Ben", "Orion", "Cleo", "Dan")]
    assert paths[0].hops == 4
    assert [f.predicate for f in paths[0].facts] == ["knows", "works_at", "works_at", "knows"]
    # Ben left Orion in 2020: no path any more
    assert network.paths("Ana", "Dan", max_hops=5, as_of="2021") == []
    # and before Cleo joined there was none either
    assert network.paths("Ana", "Dan", max_hops=5, as_of="2016") == []


def test_paths_max_hops(network: Memory) -> None:
    assert network.paths("Ana", "Dan", max_hops=3, as_of="2019-06") == []
    assert len(network.paths("Ana", "Orion", max_hops=2, as_of="2016")) == 1


def test_paths_errors(network: Memory) -> None:
    with pytest.raises(EntityNotFoundError):
        network.paths("Ana", "Nobody")
    with pytest.raises(InvalidInputError):
        network.paths("Ana", "Dan", max_hops=0)
