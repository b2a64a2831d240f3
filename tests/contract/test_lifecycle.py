"""invalidate, correct, retract and erase."""

from __future__ import annotations

import pytest

from chronomem import (
    ConfirmationRequiredError,
    EntityNotFoundError,
    FactNotFoundError,
    FakeClock,
    InvalidInputError,
    InvalidIntervalError,
    Memory,
)

from ._helpers import MemoryFactory, snapshot, utc, valid_objects_at

# -- invalidate -------------------------------------------------------------


def test_invalidate_closes_the_valid_interval(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    g = mem.invalidate("Kai", "works_at", "Orion", ended="2023-05", reason="left")
    assert g.id == f.id and g.version == f.version + 1
    assert g.valid_to == utc(2023, 5) and g.valid_to_text == "2023-05"
    assert (g.ended_by, g.ended_reason, g.invalidated_by) == ("invalidated", "left", None)
    assert valid_objects_at(mem, "Kai", "works_at", "2023-04") == ["Orion"]
    assert valid_objects_at(mem, "Kai", "works_at", "2023-05") == []


def test_invalidate_defaults_to_now(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020")
    now = mem.now()
    g = mem.invalidate("Kai", "works_at", "Orion")
    assert g.valid_to is not None
    assert now <= g.valid_to <= g.system_from
    assert not g.current
    assert mem.current("Kai") == []


def test_invalidate_through_other_spellings(mem: Memory) -> None:
    mem.add_fact("Kai Lund", "works at", "Orion Labs", "2020")
    g = mem.invalidate("KAI-LUND", "Works_At", "orion labs", ended="2021")
    assert g.valid_to_text == "2021"


def test_invalidate_a_literal(mem: Memory) -> None:
    mem.add_fact("Kai", "age", 30, "2020")
    g = mem.invalidate("Kai", "age", 30, ended="2021")
    assert g.valid_to_text == "2021"
    mem.add_fact("Kai", "nickname", "K", "2020", literal=True)
    h = mem.invalidate("Kai", "nickname", "K", ended="2021", literal=True)
    assert h.valid_to_text == "2021" and h.literal


def test_invalidate_picks_the_interval_valid_at_ended(mem: Memory) -> None:
    first = mem.add_fact("Kai", "works_at", "Orion", "2010", "2012")
    second = mem.add_fact("Kai", "works_at", "Orion", "2020")
    g = mem.invalidate("Kai", "works_at", "Orion", ended="2021")
    assert g.id == second.id
    assert mem.fact(first.id).valid_to_text == "2012"


@pytest.mark.parametrize(
    ("subject", "predicate", "obj", "ended"),
    [
        ("Kai", "works_at", "Orion", "2019"),     # before it started
        ("Kai", "works_at", "Orion", "2031"),     # after it ended
        ("Kai", "works_at", "Nimbus", "2025"),    # another object
        ("Kai", "likes", "Orion", "2025"),        # another predicate
        ("Nobody", "works_at", "Orion", "2025"),  # unknown subject
        ("Kai", "nothing", "Orion", "2025"),      # unknown predicate
        ("Kai", "works_at", "Ghost", "2025"),     # unknown object
    ],
)
def test_invalidate_without_a_valid_match_raises(mem: Memory, subject: str, predicate: str, obj: str,
                                                 ended: str) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020", "2030")
    before = snapshot(mem)
    with pytest.raises(FactNotFoundError):
        mem.invalidate(subject, predicate, obj, ended=ended)
    assert snapshot(mem) == before


def test_invalidate_twice_raises(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020")
    mem.invalidate("Kai", "works_at", "Orion", ended="2022")
    with pytest.raises(FactNotFoundError):
        mem.invalidate("Kai", "works_at", "Orion", ended="2023")


def test_invalidate_a_retracted_fact_raises(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    mem.retract(f.id)
    with pytest.raises(FactNotFoundError):
        mem.invalidate("Kai", "works_at", "Orion", ended="2022")


def test_invalidate_at_the_start_is_an_empty_interval(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020")
    before = snapshot(mem)
    with pytest.raises(InvalidIntervalError):
        mem.invalidate("Kai", "works_at", "Orion", ended="2020")
    assert snapshot(mem) == before


# -- invalidate_fact (by id) ----------------------------------------------------


def test_invalidate_fact_closes_the_valid_interval(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    g = mem.invalidate_fact(f.id, "2023-05", reason="left")
    assert g.id == f.id and g.version == f.version + 1
    assert g.valid_to == utc(2023, 5) and g.valid_to_text == "2023-05"
    assert (g.ended_by, g.ended_reason, g.invalidated_by) == ("invalidated", "left", None) and g.system_to is None
    assert valid_objects_at(mem, "Kai", "works_at", "2023-04") == ["Orion"]
    assert valid_objects_at(mem, "Kai", "works_at", "2023-05") == []
    assert mem.fact(f.id) == g


def test_invalidate_fact_gives_what_invalidate_gives(make_memory: MemoryFactory, clock: FakeClock) -> None:
    by_id, by_triple = make_memory("by_id", clock=clock), make_memory("by_triple", clock=clock)
    f = by_id.add_fact("Kai", "works_at", "Orion", "2020", source="cv")
    by_triple.add_fact("Kai", "works_at", "Orion", "2020", source="cv")
    g = by_id.invalidate_fact(f.id, "2023-05")
    h = by_triple.invalidate("Kai", "works_at", "Orion", "2023-05")
    skip = {"id", "system_from", "system_to", "namespace"}
    assert {k: v for k, v in g.to_dict().items() if k not in skip} == \
        {k: v for k, v in h.to_dict().items() if k not in skip}
    assert (g.ended_by, g.ended_reason, g.invalidated_by) == ("invalidated", None, None)


def test_invalidate_fact_defaults_to_now(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    now = mem.now()
    g = mem.invalidate_fact(f.id)
    assert g.valid_to is not None
    assert now <= g.valid_to <= g.system_from
    assert not g.current
    assert mem.current("Kai") == []


def test_invalidate_fact_keeps_history_readable_with_known_at(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    g = mem.invalidate_fact(f.id, "2023")
    before = mem.fact(f.id, known_at=f.system_from)
    assert before.version == f.version and before.valid_to is None and before.system_to == g.system_from
    assert [x.valid_to_text for x in mem.versions(f.id)] == [None, "2023"]
    assert valid_objects_at(mem, "Kai", "works_at", "2024") == []
    assert [x.object for x in mem.facts("Kai", "works_at", as_of="2024", known_at=f.system_from)] == ["Orion"]


def test_invalidate_fact_ends_only_that_fact(mem: Memory) -> None:
    first = mem.add_fact("Kai", "works_at", "Orion", "2010", "2012")
    second = mem.add_fact("Kai", "works_at", "Orion", "2020")
    g = mem.invalidate_fact(first.id, "2011")
    assert g.id == first.id and g.valid_to_text == "2011"
    assert mem.fact(second.id).valid_to is None


def test_invalidate_fact_a_literal(mem: Memory) -> None:
    f = mem.add_fact("Kai", "nickname", "K", "2020", literal=True)
    g = mem.invalidate_fact(f.id, "2021")
    assert g.valid_to_text == "2021" and g.literal and g.object == "K"


def test_invalidate_fact_after_a_correction_ends_the_corrected_version(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    fixed = mem.correct(f.id, object="Nimbus")
    g = mem.invalidate_fact(f.id, "2022")
    assert g.version == fixed.version + 1 and g.object == "Nimbus" and g.valid_to_text == "2022"


def test_invalidate_fact_unknown_id_raises_and_writes_nothing(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020")
    before = snapshot(mem)
    with pytest.raises(FactNotFoundError):
        mem.invalidate_fact("no-such-id", "2022")
    assert snapshot(mem) == before


def test_invalidate_fact_of_another_namespace_raises(make_memory: MemoryFactory, mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    other = make_memory("other")
    with pytest.raises(FactNotFoundError):
        other.invalidate_fact(f.id, "2022")
    assert mem.fact(f.id).valid_to is None


def test_invalidate_fact_no_longer_believed_raises(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    mem.retract(f.id)
    before = snapshot(mem)
    with pytest.raises(FactNotFoundError):
        mem.invalidate_fact(f.id, "2022")
    assert snapshot(mem) == before


@pytest.mark.parametrize(
    "ended",
    [
        "2019",  # before it started
        "2020",  # at its start: an empty interval
        "2030",  # at its (exclusive) end
        "2031",  # after it ended
    ],
)
def test_invalidate_fact_outside_its_interval_raises_and_writes_nothing(mem: Memory, ended: str) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020", "2030")
    before = snapshot(mem)
    with pytest.raises(InvalidIntervalError):
        mem.invalidate_fact(f.id, ended)
    assert snapshot(mem) == before
    assert mem.fact(f.id) == f


def test_invalidate_fact_twice_raises(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    mem.invalidate_fact(f.id, "2022")
    with pytest.raises(InvalidIntervalError):
        mem.invalidate_fact(f.id, "2023")


# -- correct ------------------------------------------------------------------


def test_correct_the_object(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019", source="chat")
    g = mem.correct(f.id, object="Bergen")
    assert (g.id, g.object, g.valid_from_text, g.source) == (f.id, "Bergen", "2019", "chat")
    assert [x.object for x in mem.facts("Kai")] == ["Bergen"]
    assert mem.facts(object="Oslo", subject=None) == []


def test_correct_the_dates(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    g = mem.correct(f.id, valid_from="2018-06", valid_to="2020")
    assert g.interval_text == "[2018-06, 2020)"
    h = mem.correct(f.id, valid_to=None)
    assert h.valid_to is None and h.valid_from_text == "2018-06"


def test_correct_other_fields(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    g = mem.correct(f.id, confidence=0.5, source="fixed", episode_id="ep1", properties={"note": "moved"})
    assert (g.confidence, g.source, g.episode_id, dict(g.properties)) == (0.5, "fixed", "ep1", {"note": "moved"})


def test_correct_the_subject_and_predicate(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    g = mem.correct(f.id, subject="Ana", predicate="works_in")
    assert (g.id, g.subject, g.predicate, g.object) == (f.id, "Ana", "works_in", "Oslo")
    assert mem.facts("Kai") == []
    assert [x.id for x in mem.facts("Ana", "works_in")] == [f.id]


def test_correct_to_a_literal(mem: Memory) -> None:
    f = mem.add_fact("Kai", "age", "thirty")
    g = mem.correct(f.id, object=30)
    assert g.object == 30 and g.literal


def test_correct_a_dated_value_respects_cardinality(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice", "2020")
    b = mem.add_fact("Acme", "ceo", "Bob", "2022")
    mem.correct(b.id, valid_from="2021")
    assert valid_objects_at(mem, "Acme", "ceo", "2021-06") == ["Bob"]
    assert valid_objects_at(mem, "Acme", "ceo", "2020-06") == ["Alice"]
    assert mem.fact(a.id).valid_to == utc(2021)


def test_correct_unknown_field_raises(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    before = snapshot(mem)
    with pytest.raises(InvalidInputError) as info:
        mem.correct(f.id, colour="red")
    assert "colour" in str(info.value)
    with pytest.raises(InvalidInputError):
        mem.correct(f.id, supersede=True)
    with pytest.raises(InvalidInputError):
        mem.correct(f.id)
    assert snapshot(mem) == before


def test_correct_with_bad_values_writes_nothing(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    before = snapshot(mem)
    for changes in ({"valid_from": "2019-02-30"}, {"valid_to": "2018"}, {"object": ""}, {"confidence": 2},
                    {"subject": None}, {"object": [1, 2]}):
        with pytest.raises(InvalidInputError):
            mem.correct(f.id, **changes)
    assert snapshot(mem) == before


def test_correct_unknown_or_retracted_fact_raises(mem: Memory) -> None:
    with pytest.raises(FactNotFoundError):
        mem.correct("no-such-id", object="x")
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.retract(f.id)
    with pytest.raises(FactNotFoundError):
        mem.correct(f.id, object="Bergen")


def test_correct_an_old_version_id_works_on_the_believed_version(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.correct(f.id, object="Bergen")
    g = mem.correct(f.id, valid_from="2018")
    assert (g.object, g.valid_from_text, g.version) == ("Bergen", "2018", 3)


# -- retract -------------------------------------------------------------------


def test_retract_returns_the_retracted_version(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    r = mem.retract(f.id, reason="hallucinated")
    assert r.id == f.id and r.object == "Oslo"
    assert r.system_to is not None
    assert (r.ended_by, r.ended_reason) == ("retracted", "hallucinated")
    assert mem.stats().retracted == 1
    assert mem.stats().facts == 0


def test_retract_unknown_or_twice_raises(mem: Memory) -> None:
    with pytest.raises(FactNotFoundError):
        mem.retract("no-such-id")
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.retract(f.id)
    before = snapshot(mem)
    with pytest.raises(FactNotFoundError):
        mem.retract(f.id)
    assert snapshot(mem) == before


def test_re_adding_a_retracted_fact_makes_a_new_fact(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.retract(f.id)
    g = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    assert g.id != f.id
    assert [x.id for x in mem.facts("Kai")] == [g.id]


def test_retract_restores_a_spliced_value_in_the_middle(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2010")
    mem.add_fact("Acme", "ceo", "Carol", "2020")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2015")
    mem.retract(bob.id)
    assert valid_objects_at(mem, "Acme", "ceo", "2016") == ["Alice"]
    assert valid_objects_at(mem, "Acme", "ceo", "2021") == ["Carol"]
    assert mem.conflicts() == []


# -- erase ---------------------------------------------------------------------


def test_erase_needs_confirmation(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    before = snapshot(mem)
    with pytest.raises(ConfirmationRequiredError):
        mem.erase(f.id)
    with pytest.raises(ConfirmationRequiredError):
        mem.erase(entity="Kai")
    assert snapshot(mem) == before


def test_erase_a_fact_removes_every_version(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019", source="chat")
    mem.correct(f.id, object="Bergen")
    keep = mem.add_fact("Kai", "likes", "Tea")
    n = mem.erase(f.id, confirm=True, reason="GDPR request")
    assert n == 2
    assert [h.id for h in mem.history("Kai")] == [keep.id]
    assert [x.id for x in mem.facts("Kai", known_at=f.system_from)] == []
    with pytest.raises(FactNotFoundError):
        mem.fact(f.id)
    with pytest.raises(FactNotFoundError):
        mem.evidence(f.id)
    assert mem.versions(f.id) == []
    assert mem.stats().versions == 1


def test_erase_a_retracted_fact(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.retract(f.id)
    assert mem.erase(f.id, confirm=True) == 1
    assert mem.history("Kai") == []
    assert mem.stats().retracted == 0


def test_erase_a_superseding_fact_restores_the_old_value(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    b = mem.add_fact("Acme", "ceo", "Bob", "2022")
    mem.erase(b.id, confirm=True)
    assert valid_objects_at(mem, "Acme", "ceo", "2023") == ["Alice"]
    assert all(h.object != "Bob" for h in mem.history("Acme"))


def test_erase_an_entity_removes_its_facts_both_ways(mem: Memory) -> None:
    mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.add_fact("Ana", "knows", "Kai")
    keep = mem.add_fact("Ana", "lives_in", "Oslo")
    n = mem.erase(entity="kai", confirm=True)
    assert n == 2
    with pytest.raises(EntityNotFoundError):
        mem.entity("Kai")
    assert [f.id for f in mem.facts()] == [keep.id]
    assert all("Kai" not in (h.subject, str(h.object)) for h in mem.history("Ana"))
    assert "Kai" not in {e.name for e in mem.entities()}


def test_erase_argument_errors(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mem.erase(confirm=True)
    with pytest.raises(InvalidInputError):
        mem.erase("x", entity="Kai", confirm=True)
    with pytest.raises(FactNotFoundError):
        mem.erase("no-such-id", confirm=True)
    with pytest.raises(EntityNotFoundError):
        mem.erase(entity="Nobody", confirm=True)


def test_correcting_to_the_same_values_changes_nothing(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    g = mem.correct(f.id, object="Oslo", valid_from="2019")
    assert (g.id, g.version, g.object, g.valid_from_text) == (f.id, f.version, "Oslo", "2019")
    assert len(mem.versions(f.id)) == 1


def test_retracted_value_is_not_restored_by_retracting_its_successor(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice")
    b = mem.add_fact("Acme", "ceo", "Bob", "2000")
    mem.retract(a.id)
    mem.retract(b.id)
    assert mem.facts("Acme") == []
    with pytest.raises(FactNotFoundError):
        mem.correct(a.id, object="Alicia")


def test_retracted_value_is_not_restored_by_correcting_its_successor(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice")
    b = mem.add_fact("Acme", "ceo", "Bob", "2000")
    mem.retract(a.id)
    mem.correct(b.id, valid_from="2005")
    assert [(f.object, f.interval_text) for f in mem.facts("Acme")] == [("Bob", "[2005, …)")]
    assert valid_objects_at(mem, "Acme", "ceo", "2001") == []


def test_correcting_a_successor_later_gives_the_old_value_its_time_back(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice", "2010")
    b = mem.add_fact("Acme", "ceo", "Bob", "2015")
    mem.correct(b.id, valid_from="2017")
    assert valid_objects_at(mem, "Acme", "ceo", "2016") == ["Alice"]
    assert valid_objects_at(mem, "Acme", "ceo", "2017") == ["Bob"]
    assert mem.fact(a.id).valid_to == utc(2017)
