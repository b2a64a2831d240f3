"""``recall`` answers history: after the facts valid at ``at``, the same
entities' ended facts, labelled as no longer valid and with what ended them."""

from __future__ import annotations

from chronomem import FakeClock, Memory

from ._helpers import MemoryFactory


def _priya(make_memory: MemoryFactory) -> Memory:
    mem = make_memory(clock=FakeClock("2025-06-01T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    mem.define_predicate("works_at", "one")
    mem.add_fact("Priya", "works_at", "Orbit Labs", "2021-03")
    mem.add_fact("Priya", "works_at", "Nimbus", "2024-02")  # ends Orbit Labs at 2024-02
    mem.add_fact("Priya", "lives_in", "Leeds", "2019", "2022")
    mem.add_fact("Priya", "mentors", "Sam", "2022")
    mem.invalidate("Priya", "mentors", "Sam", "2024-06", reason="Sam left")
    mem.add_episode("Priya said the Nimbus onboarding went well.", occurred_at="2024-03-01", speaker="Priya")
    return mem


def _history(r: object) -> list[str]:
    return [line for line in r.text.splitlines() if "(ended " in line]  # type: ignore[attr-defined]


def test_a_question_about_the_past_gets_every_ended_fact(make_memory: MemoryFactory) -> None:
    mem = _priya(make_memory)
    r = mem.recall("Where does Priya work now, and where did she work before?")
    lines = r.text.splitlines()
    assert lines[0] == "Facts (valid at 2025-06-01):" and "Nimbus" in lines[1] and "(current)" in lines[1]
    assert lines[2] == "Earlier (no longer valid at 2025-06-01):"
    assert [h.split(" -")[1].split("->")[0] for h in _history(r)] == ["mentors", "works_at", "lives_in"]  # latest first
    assert _history(r)[0].endswith("(ended 2024-06: Sam left)")
    assert "Orbit Labs [2021-03, 2024-02)" in _history(r)[1] and _history(r)[1].endswith(
        "(ended 2024-02: superseded by Nimbus)")
    assert [f.object for f in r.facts] == ["Nimbus"]
    assert [f.object for f in r.history] == ["Sam", "Orbit Labs", "Leeds"]
    assert [i.kind for i in r.items] == ["fact", "history", "history", "history", "episode"]
    assert r.to_dict()["history"][1]["object"] == "Orbit Labs"


def test_a_plain_question_still_gets_the_last_value_of_a_single_valued_predicate(
        make_memory: MemoryFactory) -> None:
    mem = _priya(make_memory)
    r = mem.recall("Where does Priya work?")
    assert [f.object for f in r.history] == ["Orbit Labs"]  # not Leeds, not Sam: many-valued, not asked
    assert "Earlier (no longer valid at 2025-06-01):" in r.text


def test_a_past_at_is_a_question_about_the_past(make_memory: MemoryFactory) -> None:
    mem = _priya(make_memory)
    r = mem.recall("Where does Priya work?", at="2023-01-01")
    assert [f.object for f in r.facts] == ["Orbit Labs", "Sam"]
    assert [f.object for f in r.history] == ["Leeds"]  # ended 2022, before at
    assert "Earlier (no longer valid at 2023-01-01):" in r.text


def test_history_stays_inside_the_budget_after_the_current_facts(make_memory: MemoryFactory) -> None:
    mem = _priya(make_memory)
    full = mem.recall("Where did Priya work before?", budget_tokens=100_000)
    fact_tokens = next(i.tokens for i in full.items if i.kind == "fact")
    first_history = next(i.tokens for i in full.items if i.kind == "history")
    r = mem.recall("Where did Priya work before?", budget_tokens=fact_tokens + first_history)
    assert [i.kind for i in r.items] == ["fact", "history"] and r.tokens <= fact_tokens + first_history


def test_no_entity_no_history(make_memory: MemoryFactory) -> None:
    mem = _priya(make_memory)
    r = mem.recall("what happened before the onboarding?")
    assert r.history == () and "Earlier" not in r.text
