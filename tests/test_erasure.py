"""Erasure removes every trace of the erased content, on every backend.

An erased turn's words must leave more than its own row: the index rows of
its neighbours in the session quote it (FTS5's ``neighbors`` column, the
tsvector's D weight), the dense side mixes its vector into theirs, and on
SQLite the file keeps deleted bytes (free space, FTS5 segments that only
mark deletions, WAL frames) unless told otherwise. These tests look where
the bytes could be: every view of the search, the episode reads, the raw
bytes of the SQLite database, its ``-wal`` and ``-shm``, and every row of
every table of the PostgreSQL schema. The same for erasing an entity and a
fact.

``TOKEN`` is lowercase and its own porter stem, so FTS5 stores it as it is.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.ann import _read
from chronomem.service.evidence.embed import load_numpy
from chronomem.service.evidence.models import VIEWS
from conftest import pg_test_url
from contract._helpers import MemoryFactory
from hash_embedder import HashEmbedder

TOKEN = "zebrapinqx"


def _embedder() -> HashEmbedder:
    """Unsigned: a query that names a word is nearest to the turns that say it."""
    return HashEmbedder("erasure-test-hash", 64, signed=False)


# -- where the bytes could be ------------------------------------------------------


def traces(mem: Memory, needle: str = TOKEN) -> dict[str, int]:
    """Where ``needle`` (any case) is still stored: per SQLite file, or per
    PostgreSQL table (rows whose ``row::text`` contains it) and in the
    planner's statistics of the schema's columns (``pg_stats``: values
    sampled by ``ANALYZE``). Empty: nowhere."""
    store: Any = mem.store
    found: dict[str, int] = {}
    if store.backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            try:
                data = Path(store.path + suffix).read_bytes()
            except FileNotFoundError:
                continue
            n = data.lower().count(needle.lower().encode())
            if n:
                found[Path(store.path + suffix).name] = n
        return found
    import psycopg

    with psycopg.connect(pg_test_url(), autocommit=True) as con:
        tables = [t for (t,) in con.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (store.schema,))]
        assert "episodes_fts" in tables and "facts" in tables
        for t in tables:
            (n,) = con.execute(
                f'SELECT count(*) FROM "{store.schema}"."{t}" r WHERE r::text ILIKE %s', (f"%{needle}%",)
            ).fetchone()
            if n:
                found[t] = int(n)
        for t, column in con.execute(
            "SELECT tablename, attname FROM pg_stats WHERE schemaname = %s AND concat_ws(' ', "
            "most_common_vals::text, histogram_bounds::text, most_common_elems::text) ILIKE %s",
            (store.schema, f"%{needle}%"),
        ):
            found[f"pg_stats {t}.{column}"] = 1
    return found


def analyze(mem: Memory) -> None:
    """PostgreSQL: let the planner sample every table now (as autovacuum
    would), so its statistics hold the content about to be erased."""
    store: Any = mem.store
    if store.backend == "sqlite":
        return
    import psycopg

    with psycopg.connect(pg_test_url(), autocommit=True) as con:
        for (t,) in con.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (store.schema,)).fetchall():
            con.execute(f'ANALYZE "{store.schema}"."{t}"')


def hit_rows(mem: Memory, query: str, **kwargs: Any) -> list[tuple[str, float | None, float | None]]:
    """``(text, bm25, dense)`` of each hit, scores rounded (to compare two namespaces)."""
    return [
        (h.episode.text, None if h.parts.bm25 is None else round(h.parts.bm25, 6),
         None if h.parts.dense is None else round(h.parts.dense, 5))
        for h in mem.search(query, view="raw", **kwargs)
    ]


# -- episodes ----------------------------------------------------------------------------

TURNS = [
    {"text": "We talked about the garden and the roses.", "speaker": "Ana", "occurred_at": "2025-03-01T10:00:00Z"},
    {"text": f"My card number is 4111 {TOKEN}, I told you yesterday.", "speaker": f"Bob{TOKEN}",
     "source": f"chat-{TOKEN}", "metadata": {"caption": f"photo of {TOKEN}", "tags": [f"tag{TOKEN}"]},
     "occurred_at": "2025-03-01T10:01:00Z"},
    {"text": "Then we planted tomatoes by the fence.", "speaker": "Ana", "occurred_at": "2025-03-01T10:02:00Z"},
]
OTHER = {"text": "The quarterly report is due on Friday.", "session": "work", "occurred_at": "2025-03-02T09:00:00Z"}


def _add_story(mem: Memory, *, with_middle: bool = True) -> list[str]:
    ids = []
    for i, turn in enumerate(TURNS):
        if i == 1 and not with_middle:
            continue
        ids.append(mem.add_episode(session="garden", **turn).id)  # type: ignore[arg-type]
    mem.add_episode(**OTHER)  # type: ignore[arg-type]
    return ids


@pytest.mark.parametrize("embedder", ["lexical", "vectors"])
def test_erasing_a_middle_turn_leaves_no_trace(make_memory: MemoryFactory, embedder: str) -> None:
    clock = FakeClock("2025-03-05T00:00:00Z", tick=1.0)
    mem = make_memory(clock=clock)
    mem.use_embedder(_embedder() if embedder == "vectors" else None)
    a, b, c = _add_story(mem)
    cited = mem.add_fact("Bob", "has card", "Visa", episode_id=b)
    # the bug this guards against: the neighbours' index rows quoted the turn
    before = {h.episode.id for h in mem.search(TOKEN, view="raw", config="lexical")}
    assert before == {a, b, c}
    tomb_before = mem.episode(b)
    assert tomb_before.mentions  # "yesterday" was resolved
    analyze(mem)
    assert traces(mem)

    assert mem.erase_episode(b, confirm=True) == []

    configs = ["hybrid", "lexical"] + (["dense", "rrf"] if embedder == "vectors" else [])
    for view in VIEWS:
        for config in configs:
            hits = mem.search(TOKEN, view=view, config=config)
            assert b not in {h.episode.id for h in hits}, (view, config)
            assert all(h.parts.bm25 is None for h in hits), (view, config)  # no lexical match anywhere
            assert all(TOKEN not in h.episode.text for h in hits)
            if embedder == "lexical":
                assert hits == [], (view, config)
        for word in ("4111", "card", "photo", f"Bob{TOKEN}", "yesterday"):
            assert b not in {h.episode.id for h in mem.search(word, view=view)}

    tomb = mem.episode(b)
    assert (tomb.text, tomb.speaker, tomb.source, tomb.session, dict(tomb.metadata), tomb.mentions) == (
        "", None, None, None, {}, ())
    assert tomb.erased_at is not None
    assert (tomb.occurred_at, tomb.recorded_at) == (tomb_before.occurred_at, tomb_before.recorded_at)
    assert tomb.fact_ids == (cited.id,)  # facts="keep": the fact names the tombstone
    listed = mem.episodes()
    assert [e.id for e in listed if e.session == "garden"] == [a, c]
    assert all(TOKEN not in json.dumps(e.to_dict()) for e in listed)
    assert mem.evidence_stats()["episodes"] == 3

    assert traces(mem) == {}
    assert traces(mem, "4111") == {}
    mem.close()
    assert traces(mem) == {}


@pytest.mark.parametrize("embedder", ["lexical", "vectors"])
def test_the_neighbours_search_as_if_the_turn_had_never_been_there(make_memory: MemoryFactory,
                                                                     embedder: str) -> None:
    """After the erasure the neighbours' index rows (lexical and, through the
    context vectors, dense) are exactly those of a session where the turn
    was never added: the same hits with the same scores, for their own
    words, each other's words (now neighbours) and the erased ones."""
    erased = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    control = make_memory("control", clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    for m in (erased, control):
        m.use_embedder(_embedder() if embedder == "vectors" else None)
    a, b, c = _add_story(erased)
    _add_story(control, with_middle=False)
    erased.erase_episode(b, confirm=True)

    queries = ["garden", "roses", "tomatoes", "fence", "garden tomatoes", "planted roses", "Ana",
               "quarterly report", "card number", TOKEN, "March 2025", "told you yesterday"]
    configs = ["lexical"] + (["hybrid", "dense"] if embedder == "vectors" else [])
    for query in queries:
        for config in configs:
            assert hit_rows(erased, query, config=config) == hit_rows(control, query, config=config), (query, config)
    # each neighbour finds the other by its words (the neighbours column)
    found = {h.episode.id: h for h in erased.search("tomatoes", view="raw", config="lexical")}
    assert set(found) == {a, c} and found[c].parts.bm25_rank == 1
    found = {h.episode.id: h for h in erased.search("roses", view="raw", config="lexical")}
    assert set(found) == {a, c} and found[a].parts.bm25_rank == 1
    # a new turn after C re-indexes C as ingest always did
    erased.add_episode("We watered the tomatoes at dusk.", session="garden", occurred_at="2025-03-01T10:03:00Z")
    control.add_episode("We watered the tomatoes at dusk.", session="garden", occurred_at="2025-03-01T10:03:00Z")
    for query in ("watered dusk", "tomatoes", "garden"):
        assert hit_rows(erased, query, config="lexical") == hit_rows(control, query, config="lexical")


def test_erasing_every_turn_of_a_session_one_by_one(make_memory: MemoryFactory) -> None:
    mem = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    words = [f"{TOKEN}{w}" for w in ("alpha", "bravo", "charlie", "delta")]  # lowercase, stems of themselves
    ids = [mem.add_episode(f"turn {w}", session="s").id for w in words]
    # another session's turn: no table is left empty (PostgreSQL keeps the old
    # statistics of a table ANALYZE finds empty: docs/evidence.md, "Erasure")
    mem.add_episode("An unrelated note.", session="other")
    for i in (1, 0, 3, 2):
        mem.erase_episode(ids[i], confirm=True)
        for j, w in enumerate(words):
            got = {h.episode.id for h in mem.search(w, view="raw")}
            assert got == (set() if ids[j] not in _live(mem) else {ids[j]} | _neighbours(mem, ids[j])), (i, w)
    assert traces(mem) == {}


def _live(mem: Memory) -> set[str]:
    return {e.id for e in mem.episodes()}


def _neighbours(mem: Memory, episode_id: str) -> set[str]:
    live = [e.id for e in mem.episodes(session="s")]
    i = live.index(episode_id)
    return set(live[max(0, i - 1):i] + live[i + 1:i + 2])


def test_no_cache_keeps_the_erased_vector(make_memory: MemoryFactory) -> None:
    """Another memory on the store (as another process would) had the
    vectors cached; the erasure happens together with a vector added below
    the highest rowid, so the count of vectors does not change: the cache
    must still reload, and never return the erased turn."""
    writer = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    reader = make_memory()
    writer.use_embedder(None)
    unembedded = writer.add_episode("An old note about compost.", session="garden").id
    for m in (writer, reader):
        m.use_embedder(_embedder())
    a, b, c = _add_story(writer)
    assert b in {h.episode.id for h in reader.search(TOKEN, view="raw", config="dense")}
    (slot,) = reader._embedding.vectors()._slots.values()
    size = slot.size
    erased_rowid = writer.store.episode_by_id(b).rowid  # type: ignore[attr-defined]
    assert erased_rowid in set(slot.rowids.tolist())

    writer.erase_episode(b, confirm=True)
    assert writer.reindex(lexical=False)["vectors"] == 1  # the note gets its vector: the count is back
    hits = reader.search(TOKEN, view="raw", config="dense")
    assert b not in {h.episode.id for h in hits} and unembedded in {h.episode.id for h in hits}
    (slot,) = reader._embedding.vectors()._slots.values()
    assert slot.size == size and erased_rowid not in set(slot.rowids.tolist())
    # and the reader's context vectors are a session without the turn
    assert hit_rows(reader, TOKEN, config="dense") == hit_rows(writer, TOKEN, config="dense")


def test_the_ann_files_forget_the_erased_vector(tmp_path: Path) -> None:
    """The ANN files beside the database hold every vector (mixed with its
    neighbours'). The erasure deletes them; and a stale one written back (by
    a process that built it before the erasure) is rebuilt, never used, even
    when its row count and last rowid still match the store."""
    path = str(tmp_path / "m.db")
    mem = chronomem.open(path, clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0), embedder=None)
    unembedded = mem.add_episode("An old note about compost.", session="garden").id
    mem.use_embedder(_embedder())
    a, b, c = _add_story(mem)
    ann = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=1)
    exact = SearchConfig.preset("dense")
    assert mem.prepare_search(ann)["ann"]
    assert b in {h.episode.id for h in mem.search(TOKEN, view="raw", config=ann)}

    def files() -> list[str]:  # (the lock files stay: empty, and a writer may hold one)
        return sorted(p for p in os.listdir(tmp_path) if ".ann-" in p and not p.endswith(".lock"))

    def meta() -> dict[str, int]:
        (found,) = [_read(str(tmp_path / p), load_numpy()) for p in files() if p.endswith(".ivf")]
        assert found is not None
        return {"count": found.count, "erasures": found.erasures}

    assert {p.rsplit(".", 1)[-1] for p in files()} == {"vec", "ivf"}
    assert all(p.startswith("m.db.ann-1-") for p in files())
    stale = {p: (tmp_path / p).read_bytes() for p in files()}

    mem.erase_episode(b, confirm=True)
    assert files() == []
    assert b not in {h.episode.id for h in mem.search(TOKEN, view="raw", config=ann)}
    mem.prepare_search(ann)
    assert (meta()["count"], meta()["erasures"]) == (3, 1)

    assert mem.reindex(lexical=False)["vectors"] == 1  # the note: 4 vectors again, the same last rowid
    for p, data in stale.items():
        (tmp_path / p).write_bytes(data)
    other = chronomem.open(path, embedder=_embedder())
    try:
        assert hit_rows(other, TOKEN, config=ann) == hit_rows(other, TOKEN, config=exact)
        assert unembedded in {h.episode.id for h in other.search(TOKEN, view="raw", config=ann)}
        other.prepare_search(ann)
        assert (meta()["count"], meta()["erasures"]) == (4, 1)
        assert hit_rows(other, TOKEN, config=ann) == hit_rows(other, TOKEN, config=exact)
    finally:
        other.close()
        mem.close()


def test_the_wal_is_emptied_once_a_reader_lets_go(tmp_path: Path) -> None:
    """A reader on an older snapshot keeps the WAL frames from before the
    erasure (the documented caveat): the erasure does not wait for it (the
    checkpoint gives up after a second) and the WAL is emptied later."""
    path = str(tmp_path / "m.db")
    mem = chronomem.open(path, clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0), embedder=None)
    try:
        a, b, c = _add_story(mem)
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM episodes").fetchone()
        started = time.monotonic()
        mem.erase_episode(b, confirm=True)
        assert time.monotonic() - started < 10
        assert mem.search(TOKEN, view="raw") == []
        # the reader may still read the turn, so its bytes are still in the files
        assert reader.execute("SELECT count(*) FROM episodes WHERE text LIKE ?", (f"%{TOKEN}%",)).fetchone() == (1,)
        assert traces(mem) != {}
        reader.execute("COMMIT")
        reader.close()
        for _ in range(50):  # (the background checkpointer may be mid-checkpoint: then try again)
            mem.store.after_erasure("episode")
            if traces(mem) == {}:
                break
            time.sleep(0.1)
        assert traces(mem) == {}
    finally:
        mem.close()


# -- entities and facts ----------------------------------------------------------------


def test_erasing_an_entity_leaves_no_trace(make_memory: MemoryFactory) -> None:
    name = TOKEN.capitalize()
    mem = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    mem.define_predicate("lives in", "one")
    mem.add_fact(name, "lives in", "Oslo", "2019", source=f"form-{TOKEN}", properties={"note": f"n-{TOKEN}"})
    mem.add_fact(name, "lives in", "Bergen", "2022")  # supersedes Oslo: closed versions too
    mem.add_fact("Ana", "knows", name, "2020")
    mem.add_fact(name, "email", f"{TOKEN}@example.com", literal=True)
    mem.set_entity(name, type="person", properties={"pin": f"pin-{TOKEN}"})
    mem.alias(name, f"{name} the Great")
    # an undone merge that folded this entity (its record names the entity's keys) ...
    mem.add_fact("Ola", "likes", "Jazz")
    undone = mem.merge("Ola", name)
    mem.unmerge(undone)
    # ... and one in force that folded another record of the same person into it
    mem.add_fact(f"{name} Junior", "likes", "Tea", source=f"chat-{TOKEN}")
    active = mem.merge(name, f"{name} Junior")
    keep = mem.add_fact("Ana", "likes", "Coffee")
    analyze(mem)
    assert traces(mem)

    n = mem.erase(entity=f"{name} the Great", confirm=True)
    assert n >= 5
    assert traces(mem) == {}
    assert {e.name for e in mem.entities()} == {"Ana", "Ola", "Oslo", "Bergen", "Tea", "Coffee", "Jazz"}
    assert [f.id for f in mem.facts("Ana")] == [keep.id]
    assert [f.object for f in mem.facts("Ola")] == ["Jazz"]
    # the merges stay on record (unmerge, exports), without the erased names
    ops = {op: json.loads(payload) for op, _kind, _at, payload, _u in mem.store.operations(mem._ns)}
    assert set(ops) == {undone, active} and all(p["keys"] == [] for p in ops.values())
    mem.unmerge(active)  # nothing left to give back: it changes nothing
    assert traces(mem) == {}
    assert {e.name for e in mem.entities()} == {"Ana", "Ola", "Oslo", "Bergen", "Tea", "Coffee", "Jazz"}
    # the name is free again, for a new entity with nothing of the old one
    fresh = mem.add_fact(name, "likes", "Milk")
    assert [f.object for f in mem.history(name)] == ["Milk"] and fresh.subject == name


def test_erasing_a_fact_leaves_no_trace(make_memory: MemoryFactory) -> None:
    mem = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    secret = f"pw-{TOKEN}"
    first = mem.add_fact("Kai", "password", secret, "2019", "2020", literal=True, source=f"s1-{TOKEN}",
                         properties={"k": f"p-{TOKEN}"})
    later = mem.add_fact("Kai", "password", secret, "2021", "2022", literal=True, source=f"s2-{TOKEN}")
    assert later.id != first.id
    # the statement that bridges them coalesces both into one fact; the other
    # one's closed versions and its source still state it
    merged = mem.add_fact("Kai", "password", secret, "2020", "2021", literal=True, source=f"s3-{TOKEN}")
    assert merged.id in (first.id, later.id)
    folded = later.id if merged.id == first.id else first.id
    assert mem.versions(folded)[-1].ended_by == "coalesced"
    mem.correct(merged.id, confidence=0.5)
    mem.define_predicate("lives in", "one")
    berlin = mem.add_fact("Kai", "lives in", "Berlin", "2018")
    moved = mem.add_fact("Kai", "lives in", f"{TOKEN}ville", "2023", literal=True)  # (an entity stays: its own erase)
    keep = mem.add_fact("Kai", "likes", "Tea", source="chat")
    mem.add_fact("Kai", "likes", "Tea", source="email")  # extra evidence of another fact: fact_sources keeps a row
    # (PostgreSQL keeps a table's old statistics when ANALYZE finds it empty: docs/evidence.md)
    analyze(mem)
    assert traces(mem)

    assert mem.erase(merged.id, confirm=True) >= 4
    mem.erase(moved.id, confirm=True)
    assert traces(mem) == {}
    assert mem.versions(folded) == [] and mem.versions(merged.id) == []
    assert sorted(f.id for f in mem.facts("Kai")) == sorted([berlin.id, keep.id])
    assert mem.fact(berlin.id).valid_to is None  # the value it had cut short is restored


def test_erasing_the_id_of_a_coalesced_fact_erases_the_statement(make_memory: MemoryFactory) -> None:
    """A fact folded into another by coalescing is the same statement: its
    source lives on in the kept fact's evidence, so erasing the folded id
    (the one ``add_fact`` returned before the bridging statement) erases the
    kept fact too."""
    mem = make_memory(clock=FakeClock("2025-03-05T00:00:00Z", tick=1.0))
    mem.use_embedder(None)
    secret = f"pw-{TOKEN}"
    first = mem.add_fact("Kai", "password", secret, "2019", "2020", literal=True, source=f"s1-{TOKEN}")
    later = mem.add_fact("Kai", "password", secret, "2021", "2022", literal=True, source=f"s2-{TOKEN}")
    merged = mem.add_fact("Kai", "password", secret, "2020", "2021", literal=True)
    folded = later.id if merged.id == first.id else first.id
    assert {p.source for p in mem.evidence(merged.id)} >= {f"s1-{TOKEN}", f"s2-{TOKEN}"}
    keep = mem.add_fact("Kai", "likes", "Tea", source="chat")
    mem.add_fact("Kai", "likes", "Tea", source="email")
    analyze(mem)
    versions = len(mem.versions(folded)) + len(mem.versions(merged.id))

    assert mem.erase(folded, confirm=True) == versions
    assert mem.versions(folded) == [] and mem.versions(merged.id) == []
    assert [f.id for f in mem.facts("Kai")] == [keep.id]
    assert traces(mem) == {}
