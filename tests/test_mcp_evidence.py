"""The evidence tools over the SDK's in-memory client: ``remember``, ``recall``
and ``search`` with good and bad arguments, on real SQLite files and the real
bundled offline embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

import chronomem  # noqa: E402
from chronomem import FakeClock, Memory  # noqa: E402
from chronomem.adapters.mcp import build_server  # noqa: E402
from chronomem.service.evidence import MAX_EPISODE_CHARS, default_embedder  # noqa: E402

NOW = "2026-11-29T12:00:00Z"


@pytest.fixture(scope="session")
def embedder() -> object:
    return default_embedder()


@pytest.fixture()
def mem(tmp_path: Path, embedder: object) -> Iterator[Memory]:
    m = chronomem.open(tmp_path / "mem.db", clock=FakeClock(NOW, tick=0.001))
    yield m
    m.close()


def calls(mem: Memory, *steps: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """Run tool calls in order over one in-memory client session."""

    async def main() -> list[CallToolResult]:
        async with Client(build_server(mem), mode="legacy") as client:
            return [await client.call_tool(name, args) for name, args in steps]

    return anyio.run(main)


def call(mem: Memory, name: str, args: dict[str, Any]) -> CallToolResult:
    return calls(mem, (name, args))[0]


def text(r: CallToolResult) -> str:
    return "\n".join(getattr(b, "text", "") for b in r.content)


def ok(r: CallToolResult) -> dict[str, Any]:
    assert not r.is_error, text(r)
    data: dict[str, Any] | None = r.structured_content
    assert data is not None
    return data


def err(r: CallToolResult) -> str:
    assert r.is_error, f"expected an error, got: {text(r)}"
    msg = text(r)
    assert "Traceback" not in msg and "\n" not in msg and msg.endswith(".")
    return msg


def _nothing_written(mem: Memory) -> None:
    assert mem.evidence_stats()["episodes"] == 0
    assert mem.stats().facts == 0


# -- remember --------------------------------------------------------------------
def test_remember_stores_episode_and_facts_citing_it(mem: Memory) -> None:
    r = call(mem, "remember", {
        "text": "Bob now leads the platform team; Alice moved to research last week.",
        "occurred_at": "yesterday", "speaker": "Dana", "session": "standup", "source": "standup notes",
        "metadata": {"title": "standup"},
        "facts": [
            {"subject": "Platform team", "predicate": "lead", "object": "Bob", "valid_from": "yesterday"},
            {"subject": "Alice", "predicate": "works_on", "object": "research", "valid_from": "last week",
             "confidence": 0.9},
        ],
    })
    data = ok(r)
    ep = data["episode"]
    assert ep["occurred_at"] == "2026-11-28T00:00:00Z" and ep["speaker"] == "Dana" and ep["session"] == "standup"
    assert ep["mentions"] == [{"phrase": "last week", "start": "2026-11-16", "end": "2026-11-23"}]
    assert data["times"] == {"occurred_at": "2026-11-28", "facts[0].valid_from": "2026-11-28",
                             "facts[1].valid_from": "2026-11-16"}
    lead, works = data["facts"]
    assert (lead["subject"], lead["object"], lead["valid_from"]) == ("Platform team", "Bob", "2026-11-28")
    assert works["valid_from"] == "2026-11-16" and works["confidence"] == 0.9
    assert {lead["episode_id"], works["episode_id"]} == {ep["id"]}
    assert lead["source"] == "standup notes"
    assert sorted(ep["fact_ids"]) == sorted([lead["id"], works["id"]])
    lines = text(r).splitlines()
    assert lines[0].startswith("(resolved occurred_at='yesterday' -> 2026-11-28, facts[0].valid_from=")
    assert lines[1].startswith("remembered episode (occurred 2026-11-28): Bob now leads") and \
        lines[1].endswith(f"[{ep['id']}]")
    assert lines[2] == f"recorded: Platform team -lead-> Bob [2026-11-28, …) (current) [{lead['id']}]"
    # the store agrees
    stored = mem.episode(ep["id"])
    assert stored.text.startswith("Bob now leads") and stored.metadata == {"title": "standup"}
    assert mem.fact(lead["id"]).episode_id == ep["id"]
    assert {f.id for f in mem.episode_facts(ep["id"])} == {lead["id"], works["id"]}


def test_remember_text_only(mem: Memory) -> None:
    data = ok(call(mem, "remember", {"text": "We agreed to freeze deploys during the holidays."}))
    assert data["facts"] == [] and "times" not in data and data["episode"]["occurred_at"] is None
    assert mem.evidence_stats()["episodes"] == 1 and mem.stats().facts == 0


_GOOD = {"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"text": "   "}, "episode text must be a non-empty string"),
        ({"text": "x" * (MAX_EPISODE_CHARS + 1)}, f"more than the limit of {MAX_EPISODE_CHARS}"),
        ({}, "missing required argument 'text'"),
        ({"text": "note", "occurred_at": "someday"}, "invalid time for occurred_at: 'someday'"),
        ({"text": "note", "facts": [_GOOD, {**_GOOD, "valid_from": "the other day"}]},
         "invalid time for facts[1].valid_from"),
        ({"text": "note", "facts": [_GOOD, {**_GOOD, "object": "Bob", "valid_from": "2024", "valid_to": "2023"}]},
         "facts[1]: valid_to (2023) must be after valid_from (2024)"),
        ({"text": "note", "facts": [_GOOD, {**_GOOD, "subject": "  "}]}, "facts[1]: subject '  ' is empty"),
        ({"text": "note", "facts": [_GOOD, {"subject": "Acme", "predicate": "ceo"}]},
         "missing required argument 'facts[1].object'"),
        ({"text": "note", "facts": [{**_GOOD, "valid_form": "2020"}]}, "unknown argument 'facts[0].valid_form'"),
        ({"text": "note", "facts": [{**_GOOD, "object": [1, 2]}]}, "argument 'facts[0].object'"),
        ({"text": "note", "facts": [{**_GOOD, "confidence": 2}]}, "argument 'facts[0].confidence'"),
        ({"text": "note", "facts": {"subject": "Acme"}}, "argument 'facts'"),
        ({"text": "note", "recorded_at": "2020"}, "unknown argument(s) 'recorded_at'"),
    ],
)
def test_remember_bad_arguments_write_nothing(mem: Memory, args: dict[str, Any], needle: str) -> None:
    msg = err(call(mem, "remember", args))
    assert msg.startswith("remember failed: ") and needle in msg, msg
    assert len(msg) < 600  # a 100k-character argument is never echoed back
    _nothing_written(mem)


def test_remember_supersede_false_on_single_valued_predicate_writes_nothing(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    msg = err(call(mem, "remember", {"text": "Bob is co-CEO.",
                                     "facts": [{**_GOOD, "object": "Bob", "supersede": False}]}))
    assert "facts[0]: predicate 'ceo' is single-valued" in msg
    _nothing_written(mem)


# -- recall ------------------------------------------------------------------------
def test_remember_then_recall_returns_fact_and_episode_with_citation_ids(mem: Memory) -> None:
    remembered, recalled = calls(
        mem,
        ("remember", {"text": "Decision: the billing service moves to Postgres 16 in Q1; Carol owns the migration.",
                      "occurred_at": "2026-11-20", "speaker": "Carol",
                      "facts": [{"subject": "Billing", "predicate": "database", "object": "Postgres",
                                 "valid_from": "2026-11-20"},
                                {"subject": "Billing", "predicate": "migration_owner", "object": "Carol"}]}),
        ("recall", {"question": "What database will Billing use and who owns the migration?"}),
    )
    rem = ok(remembered)
    ep_id = rem["episode"]["id"]
    fact_ids = {f["id"] for f in rem["facts"]}
    data = ok(recalled)
    body = text(recalled)
    assert body == data["text"]
    assert "Billing -database-> Postgres [2026-11-20, …) (current)" in body
    assert all(f"[{fid}]" in body for fid in fact_ids)
    assert f"[{ep_id}]" in body and "Postgres 16 in Q1" in body
    cites = {(i["kind"], i["cite"]) for i in data["items"]}
    assert {("fact", fid) for fid in fact_ids} | {("episode", ep_id)} <= cites
    assert data["entities"] == ["Billing"] and data["question"].startswith("What database")
    assert {f["id"] for f in data["facts"]} == fact_ids and all(f["episode_id"] == ep_id for f in data["facts"])
    assert ep_id in [h["id"] for h in data["hits"]] and "parts" in data["hits"][0]
    assert 0 < data["tokens"] <= data["budget_tokens"] == 1500


def test_recall_at_a_past_time_and_budget(mem: Memory) -> None:
    mem.define_predicate("lead", "one")
    ok(call(mem, "fact_add", {"subject": "Platform", "predicate": "lead", "object": "Alice", "valid_from": "2024"}))
    ok(call(mem, "remember", {"text": "Bob took over the platform team from Alice.", "occurred_at": "2026-06-01",
                              "facts": [{"subject": "Platform", "predicate": "lead", "object": "Bob",
                                         "valid_from": "2026-06"}]}))
    then = call(mem, "recall", {"question": "Who leads Platform?", "at": "last March"})
    data = ok(then)
    assert data["times"] == {"at": "2026-03"}
    assert text(then).splitlines()[0] == "(resolved at='last March' -> 2026-03)"
    assert "Platform -lead-> Alice" in text(then) and "-lead-> Bob" not in text(then)
    now = ok(call(mem, "recall", {"question": "Who leads Platform?"}))
    assert "Platform -lead-> Bob" in now["text"]
    tiny = call(mem, "recall", {"question": "Who leads Platform?", "budget_tokens": 1})
    assert ok(tiny)["items"] == [] and text(tiny) == "nothing recalled for 'Who leads Platform?' " \
        "(no matching facts or evidence)"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"question": "  "}, "recall question must be a non-empty string"),
        ({}, "missing required argument 'question'"),
        ({"question": "who?", "at": "the other day"}, "invalid time for at: 'the other day'"),
        ({"question": "who?", "at": "2024-13"}, "invalid time for at"),
        ({"question": "who?", "budget_tokens": 0}, "argument 'budget_tokens'"),
        ({"question": "who?", "budget": 10}, "unknown argument(s) 'budget'"),
    ],
)
def test_recall_bad_arguments(mem: Memory, args: dict[str, Any], needle: str) -> None:
    msg = err(call(mem, "recall", args))
    assert msg.startswith("recall failed: ") and needle in msg, msg


# -- search ------------------------------------------------------------------------
def _history(mem: Memory) -> tuple[str, str, str, str]:
    """An old episode whose fact was superseded by a newer one; returns
    (old episode, old fact, new episode, new fact) ids."""
    mem.define_predicate("lead", "one")
    old, new = calls(
        mem,
        ("remember", {"text": "Alice leads the platform team.", "occurred_at": "2025-01-10", "session": "s1",
                      "facts": [{"subject": "Platform", "predicate": "lead", "object": "Alice",
                                 "valid_from": "2025-01"}]}),
        ("remember", {"text": "Bob is the new lead of the platform team.", "occurred_at": "2026-06-01",
                      "session": "s2", "facts": [{"subject": "Platform", "predicate": "lead", "object": "Bob",
                                                  "valid_from": "2026-06"}]}),
    )
    o, n = ok(old), ok(new)
    return o["episode"]["id"], o["facts"][0]["id"], n["episode"]["id"], n["facts"][0]["id"]


def test_search_hits_score_parts_and_views(mem: Memory) -> None:
    old_ep, old_fact, new_ep, new_fact = _history(mem)
    world = call(mem, "search", {"query": "platform team lead"})
    data = ok(world)
    assert data["view"] == "as_world" and [h["id"] for h in data["hits"]] == [new_ep]  # old one: all facts ended
    hit = data["hits"][0]
    assert hit["parts"]["fused"] > 0 and 0 < hit["score"] < 1  # the learned ranker's probability (docs/evidence.md)
    assert hit["parts"]["bm25_rank"] >= 1 and hit["parts"]["dense_rank"] >= 1 and hit["parts"]["bm25"] > 0
    assert hit["facts"] == [{"id": new_fact, "line": mem.fact(new_fact).line(), "current": True,
                             "link": "cited"}]
    assert text(world).splitlines()[0].startswith("1. [2026-06-01] Bob is the new lead of the platform team. (score ")
    assert text(world).splitlines()[0].endswith(f"[{new_ep}]")

    raw = call(mem, "search", {"query": "platform team lead", "view": "raw", "k": 5})
    hits = {h["id"]: h for h in ok(raw)["hits"]}
    assert set(hits) == {old_ep, new_ep}
    note = hits[old_ep]["facts"][0]
    assert note["id"] == old_fact and note["current"] is False and note["ended_at"] == "2026-06"
    assert note["superseded_by"] == new_fact and hits[old_ep]["history"] is True
    assert "   supports: Platform -lead-> Alice [2025-01, 2026-06)" in text(raw)
    assert "HISTORY: ended 2026-06, superseded by Platform -lead-> Bob" in text(raw)

    # an explicitly superseded episode is annotated in the raw view
    mem.supersede_episode(old_ep, new_ep)
    raw = call(mem, "search", {"query": "Alice leads", "view": "raw"})
    assert f"SUPERSEDED by episode [{new_ep}]" in text(raw)
    assert {h["id"]: h for h in ok(raw)["hits"]}[old_ep]["superseded_by"] == new_ep

    # as_recorded before anything was recorded: nothing
    past = ok(call(mem, "search", {"query": "platform", "view": "as_recorded", "at": "2026-01"}))
    assert past["count"] == 0 and past["times"] == {"at": "2026-01"}
    # filters
    s1 = ok(call(mem, "search", {"query": "platform team", "view": "raw", "session": "s1"}))
    assert [h["id"] for h in s1["hits"]] == [old_ep]
    recent = ok(call(mem, "search", {"query": "platform team", "view": "raw", "since": "2026", "until": "today"}))
    assert [h["id"] for h in recent["hits"]] == [new_ep] and recent["times"] == {"since": "2026",
                                                                              "until": "2026-11-29"}
    none = call(mem, "search", {"query": "quarterly revenue forecast", "view": "raw", "session": "nope"})
    assert text(none) == "no evidence matches 'quarterly revenue forecast' in the raw view"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"query": " "}, "search query must be a non-empty string"),
        ({"query": "x" * (MAX_EPISODE_CHARS + 1)}, f"more than the limit of {MAX_EPISODE_CHARS}"),
        ({"query": "lead", "view": "sideways"}, "argument 'view': Input should be 'as_world', 'as_recorded' or 'raw'"),
        ({"query": "lead", "k": 0}, "argument 'k'"),
        ({"query": "lead", "at": "someday"}, "invalid time for at: 'someday'"),
        ({"query": "lead", "since": "2026-02-30"}, "invalid time for since"),
        ({"query": "lead", "limit": 3}, "unknown argument(s) 'limit'"),
        ({}, "missing required argument 'query'"),
    ],
)
def test_search_bad_arguments(mem: Memory, args: dict[str, Any], needle: str) -> None:
    msg = err(call(mem, "search", args))
    assert msg.startswith("search failed: ") and needle in msg, msg
    assert len(msg) < 600


def test_search_marks_an_uncited_hit_with_the_facts_it_mentions(mem: Memory) -> None:
    mem.define_predicate("uses_queue", "one")
    mem.add_fact("my_api", "uses_queue", "Redis", "2026-03-02")
    mem.add_fact("my_api", "uses_queue", "SQLite", "2026-10-12")
    ep = mem.add_episode("we tuned Redis maxmemory for the my_api queue workers", occurred_at="2026-03-20T10:00:00Z")
    r = call(mem, "search", {"query": "Redis maxmemory", "at": "2026-11-01"})
    (hit,) = [h for h in ok(r)["hits"] if h["id"] == ep.id]
    assert hit["history"] is True
    assert [(f["link"], f["current"]) for f in hit["facts"]] == [("mentioned", False)]
    assert any(line.strip().startswith("mentions: my_api -uses_queue-> Redis [2026-03-02, 2026-10-12)")
               and "-- HISTORY: ended 2026-10-12, superseded by my_api -uses_queue-> SQLite" in line
               for line in text(r).splitlines())
