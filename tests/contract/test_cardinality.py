"""Single-valued predicates: supersession, splicing, and never two values at once."""

from __future__ import annotations

import pytest

from chronomem import InvalidInputError, Memory

from ._helpers import US, snapshot, utc, valid_objects_at


@pytest.fixture
def acme(mem: Memory) -> Memory:
    mem.define_predicate("ceo", cardinality="one")
    return mem


def all_endpoints(mem: Memory, subject: str, predicate: str) -> list[object]:
    points: set[object] = set()
    for f in mem.facts(subject, predicate):
        for t in (f.valid_from, f.valid_to):
            if t is not None:
                points.update({t, t - US})
    return sorted(points)  # type: ignore[type-var]


def assert_single_valued(mem: Memory, subject: str, predicate: str) -> None:
    for t in all_endpoints(mem, subject, predicate):
        got = valid_objects_at(mem, subject, predicate, t)
        assert len(got) <= 1, f"{subject} {predicate} has {got} at {t}"


def test_new_value_closes_the_old_one_where_it_starts(acme: Memory) -> None:
    a = acme.add_fact("Acme", "ceo", "Alice", "2020")
    b = acme.add_fact("Acme", "ceo", "Bob", "2022-06")
    old = acme.fact(a.id)
    assert old.valid_to == utc(2022, 6) and old.valid_to_text == "2022-06"
    assert old.invalidated_by == b.id
    assert old.version == a.version + 1
    assert b.valid_to is None and b.invalidated_by is None
    assert valid_objects_at(acme, "Acme", "ceo", "2021") == ["Alice"]
    assert valid_objects_at(acme, "Acme", "ceo", "2023") == ["Bob"]
    # before Bob was recorded, Alice was believed open-ended
    (then,) = acme.facts("Acme", "ceo", known_at=a.system_from)
    assert then.valid_to is None


def test_supersession_chain(acme: Memory) -> None:
    ids = [acme.add_fact("Acme", "ceo", name, str(year)).id
           for name, year in [("Alice", 2010), ("Bob", 2013), ("Carol", 2017), ("Dan", 2021)]]
    facts = sorted(acme.facts("Acme", "ceo"), key=lambda f: f.valid_from)  # type: ignore[arg-type, return-value]
    assert [f.interval_text for f in facts] == ["[2010, 2013)", "[2013, 2017)", "[2017, 2021)", "[2021, …)"]
    assert [f.invalidated_by for f in facts] == ids[1:] + [None]
    assert_single_valued(acme, "Acme", "ceo")


def test_out_of_order_arrival_is_spliced(acme: Memory) -> None:
    bob = acme.add_fact("Acme", "ceo", "Bob", "2022")
    alice = acme.add_fact("Acme", "ceo", "Alice", "2018")   # learned later, started earlier
    assert alice.valid_to == utc(2022)
    assert alice.invalidated_by == bob.id
    assert acme.fact(bob.id).valid_from == utc(2022) and acme.fact(bob.id).valid_to is None
    assert valid_objects_at(acme, "Acme", "ceo", "2019") == ["Alice"]
    assert valid_objects_at(acme, "Acme", "ceo", "2022") == ["Bob"]
    assert_single_valued(acme, "Acme", "ceo")


def test_out_of_order_arrival_between_two_values(acme: Memory) -> None:
    acme.add_fact("Acme", "ceo", "Alice", "2010")
    acme.add_fact("Acme", "ceo", "Carol", "2020")
    acme.add_fact("Acme", "ceo", "Bob", "2015")
    facts = sorted(acme.facts("Acme", "ceo"), key=lambda f: f.valid_from)  # type: ignore[arg-type, return-value]
    assert [(f.object, f.interval_text) for f in facts] == [
        ("Alice", "[2010, 2015)"), ("Bob", "[2015, 2020)"), ("Carol", "[2020, …)")]
    assert_single_valued(acme, "Acme", "ceo")


def test_value_starting_at_the_same_instant_replaces_the_old(acme: Memory) -> None:
    a = acme.add_fact("Acme", "ceo", "Alice", "2020")
    b = acme.add_fact("Acme", "ceo", "Bob", "2020")
    assert valid_objects_at(acme, "Acme", "ceo", "2021") == ["Bob"]
    assert [f.id for f in acme.facts("Acme", "ceo")] == [b.id]
    hist = acme.history("Acme", "ceo")
    assert any(h.id == a.id and h.ended_by == "superseded" and h.ended_reason is None for h in hist)


def test_bounded_value_inside_an_open_one(acme: Memory) -> None:
    """An interim CEO for 2021 inside Alice's open-ended term."""
    acme.add_fact("Acme", "ceo", "Alice", "2020")
    acme.add_fact("Acme", "ceo", "Ivan", "2021", "2022")
    assert valid_objects_at(acme, "Acme", "ceo", "2020-06") == ["Alice"]
    assert valid_objects_at(acme, "Acme", "ceo", "2021-06") == ["Ivan"]
    assert_single_valued(acme, "Acme", "ceo")


def test_unknown_start_value_is_cut_where_a_later_one_starts(acme: Memory) -> None:
    acme.add_fact("Acme", "ceo", "Bob", "2022")
    old = acme.add_fact("Acme", "ceo", "Alice")
    assert old.valid_from is None and old.valid_to == utc(2022)
    assert valid_objects_at(acme, "Acme", "ceo", "1990") == ["Alice"]
    assert valid_objects_at(acme, "Acme", "ceo", "2023") == ["Bob"]


def test_reasserting_the_current_value_changes_nothing(acme: Memory) -> None:
    a = acme.add_fact("Acme", "ceo", "Alice", "2020")
    acme.add_fact("Acme", "ceo", "Bob", "2022")
    again = acme.add_fact("Acme", "ceo", "Bob", "2023")
    assert valid_objects_at(acme, "Acme", "ceo", "2024") == ["Bob"]
    assert acme.fact(a.id).valid_to == utc(2022)
    assert again.valid_from == utc(2022)


def test_returning_value_is_a_new_fact(acme: Memory) -> None:
    a1 = acme.add_fact("Acme", "ceo", "Alice", "2010")
    acme.add_fact("Acme", "ceo", "Bob", "2015")
    a2 = acme.add_fact("Acme", "ceo", "Alice", "2020")
    assert a2.id != a1.id
    assert valid_objects_at(acme, "Acme", "ceo", "2012") == ["Alice"]
    assert valid_objects_at(acme, "Acme", "ceo", "2017") == ["Bob"]
    assert valid_objects_at(acme, "Acme", "ceo", "2021") == ["Alice"]
    assert_single_valued(acme, "Acme", "ceo")


def test_never_two_values_at_once_under_many_writes(acme: Memory) -> None:
    writes = [("A", "2010", None), ("B", "2012", "2014"), ("C", "2011", None), ("D", None, "2011-06"),
              ("A", "2013", "2016"), ("E", "2015-06", None), ("B", "2009", "2010-06")]
    for obj, start, end in writes:
        acme.add_fact("Acme", "ceo", obj, start, end)
        assert_single_valued(acme, "Acme", "ceo")
    assert acme.conflicts() == []


def test_single_valued_is_per_subject(acme: Memory) -> None:
    acme.add_fact("Acme", "ceo", "Alice", "2020")
    acme.add_fact("Globex", "ceo", "Bob", "2021")
    assert valid_objects_at(acme, "Acme", "ceo", "2022") == ["Alice"]
    assert valid_objects_at(acme, "Globex", "ceo", "2022") == ["Bob"]


def test_literal_values_supersede_too(mem: Memory) -> None:
    mem.define_predicate("age", cardinality="one")
    mem.add_fact("Kai", "age", 30, "2020")
    mem.add_fact("Kai", "age", 31, "2021")
    assert [f.object for f in mem.facts("Kai", "age", as_of="2020-06")] == [30]
    assert [f.object for f in mem.facts("Kai", "age", as_of="2021-06")] == [31]


def test_supersede_true_on_a_many_predicate(mem: Memory) -> None:
    mem.add_fact("Kai", "status", "busy", "2020")
    b = mem.add_fact("Kai", "status", "free", "2021", supersede=True)
    assert valid_objects_at(mem, "Kai", "status", "2022") == ["free"]
    busy = next(f for f in mem.facts("Kai", "status") if f.object == "busy")
    assert busy.valid_to == utc(2021) and busy.invalidated_by == b.id
    # the predicate stays many-valued for later writes
    mem.add_fact("Kai", "status", "tired", "2022")
    assert valid_objects_at(mem, "Kai", "status", "2023") == ["free", "tired"]
    assert mem.predicate("status").cardinality == "many"


def test_supersede_false_on_a_one_predicate_is_rejected(acme: Memory) -> None:
    acme.add_fact("Acme", "ceo", "Alice", "2020")
    before = snapshot(acme)
    with pytest.raises(InvalidInputError) as info:
        acme.add_fact("Acme", "ceo", "Bob", "2022", supersede=False)
    assert "single-valued" in str(info.value)
    assert snapshot(acme) == before


def test_undeclared_predicates_are_many_valued(mem: Memory) -> None:
    mem.add_fact("Kai", "likes", "Tea", "2020")
    mem.add_fact("Kai", "likes", "Coffee", "2021")
    assert valid_objects_at(mem, "Kai", "likes", "2022") == ["Coffee", "Tea"]
    p = mem.predicate("likes")
    assert p.cardinality == "many" and not p.declared


def test_declaring_a_predicate(mem: Memory) -> None:
    p = mem.define_predicate("Chief Executive", cardinality="one", inverse="ceo_of",
                             aliases=["ceo", "chief exec"], description="the current CEO")
    assert (p.name, p.key, p.cardinality, p.inverse, p.description, p.declared) == (
        "Chief Executive", "chief_executive", "one", "ceo_of", "the current CEO", True)
    assert set(p.aliases) == {"ceo", "chief exec"}
    # aliases resolve on writes and reads
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    mem.add_fact("Acme", "chief-exec", "Bob", "2022")
    assert valid_objects_at(mem, "Acme", "chief executive", "2023") == ["Bob"]
    assert valid_objects_at(mem, "Acme", "CEO", "2021") == ["Alice"]
    assert {f.predicate for f in mem.facts("Acme")} == {"Chief Executive"}
    assert [x.name for x in mem.predicates()] == ["Chief Executive"]


def test_declaring_an_existing_predicate_keeps_its_facts(mem: Memory) -> None:
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Bob", "2022")
    assert valid_objects_at(mem, "Acme", "ceo", "2021") == ["Alice"]
    assert valid_objects_at(mem, "Acme", "ceo", "2023") == ["Bob"]


def test_predicate_alias_naming_another_predicate_conflicts(mem: Memory) -> None:
    from chronomem import AliasConflictError

    mem.add_fact("Acme", "boss", "Alice")
    with pytest.raises(AliasConflictError):
        mem.define_predicate("ceo", aliases=["boss"])
