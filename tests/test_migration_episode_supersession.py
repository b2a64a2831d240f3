"""Migration 0006: a store whose supersessions were written before schema 6
(``superseded_at`` = the later ``recorded_at`` of the two episodes, no
``superseded_recorded_at``) is restated on open: the old time becomes the
time the supersession was recorded, and it takes effect when the superseding
episode was said. Each store is built by applying the real migration files
before 0006 and the rows the old code wrote for

    first = add_episode("The design review is on Tuesday.", occurred_at=2024-03-01)   # recorded 2024-03-01
    second = add_episode("The design review moved to Thursday.", occurred_at=2024-03-04,
                         recorded_at=2024-03-10)
    supersede_episode(first, second)                                                 # superseded_at 2024-03-10
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import psycopg
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.store.postgres.store import split_schema
from old_schema import postgres_at, sqlite_at

UTC = _dt.timezone.utc
MAR01, MAR04, MAR10 = 1709283600000000, 1709542800000000, 1710061200000000  # 09:00 UTC each
FIRST, SECOND = "01a23242-baa4-7431-a6cb-4e57b6fb7f01", "01a23242-baa4-7431-a6cb-4e57b6fb7f02"


def _rows() -> list[str]:
    return [
        f"INSERT INTO namespaces (name, created_at) VALUES ('default', {MAR01})",
        "INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at, superseded_by, "
        f"superseded_at) SELECT '{FIRST}', id, 'The design review is on Tuesday.', {MAR01}, 7, {MAR01}, "
        f"'{SECOND}', {MAR10} FROM namespaces",
        "INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at) "
        f"SELECT '{SECOND}', id, 'The design review moved to Thursday.', {MAR04}, 7, {MAR10} FROM namespaces",
    ]


def _sqlite_at_0005(tmp_path: Path) -> str:
    return sqlite_at(tmp_path / "old.db", 5, _rows())


@pytest.fixture
def pg_at_0005() -> Iterator[str]:
    with postgres_at(5, _rows()) as url:
        yield url


def _check_upgraded(mem: Memory) -> None:
    assert mem.store.schema_version() >= 6
    mem.reindex(lexical=True, vectors=False)  # the rows above came without their index rows
    old = mem.episode(FIRST)
    assert old.superseded_by == SECOND and old.superseded_at == _dt.datetime(2024, 3, 4, 9, tzinfo=UTC)

    def found(**kw: Any) -> list[str]:
        return [h.episode.id for h in mem.search("design review", config="lexical", **kw)]

    assert found(at="2024-03-05") == [SECOND]
    # the supersession was recorded (at the latest) when the second episode was
    assert found(at="2024-03-05", known_at="2024-03-09") == [FIRST]
    assert found(at="2024-03-05", known_at="2024-03-11") == [SECOND]
    assert sorted(found(view="as_recorded", at="2024-03-11")) == [FIRST, SECOND]


def test_a_sqlite_store_at_0005_is_upgraded(tmp_path: Path) -> None:
    path = _sqlite_at_0005(tmp_path)
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    con = sqlite3.connect(path)
    assert con.execute("SELECT superseded_at, superseded_recorded_at FROM episodes WHERE id = ?",
                       (FIRST,)).fetchone() == (MAR04, MAR10)
    assert con.execute("SELECT superseded_recorded_at FROM episodes WHERE id = ?", (SECOND,)).fetchone() == (None,)
    con.close()


def test_a_postgres_store_at_0005_is_upgraded(pg_at_0005: str) -> None:
    with chronomem.open(pg_at_0005, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    conninfo, schema = split_schema(pg_at_0005)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT superseded_at, superseded_recorded_at FROM episodes WHERE id = %s",
                           (FIRST,)).fetchone() == (MAR04, MAR10)
