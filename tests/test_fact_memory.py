"""The fact side's memory bounds (issue 20): the name caches hold at most
their bound and answer right past it (a miss goes to the store), and a huge
``add_facts`` is handed to the store in parts inside its one transaction
with the very result of a single flush."""

from __future__ import annotations

import itertools
import random
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem import FakeClock
from chronomem.errors import InvalidInputError
from chronomem.service import candidates, facts
from chronomem.store import names as names_mod
from chronomem.store.names import NameCache


def _objects(mem: chronomem.Memory, name: str) -> set[Any]:
    return {f.object for f in mem.facts(name)}


def _cache(mem: chronomem.Memory) -> NameCache:
    cache = mem.store._name_cache  # type: ignore[attr-defined]
    assert isinstance(cache, NameCache)
    return cache


# -- the bound ---------------------------------------------------------------

def test_name_keys_are_least_recently_used_and_bounded() -> None:
    cache = NameCache(max_names=8)
    for i in range(8):
        cache.add_entity(1, f"k{i}", f"K{i}", i)
    assert cache.entity_id(1, "k0") == 0  # used: now the most recent
    for i in range(8, 40):
        cache.add_entity(1, f"k{i}", f"K{i}", i)
        assert len(cache.entity_keys) <= 8 and len(cache.names) <= 8
        assert cache.entity_id(1, "k0") == 0  # kept by being used
    assert cache.entity_id(1, "k1") is None  # the unused old ones went
    assert cache.entity_id(1, "k39") == 39
    cache.add_entity_keys(1, ((f"x{i}", 100 + i) for i in range(50)))
    assert len(cache.entity_keys) <= 8
    assert cache.entity_id(1, "x49") == 149


def test_display_names_are_replaced_not_shrunk_in_place() -> None:
    cache = NameCache(max_names=10)
    for i in range(10):
        cache.add_entity(1, f"k{i}", f"K{i}", i)
    held = cache.names  # a reader between reading rows and resolving their ids
    cache.add_entity(1, "k10", "K10", 10)
    assert len(cache.names) <= 10 and cache.names is not held
    assert all(held[i] == f"K{i}" for i in range(10))  # what it held is still there
    assert cache.names[10] == "K10"


def test_a_store_past_the_bound_answers_every_name(make_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names_mod, "MAX_NAMES", 40)
    writer = make_memory()
    reader = make_memory()
    writer.add_facts([(f"E{i}", "knows", f"F{i}") for i in range(150)])  # one bulk transaction
    for i in range(0, 150, 7):
        writer.add_fact(f"E{i}", "likes", f"G{i}")  # per-call writes, past the bound too
    for m in (writer, reader):
        for i in range(150):
            expected = {f"F{i}", f"G{i}"} if i % 7 == 0 else {f"F{i}"}
            assert _objects(m, f"E{i}") == expected
            assert m.entity(f"F{i}").name == f"F{i}"
        for i in range(0, 150, 13):  # reverse edges resolve their subjects' names
            assert [f.subject for f in m.facts(object=f"F{i}")] == [f"E{i}"]
        cache = _cache(m)
        assert len(cache.entity_keys) <= 40
        assert len(cache.names) <= 40
    # no entity was made twice by a lookup that missed the bounded cache
    assert len(reader.entities()) == 150 + 150 + len(range(0, 150, 7))


def test_a_name_evicted_then_moved_by_a_merge_resolves_to_its_new_entity(
        make_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names_mod, "MAX_NAMES", 20)
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Bobby", "likes", "Tea")
    writer.add_fact("Robert", "likes", "Coffee")
    assert _objects(reader, "Bobby") == {"Tea"}  # "bobby" cached by the reader
    writer.add_facts([(f"N{i}", "knows", f"M{i}") for i in range(60)])
    for i in range(60):  # push "bobby" out of the reader's caches
        assert _objects(reader, f"N{i}") == {f"M{i}"}
    assert "bobby" not in {k for _ns, k in _cache(reader).entity_keys}
    writer.merge("Robert", "Bobby")
    assert _objects(reader, "Bobby") == {"Tea", "Coffee"}
    assert {f.subject for f in reader.facts("Bobby")} == {"Robert"}
    writer.alias("Robert", "Rob")
    for m in (writer, reader):
        assert _objects(m, "Rob") == {"Tea", "Coffee"}
    assert reader.add_fact("Bobby", "likes", "Cake").subject == "Robert"


def test_bulk_loads_past_the_bound_reuse_their_entities(make_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's bulk mode (many misses in one transaction) once took the
    shared cache for every key of the namespace: bounded, it is not, and the
    transaction keeps its own map."""
    monkeypatch.setattr(names_mod, "MAX_NAMES", 30)
    mem = make_memory()
    mem.add_facts([(f"P{i}", "knows", f"Q{i}") for i in range(200)])
    mem.add_facts([(f"P{i}", "likes", f"Q{(i + 1) % 200}") for i in range(200)])  # same names, again in bulk
    mem.add_facts([(f"R{i}", "knows", f"P{i}") for i in range(100)])  # half new, half old
    assert len(mem.entities()) == 500
    assert _objects(mem, "P5") == {"Q5", "Q6"}
    assert [f.subject for f in mem.facts(object="P7")] == ["R7"]


# -- add_facts in parts ------------------------------------------------------

def _fake_ids() -> Any:
    """``id_block`` making the same ids, increasing, in every run (one count
    over the run's transactions)."""
    counter = itertools.count(1)

    def id_block() -> Iterator[str]:
        return (f"00000000-0000-7000-8000-{n:012x}" for n in counter)
    return id_block


def _workload(seed: int, n: int, subjects: int = 4) -> list[Any]:
    rng = random.Random(seed)
    out: list[Any] = []
    for _ in range(n):
        s = f"S{rng.randrange(subjects)}"
        vf = 2000 + rng.randrange(12)
        vt = None if rng.random() < 0.4 else vf + rng.randrange(1, 5)
        if rng.random() < 0.5:
            p, o = "status", rng.choice(["on", "off", "away"])
        else:
            p, o = "likes", rng.choice(["Tea", "Coffee", "Milk"])
        item: dict[str, Any] = {"subject": s, "predicate": p, "object": o, "valid_from": str(vf),
                                "valid_to": None if vt is None else str(vt)}
        if rng.random() < 0.3:
            item["source"] = rng.choice(["a", "b"])
        if p == "likes" and rng.random() < 0.1:
            item["supersede"] = True
        out.append(item)
    return out


def _stored(target: str) -> tuple[Any, ...]:
    """The versions, sources and single flags a store holds (rowids aside)."""
    if target.startswith("postgresql://"):
        import psycopg

        base, _, query = target.partition("?")
        schema = dict(kv.split("=", 1) for kv in query.split("&"))["schema"]
        con: Any = psycopg.connect(base, autocommit=True)
        con.execute(f'SET search_path TO "{schema}"')
    else:
        con = sqlite3.connect(target)
    try:
        # every column but the surrogate ids, which stand as the names' keys
        # (PostgreSQL's rows also hold the ``single`` flag)
        ids = {"rowid", "ns_id", "subject_id", "predicate_id", "object_id", "system"}
        cols = [f"f.{d[0]}" for d in con.execute("SELECT * FROM facts LIMIT 0").description if d[0] not in ids]
        rows = con.execute(
            f"SELECT {', '.join(cols)}, s.key, p.key, o.key FROM facts f JOIN entities s ON s.id = f.subject_id "
            "JOIN predicates p ON p.id = f.predicate_id LEFT JOIN entities o ON o.id = f.object_id "
            "ORDER BY f.fact_id, f.version").fetchall()
        sources = con.execute("SELECT fact_id, source, episode_id, recorded_at FROM fact_sources "
                              "ORDER BY fact_id, source, episode_id").fetchall()
        closed = con.execute("SELECT count(*) FROM facts WHERE system_to < (SELECT max(system_to) FROM facts)"
                             ).fetchone()[0]
        cut = con.execute("SELECT count(*) FROM facts WHERE end_kind = 'superseded'").fetchone()[0]
    finally:
        con.close()
    # system times as their order: a store's clock reads (a schema set up
    # afresh or reused) may move them all, never their order or sharing
    at = [c.removeprefix("f.") for c in cols]
    times = sorted({r[at.index(c)] for r in rows for c in ("system_from", "system_to")}
                   | {r[3] for r in sources})
    rank = {t: i for i, t in enumerate(times)}
    rows = [tuple(rank[v] if c in ("system_from", "system_to") else v
                  for c, v in zip(at, r[:len(at)], strict=True)) + tuple(r[len(at):])
            for r in rows]
    sources = [(*r[:3], rank[r[3]]) for r in sources]
    return rows, sources, closed, cut


def _load(target: str, items: list[Any], step: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The first 40 items in one transaction, then the rest in another,
    handed to the store every ``step`` items: the ids, versions and sources."""
    monkeypatch.setattr(candidates, "id_block", _fake_ids())
    with chronomem.open(target, clock=FakeClock("2025-01-01T00:00:00Z")) as mem:
        mem.define_predicate("status", cardinality="one")
        monkeypatch.setattr(facts, "FLUSH_ROWS", 10**9)
        ids = mem.add_facts(items[:40])
        monkeypatch.setattr(facts, "FLUSH_ROWS", step)
        ids += mem.add_facts(items[40:])
    return (ids, *_stored(target))


def _targets(backend: str, tmp_path: Path, request: pytest.FixtureRequest, n: int) -> list[str]:
    from conftest import store_target

    return [store_target(backend, tmp_path / str(i), request) for i in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_add_facts_in_parts_writes_what_one_flush_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          seed: int) -> None:
    items = _workload(seed, 120)
    whole = _load(str(tmp_path / "whole.db"), items, 10**9, monkeypatch)
    for step in (1, 3, 7, 50):
        parts = _load(str(tmp_path / f"parts{step}.db"), items, step, monkeypatch)
        assert parts[0] == whole[0], f"returned ids differ (parts of {step})"
        assert parts[1] == whole[1], f"stored versions differ (parts of {step})"
        assert parts[2] == whole[2], f"sources differ (parts of {step})"
    assert whole[3] > 0 and whole[4] > 0  # the second batch closed versions of the first, and values were cut


@pytest.mark.parametrize(("seed", "subjects", "n", "steps"),
                         [(12, 300, 1500, (100, 37)), (5, 50, 1200, (64, 1)), (3, 4, 120, (7,))])
def test_add_facts_in_parts_on_each_backend_writes_what_one_flush_writes(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        seed: int, subjects: int, n: int, steps: tuple[int, ...]) -> None:
    """Wide workloads too: PostgreSQL's bulk mode (a batch past 64 name
    misses prefetches the namespace's believed versions) kept a group's
    prefetched versions after an earlier part wrote to it (an item then got
    a new fact id instead of coalescing), and kept stand-ins for rows a later
    part closed (the single flag then dropped, with overlap warnings)."""
    items = _workload(seed, n, subjects)
    targets = _targets(backend, tmp_path, request, 1 + len(steps))
    whole = _load(targets[0], items, 10**9, monkeypatch)
    for step, target in zip(steps, targets[1:], strict=True):
        parts = _load(target, items, step, monkeypatch)
        assert parts[0] == whole[0], f"returned ids differ (parts of {step})"
        diff = [(a, b) for a, b in zip(parts[1], whole[1], strict=False) if a != b][:1]
        assert parts[1] == whole[1], f"stored versions or single flags differ (parts of {step}): {diff}"
        assert parts[2] == whole[2], f"sources differ (parts of {step})"
    assert whole[3] > 0 and whole[4] > 0


def test_add_facts_in_parts_is_still_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facts, "FLUSH_ROWS", 5)
    path = tmp_path / "m.db"
    with chronomem.open(path) as mem:
        items: list[Any] = [(f"A{i}", "knows", f"B{i}") for i in range(12)] + [("A", "knows", "B", "2021", "2020")]
        with pytest.raises(InvalidInputError, match="item 12"):
            mem.add_facts(items)
        assert mem.facts() == [] and mem.entities() == []
        assert len(mem.add_facts(items[:12])) == 12
        assert len(mem.facts()) == 12


@pytest.mark.parametrize("limit", [10, 100_000])
def test_a_bulk_load_into_a_namespace_past_the_prefetch_bound_reads_each_group(
        make_memory: Any, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """PostgreSQL's bulk mode reads a namespace's believed versions at once,
    up to ``_PREFETCH_MAX`` (counted first: reading them to find too many held
    them all); past it, group by group. Both give the same answers (SQLite
    runs the same workload as the reference)."""
    from chronomem.store.postgres import tx as pg_tx

    monkeypatch.setattr(pg_tx, "_PREFETCH_MAX", limit)
    mem = make_memory()
    mem.define_predicate("status", cardinality="one")
    mem.add_facts([(f"E{i}", "status", "on", "2020") for i in range(150)])
    # 150 groups read again in one transaction: past _BULK_MISSES, so the prefetch is tried
    ids = mem.add_facts([(f"E{i}", "status", "off" if i % 2 else "on", "2021") for i in range(150)])
    assert len(set(ids)) == 150
    now = {f.subject: f.object for f in mem.facts(predicate="status")}
    assert now == {f"E{i}": "off" if i % 2 else "on" for i in range(150)}
    assert len(mem.facts(predicate="status", as_of="2020-06")) == 150
