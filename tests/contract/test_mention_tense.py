"""Mentions respect tense and the speaker's time, and an ambiguous mention is
stored with its ambiguity (one ``episode_times`` row per candidate) and
survives the store, reindexing and recall without becoming a confident date."""

from __future__ import annotations

from chronomem import FakeClock, Memory

from ._helpers import MemoryFactory, utc


def _mem(make_memory: MemoryFactory) -> Memory:
    mem = make_memory(clock=FakeClock("2026-11-20T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    return mem


def test_a_future_date_is_stored_forward_from_the_utterance(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    ep = mem.add_episode("her last day is Jan 31", occurred_at="2024-01-10T10:00:00Z")
    (m,) = mem.episode(ep.id).mentions
    assert (m.phrase, m.start, m.end, m.certain) == ("Jan 31", utc(2024, 1, 31), utc(2024, 2, 1), True)
    past = mem.add_episode("her last day was Jan 31", occurred_at="2024-01-10T10:00:00Z")
    assert [(x.start, x.certain) for x in mem.episode(past.id).mentions] == [(utc(2023, 1, 31), True)]


def test_an_ambiguous_mention_keeps_both_candidates(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    ep = mem.add_episode("Standup on Monday", occurred_at="2023-07-20T10:00:00Z")  # a Thursday
    for got in (ep, mem.episode(ep.id), mem.episodes()[0]):
        assert sorted((m.phrase, m.start, m.certain) for m in got.mentions) == [
            ("on Monday", utc(2023, 7, 17), False), ("on Monday", utc(2023, 7, 24), False)]
    assert mem.reindex(lexical=False, vectors=False, times=True)["times"] == 1
    assert sorted(m.start for m in mem.episode(ep.id).mentions if not m.certain) == [
        utc(2023, 7, 17), utc(2023, 7, 24)]
    assert {m.to_dict()["certain"] for m in mem.episode(ep.id).mentions} == {False}


def test_recall_prints_no_resolution_it_is_unsure_of(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    mem.add_episode("The glider standup on Monday", occurred_at="2023-07-20T10:00:00Z")
    mem.add_episode("The glider review will be on Monday", occurred_at="2023-07-20T11:00:00Z")
    lines = sorted(i.text for i in mem.recall("glider standup review").items if i.kind == "episode")
    assert lines == [
        "[2023-07-20] The glider review will be on Monday (on Monday = 2023-07-24)",
        "[2023-07-20] The glider standup on Monday (on Monday = ? (2023-07-17 or 2023-07-24))",
    ]


def test_a_search_naming_a_time_still_boosts_the_episode_that_mentions_it(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    mem.add_episode("We will move the glider tests to MongoDB in January", occurred_at="2023-12-15T10:00:00Z")
    mem.add_episode("The glider tests run nightly on SQLite", occurred_at="2023-12-15T10:00:00Z")
    hits = {h.episode.text: h for h in mem.search("glider tests in January 2024", view="raw", config="lexical")}
    assert len(hits) == 2  # same occurred time: only the mention of 2024-01 tells them apart
    january = next(h for t, h in hits.items() if "January" in t)
    nightly = next(h for t, h in hits.items() if "nightly" in t)
    assert january.parts.time > nightly.parts.time
