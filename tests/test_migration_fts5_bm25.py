"""Migration 0013 (PostgreSQL): a store whose lexical index chronomem 0012
wrote (``to_tsvector('simple', ...)`` per column, ranked with
``ts_rank_cd``) opens with every index row rebuilt from its episodes as
today's code writes it (FTS5's tokens, namespace, token count), so lexical
search gives the scores SQLite's FTS5 gives for the same episodes.

The episodes are written first to a SQLite file through the API (in the
time zone UTC+14, so that the month words of some episodes' context differ
from UTC's: the migration must take them from the old rows); the PostgreSQL
store is built at 0012 by applying the real migration files, then the same
episode rows and the index rows 0012's code wrote for the four strings
FTS5 holds (``setweight(to_tsvector('simple', ...))``). One episode is
erased (a tombstone, no index row: its neighbours were indexed next to each
other), one superseded.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Iterator

import psycopg
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.core.time import to_us
from chronomem.service.evidence.episodes import episode_store
from chronomem.store.migrations import load_migrations
from chronomem.store.postgres.store import split_schema
from chronomem.store.protocol import EpisodeFilter
from old_schema import postgres_at
from test_lexical_bm25_parity import QUERIES, T0, _corpus, _ranked, assert_same_ranking

TZ = "Pacific/Kiritimati"  # UTC+14
_OLD_TSV = (
    "setweight(to_tsvector('simple', %s), 'A') || setweight(to_tsvector('simple', %s), 'B') || "
    "setweight(to_tsvector('simple', %s), 'C') || setweight(to_tsvector('simple', %s), 'D')"
)
_COLS = ("rowid, id, text, occurred_at, occurred_prec, recorded_at, source, session, speaker, metadata, "
         "superseded_by, superseded_at, superseded_recorded_at, erased_at, recorded_by")


def _items() -> list[dict[str, Any]]:
    items = _corpus(seed=21, sessions=4, turns=25)
    for i in range(0, len(items), 7):  # late on the last day of a month in UTC: the next month at UTC+14
        items[i]["occurred_at"] = f"2023-05-31T{10 + i % 12:02d}:30:00Z"
    return items


def _open(target: str) -> Memory:
    return chronomem.open(target, clock=FakeClock(T0, tick=1.0), embedder=None, timezone=TZ)


@pytest.fixture
def old_pair(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    lite = _open(str(tmp_path / "lite.db"))
    ids = lite.add_episodes(_items())
    lite.supersede_episode(ids[3], ids[4])
    lite.erase_episode(ids[30], confirm=True)
    es = episode_store(lite.store)
    episodes = es._fetch((f"SELECT {_COLS} FROM episodes ORDER BY rowid", ()))[0]  # type: ignore[attr-defined]
    index = es._fetch(("SELECT rowid, body, speaker, context, neighbors FROM episodes_fts", ()))[0]  # type: ignore[attr-defined]
    with postgres_at(12, []) as url:
        conninfo, schema = split_schema(url)
        with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema},public") as con:
            ns = con.execute("INSERT INTO namespaces (name, created_at) VALUES ('default', %s) RETURNING id",
                             (to_us(_dt.datetime.fromisoformat("2024-03-01T10:00:00+00:00")),)).fetchone()[0]
            for row in episodes:
                con.execute(f"INSERT INTO episodes ({_COLS}, ns_id) OVERRIDING SYSTEM VALUE VALUES "
                            f"({', '.join(['%s'] * 15)}, %s)", (*row, ns))
            con.execute("SELECT setval(pg_get_serial_sequence('episodes', 'rowid'), max(rowid)) FROM episodes")
            for rowid, *parts in index:
                con.execute(f"INSERT INTO episodes_fts (rowid, tsv) VALUES (%s, {_OLD_TSV})", (rowid, *parts))
        try:
            yield lite, url
        finally:
            lite.close()


def _check(lite: Memory, pg: Memory) -> None:
    world = to_us(_dt.datetime.fromisoformat("2023-06-15T00:00:00+00:00"))
    checked = 0
    for q in [*QUERIES, "June", "May 2023", "June 2023 painting"]:
        for mk in (lambda m: EpisodeFilter(m._scope.ns_id),
                   lambda m: EpisodeFilter(m._scope.ns_id, occurred_by=world, not_superseded_at=world)):
            a = _ranked(lite, q, mk(lite), 40)
            assert_same_ranking(a, _ranked(pg, q, mk(pg), 40), 10, q)
            checked += bool(a)
    assert checked >= 40
    # the month words came from the old rows (UTC+14), not from UTC
    assert _ranked(pg, "June", EpisodeFilter(pg._scope.ns_id), 40)


def test_a_postgres_store_at_0012_gets_fts5_tokens_and_bm25(old_pair: tuple[Memory, str]) -> None:
    lite, url = old_pair
    with _open(url) as pg:
        conninfo, schema = split_schema(url)
        with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
            version = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
            cols = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                "AND table_name = 'episodes_fts' ORDER BY ordinal_position", (schema,))]
            tables = [r[0] for r in con.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE 'episodes_fts%%'",
                (schema,))]
            rows, erased = con.execute(
                "SELECT count(*), count(*) FILTER (WHERE e.erased_at IS NOT NULL) FROM episodes_fts x "
                "JOIN episodes e ON e.rowid = x.rowid").fetchone()
        assert version == max(n for n, _name, _sql in load_migrations("postgres"))
        assert cols == ["rowid", "ns_id", "dl", "tsv"] and tables == ["episodes_fts"]
        assert rows == len(_items()) - 1 and erased == 0
        _check(lite, pg)
        # an episode written after the upgrade is ranked with the rebuilt ones
        for mem in (lite, pg):
            mem.add_episode("a brand new zeppelin turn", session="session_0", speaker="Jon",
                            occurred_at="2023-07-01T00:00:00Z")
        _check(lite, pg)
        assert _ranked(pg, "zeppelin", EpisodeFilter(pg._scope.ns_id), 5)


def test_a_failed_0013_leaves_the_store_at_0012(old_pair: tuple[Memory, str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.store.postgres import setup

    lite, url = old_pair

    def crash(conn: Any) -> None:
        conn.execute("INSERT INTO episodes_fts_bm25 VALUES (1, 1, 1, 'x')")
        raise RuntimeError("crashed in the step")

    monkeypatch.setitem(setup._STEPS, "fts5_tokens", crash)
    with pytest.raises(RuntimeError, match="crashed in the step"):
        _open(url)
    conninfo, schema = split_schema(url)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (12,)
        assert con.execute("SELECT to_regclass('episodes_fts_bm25')").fetchone() == (None,)
        assert con.execute("SELECT count(*) FROM episodes_fts").fetchone() == (len(_items()) - 1,)
    monkeypatch.undo()
    with _open(url) as pg:
        _check(lite, pg)
