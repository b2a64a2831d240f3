"""Reads: facts (filters, direction, limit), current, between, fact, evidence,
search_facts, stats and facts_sql."""

from __future__ import annotations

import json

import pytest

from chronomem import FactNotFoundError, FakeClock, InvalidInputError, Memory, Stats

from ._helpers import obj_set, utc


@pytest.fixture
def graph(mem: Memory) -> Memory:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    mem.add_fact("Acme", "ceo", "Bob", "2022")
    mem.add_fact("Acme", "based_in", "Oslo", "2015")
    mem.add_fact("Alice", "works_at", "Acme", "2018", "2023")
    mem.add_fact("Bob", "works_at", "Acme", "2021")
    mem.add_fact("Acme", "founded", 1999)
    return mem


def test_facts_out(graph: Memory) -> None:
    facts = graph.facts("Acme")
    assert all(f.subject == "Acme" for f in facts)
    assert sorted((f.predicate, str(f.object)) for f in facts) == [
        ("based_in", "Oslo"), ("ceo", "Alice"), ("ceo", "Bob"), ("founded", "1999")]


def test_reads_are_ordered_by_valid_from_then_by_when_each_version_was_written(mem: Memory) -> None:
    """One order on every backend and read shape: valid_from (an unknown
    start first), then the order the versions were stored in (a correction's
    new version comes after everything stored before it)."""
    mem.add_fact("Kai", "likes", "Tea", "2020")
    first_unknown = mem.add_fact("Kai", "likes", "Coffee")
    mem.add_fact("Kai", "likes", "Milk", "2019")
    mem.add_fact("Kai", "likes", "Juice")
    mem.add_fact("Kai", "visits", "Oslo", "2020")
    mem.correct(first_unknown.id, object="Cocoa")
    expected = ["Juice", "Cocoa", "Milk", "Tea", "Oslo"]
    assert [f.object for f in mem.facts("Kai")] == expected
    assert [f.object for f in mem.facts("Kai", as_of="2021")] == expected
    assert [f.object for f in mem.facts("Kai", limit=10)] == expected
    assert [f.object for f in mem.facts("Kai", limit=2)] == expected[:2]
    assert [f.object for f in mem.facts("Kai", "likes")] == expected[:4]
    assert [f.object for f in mem.facts(predicate="likes")] == expected[:4]
    assert [f.object for f in mem.current("Kai")] == expected


def test_a_limited_read_of_one_predicate_is_not_cut_by_the_others(mem: Memory) -> None:
    """The busy-entity cut-off for LIMITed reads is computed over all of a
    subject's predicates; a read filtered to one predicate must not use it
    (it would cut that predicate's rows at another predicate's starts)."""
    for year in range(2001, 2011):
        mem.add_fact("S", "a", f"A{year}", str(year))
    for year in range(2020, 2031):
        mem.add_fact("S", "b", f"B{year}", str(year))
    assert [f.object for f in mem.facts("S", "b", limit=2)] == ["B2020", "B2021"]
    assert [f.object for f in mem.facts("S", "b", as_of="2025", limit=3)] == ["B2020", "B2021", "B2022"]
    assert [f.object for f in mem.facts("S", limit=2)] == ["A2001", "A2002"]


def test_facts_in(graph: Memory) -> None:
    facts = graph.facts("Acme", direction="in")
    assert sorted(f.subject for f in facts) == ["Alice", "Bob"]
    assert all(f.object == "Acme" for f in facts)


def test_facts_both(graph: Memory) -> None:
    facts = graph.facts("Acme", direction="both")
    assert len(facts) == 6
    assert len({f.id for f in facts}) == 6


def test_self_loop_appears_once_in_both(mem: Memory) -> None:
    mem.add_fact("Narcissus", "admires", "Narcissus")
    assert len(mem.facts("Narcissus", direction="both")) == 1
    assert len(mem.facts("Narcissus", direction="in")) == 1
    assert len(mem.facts("Narcissus", direction="out")) == 1


def test_facts_filters_combine(graph: Memory) -> None:
    assert [f.object for f in graph.facts("Acme", "ceo", as_of="2021")] == ["Alice"]
    assert [f.object for f in graph.facts("Acme", "ceo", "Bob")] == ["Bob"]
    assert sorted(f.subject for f in graph.facts("Acme", "works_at", direction="in", as_of="2022")) == ["Alice", "Bob"]
    assert [f.subject for f in graph.facts("Acme", "works_at", direction="in", as_of="2023")] == ["Bob"]
    assert sorted(f.subject for f in graph.facts(predicate="works_at")) == ["Alice", "Bob"]
    assert sorted(f.subject for f in graph.facts(object="Acme")) == ["Alice", "Bob"]
    assert graph.facts("Acme", "works_at") == []


def test_facts_with_no_filters_returns_everything_believed(graph: Memory) -> None:
    assert len(graph.facts()) == 6
    assert len(graph.facts(as_of="2021")) == 5


def test_facts_limit(graph: Memory) -> None:
    assert len(graph.facts(limit=2)) == 2
    assert len(graph.facts("Acme", direction="both", limit=3)) == 3
    assert graph.facts(limit=0) == []
    assert len(graph.facts(limit=100)) == 6


@pytest.mark.parametrize("limit", [-1, "3", 2.5, True])
def test_facts_bad_limit(graph: Memory, limit: object) -> None:
    with pytest.raises(InvalidInputError):
        graph.facts(limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("direction", ["sideways", "", "OUT", None])
def test_facts_bad_direction(graph: Memory, direction: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        graph.facts("Acme", direction=direction)  # type: ignore[arg-type]
    assert "direction" in str(info.value)


def test_facts_as_of_none_returns_all_of_valid_history(graph: Memory) -> None:
    facts = graph.facts("Acme", "ceo")
    assert {str(f.object): f.current for f in facts} == {"Alice": False, "Bob": True}


def test_current(graph: Memory) -> None:
    assert obj_set(graph.current("Acme")) == {"Bob", "Oslo", "1999"}
    assert [f.object for f in graph.current("Acme", "ceo")] == ["Bob"]
    assert all(f.current for f in graph.current("Acme"))


def test_between(graph: Memory) -> None:
    got = graph.between("2020", "2021", subject="Acme", predicate="ceo")
    assert [f.object for f in got] == ["Alice"]
    got = graph.between("2021-06", "2022-06", subject="Acme", predicate="ceo")
    assert sorted(str(f.object) for f in got) == ["Alice", "Bob"]
    assert sorted(f.subject for f in graph.between("2023", None, subject="Acme", direction="in")) == ["Bob"]
    assert len(graph.between(None, "2016")) == 2  # Oslo and the founding literal (unknown start)


def test_between_with_known_at(graph: Memory) -> None:
    (alice,) = graph.facts("Acme", "ceo", "Alice")
    first = graph.versions(alice.id)[0]  # recorded before Bob, open-ended
    got = graph.between("2023", "2024", subject="Acme", predicate="ceo", known_at=first.system_from)
    assert [f.object for f in got] == ["Alice"]


def test_fact_by_id(graph: Memory) -> None:
    (bob,) = graph.facts("Acme", "ceo", "Bob")
    got = graph.fact(bob.id)
    assert got == bob
    with pytest.raises(FactNotFoundError):
        graph.fact("00000000-0000-7000-8000-000000000000")


def test_fact_to_dict_and_line(graph: Memory) -> None:
    (alice,) = graph.facts("Acme", "ceo", "Alice")
    d = alice.to_dict()
    json.dumps(d)
    assert d["valid_from"] == "2020" and d["valid_to"] == "2022"
    assert d["subject"] == "Acme" and d["object"] == "Alice"
    assert alice.line().startswith("Acme -ceo-> Alice [2020, 2022)")
    assert alice.id in alice.line()
    (founded,) = graph.facts("Acme", "founded")
    assert "-founded-> 1999" in founded.line()


def test_evidence(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", source="cv", episode_id="e1")
    mem.add_fact("Kai", "works_at", "Orion", source="web")
    ev = mem.evidence(f.id)
    assert [(e.source, e.episode_id) for e in ev] == [("cv", "e1"), ("web", None)]
    g = mem.add_fact("Kai", "likes", "Tea")
    assert mem.evidence(g.id) == []
    with pytest.raises(FactNotFoundError):
        mem.evidence("no-such-fact")


def test_search_facts(graph: Memory) -> None:
    got = graph.search_facts("acm")
    assert got and all("Acme" in (f.subject, str(f.object)) for f in got)
    assert {f.predicate for f in graph.search_facts("works")} == {"works_at"}
    assert graph.search_facts("zzz-nothing") == []
    assert len(graph.search_facts("acme", limit=2)) == 2
    assert {f.subject for f in graph.search_facts("ALICE")} >= {"Alice"}


def test_search_facts_as_of(graph: Memory) -> None:
    got = graph.search_facts("ceo", as_of="2021")
    assert [f.object for f in got] == ["Alice"]


def test_search_facts_rejects_empty_text(graph: Memory) -> None:
    with pytest.raises(InvalidInputError):
        graph.search_facts("  ")


def test_stats(graph: Memory) -> None:
    s = graph.stats()
    assert isinstance(s, Stats)
    assert s.namespace == "default"
    assert s.entities == 4           # Acme, Alice, Bob, Oslo (literals are not entities)
    assert s.predicates == 4
    assert s.facts == 6
    assert s.current == 4            # Bob as CEO, Oslo, 1999, Bob works_at
    assert s.ended == 2
    assert s.retracted == 0
    assert s.versions == 7           # Alice's CEO fact has two versions
    assert "default" in s.namespaces
    json.dumps(s.to_dict())


def test_stats_count_retractions(graph: Memory) -> None:
    (bob,) = graph.facts("Acme", "ceo", "Bob")
    graph.retract(bob.id)
    s = graph.stats()
    assert s.retracted == 1 and s.facts == 5


def test_empty_memory(mem: Memory) -> None:
    s = mem.stats()
    assert (s.entities, s.facts, s.current, s.versions, s.predicates, s.retracted) == (0, 0, 0, 0, 0, 0)
    assert mem.facts() == [] and mem.entities() == [] and mem.predicates() == []
    assert mem.conflicts() == [] and mem.volatility() == []


def test_facts_sql_returns_sql_and_parameters(graph: Memory) -> None:
    sql, params = graph.facts_sql("Acme", as_of="2021")
    assert isinstance(sql, str) and "SELECT" in sql.upper()
    assert isinstance(params, list)
    sql2, _ = graph.facts_sql("Nobody")
    assert isinstance(sql2, str) and sql2


def test_now_is_the_clock_and_reading_does_not_advance_it(mem: Memory, clock: FakeClock) -> None:
    assert mem.now() == clock.peek()
    assert mem.now().tzinfo is not None and mem.now() >= utc(2025, 1, 1)
    t = mem.now()
    mem.facts()
    mem.stats()
    assert mem.now() == t
    f = mem.add_fact("Kai", "likes", "Tea")
    assert f.system_from == t and mem.now() > t
