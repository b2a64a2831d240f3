"""Entities: name normalization, aliases, merge/unmerge, type and properties."""

from __future__ import annotations

import pytest

from chronomem import AliasConflictError, EntityNotFoundError, InvalidInputError, InvalidNameError, Memory

from ._helpers import obj_set, snapshot


@pytest.mark.parametrize("spelling", ["My API", "my_api", " MY-API ", "my   api", "My\u2013API", "MY_-_API"])
def test_spellings_resolve_to_one_entity(mem: Memory, spelling: str) -> None:
    mem.add_fact("My API", "owned_by", "Platform Team")
    e = mem.entity(spelling)
    assert (e.name, e.key) == ("My API", "my_api")
    assert [f.object for f in mem.facts(spelling)] == ["Platform Team"]


def test_first_display_name_is_kept(mem: Memory) -> None:
    mem.add_fact("  Orion Labs ", "based_in", "Oslo")
    mem.add_fact("orion-labs", "founded_by", "Kai")
    assert mem.entity("ORION LABS").name == "Orion Labs"
    assert {f.subject for f in mem.facts("orion labs")} == {"Orion Labs"}
    assert len([e for e in mem.entities() if e.key == "orion_labs"]) == 1


def test_apostrophes_and_case_fold(mem: Memory) -> None:
    mem.add_fact("O'Brien's Pub", "in", "Dublin")
    assert mem.entity("obriens pub").name == "O'Brien's Pub"
    assert mem.entity("O\u2019BRIEN\u2019S PUB").name == "O'Brien's Pub"
    mem.add_fact("Straße", "in", "Berlin")
    assert mem.entity("STRASSE").name == "Straße"


def test_chinese_and_other_scripts(mem: Memory) -> None:
    mem.add_fact("北京", "是", "首都", "1949")
    mem.add_fact("Zürich", "liegt_in", "Schweiz")
    mem.add_fact("Москва", "столица", "Россия")
    assert [f.object for f in mem.facts("北京")] == ["首都"]
    assert mem.entity("北京").key == "北京"
    assert [f.predicate for f in mem.facts("北京")] == ["是"]
    assert mem.entity("zürich").name == "Zürich"
    assert mem.entity("МОСКВА").name == "Москва"
    assert [f.subject for f in mem.facts("首都", direction="in")] == ["北京"]


def test_full_width_forms_normalize(mem: Memory) -> None:
    mem.add_fact("ＡＢＣ", "p", "x")
    assert mem.entity("abc").name == "ＡＢＣ"


def test_entities_lists_every_entity(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion")
    mem.add_fact("Kai", "age", 30)
    names = sorted(e.name for e in mem.entities())
    assert names == ["Kai", "Orion"]  # literals are not entities
    e = mem.entity("Kai")
    assert e.namespace == "default" and e.created_at is not None


def test_unknown_entity_raises(mem: Memory) -> None:
    with pytest.raises(EntityNotFoundError):
        mem.entity("Nobody")
    with pytest.raises(InvalidNameError):
        mem.entity("   ")


def test_reading_unknown_names_returns_nothing(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion")
    assert mem.facts("Nobody") == []
    assert mem.facts("Kai", "unknown_predicate") == []
    assert mem.facts("Kai", object="Nowhere") == []
    assert mem.history("Nobody") == []
    assert mem.current("Nobody") == []


# -- aliases -------------------------------------------------------------------


def test_alias_resolves_on_reads_and_writes(mem: Memory) -> None:
    mem.add_fact("Robert Smith", "lives_in", "Leeds")
    e = mem.alias("Robert Smith", "Bob")
    assert "Bob" in e.aliases and e.name == "Robert Smith"
    mem.add_fact("bob", "likes", "Jazz")
    assert obj_set(mem.facts("Robert Smith")) == {"Leeds", "Jazz"}
    assert obj_set(mem.facts("BOB")) == {"Leeds", "Jazz"}
    assert mem.entity("Bob").name == "Robert Smith"
    assert {f.subject for f in mem.facts("Bob")} == {"Robert Smith"}
    assert len(mem.entities()) == 3


def test_alias_as_object(mem: Memory) -> None:
    mem.alias("Robert Smith", "Bob")
    mem.add_fact("Ana", "knows", "Bob")
    assert [f.object for f in mem.facts("Ana")] == ["Robert Smith"]
    assert [f.subject for f in mem.facts("Robert Smith", direction="in")] == ["Ana"]


def test_alias_creates_a_missing_entity(mem: Memory) -> None:
    e = mem.alias("Robert Smith", "Bob")
    assert e.name == "Robert Smith"
    assert mem.entity("bob").id == e.id


def test_alias_is_idempotent(mem: Memory) -> None:
    mem.alias("Robert Smith", "Bob")
    e = mem.alias("Robert Smith", "bob")
    assert list(e.aliases) == ["Bob"]


def test_alias_naming_another_entity_conflicts(mem: Memory) -> None:
    mem.add_fact("Robert Smith", "lives_in", "Leeds")
    mem.add_fact("Bob", "likes", "Jazz")
    before = snapshot(mem)
    with pytest.raises(AliasConflictError) as info:
        mem.alias("Robert Smith", "Bob")
    assert "merge" in str(info.value)
    assert snapshot(mem) == before
    assert mem.entity("Bob").name == "Bob"


def test_empty_alias_is_rejected(mem: Memory) -> None:
    with pytest.raises(InvalidNameError):
        mem.alias("Robert Smith", " - ")


# -- merge / unmerge ---------------------------------------------------------------


@pytest.fixture
def two_bobs(mem: Memory) -> Memory:
    mem.add_fact("Robert Smith", "lives_in", "Leeds", "2015")
    mem.add_fact("Bobby", "likes", "Jazz", "2020")
    mem.add_fact("Ana", "knows", "Bobby", "2019")
    return mem


def test_merge_moves_facts_both_ways(two_bobs: Memory) -> None:
    mem = two_bobs
    op = mem.merge("Robert Smith", "Bobby")
    assert isinstance(op, str) and op
    assert obj_set(mem.facts("Robert Smith")) == {"Leeds", "Jazz"}
    assert [f.object for f in mem.facts("Ana")] == ["Robert Smith"]
    assert mem.entity("Bobby").name == "Robert Smith"
    assert "Bobby" in mem.entity("Robert Smith").aliases
    # writes through the folded name land on the kept entity
    mem.add_fact("Bobby", "plays", "Bass")
    assert "Bass" in obj_set(mem.facts("Robert Smith"))
    # the moved facts keep their valid time
    jazz = next(f for f in mem.facts("Robert Smith") if f.object == "Jazz")
    assert jazz.valid_from_text == "2020"


def test_known_at_before_a_merge_sees_two_entities(two_bobs: Memory) -> None:
    mem = two_bobs
    before = mem.facts()
    t = max(f.system_from for f in before)
    mem.merge("Robert Smith", "Bobby")
    then = mem.facts(known_at=t)
    assert sorted((f.subject, str(f.object)) for f in then) == [
        ("Ana", "Bobby"), ("Bobby", "Jazz"), ("Robert Smith", "Leeds")]
    assert obj_set(mem.facts("Robert Smith", known_at=t)) == {"Leeds"}


def test_known_at_resolves_a_folded_name_as_it_was_then(two_bobs: Memory) -> None:
    mem = two_bobs
    t_before = max(f.system_from for f in mem.facts())
    op = mem.merge("Robert Smith", "Bobby")
    t_merged = max(f.system_from for f in mem.facts())
    # before the merge "Bobby" named its own entity, with its own facts
    assert obj_set(mem.facts("Bobby", known_at=t_before)) == {"Jazz"}
    assert {f.subject for f in mem.facts("Bobby", known_at=t_before)} == {"Bobby"}
    assert obj_set(mem.facts("Bobby", direction="in", known_at=t_before)) == {"Bobby"}
    # while merged it names the kept entity; after the undo, its own again
    assert obj_set(mem.facts("Bobby", known_at=t_merged)) == {"Leeds", "Jazz"}
    mem.unmerge(op)
    assert obj_set(mem.facts("Bobby", known_at=t_merged)) == {"Leeds", "Jazz"}
    assert obj_set(mem.facts("Robert Smith", known_at=t_merged)) == {"Leeds", "Jazz"}
    assert obj_set(mem.facts("Bobby")) == {"Jazz"}
    assert obj_set(mem.facts("Bobby", known_at=t_before)) == {"Jazz"}


def test_unmerge_restores_the_old_state(two_bobs: Memory) -> None:
    mem = two_bobs
    op = mem.merge("Robert Smith", "Bobby")
    mem.unmerge(op)
    assert obj_set(mem.facts("Robert Smith")) == {"Leeds"}
    assert obj_set(mem.facts("Bobby")) == {"Jazz"}
    assert [f.object for f in mem.facts("Ana")] == ["Bobby"]
    assert mem.entity("Bobby").name == "Bobby"
    assert "Bobby" not in mem.entity("Robert Smith").aliases
    assert sorted((f.subject, str(f.object), f.valid_from_text) for f in mem.facts()) == [
        ("Ana", "Bobby", "2019"), ("Bobby", "Jazz", "2020"), ("Robert Smith", "Leeds", "2015")]


def test_unmerge_twice_or_unknown_raises(two_bobs: Memory) -> None:
    mem = two_bobs
    op = mem.merge("Robert Smith", "Bobby")
    mem.unmerge(op)
    with pytest.raises(InvalidInputError):
        mem.unmerge(op)
    with pytest.raises(InvalidInputError):
        mem.unmerge("no-such-operation")


def test_merge_applies_cardinality_to_moved_values(mem: Memory) -> None:
    mem.define_predicate("age", cardinality="one")
    mem.add_fact("P1", "age", 30, "2020")
    mem.add_fact("P2", "age", 31, "2021")
    op = mem.merge("P1", "P2")
    assert [f.object for f in mem.facts("P1", "age", as_of="2020-06")] == [30]
    assert [f.object for f in mem.facts("P1", "age", as_of="2021-06")] == [31]
    assert mem.conflicts() == []
    mem.unmerge(op)
    assert [f.object for f in mem.facts("P1", "age", as_of="2022")] == [30]
    assert [f.object for f in mem.facts("P2", "age", as_of="2022")] == [31]


def test_merge_coalesces_identical_facts(mem: Memory) -> None:
    mem.add_fact("Robert Smith", "lives_in", "Leeds", "2015", "2018")
    mem.add_fact("Bobby", "lives_in", "Leeds", "2017", "2020")
    mem.merge("Robert Smith", "Bobby")
    (f,) = mem.facts("Robert Smith")
    assert f.interval_text == "[2015, 2020)"


def test_merge_errors(mem: Memory) -> None:
    mem.add_fact("Robert Smith", "lives_in", "Leeds")
    mem.alias("Robert Smith", "Bob")
    before = snapshot(mem)
    with pytest.raises(EntityNotFoundError):
        mem.merge("Robert Smith", "Nobody")
    with pytest.raises(EntityNotFoundError):
        mem.merge("Nobody", "Robert Smith")
    with pytest.raises(InvalidInputError):
        mem.merge("Robert Smith", "Bob")  # already the same entity
    assert snapshot(mem) == before


# -- type and properties -------------------------------------------------------------


def test_set_entity_creates_with_type_and_properties(mem: Memory) -> None:
    e = mem.set_entity("Acme Corp", type="company", properties={"hq": "Oslo", "employees": 120, "public": False})
    assert (e.name, e.key, e.type) == ("Acme Corp", "acme_corp", "company")
    assert dict(e.properties) == {"hq": "Oslo", "employees": 120, "public": False}
    assert mem.entity("acme corp") == e


def test_set_entity_updates_only_what_is_given(mem: Memory) -> None:
    mem.set_entity("Acme", type="company", properties={"hq": "Oslo"})
    e = mem.set_entity("ACME", type="org")
    assert e.type == "org" and dict(e.properties) == {"hq": "Oslo"}
    e = mem.set_entity("acme", properties={"hq": "Bergen", "tags": ["a", "b"]})
    assert e.type == "org" and dict(e.properties) == {"hq": "Bergen", "tags": ["a", "b"]}
    assert e.name == "Acme"


def test_set_entity_on_an_existing_entity_keeps_its_facts(mem: Memory) -> None:
    mem.add_fact("Acme", "ceo", "Alice")
    mem.set_entity("acme", type="company")
    assert [f.object for f in mem.facts("Acme")] == ["Alice"]
    assert mem.entity("Acme").type == "company"


def test_set_entity_rejects_bad_properties(mem: Memory) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidInputError):
        mem.set_entity("Acme", properties={"when": object()})
    with pytest.raises(InvalidNameError):
        mem.set_entity("", type="company")
    assert snapshot(mem) == before


def test_entity_to_dict_is_json_ready(mem: Memory) -> None:
    import json

    e = mem.set_entity("Acme", type="company", properties={"hq": "Oslo"})
    d = e.to_dict()
    json.dumps(d)
    assert d["name"] == "Acme" and d["properties"] == {"hq": "Oslo"}
