"""Every read basis takes a time phrase, resolved against the store clock in
the memory's timezone, and reads exactly what its ISO value reads; written
times refuse phrases (docs/concepts/time.md, "Time phrases"). Both backends."""

from __future__ import annotations

import pytest

from chronomem import FakeClock, InvalidTimeError, Memory

from ._helpers import MemoryFactory, objects

# 08:00 on Saturday 2024-08-10 in New York
NOW = "2024-08-10T12:00:00Z"


@pytest.fixture
def story(make_memory: MemoryFactory) -> Memory:
    clock = FakeClock("2024-08-01T00:00:00Z", tick=0.001)
    mem = make_memory(clock=clock, timezone="America/New_York")
    mem.define_predicate("ceo", "one")
    for who, start in [("Alice", "2022-04"), ("Bob", "2024-07"), ("Cleo", "2024-08-09")]:
        mem.add_fact("Acme", "ceo", who, start)
    mem.add_fact("Dana", "works_at", "Acme", "2023")
    mem.add_episode("Bob took over Acme", occurred_at="2024-07-01T12:00:00Z")
    mem.use_embedder(None)
    clock.set(NOW)
    return mem


@pytest.mark.parametrize(("phrase", "iso", "ceo"), [
    ("April 2022", "2022-04", "Alice"),
    ("Q3 2024", "2024-07", "Bob"),
    ("2024-Q3", "2024-07", "Bob"),
    ("last month", "2024-07", "Bob"),
    ("yesterday", "2024-08-09", "Cleo"),
    ("3 weeks ago", "2024-07-20", "Bob"),
    ("now", NOW, "Cleo"),
])
def test_as_of_phrase_reads_what_its_iso_value_reads(story: Memory, phrase: str, iso: str, ceo: str) -> None:
    assert story.resolve_time(phrase, "as_of").point == story.parse_time(iso)
    assert objects(story.facts("Acme", "ceo", as_of=phrase)) == [ceo]
    assert story.facts("Acme", "ceo", as_of=phrase) == story.facts("Acme", "ceo", as_of=iso)


def test_every_read_basis_takes_phrases(story: Memory) -> None:
    mem = story
    assert mem.between("last year", "next year", subject="Acme") == mem.between("2023", "2025", subject="Acme")
    assert mem.facts(known_at="last month") == []  # everything was recorded in August
    assert mem.facts(known_at="now") == mem.facts()
    changed = mem.diff("Q3 2024", "yesterday", "Acme", "ceo").changed
    assert [(c.old.object, c.new.object) for c in changed] == [("Bob", "Cleo")]
    assert mem.timeline("Acme", "Q3 2024", "tomorrow") == mem.timeline("Acme", "2024-07", "2024-08-11")
    assert mem.conflicts("now") == mem.conflicts(NOW)
    assert [n.entity for n in mem.neighbors("Dana", as_of="last year")] == ["Acme"]
    assert [n.entity for n in mem.neighbors("Dana", as_of="April 2022")] == []
    assert len(mem.paths("Dana", "Cleo", as_of="now")) == 1
    assert [e.text for e in mem.episodes(since="last month", until="next month")] == ["Bob took over Acme"]
    assert mem.episodes(since="this month") == []
    hits = mem.search("took over", at="now", since="Q3 2024", until="tomorrow")
    assert [h.episode.text for h in hits] == ["Bob took over Acme"]
    assert mem.search("took over", at="last June") == []  # as_world: not said yet in June


def test_now_is_the_store_clock_never_before_its_last_stamp(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = make_memory(clock=clock)
    fact = mem.add_fact("A", "p", "B")
    clock.set("2024-01-01T00:00:00Z")  # the clock went back after the write
    now = mem.resolve_time("now", "known_at")
    assert now.point.datetime == mem.now() >= fact.system_from
    assert objects(mem.facts(known_at="now")) == ["B"]
    assert mem.resolve_time("today").render(mem.tz) == "2025-01-01"


@pytest.mark.parametrize("bad", ["the day after never", "2025-13-45", "this Monday", "Q5 2024"])
def test_a_bad_read_basis_names_its_parameter(story: Memory, bad: str) -> None:
    for field, call in [("as_of", lambda: story.facts(as_of=bad)), ("known_at", lambda: story.facts(known_at=bad)),
                        ("t2", lambda: story.diff("2020", bad)), ("start", lambda: story.between(bad, "2025")),
                        ("at", lambda: story.search("x", at=bad)), ("since", lambda: story.episodes(since=bad))]:
        with pytest.raises(InvalidTimeError) as info:
            call()
        assert info.value.field == field
