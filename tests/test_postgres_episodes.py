"""Episodes (evidence memory) on PostgreSQL: the same scenarios on both
backends give the same answers — dense search identical (the vectors are the
same float32 values and the ANN index is the client's), lexical search
(FTS5's tokens and bm25 on both; tests/test_lexical_bm25_parity.py checks
the scores) finding the same episodes, views, supersession, erasure and
Chinese text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.service.evidence import default_embedder
from chronomem.store.postgres.episodes import tsquery_terms
from chronomem.store.postgres.store import split_schema
from conftest import pg_schema_url

EPISODES = [
    {"text": "We adopted a golden retriever puppy named Biscuit.", "speaker": "Ana", "session": "s1",
     "occurred_at": "2025-09-01"},
    {"text": "The quarterly budget review is scheduled for Friday.", "speaker": "Ben", "session": "s1",
     "occurred_at": "2025-09-02"},
    {"text": "My favourite hobby is painting sunsets by the lake.", "speaker": "Ana", "session": "s2",
     "occurred_at": "2025-09-03"},
    {"text": "Did you finally go to the pottery workshop?", "speaker": "Kim", "session": "chat"},
    {"text": "Yes! It was wonderful, I made a bowl.", "speaker": "Lee", "session": "chat"},
    {"text": "我们上周二去了北京开会", "occurred_at": "2025-09-30"},
    {"text": "The weather in Lisbon was sunny and warm.", "session": "s3"},
]
QUERIES = ["dog", "budget meeting", "painting", "pottery", "北京", "weather Lisbon", "Friday review"]


@pytest.fixture(scope="module")
def embedder() -> Any:
    return default_embedder()


def _fill(target: str, embedder: Any) -> Memory:
    m = chronomem.open(target, clock=FakeClock("2025-10-01T09:00:00Z", tick=1.0))
    m.use_embedder(embedder)
    m.add_episodes(EPISODES)
    return m


def _texts(hits: list[Any]) -> list[str]:
    return [h.episode.text for h in hits]


def test_search_answers_match_sqlite(tmp_path: Path, request: pytest.FixtureRequest, embedder: Any) -> None:
    lite = _fill(str(tmp_path / "ev.db"), embedder)
    pg = _fill(pg_schema_url(request), embedder)
    try:
        for q in QUERIES:
            dense = _texts(lite.search(q, config="dense", view="raw"))
            assert _texts(pg.search(q, config="dense", view="raw")) == dense
            a = _texts(lite.search(q, config="lexical", view="raw"))
            b = _texts(pg.search(q, config="lexical", view="raw"))
            assert set(a) == set(b), q
            assert a[:1] == b[:1], q  # the best lexical hit agrees
            assert _texts(pg.search(q, view="raw"))[:1] == _texts(lite.search(q, view="raw"))[:1], q
        # the turn itself outranks its neighbour (neighbours have the lowest weight)
        assert _texts(pg.search("pottery", config="lexical", view="raw"))[0].startswith("Did you")
        assert _texts(pg.search("北京", config="lexical", view="raw")) == [EPISODES[5]["text"]]
        assert pg.search("painting", view="raw", session="nope") == []
        assert len(pg.episodes()) == len(EPISODES)
        ep = pg.episodes(session="s2")[0]
        assert pg.episode(ep.id).text == EPISODES[2]["text"]
    finally:
        lite.close()
        pg.close()


def test_views_supersession_and_erasure(request: pytest.FixtureRequest, embedder: Any) -> None:
    clock = FakeClock("2025-10-01T09:00:00Z", tick=1.0)
    with chronomem.open(pg_schema_url(request), clock=clock) as m:
        m.use_embedder(embedder)
        old = m.add_episode("The design review meeting is on the 10th.", occurred_at="2025-10-01T09:00:00Z",
                            speaker="Dana", session="planning")
        assert [str(x.start.date()) for x in old.mentions] == ["2025-10-10"]
        clock.set("2025-10-05T09:00:00Z")
        new = m.add_episode("Update: the design review meeting moved to the 12th.",
                            occurred_at="2025-10-05T09:00:00Z", speaker="Dana", session="planning")
        m.supersede_episode(old.id, new.id)
        q = "when is the design review meeting"
        assert [h.episode.id for h in m.search(q, view="as_world", at="2025-10-08")] == [new.id]
        assert [h.episode.id for h in m.search(q, view="as_recorded", at="2025-10-03")] == [old.id]
        assert {h.episode.id for h in m.search(q, view="raw")} == {old.id, new.id}
        f = m.add_fact("Dana", "attends", "design review", episode_id=new.id)
        assert m.episode(new.id).fact_ids == (f.id,)
        m.erase_episode(old.id, confirm=True)
        assert {h.episode.id for h in m.search(q, view="raw")} == {new.id}


def test_fts_syntax_is_never_read_as_query_syntax(request: pytest.FixtureRequest) -> None:
    assert tsquery_terms('"a" OR "b""c"') == ["a", 'b"c']
    with chronomem.open(pg_schema_url(request)) as m:
        m.use_embedder(None)
        m.add_episode("Release notes: NEAR-term plans for the v2 API", session="x")
        for q in ['NEAR: "v2" * -API', "AND OR NOT", '"', "col:thing", "(unbalanced", "^start", "a & b | !c"]:
            m.search(q, view="raw")
        assert m.search('NEAR-term "plans"', config="lexical", view="raw")


def test_vectors_are_stored_as_int8_bytes_and_a_scale(request: pytest.FixtureRequest, embedder: Any) -> None:
    url = pg_schema_url(request)
    with chronomem.open(url) as m:
        m.use_embedder(embedder)
        m.add_episode("A short note about rivers.")
    conninfo, schema = split_schema(url)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        row = con.execute("SELECT octet_length(vector), pg_typeof(vector)::text, pg_typeof(scale)::text, "
                          "scale > 0 FROM episode_vectors").fetchone()
    assert row == (embedder.dim, "bytea", "real", True)
