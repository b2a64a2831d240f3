"""Migration 0009: a store whose vectors were written as float32 (schema 8:
SQLite BLOBs, PostgreSQL ``real[]``) opens with them stored as int8 bytes and
a scale, byte for byte what :func:`chronomem.core.quantize.quantize` makes of
them, and dense search ranks as float32 exact search did (within the
tolerance of ``tests/test_quantize.py``).

Each store is built at 0008 by applying the real migration files with the
rows chronomem 0008 wrote for 240 episodes of one namespace (no session, so
no neighbour context), one superseded, each with a 32-dimension unit vector
of one model; the SQLite one also holds a torn vector (a length that is no
multiple of 4), which the migration drops (``doctor --repair`` embeds the
episode again).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from array import array
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import psycopg
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.core.quantize import quantize
from chronomem.service.evidence import SearchConfig
from chronomem.store.migrations import load_migrations
from chronomem.store.postgres.store import split_schema
from old_schema import postgres_at, sqlite_at

N, DIM, MODEL = 240, 32, "fixed-test-embedder"
T0 = 1735689600000000
SUPERSEDED = 7  # episode index superseded by the next one
TORN = 11  # SQLite only: its vector is 5 bytes
# dense only, no neighbour context, no time or mention terms: the order is the cosine order
CONFIG = dataclasses.replace(SearchConfig.preset("dense"), dense_context=0.0, mention_weight=0.0, when_weight=0.0,
                             session_weight=0.0, mentioned=False)


def _ep_id(i: int) -> str:
    return f"01a23242-baa4-7431-a6cb-{i:012x}"


def _vectors() -> Any:
    v = np.random.default_rng(9).normal(size=(N, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _queries() -> Any:
    q = np.random.default_rng(10).normal(size=(12, DIM)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


class FixedEmbedder:
    """Query ``"q<i>"`` is the i-th vector of :func:`_queries`."""

    name, dim = MODEL, DIM

    def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        q = _queries()
        return np.stack([q[int(t[1:])] if t.startswith("q") else np.eye(DIM, dtype=np.float32)[0] for t in texts])


def _rows(literal: Any) -> list[str]:
    out = [f"INSERT INTO namespaces (name, created_at) VALUES ('default', {T0})",
           f"INSERT INTO embedding_models (name, dim) VALUES ('{MODEL}', {DIM})"]
    for i in range(N):
        sup = f"'{_ep_id(i + 1)}', {T0 + i + 1}, {T0 + i + 1}" if i == SUPERSEDED else "NULL, NULL, NULL"
        out.append("INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at, superseded_by, "
                   f"superseded_at, superseded_recorded_at) SELECT '{_ep_id(i)}', id, 'turn {i}', {T0 + i}, 7, "
                   f"{T0 + i}, {sup} FROM namespaces")
    vecs = _vectors()
    for i in range(N):
        out.append("INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector) "
                   f"SELECT e.rowid, m.id, e.ns_id, {literal(i, vecs[i])} FROM episodes e, embedding_models m "
                   f"WHERE e.id = '{_ep_id(i)}'")
    return out


def _sqlite_literal(i: int, v: Any) -> str:
    blob = b"\x00" * 5 if i == TORN else v.astype(np.float32).tobytes()
    return f"X'{blob.hex()}'"


def _pg_literal(_i: int, v: Any) -> str:
    return "ARRAY[" + ",".join(repr(float(x)) for x in v) + "]::real[]"


def _exact(q: Any, drop: set[int]) -> list[int]:
    scores = _vectors() @ q
    return [int(i) for i in np.argsort(-scores, kind="stable") if int(i) not in drop]


def _check_upgraded(mem: Memory, torn: bool) -> None:
    assert mem.store.schema_version() >= 9
    mem.reindex(lexical=True, vectors=False)  # the rows above came without their index rows
    vecs = _vectors()
    drop = {SUPERSEDED} | ({TORN} if torn else set())
    for qi, q in enumerate(_queries()):
        hits = mem.search(f"q{qi}", k=10, config=CONFIG)
        got = [int(h.episode.id.rsplit("-", 1)[1], 16) for h in hits]
        want = _exact(q, drop)[:10]
        assert len(got) == 10 and SUPERSEDED not in got
        # ranking within the int8 tolerance: 9 of the exact top 10 at least, and no hit
        # whose float32 cosine is more than 0.02 below the exact 10th
        assert len(set(got) & set(want)) >= 9, (qi, got, want)
        assert min(float(vecs[i] @ q) for i in got) >= float(vecs[want[-1]] @ q) - 0.02
    # the raw view still finds the superseded one
    assert SUPERSEDED in [int(h.episode.id.rsplit("-", 1)[1], 16)
                          for h in mem.search("q0", k=N, view="raw", config=CONFIG)]
    # a vector written after the upgrade is searched with the old ones
    ep = mem.add_episode("a new turn")
    first = mem.search("anything not q", k=1, config=CONFIG)  # FixedEmbedder: e_0 for both
    assert first[0].episode.id == ep.id


def _expected_rows(torn: bool) -> dict[int, tuple[bytes, float]]:
    vecs = _vectors()
    keep = [i for i in range(N) if not (torn and i == TORN)]
    packed = quantize([vecs[i].astype(np.float32).tobytes() for i in keep])
    return {i: p for i, p in zip(keep, packed, strict=True)}


def test_a_sqlite_store_at_0008_gets_int8_vectors(tmp_path: Path) -> None:
    path = sqlite_at(tmp_path / "old.db", 8, _rows(_sqlite_literal))
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=FixedEmbedder()) as mem:
        con = sqlite3.connect(path)
        stored = {int(eid.rsplit("-", 1)[1], 16): (bytes(v), float(s)) for eid, v, s in con.execute(
            "SELECT e.id, v.vector, v.scale FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid")}
        con.close()
        assert stored == _expected_rows(torn=True)
        _check_upgraded(mem, torn=True)
    con = sqlite3.connect(path)
    latest = max(n for n, _name, _sql in load_migrations("sqlite"))  # every later migration applied too
    assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (latest,)
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'episode_vectors_int8'").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'episode_vectors_ns'").fetchone() == (1,)
    con.close()


def test_a_failed_sqlite_migration_leaves_the_store_at_0008(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.store.sqlite import store as sqlite_store

    path = sqlite_at(tmp_path / "old.db", 8, _rows(_sqlite_literal))

    def crash(con: sqlite3.Connection) -> None:
        con.execute("INSERT INTO episode_vectors_int8 VALUES (1, 1, 1, X'00', 0)")
        raise RuntimeError("crashed in the step")

    monkeypatch.setitem(sqlite_store._STEPS, "int8_vectors", crash)
    with pytest.raises(RuntimeError, match="crashed in the step"):
        chronomem.open(path, embedder=FixedEmbedder())
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (8,)
    assert con.execute("SELECT count(*), min(length(vector)) FROM episode_vectors").fetchone() == (N, 5)
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'episode_vectors_int8'").fetchone() == (0,)
    con.close()
    monkeypatch.undo()
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=FixedEmbedder()) as mem:
        _check_upgraded(mem, torn=True)


@pytest.fixture
def pg_at_0008() -> Iterator[str]:
    with postgres_at(8, _rows(_pg_literal)) as url:
        yield url


def test_a_postgres_store_at_0008_gets_int8_vectors(pg_at_0008: str) -> None:
    with chronomem.open(pg_at_0008, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=FixedEmbedder()) as mem:
        conninfo, schema = split_schema(pg_at_0008)
        with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
            # (a real arrives as its shortest decimal: the same float32 once rounded to one)
            stored = {int(eid.rsplit("-", 1)[1], 16): (bytes(v), float(np.float32(s))) for eid, v, s in con.execute(
                "SELECT e.id, v.vector, v.scale FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid")}
            types = con.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                                "WHERE table_schema = %s AND table_name = 'episode_vectors' "
                                "AND column_name IN ('vector', 'scale', 'vector_int8') ORDER BY 1",
                                (schema,)).fetchall()
        assert types == [("scale", "real", "NO"), ("vector", "bytea", "NO")]
        assert stored == _expected_rows(torn=False)
        _check_upgraded(mem, torn=False)
    # each stored component within half a step of the float32 one it replaced
    vecs = _vectors()
    for i, (q, scale) in stored.items():
        back = np.asarray(array("b", q), dtype=np.float32) * np.float32(scale)
        assert np.abs(back - vecs[i]).max() <= scale / 2 + 1e-6


def test_a_failed_postgres_migration_leaves_the_store_at_0008(pg_at_0008: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.store.postgres import setup

    def crash(conn: Any) -> None:
        conn.execute("UPDATE episode_vectors SET vector_int8 = '\\x00'::bytea, scale = 0")
        raise RuntimeError("crashed in the step")

    monkeypatch.setitem(setup._STEPS, "int8_vectors", crash)
    with pytest.raises(RuntimeError, match="crashed in the step"):
        chronomem.open(pg_at_0008, embedder=FixedEmbedder())
    conninfo, schema = split_schema(pg_at_0008)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (8,)
        assert con.execute("SELECT count(*), min(cardinality(vector)) FROM episode_vectors").fetchone() == (N, DIM)
    monkeypatch.undo()
    with chronomem.open(pg_at_0008, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=FixedEmbedder()) as mem:
        _check_upgraded(mem, torn=False)
