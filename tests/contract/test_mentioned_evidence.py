"""The graph explains the evidence, linked or not: an episode that names a
fact's subject (or an alias) and its value, said while the fact was valid,
is *mentioned* evidence of it; a hit whose mentioned facts have all ended by
the basis is marked as history with the fact that ended it."""

from __future__ import annotations

from chronomem import FakeClock, Memory

from ._helpers import MemoryFactory

MARCH = "we tuned Redis maxmemory for the my_api queue workers"


def _queue(make_memory: MemoryFactory) -> Memory:
    mem = make_memory(clock=FakeClock("2026-11-20T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    mem.define_predicate("uses_queue", "one")
    mem.add_fact("my_api", "uses_queue", "Redis", "2026-03-02")
    mem.add_fact("my_api", "uses_queue", "SQLite", "2026-10-12")  # ends Redis at 2026-10-12
    mem.add_episode(MARCH, occurred_at="2026-03-20T10:00:00Z")
    return mem


def test_an_unlinked_episode_about_an_ended_fact_is_history(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    (hit,) = mem.search("Redis maxmemory")
    assert hit.episode.text == MARCH
    (note,) = hit.facts
    assert note.link == "mentioned" and not note.current
    assert note.fact.object == "Redis" and note.fact.valid_to_text == "2026-10-12"
    assert note.superseded_by is not None and note.superseded_by.object == "SQLite"
    assert hit.is_history
    assert note.to_dict()["link"] == "mentioned"
    r = mem.recall("what did we tune for the queue workers?")
    (line,) = [i.text for i in r.items if i.kind == "episode"]
    assert "HISTORY: ended 2026-10-12, superseded by my_api -uses_queue-> SQLite" in line


def test_at_a_basis_when_the_fact_held_the_hit_is_current(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    (hit,) = mem.search("Redis maxmemory", at="2026-06-01")
    (note,) = hit.facts
    assert note.link == "mentioned" and note.current and not hit.is_history
    r = mem.recall("what did we tune for the queue workers?", at="2026-06-01")
    (line,) = [i.text for i in r.items if i.kind == "episode"]
    assert "HISTORY" not in line


def test_an_alias_names_the_subject(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    mem.alias("my_api", "the api")
    mem.add_episode("the api now drains Redis faster", occurred_at="2026-04-01T00:00:00Z")
    hits = {h.episode.text: h for h in mem.search("drains Redis faster")}
    (note,) = hits["the api now drains Redis faster"].facts
    assert note.link == "mentioned" and note.fact.object == "Redis"


def test_said_outside_the_facts_interval_mentions_nothing(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    mem.add_episode("Redis for my_api? maybe one day", occurred_at="2025-12-01T00:00:00Z")  # before 2026-03-02
    hits = {h.episode.text: h for h in mem.search("Redis my_api maybe one day")}
    assert hits["Redis for my_api? maybe one day"].facts == ()


def test_naming_only_the_subject_or_only_the_value_mentions_nothing(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    mem.add_episode("Redis is fast, they say", occurred_at="2026-04-01T00:00:00Z")
    mem.add_episode("my_api had a slow week", occurred_at="2026-04-01T00:00:00Z")
    for text in ("Redis is fast, they say", "my_api had a slow week"):
        (hit,) = [h for h in mem.search(text) if h.episode.text == text]
        assert hit.facts == ()


def test_an_explicit_link_takes_precedence(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    ep = mem.add_episode("my_api moved its queue from Redis to SQLite", occurred_at="2026-10-12T09:00:00Z")
    mem.add_fact("my_api", "queue_migrated", "yes", "2026-10-12", episode_id=ep.id)
    (hit,) = [h for h in mem.search("moved its queue") if h.episode.id == ep.id]
    assert [(n.link, n.fact.predicate) for n in hit.facts] == [("cited", "queue_migrated")]


def test_a_literal_value_is_matched_by_its_text(make_memory: MemoryFactory) -> None:
    mem = _queue(make_memory)
    mem.define_predicate("max_memory", "one")
    mem.add_fact("my_api", "max_memory", "2gb", "2026-03-01", literal=True)
    mem.add_fact("my_api", "max_memory", "4gb", "2026-05-01", literal=True)
    mem.add_episode("set my_api to 2gb after the outage", occurred_at="2026-03-15T00:00:00Z")
    (hit,) = [h for h in mem.search("after the outage") if "2gb" in h.episode.text]
    (note,) = hit.facts
    assert note.link == "mentioned" and note.fact.object == "2gb" and not note.current
    assert note.superseded_by is not None and note.superseded_by.object == "4gb"


def test_known_at_before_the_change_sees_the_fact_as_it_was_believed(make_memory: MemoryFactory) -> None:
    mem = make_memory(clock=FakeClock("2026-03-25T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    mem.define_predicate("uses_queue", "one")
    mem.add_fact("my_api", "uses_queue", "Redis", "2026-03-02")
    before = mem.add_episode(MARCH, occurred_at="2026-03-20T10:00:00Z").recorded_at
    mem.add_fact("my_api", "uses_queue", "SQLite", "2026-10-12")
    (now_hit,) = mem.search("Redis maxmemory", at="2026-11-01")
    assert now_hit.is_history
    (then_hit,) = mem.search("Redis maxmemory", at="2026-11-01", known_at=before)
    assert not then_hit.is_history and then_hit.facts[0].current


def test_a_namespace_without_entities_matches_no_words(make_memory: MemoryFactory) -> None:
    """``has_entities`` is per namespace and follows writes; a namespace with
    none answers a search without matching its hits' words against names,
    and the first fact makes its old episodes mentioned evidence."""
    mem = make_memory(clock=FakeClock("2026-11-20T00:00:00Z", tick=1.0))
    other = make_memory("elsewhere", clock=FakeClock("2026-11-20T00:00:00Z", tick=1.0))
    for m in (mem, other):
        m.use_embedder(None)
    mem.add_episode(MARCH, occurred_at="2026-03-20T10:00:00Z")
    store = mem.store
    ns = mem._scope.ns_id
    assert not store.has_entities(ns)
    (hit,) = mem.search("Redis maxmemory")
    assert hit.facts == ()
    other.add_fact("my_api", "uses_queue", "Redis", "2026-03-02")
    assert store.has_entities(other._scope.ns_id) and not store.has_entities(ns)
    mem.add_fact("my_api", "uses_queue", "Redis", "2026-03-02")
    assert store.has_entities(ns)
    (hit,) = mem.search("Redis maxmemory")
    (note,) = hit.facts
    assert note.link == "mentioned" and note.fact.object == "Redis"
