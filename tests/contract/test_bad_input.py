"""Bad input of every kind raises its typed :class:`ChronomemError` subclass,
with a message, and writes nothing."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest

from chronomem import (
    ChronomemError,
    EntityNotFoundError,
    FactNotFoundError,
    InvalidInputError,
    InvalidIntervalError,
    InvalidNameError,
    InvalidTimeError,
    LimitExceededError,
    Memory,
)

from ._helpers import snapshot

Call = Callable[[Memory], object]


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020", source="seed")
    mem.add_fact("Kai", "works_at", "Acme", "2019")
    mem.add_fact("Kai", "age", 30)
    return mem


WRITE_CASES: list[tuple[str, Call, type[ChronomemError]]] = [
    # bad times and intervals
    ("bad valid_from", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "2025-13-45"), InvalidTimeError),
    ("bad valid_to", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "2020", "soon"), InvalidTimeError),
    ("int time", lambda m: m.add_fact("Ana", "works_at", "Nimbus", 2020), InvalidTimeError),  # type: ignore[arg-type]
    # written times stay strict: a stored "yesterday" would be another fact each day (phrases are for reads)
    ("phrase valid_from", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "yesterday"), InvalidTimeError),
    ("phrase valid_to", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "2020", "next year"), InvalidTimeError),
    ("phrase ended", lambda m: m.invalidate("Kai", "works_at", "Acme", ended="last March"), InvalidTimeError),
    ("phrase correct", lambda m: m.correct(m.facts("Kai")[0].id, valid_from="April 2019"), InvalidTimeError),
    ("phrase occurred_at", lambda m: m.add_episode("hi", occurred_at="yesterday"), InvalidTimeError),
    ("reversed interval", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "2021", "2020"), InvalidIntervalError),
    ("empty interval", lambda m: m.add_fact("Ana", "works_at", "Nimbus", "2021", "2021"), InvalidIntervalError),
    # names
    ("empty subject", lambda m: m.add_fact("", "works_at", "Nimbus"), InvalidNameError),
    ("blank subject", lambda m: m.add_fact(" _-_ ", "works_at", "Nimbus"), InvalidNameError),
    ("empty predicate", lambda m: m.add_fact("Ana", "", "Nimbus"), InvalidNameError),
    ("empty object", lambda m: m.add_fact("Ana", "works_at", "   "), InvalidNameError),
    ("int subject", lambda m: m.add_fact(42, "works_at", "Nimbus"), InvalidNameError),  # type: ignore[arg-type]
    ("list predicate", lambda m: m.add_fact("Ana", ["p"], "Nimbus"), InvalidNameError),  # type: ignore[arg-type]
    ("long name", lambda m: m.add_fact("x" * 1001, "works_at", "Nimbus"), LimitExceededError),
    ("None subject", lambda m: m.add_fact(None, "works_at", "Nimbus"), InvalidInputError),  # type: ignore[arg-type]
    ("None object", lambda m: m.add_fact("Ana", "works_at", None), InvalidInputError),
    # wrong types / values
    ("object list", lambda m: m.add_fact("Ana", "works_at", ["Nimbus"]), InvalidInputError),
    ("object nan", lambda m: m.add_fact("Ana", "score", math.nan), InvalidInputError),
    ("confidence str", lambda m: m.add_fact("Ana", "works_at", "Nimbus", confidence="high"), InvalidInputError),  # type: ignore[arg-type]
    ("confidence > 1", lambda m: m.add_fact("Ana", "works_at", "Nimbus", confidence=1.5), InvalidInputError),
    ("confidence bool", lambda m: m.add_fact("Ana", "works_at", "Nimbus", confidence=True), InvalidInputError),
    ("source int", lambda m: m.add_fact("Ana", "works_at", "Nimbus", source=7), InvalidInputError),  # type: ignore[arg-type]
    ("episode list", lambda m: m.add_fact("Ana", "works_at", "Nimbus", episode_id=["e"]), InvalidInputError),  # type: ignore[arg-type]
    ("properties list", lambda m: m.add_fact("Ana", "works_at", "Nimbus", properties=[1, 2]), InvalidInputError),  # type: ignore[arg-type]
    ("properties str", lambda m: m.add_fact("Ana", "works_at", "Nimbus", properties="x"), InvalidInputError),  # type: ignore[arg-type]
    ("properties not json", lambda m: m.add_fact("Ana", "works_at", "Nimbus", properties={"x": object()}),
     InvalidInputError),
    ("supersede not bool", lambda m: m.add_fact("Ana", "works_at", "Nimbus", supersede="no"), InvalidInputError),  # type: ignore[arg-type]
    ("supersede False on one", lambda m: m.add_fact("Acme", "ceo", "Bob", "2022", supersede=False),
     InvalidInputError),
    # unknown fields
    ("unknown field in batch", lambda m: m.add_facts([{"subject": "Ana", "predicate": "p", "object": "x",
                                                       "colour": "red"}]), InvalidInputError),
    ("unknown correct field", lambda m: m.correct(m.facts("Kai")[0].id, colour="red"), InvalidInputError),
    # batches
    ("batch not a list", lambda m: m.add_facts(5), InvalidInputError),  # type: ignore[arg-type]
    ("batch item not a dict", lambda m: m.add_facts(["Ana works at Nimbus"]), InvalidInputError),
    ("batch short tuple", lambda m: m.add_facts([("Ana", "works_at")]), InvalidInputError),
    # other writes
    ("set_entity empty", lambda m: m.set_entity(""), InvalidNameError),
    ("set_entity props list", lambda m: m.set_entity("Ana", properties=[("a", 1)]), InvalidInputError),  # type: ignore[arg-type]
    ("set_entity type int", lambda m: m.set_entity("Ana", type=5), InvalidInputError),  # type: ignore[arg-type]
    ("alias empty", lambda m: m.alias("Acme", ""), InvalidNameError),
    ("define bad cardinality", lambda m: m.define_predicate("boss", cardinality="two"), InvalidInputError),
    ("define empty", lambda m: m.define_predicate(" "), InvalidNameError),
    ("invalidate bad time", lambda m: m.invalidate("Kai", "works_at", "Acme", ended="later"), InvalidTimeError),
    ("invalidate unknown", lambda m: m.invalidate("Kai", "works_at", "Nimbus"), FactNotFoundError),
    ("invalidate_fact bad time", lambda m: m.invalidate_fact(m.facts("Kai")[0].id, ended="later"), InvalidTimeError),
    ("invalidate_fact unknown id", lambda m: m.invalidate_fact("nope"), FactNotFoundError),
    ("correct unknown id", lambda m: m.correct("nope", object="x"), FactNotFoundError),
    ("retract unknown id", lambda m: m.retract("nope"), FactNotFoundError),
    ("merge unknown", lambda m: m.merge("Kai", "Nobody"), EntityNotFoundError),
    ("merge same", lambda m: m.merge("Kai", "kai"), InvalidInputError),
    ("unmerge unknown", lambda m: m.unmerge("nope"), InvalidInputError),
    ("erase unknown entity", lambda m: m.erase(entity="Nobody", confirm=True), EntityNotFoundError),
]


@pytest.mark.parametrize(("label", "call", "error"), WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_bad_write_raises_typed_error_and_writes_nothing(seeded: Memory, label: str, call: Call,
                                                         error: type[ChronomemError]) -> None:
    before = snapshot(seeded)
    with pytest.raises(error) as info:
        call(seeded)
    assert str(info.value).strip(), f"{label}: empty message"
    assert snapshot(seeded) == before, f"{label} changed the store"


READ_CASES: list[tuple[str, Call, type[ChronomemError]]] = [
    ("bad direction", lambda m: m.facts("Kai", direction="up"), InvalidInputError),
    ("bad history direction", lambda m: m.history("Kai", direction="up"), InvalidInputError),
    ("bad limit", lambda m: m.facts(limit=-1), InvalidInputError),
    # read bases take time phrases ("yesterday", "April 2022"): only a truly bad value is an error
    ("bad as_of", lambda m: m.facts(as_of="the day after never"), InvalidTimeError),
    ("bad as_of date", lambda m: m.facts(as_of="2025-13-45"), InvalidTimeError),
    ("bad diff phrase", lambda m: m.diff("2020", "someday"), InvalidTimeError),
    ("bad between phrase", lambda m: m.between("this Monday", "2021"), InvalidTimeError),
    ("bad known_at", lambda m: m.facts(known_at=[2020]), InvalidTimeError),  # type: ignore[arg-type]
    ("int subject", lambda m: m.facts(7), InvalidNameError),  # type: ignore[arg-type]
    ("between reversed", lambda m: m.between("2021", "2020"), InvalidIntervalError),
    ("diff bad axis", lambda m: m.diff("2020", "2021", axis="both"), InvalidInputError),
    ("timeline unknown", lambda m: m.timeline("Nobody"), EntityNotFoundError),
    ("neighbors hops 0", lambda m: m.neighbors("Kai", hops=0), InvalidInputError),
    ("neighbors hops str", lambda m: m.neighbors("Kai", hops="2"), InvalidInputError),  # type: ignore[arg-type]
    ("paths hops str", lambda m: m.paths("Kai", "Acme", max_hops="2"), InvalidInputError),  # type: ignore[arg-type]
    ("paths limit str", lambda m: m.paths("Kai", "Acme", limit="2"), InvalidInputError),  # type: ignore[arg-type]
    ("volatility top str", lambda m: m.volatility(top="x"), InvalidInputError),  # type: ignore[arg-type]
    ("volatility top negative", lambda m: m.volatility(top=-1), InvalidInputError),
    ("search empty", lambda m: m.search_facts(""), InvalidInputError),
    ("search limit str", lambda m: m.search_facts("kai", limit="x"), InvalidInputError),  # type: ignore[arg-type]
    ("decay str", lambda m: m.facts(decay_half_life="x"), InvalidInputError),  # type: ignore[arg-type]
    ("decay zero", lambda m: m.facts(decay_half_life=0), InvalidInputError),
    ("entity unknown", lambda m: m.entity("Nobody"), EntityNotFoundError),
    ("fact unknown", lambda m: m.fact("nope"), FactNotFoundError),
    ("period_end bad", lambda m: m.parse_time("2024-02-30"), InvalidTimeError),
]


@pytest.mark.parametrize(("label", "call", "error"), READ_CASES, ids=[c[0] for c in READ_CASES])
def test_bad_read_raises_typed_error(seeded: Memory, label: str, call: Call, error: type[ChronomemError]) -> None:
    before = snapshot(seeded)
    with pytest.raises(error) as info:
        call(seeded)
    assert str(info.value).strip()
    assert snapshot(seeded) == before


@pytest.mark.parametrize("bad_index", [0, 2, 4])
def test_batch_with_a_bad_item_writes_none_of_it(seeded: Memory, bad_index: int) -> None:
    items: list[Any] = [
        ("Ana", "works_at", "Nimbus", "2020"),
        {"subject": "Ben", "predicate": "works_at", "object": "Nimbus", "valid_from": "2021"},
        ("Acme", "ceo", "Bob", "2022"),          # would supersede Alice
        ("Kai", "works_at", "Acme", "2010"),     # would coalesce with Kai's fact
        ("Cleo", "likes", "Tea"),
    ]
    items[bad_index] = ("Dan", "works_at", "Nimbus", "2020-02-30")
    before = snapshot(seeded)
    with pytest.raises(InvalidTimeError) as info:
        seeded.add_facts(items)
    assert f"item {bad_index}" in str(info.value)
    assert info.value.field == "valid_from"
    assert snapshot(seeded) == before
    # nothing was half-applied: Alice is still CEO and no new entity exists
    assert [f.object for f in seeded.current("Acme", "ceo")] == ["Alice"]
    with pytest.raises(EntityNotFoundError):
        seeded.entity("Ana")


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ({"subject": "", "predicate": "p", "object": "x"}, InvalidNameError),
        (("Dan", "p", "x", "2021", "2020"), InvalidIntervalError),
        ({"subject": "Dan", "predicate": "p", "object": "x", "confidence": 9}, InvalidInputError),
        ({"subject": "Dan", "predicate": "p", "object": "x", "oops": 1}, InvalidInputError),
        (("Dan", "p"), InvalidInputError),
    ],
)
def test_batch_error_names_the_item_index(seeded: Memory, bad: Any, error: type[ChronomemError]) -> None:
    before = snapshot(seeded)
    with pytest.raises(error) as info:
        seeded.add_facts([("Ana", "p", "x"), ("Ben", "p", "y"), bad])
    assert "item 2" in str(info.value)
    assert snapshot(seeded) == before


def test_every_error_is_catchable_as_chronomem_error(seeded: Memory) -> None:
    for _label, call, _error in WRITE_CASES + READ_CASES:
        with pytest.raises(ChronomemError):
            call(seeded)


def test_invalid_input_errors_are_value_errors_and_not_found_are_lookup_errors(seeded: Memory) -> None:
    with pytest.raises(ValueError):
        seeded.add_facts([("Ana", "p", "x", "2021", "2020")])
    with pytest.raises(LookupError):
        seeded.entity("Nobody")
