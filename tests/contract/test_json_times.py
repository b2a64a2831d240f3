"""One JSON time form: every ``to_dict()`` renders a fact's valid times at
their precision (``"2015-03"``) wherever the fact sits — top level or nested
in an event, conflict, diff, path, hit, note or recall — and UTC as ``Z``."""

from __future__ import annotations

import json
from typing import Any, Iterator

from chronomem import FakeClock, Memory

from ._helpers import MemoryFactory


def _facts_in(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if {"subject", "predicate", "valid_from", "valid_from_precision", "version"} <= set(value):
            yield value
        for v in value.values():
            yield from _facts_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from _facts_in(v)


def _story(make_memory: MemoryFactory) -> Memory:
    mem = make_memory(clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015-03")
    mem.add_fact("Acme", "ceo", "Bob", "2018")
    mem.add_fact("Acme", "hq", "Oslo", "2018")
    mem.add_fact("Acme", "hq", "Bergen", "2018-06")  # an undeclared predicate: a conflict to review
    mem.add_fact("Bob", "lives_in", "Oslo", "2019-02-03")
    ep = mem.add_episode("Alice handed over to Bob as CEO of Acme.", occurred_at="2018-01-02T09:30:00Z",
                         facts=[{"subject": "Acme", "predicate": "board", "object": "Carol", "valid_from": "2017"}])
    mem.correct(alice.id, valid_from="2015-04")
    assert ep.id
    return mem


def test_every_nested_fact_has_its_times_at_their_precision(make_memory: MemoryFactory) -> None:
    mem = _story(make_memory)
    results: list[Any] = [
        *mem.facts("Acme"), *mem.timeline("Acme"), *mem.recent_changes(50), mem.diff("2016", "2019", "Acme"),
        mem.diff("2025-01-01T00:00:01Z", "2025-01-01T00:01:00Z", "Acme", axis="system"), *mem.conflicts(),
        *mem.paths("Acme", "Oslo"), *mem.neighbors("Acme", 2), *mem.search("Alice Bob CEO"),
        mem.recall("Who was CEO of Acme before Bob?"), *mem.history("Acme"), mem.stats(), *mem.episodes(),
        *mem.fact_bars("Acme"), *mem.evidence(mem.facts("Acme")[0].id),
    ]
    texts = {(f.id, f.version): (f.valid_from_text, f.valid_to_text) for f in mem.history("Acme", direction="both")}
    texts |= {(f.id, f.version): (f.valid_from_text, f.valid_to_text) for f in mem.history("Bob", direction="both")}
    seen = 0
    for r in results:
        d = r.to_dict()
        assert "+00:00" not in json.dumps(d), type(r).__name__
        for fd in _facts_in(d):
            assert (fd["valid_from"], fd["valid_to"]) == texts[(fd["id"], fd["version"])], type(r).__name__
            seen += 1
    assert seen >= 30  # the walk did reach nested facts
    event = next(e for e in mem.timeline("Acme") if e.fact is not None and e.fact.object == "Bob")
    assert event.to_dict()["fact"]["valid_from"] == "2018"
    conflict = next(c for c in mem.conflicts() if c.predicate == "hq")
    assert sorted(f["valid_from"] for f in conflict.to_dict()["facts"]) == ["2018", "2018-06"]


def test_an_episodes_occurred_time_keeps_its_precision(make_memory: MemoryFactory) -> None:
    mem = make_memory(clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    day = mem.add_episode("the launch went well", occurred_at="2023-05-08")
    instant = mem.add_episode("the launch went really well", occurred_at="2023-05-08T14:30:00Z")
    assert mem.episode(day.id).to_dict()["occurred_at"] == "2023-05-08"
    assert mem.episode(instant.id).to_dict()["occurred_at"] == "2023-05-08T14:30:00Z"
    (hit,) = [h for h in mem.search("launch went well") if h.episode.id == day.id]
    assert hit.to_dict()["episode"]["occurred_at"] == "2023-05-08"
