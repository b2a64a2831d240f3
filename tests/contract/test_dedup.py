"""Never duplicate: identical, contained, overlapping, touching and disjoint re-adds."""

from __future__ import annotations

from chronomem import Memory

from ._helpers import valid_objects_at


def test_identical_re_add_returns_the_same_fact(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022", source="cv.pdf")
    b = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022", source="linkedin")
    assert b.id == a.id and b.version == a.version
    assert len(mem.facts("Kai")) == 1
    assert len(mem.history("Kai")) == 1
    assert mem.stats().versions == 1


def test_identical_re_add_records_the_extra_source(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022", source="cv.pdf")
    mem.add_fact("Kai", "works_at", "Orion", "2020", "2022", source="linkedin", episode_id="ep-7")
    ev = mem.evidence(a.id)
    assert [(e.source, e.episode_id) for e in ev] == [("cv.pdf", None), ("linkedin", "ep-7")]
    assert all(e.fact_id == a.id for e in ev)
    assert ev[0].recorded_at == a.system_from
    assert ev[1].recorded_at > ev[0].recorded_at


def test_re_add_from_the_same_source_adds_no_evidence(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", source="cv.pdf")
    mem.add_fact("Kai", "works_at", "Orion", "2020", source="cv.pdf")
    assert [e.source for e in mem.evidence(a.id)] == ["cv.pdf"]


def test_re_add_through_another_spelling_is_the_same_fact(mem: Memory) -> None:
    a = mem.add_fact("Kai Lund", "works at", "Orion Labs", "2020")
    b = mem.add_fact("kai-lund", "WORKS_AT", " orion labs ", "2020")
    assert a.id == b.id
    assert len(mem.facts()) == 1


def test_contained_re_add_is_a_no_op(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2025")
    b = mem.add_fact("Kai", "works_at", "Orion", "2021", "2022", source="memo")
    assert b.id == a.id and b.version == a.version
    assert b.interval_text == "[2020, 2025)"
    assert mem.stats().versions == 1
    assert [e.source for e in mem.evidence(a.id)] == ["memo"]


def test_overlapping_re_add_coalesces_into_the_union(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022")
    b = mem.add_fact("Kai", "works_at", "Orion", "2021", "2023")
    assert b.id == a.id
    assert b.version == a.version + 1
    assert b.interval_text == "[2020, 2023)"
    (only,) = mem.facts("Kai")
    assert only.interval_text == "[2020, 2023)"
    # the old version stays readable with known_at
    (old,) = mem.facts("Kai", known_at=a.system_from)
    assert old.interval_text == "[2020, 2022)"


def test_overlap_on_the_left_extends_the_start(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022")
    b = mem.add_fact("Kai", "works_at", "Orion", "2018", "2021")
    assert b.id == a.id and b.interval_text == "[2018, 2022)"


def test_touching_re_add_coalesces(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022")
    b = mem.add_fact("Kai", "works_at", "Orion", "2022", "2024")
    assert b.id == a.id and b.interval_text == "[2020, 2024)"
    c = mem.add_fact("Kai", "works_at", "Orion", "2018", "2020")
    assert c.id == a.id and c.interval_text == "[2018, 2024)"
    assert len(mem.facts("Kai")) == 1


def test_open_ended_re_add_extends_to_open_end(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022")
    b = mem.add_fact("Kai", "works_at", "Orion", "2021")
    assert b.id == a.id and b.valid_to is None and b.valid_from_text == "2020"


def test_unknown_start_re_add_extends_to_unknown_start(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2020", "2022")
    b = mem.add_fact("Kai", "works_at", "Orion", valid_to="2021")
    assert b.id == a.id and b.valid_from is None and b.valid_to_text == "2022"


def test_disjoint_re_add_is_a_separate_fact(mem: Memory) -> None:
    """Kai left Orion and came back."""
    first = mem.add_fact("Kai", "works_at", "Orion", "2015", "2018")
    again = mem.add_fact("Kai", "works_at", "Orion", "2021")
    assert again.id != first.id
    facts = mem.facts("Kai")
    assert sorted(f.interval_text for f in facts) == ["[2015, 2018)", "[2021, …)"]
    assert valid_objects_at(mem, "Kai", "works_at", "2019") == []
    assert valid_objects_at(mem, "Kai", "works_at", "2016") == ["Orion"]
    assert valid_objects_at(mem, "Kai", "works_at", "2022") == ["Orion"]


def test_a_bridging_re_add_joins_two_separate_facts(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2015", "2018")
    b = mem.add_fact("Kai", "works_at", "Orion", "2021", "2023")
    c = mem.add_fact("Kai", "works_at", "Orion", "2017", "2022")
    (only,) = mem.facts("Kai")
    assert only.interval_text == "[2015, 2023)"
    assert c.id == only.id and c.id in {a.id, b.id}
    # before the bridge, two facts were believed
    assert len(mem.facts("Kai", known_at=b.system_from)) == 2


def test_coalescing_keeps_both_sources_as_evidence(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion", "2015", "2018", source="s1")
    mem.add_fact("Kai", "works_at", "Orion", "2017", "2020", source="s2")
    assert {e.source for e in mem.evidence(a.id)} == {"s1", "s2"}


def test_coalescing_keeps_the_highest_confidence(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2015", "2018", confidence=0.4)
    b = mem.add_fact("Kai", "works_at", "Orion", "2017", "2020", confidence=0.9)
    assert b.confidence == 0.9


def test_add_facts_returns_one_id_per_item_with_duplicates_folded(mem: Memory) -> None:
    ids = mem.add_facts([
        ("Kai", "works_at", "Orion", "2020", "2022"),
        ("Kai", "works_at", "Orion", "2020", "2022"),
        {"subject": "Ana", "predicate": "works_at", "object": "Orion", "valid_from": "2019"},
    ])
    assert len(ids) == 3
    assert ids[0] == ids[1] != ids[2]
    assert len(mem.facts()) == 2


def test_add_facts_coalesces_within_one_batch(mem: Memory) -> None:
    ids = mem.add_facts([
        ("Kai", "works_at", "Orion", "2020", "2022"),
        ("Kai", "works_at", "Orion", "2021", "2024"),
        ("Kai", "works_at", "Orion", "2024", "2025"),
    ])
    (only,) = mem.facts("Kai")
    assert only.interval_text == "[2020, 2025)"
    assert only.id in ids
    # versions created and replaced inside the batch are never stored
    assert len(mem.history("Kai")) == 1


def test_different_objects_are_different_facts_on_a_many_predicate(mem: Memory) -> None:
    mem.add_fact("Kai", "speaks", "Norwegian", "2000")
    mem.add_fact("Kai", "speaks", "English", "2005")
    assert valid_objects_at(mem, "Kai", "speaks", "2010") == ["English", "Norwegian"]


def test_add_facts_ids_all_name_believed_facts_after_in_batch_coalescing(mem: Memory) -> None:
    """A later item may fold an earlier item's fact into another one: every
    returned id still names the fact that now holds the item."""
    ids = mem.add_facts([
        ("Kai", "works_at", "Orion", "2010", "2012"),
        ("Kai", "works_at", "Orion", "2014", "2016"),
        ("Kai", "works_at", "Orion", "2011", "2015"),   # bridges both
        ("Kai", "works_at", "Orion", "2013", "2014"),   # contained
    ])
    (only,) = mem.facts("Kai")
    assert only.interval_text == "[2010, 2016)"
    assert ids == [only.id] * 4
    for fid in ids:
        f = mem.fact(fid)
        assert f.system_to is None and f.interval_text == "[2010, 2016)"
