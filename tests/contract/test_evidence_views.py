"""Evidence views on the right axis (``docs/concepts/time.md``, "Evidence
views"), on both backends, through ``search`` and ``recall``, lexical only
and with the dense side (exact and ANN) on.

* ``as_world`` at T as known at K: recorded by K, said by T
  (``coalesce(occurred_at, recorded_at) <= T``), minus the episodes a
  supersession recorded by K had overridden by T (it takes effect when the
  superseding episode was said), minus those whose citing facts, as known at
  K, had all ended by T;
* ``as_recorded`` at T: recorded by T (and by K), superseded ones included;
* ``raw``: everything (recorded by K when ``known_at`` is given).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronomem
from chronomem import FakeClock, InvalidTimeError, Memory
from chronomem.io import export_jsonl, import_jsonl
from chronomem.service.evidence import SearchConfig
from conftest import store_target
from hash_embedder import HashEmbedder

from ._helpers import MemoryFactory, utc

# lexical only; dense only (exact); dense through the HNSW index (every slot
# is above the threshold)
MODES = ("lexical", "dense", "ann")
ANN = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=1)


def _config(mode: str) -> SearchConfig | str:
    return ANN if mode == "ann" else mode


def _memory(make_memory: MemoryFactory, mode: str, clock: FakeClock, namespace: str = "default") -> Memory:
    mem = make_memory(namespace, clock=clock)
    mem.use_embedder(None if mode == "lexical" else HashEmbedder())
    return mem


def _ids(mem: Memory, query: str, mode: str, **kw: Any) -> set[str]:
    return {h.episode.id for h in mem.search(query, k=100, config=_config(mode), **kw)}


def _recalled(mem: Memory, question: str, **kw: Any) -> set[str]:
    return {h.episode.id for h in mem.recall(question, **kw).hits}


# -- the meeting that moved (the example of docs/concepts/time.md) ----------------
def _meeting(make_memory: MemoryFactory, mode: str) -> tuple[Memory, str, str]:
    """"The design review is on Tuesday" said 2024-03-01; "the review moved
    to Thursday" said 2024-03-04 but recorded (and the supersession made)
    only on 2024-03-10."""
    clock = FakeClock("2024-03-01T09:00:00Z", tick=1.0)
    mem = _memory(make_memory, mode, clock)
    first = mem.add_episode("The design review is on Tuesday.", occurred_at="2024-03-01T09:00:00Z")
    clock.set("2024-03-10T09:00:00Z")
    second = mem.add_episode("The design review moved to Thursday.", occurred_at="2024-03-04T09:00:00Z")
    mem.supersede_episode(first.id, second.id)
    clock.set("2026-11-20T00:00:00Z")
    return mem, first.id, second.id


# (view, at, known_at) -> which of (first, second)
MEETING_TABLE = [
    (("as_world", "2024-03-05", None), {"second"}),
    (("as_world", "2024-03-05", "2024-03-06"), {"first"}),
    (("as_world", "2024-03-05", "2024-03-11"), {"second"}),
    (("as_world", "2024-03-03", None), {"first"}),  # before the move was said
    (("as_world", "2024-02-28", None), set()),
    (("as_world", None, None), {"second"}),
    (("as_world", None, "2024-03-09"), {"first"}),
    (("as_recorded", "2024-03-06", None), {"first"}),
    (("as_recorded", "2024-03-11", None), {"first", "second"}),
    (("as_recorded", "2024-03-11", "2024-03-06"), {"first"}),  # recorded by min(at, known_at)
    (("as_recorded", None, None), {"first", "second"}),
    (("raw", None, None), {"first", "second"}),
    (("raw", None, "2024-03-06"), {"first"}),
    (("raw", "2020", None), {"first", "second"}),  # `at` does not bound raw
]


@pytest.mark.parametrize("mode", MODES)
def test_the_meeting_that_moved(make_memory: MemoryFactory, mode: str) -> None:
    mem, first, second = _meeting(make_memory, mode)
    name = {first: "first", second: "second"}
    for (view, at, known), want in MEETING_TABLE:
        got = {name[i] for i in _ids(mem, "design review", mode, view=view, at=at, known_at=known)}
        assert got == want, (view, at, known)
    # the supersession: effective when the new plan was said, recorded when it was made
    old = mem.episode(first)
    assert old.superseded_by == second and old.superseded_at == utc(2024, 3, 4, 9)


@pytest.mark.parametrize("mode", ["lexical", "dense"])
def test_recall_answers_the_meeting_as_known_then(make_memory: MemoryFactory, mode: str) -> None:
    mem, first, second = _meeting(make_memory, mode)
    q = "when is the design review?"
    assert _recalled(mem, q, at="2024-03-05") == {second}
    assert _recalled(mem, q, at="2024-03-05", known_at="2024-03-06") == {first}
    assert _recalled(mem, q, at="2024-03-03") == {first}
    assert _recalled(mem, q, known_at="2024-03-06") == {first}
    assert _recalled(mem, q) == {second}


# -- imported history: recorded today, said in 2023 ----------------------------------
def _imported(make_memory: MemoryFactory, mode: str, *, original: bool) -> tuple[Memory, list[str]]:
    clock = FakeClock("2026-11-20T00:00:00Z", tick=1.0)
    mem = _memory(make_memory, mode, clock)
    turns = [("We chose Postgres for the billing service.", "2023-09-14T10:00:00Z"),
             ("Postgres replication for billing is set up.", "2023-11-02T10:00:00Z"),
             ("Billing moves off Postgres next year.", "2024-05-20T10:00:00Z")]
    ids = mem.add_episodes([{"text": t, "occurred_at": at, **({"recorded_at": at} if original else {})}
                            for t, at in turns])
    return mem, ids


@pytest.mark.parametrize("mode", MODES)
def test_imported_history_is_found_where_it_was_said(make_memory: MemoryFactory, mode: str) -> None:
    mem, (sept, nov, may) = _imported(make_memory, mode, original=False)
    q = "Postgres billing"
    assert _ids(mem, q, mode, at="2023-10") == {sept}
    assert _ids(mem, q, mode, at="2024") == {sept, nov}
    assert _ids(mem, q, mode) == {sept, nov, may}
    # the memory stored it today: before today it knew none of it
    assert _ids(mem, q, mode, view="as_recorded", at="2023-10") == set()
    assert _ids(mem, q, mode, at="2023-10", known_at="2026-01") == set()
    assert _ids(mem, q, mode, view="raw", known_at="2026-01") == set()
    assert _recalled(mem, "what did we choose for billing?", at="2023-10") == {sept}


@pytest.mark.parametrize("mode", ["lexical", "dense"])
def test_history_imported_with_its_recorded_times(make_memory: MemoryFactory, mode: str) -> None:
    mem, (sept, nov, may) = _imported(make_memory, mode, original=True)
    q = "Postgres billing"
    assert _ids(mem, q, mode, view="as_recorded", at="2023-10") == {sept}
    assert _ids(mem, q, mode, at="2023-12", known_at="2023-10") == {sept}
    assert _ids(mem, q, mode, at="2023-12") == {sept, nov}
    assert _recalled(mem, "what did we choose for billing?", at="2023-12", known_at="2023-10") == {sept}


def test_recorded_at_may_not_be_in_the_future(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2026-11-20T00:00:00Z", tick=1.0)
    mem = _memory(make_memory, "lexical", clock)
    with pytest.raises(InvalidTimeError, match="recorded_at"):
        mem.add_episode("from the future", recorded_at="2027-01-01")
    with pytest.raises(InvalidTimeError, match="item 1: .*recorded_at"):
        mem.add_episodes(["fine", {"text": "from the future", "recorded_at": "2026-12"}])
    with pytest.raises(InvalidTimeError, match="recorded_at"):
        mem.add_episode("out of range", recorded_at="10000-01-01")
    assert mem.evidence_stats()["episodes"] == 0  # nothing was written
    now = mem.now()
    assert mem.add_episode("now is fine", recorded_at=now).recorded_at == now


# -- citing facts, read as known at K ------------------------------------------------
def _job(make_memory: MemoryFactory, mode: str) -> tuple[Memory, str]:
    clock = FakeClock("2024-01-01T00:00:00Z", tick=1.0)
    mem = _memory(make_memory, mode, clock)
    mem.define_predicate("employer", "one")
    ep = mem.add_episode("Sam started a job at Acme.", occurred_at="2024-01-01T00:00:00Z",
                         facts=[{"subject": "Sam", "predicate": "employer", "object": "Acme",
                                 "valid_from": "2024-01"}])
    clock.set("2024-06-01T00:00:00Z")
    mem.add_fact("Sam", "employer", "Beta", valid_from="2024-03")  # recorded in June: ends Acme at 2024-03
    clock.set("2026-11-20T00:00:00Z")
    return mem, ep.id


@pytest.mark.parametrize("mode", ["lexical", "dense"])
def test_an_episode_whose_facts_had_ended_is_history_as_known_then(make_memory: MemoryFactory, mode: str) -> None:
    mem, ep = _job(make_memory, mode)
    q = "Sam job Acme"
    # as known now, Acme had ended by April: the evidence is history there
    assert ep not in _ids(mem, q, mode, at="2024-04")
    # as known in May, Acme still held in April
    assert _ids(mem, q, mode, at="2024-04", known_at="2024-05") == {ep}
    assert _ids(mem, q, mode, at="2024-02") == {ep}
    assert _ids(mem, q, mode, view="as_recorded", at="2024-04") == {ep}  # the audit view keeps it
    (hit,) = mem.search(q, at="2024-04", known_at="2024-05", config=_config(mode))
    (note,) = hit.facts
    assert note.current and note.fact.object == "Acme" and note.fact.valid_to is None  # as known in May
    # recall reads its facts as known at K too
    r = mem.recall("where does Sam work?", at="2024-04", known_at="2024-05")
    assert [f.object for f in r.facts] == ["Acme"] and {h.episode.id for h in r.hits} == {ep}
    r = mem.recall("where does Sam work?", at="2024-04")
    assert [f.object for f in r.facts] == ["Beta"] and ep not in {h.episode.id for h in r.hits}


def test_known_at_is_parsed_like_every_time(make_memory: MemoryFactory) -> None:
    mem = _memory(make_memory, "lexical", FakeClock("2026-11-20T00:00:00Z"))
    mem.add_episode("a note")
    for call in (lambda: mem.search("note", known_at="the day after never"),
                 lambda: mem.recall("note?", known_at="not a time")):
        with pytest.raises(InvalidTimeError) as info:
            call()
        assert info.value.field == "known_at"


# -- dense and ANN agree with the SQL filter when the index answers ---------------------
def test_ann_and_exact_agree_with_supersessions(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    mem = _memory(make_memory, "dense", clock)
    ids = mem.add_episodes([{"text": f"status report number {i} about the launch",
                             "occurred_at": f"2024-{1 + i % 12:02d}-10T00:00:00Z"} for i in range(48)])
    for old, new in zip(ids[:10], ids[10:20], strict=True):
        mem.supersede_episode(old, new)
    for at in ("2024-03", "2024-08", None):
        for known in (None, "2025-01-01T00:00:05Z"):
            for k in (5, 20):
                exact = [h.episode.id for h in mem.search("launch status", k=k, at=at, known_at=known,
                                                          config="dense")]
                ann = [h.episode.id for h in mem.search("launch status", k=k, at=at, known_at=known, config=ANN)]
                lexical = _ids(mem, "launch status", "lexical", at=at, known_at=known)
                assert set(ann) == set(exact) and set(exact) <= lexical, (at, known, k)


# -- the definitions, in Python, against the store -------------------------------------
DAY = _dt.timedelta(days=1)
BASE = utc(2024, 1, 1)
VIEWS = ("as_world", "as_recorded", "raw")


@st.composite
def _histories(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 7))
    eps = []
    for _ in range(n):
        added = draw(st.integers(10, 29))  # the day the memory stores it
        eps.append({
            "added": added,
            "occurred": draw(st.none() | st.integers(0, 29)),
            "recorded": draw(st.none() | st.integers(0, added)),
        })
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n))
    sups: dict[int, tuple[int, int]] = {}
    for old, new in pairs:
        if old != new and old not in sups:
            sups[old] = (new, draw(st.integers(max(eps[old]["added"], eps[new]["added"]), 29)))
    # T: day starts (ties with stored times) and noons; K: noons (a supersession
    # made on day d is stamped a few ticks after its start)
    queries = draw(st.lists(st.tuples(st.sampled_from(VIEWS), st.none() | st.integers(0, 59),
                                      st.none() | st.integers(0, 29)), min_size=1, max_size=8))
    return {"eps": eps, "sups": sups, "queries": queries}


_COUNTER = iter(range(10**9))


def _check_definitions(make_memory: MemoryFactory, history: dict[str, Any], modes: tuple[str, ...]) -> None:
    # every example in its own namespace and its own stretch of time: the
    # store's clock (shared by its namespaces) is never ahead of this one
    n = next(_COUNTER)
    base = BASE + n * 60 * DAY
    clock = FakeClock(base + 10 * DAY, tick=1.0)
    mem = make_memory(f"h{n}", clock=clock)
    mem.use_embedder(HashEmbedder())
    eps, sups = history["eps"], history["sups"]
    ops = sorted([(e["added"], 0, i) for i, e in enumerate(eps)] + [(d, 1, old) for old, (_n, d) in sups.items()])
    ids: list[str | None] = [None] * len(eps)
    sup_recorded: dict[int, _dt.datetime] = {}
    for day, kind, i in ops:
        if base + day * DAY > clock.peek():
            clock.set(base + day * DAY)
        if kind == 0:
            e = eps[i]
            ids[i] = mem.add_episode(
                f"memo {i} about the plan",
                occurred_at=base + e["occurred"] * DAY if e["occurred"] is not None else None,
                recorded_at=base + e["recorded"] * DAY if e["recorded"] is not None else None).id
        else:
            mem.supersede_episode(str(ids[i]), str(ids[sups[i][0]]))
            sup_recorded[i] = base + day * DAY  # stamped a few ticks later, the same morning
    clock.set(base + 40 * DAY)
    stored = [mem.episode(str(x)) for x in ids]
    rec = [s.recorded_at for s in stored]
    said = [s.occurred_at if s.occurred_at is not None else s.recorded_at for s in stored]

    def expected(view: str, at: _dt.datetime | None, known: _dt.datetime | None) -> set[str]:
        out = set()
        for i, x in enumerate(ids):
            if known is not None and rec[i] > known:
                continue
            if view == "as_recorded" and at is not None and rec[i] > at:
                continue
            if view == "as_world":
                t = at if at is not None else mem.now()
                if said[i] > t:
                    continue
                if i in sups and said[sups[i][0]] <= t and (known is None or sup_recorded[i] <= known):
                    continue
            out.add(str(x))
        return out

    for view, t_half_days, k_day in history["queries"]:
        at = base + t_half_days * DAY / 2 if t_half_days is not None else None
        known = base + k_day * DAY + DAY / 2 if k_day is not None else None
        want = expected(view, at, known)
        for mode in modes:
            got = _ids(mem, "memo plan", mode, view=view, at=at, known_at=known)
            assert got == want, (mode, view, at, known)


def test_views_equal_their_definitions(make_memory: MemoryFactory, backend: str) -> None:
    # sized for 2 cores: the full run (every mode) on SQLite, a smaller one on PostgreSQL
    examples, modes = (40, MODES) if backend == "sqlite" else (8, ("lexical", "dense"))

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(history=_histories())
    def check(history: dict[str, Any]) -> None:
        _check_definitions(make_memory, history, modes)

    check()


# -- export / import carry both times of a supersession -------------------------------
def _meeting_reads(mem: Memory) -> dict[str, list[str]]:
    return {f"{view} {at} {known}": sorted(h.episode.text for h in mem.search("design review", k=100, view=view,
                                                                                at=at, known_at=known))
            for (view, at, known), _want in MEETING_TABLE}


@pytest.mark.parametrize("legacy", [False, True])
def test_export_import_keeps_the_supersession(make_memory: MemoryFactory, backend: str, tmp_path: Path,
                                              request: pytest.FixtureRequest, legacy: bool) -> None:
    src, first, second = _meeting(make_memory, "lexical")
    buf = io.StringIO()
    export_jsonl(src, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    (old,) = [x for x in lines if x.get("type") == "episode" and x["id"] == first]
    assert old["superseded_at"].startswith("2024-03-04T09:00:00")
    assert old["superseded_recorded_at"].startswith("2024-03-10T09:00")
    if legacy:  # a file written before schema 6: the recording time under superseded_at, no new field
        old["superseded_at"] = old.pop("superseded_recorded_at")
    (tmp_path / "other").mkdir()
    dst = chronomem.open(store_target(backend, tmp_path / "other", request),
                         clock=FakeClock("2026-11-21T00:00:00Z"), embedder=None)
    request.addfinalizer(dst.close)
    import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"), strict=True)
    assert dst.episode(first).superseded_at == src.episode(first).superseded_at == utc(2024, 3, 4, 9)
    assert _meeting_reads(dst) == _meeting_reads(src)
    again = io.StringIO()
    export_jsonl(dst, again)
    (copied,) = [x for x in map(json.loads, again.getvalue().splitlines())
                 if x.get("type") == "episode" and x["id"] == first]
    assert copied["superseded_recorded_at"][:16] == "2024-03-10T09:00"
