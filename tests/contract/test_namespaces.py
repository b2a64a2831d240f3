"""Namespaces on one store never see each other."""

from __future__ import annotations

import pytest

from chronomem import (
    EntityNotFoundError,
    FactNotFoundError,
    FakeClock,
    InvalidInputError,
    Memory,
    PredicateNotFoundError,
)

from ._helpers import MemoryFactory, obj_set


@pytest.fixture
def pair(make_memory: MemoryFactory) -> tuple[Memory, Memory]:
    clock = FakeClock("2025-01-01T00:00:00Z")
    return make_memory("alpha", clock=clock), make_memory("beta", clock=clock)


def test_facts_and_entities_are_isolated(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    a.add_fact("Kai", "works_at", "Orion", "2020")
    b.add_fact("Kai", "works_at", "Nimbus", "2021")
    assert obj_set(a.facts("Kai")) == {"Orion"}
    assert obj_set(b.facts("Kai")) == {"Nimbus"}
    assert obj_set(a.facts()) == {"Orion"}
    assert sorted(e.name for e in a.entities()) == ["Kai", "Orion"]
    assert sorted(e.name for e in b.entities()) == ["Kai", "Nimbus"]
    with pytest.raises(EntityNotFoundError):
        a.entity("Nimbus")
    assert a.facts("Nimbus", direction="both") == []


def test_predicates_are_isolated(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    a.define_predicate("ceo", cardinality="one")
    b.add_fact("Acme", "ceo", "Alice", "2020")
    b.add_fact("Acme", "ceo", "Bob", "2021")
    # in beta "ceo" is undeclared, so many-valued: both values stay open
    assert obj_set(b.facts("Acme", "ceo", as_of="2022")) == {"Alice", "Bob"}
    assert b.predicate("ceo").cardinality == "many"
    assert a.predicate("ceo").cardinality == "one"
    b.add_fact("Acme", "founded", 1999)
    with pytest.raises(PredicateNotFoundError):
        a.predicate("founded")
    assert [p.name for p in a.predicates()] == ["ceo"]


def test_aliases_are_isolated(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    a.alias("Robert Smith", "Bob")
    b.add_fact("Bob", "likes", "Jazz")  # a separate entity in beta: no conflict
    assert b.entity("Bob").name == "Bob"
    assert a.entity("Bob").name == "Robert Smith"
    assert a.facts("Robert Smith") == []


def test_fact_ids_are_not_visible_across_namespaces(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    f = a.add_fact("Kai", "works_at", "Orion")
    with pytest.raises(FactNotFoundError):
        b.fact(f.id)
    with pytest.raises(FactNotFoundError):
        b.correct(f.id, object="Nimbus")
    with pytest.raises(FactNotFoundError):
        b.retract(f.id)
    with pytest.raises(FactNotFoundError):
        b.erase(f.id, confirm=True)
    assert b.versions(f.id) == []
    assert a.fact(f.id).object == "Orion"


def test_erasing_an_entity_only_affects_its_namespace(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    a.add_fact("Kai", "works_at", "Orion")
    b.add_fact("Kai", "works_at", "Nimbus")
    a.erase(entity="Kai", confirm=True)
    assert obj_set(b.facts("Kai")) == {"Nimbus"}


def test_stats_per_namespace(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    a.add_fact("Kai", "works_at", "Orion")
    a.add_fact("Ana", "works_at", "Orion")
    b.add_fact("Kai", "works_at", "Nimbus")
    sa, sb = a.stats(), b.stats()
    assert (sa.namespace, sa.facts, sa.entities, sa.predicates) == ("alpha", 2, 3, 1)
    assert (sb.namespace, sb.facts, sb.entities, sb.predicates) == ("beta", 1, 2, 1)
    assert {"alpha", "beta"} <= set(sa.namespaces)
    assert set(sa.namespaces) == set(sb.namespaces)


def test_identical_writes_in_two_namespaces_are_two_facts(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    fa = a.add_fact("Kai", "works_at", "Orion", "2020")
    fb = b.add_fact("Kai", "works_at", "Orion", "2020")
    assert fa.id != fb.id
    assert fa.namespace == "alpha" and fb.namespace == "beta"


def test_reopening_a_namespace_sees_its_data(make_memory: MemoryFactory) -> None:
    first = make_memory("alpha")
    f = first.add_fact("Kai", "works_at", "Orion", "2020")
    again = make_memory("alpha")
    assert [x.id for x in again.facts("Kai")] == [f.id]
    assert make_memory("gamma").facts() == []


def test_namespace_name_must_be_a_non_empty_string(make_memory: MemoryFactory) -> None:
    with pytest.raises(InvalidInputError):
        make_memory("")
    with pytest.raises(InvalidInputError):
        make_memory("   ")
