"""Migration 0010: a store written at schema 0009 opens with a
``recorded_by`` column on ``facts`` and ``episodes``, NULL for every old row
(who wrote it was not recorded then, and nothing is invented), and every
write after the upgrade records its writer.

Each store below is built at 0009 by applying the real migration files
0001-0009, with the rows chronomem 0009 wrote for::

    add_fact("Ada", "works_at", "Acme", "2020")   # then invalidated at 2023: two versions
    add_episode("Ada joined Acme.", occurred_at="2020-01-01")
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.io import export_jsonl
from chronomem.store.postgres.store import split_schema
from old_schema import postgres_at, sqlite_at

MAX = 9223372036854775807
Y2020, Y2023 = 1577836800000000, 1672531200000000
S1, S2 = 1735689600000000, 1735689700000000
ADA_AT_ACME = "01a23242-baa5-7538-91ee-c05404676ed3"
EPISODE = "01a23242-baa4-7431-a6cb-000000000001"


def _rows_at_0009() -> list[str]:
    out = [f"INSERT INTO namespaces (name, created_at) VALUES ('default', {S1})"]
    for key, name in (("ada", "Ada"), ("acme", "Acme")):
        out.append(f"INSERT INTO entities (ns_id, key, name, created_at) SELECT id, '{key}', '{name}', {S1} "
                   "FROM namespaces")
        out.append(f"INSERT INTO entity_keys (ns_id, key, entity_id) SELECT ns_id, key, id FROM entities "
                   f"WHERE key = '{key}'")
    out += ["INSERT INTO predicates (ns_id, key, name) SELECT id, 'works_at', 'works_at' FROM namespaces",
            "INSERT INTO predicate_keys (ns_id, key, predicate_id) SELECT ns_id, key, id FROM predicates"]
    cols = ("fact_id, version, ns_id, subject_id, predicate_id, object_id, valid_from, valid_from_prec, "
            "valid_to, valid_to_prec, system_from, system_to, confidence, close_kind, closed_by, end_kind")
    ids = ("(SELECT id FROM namespaces), (SELECT id FROM entities WHERE key = 'ada'), "
           "(SELECT id FROM predicates), (SELECT id FROM entities WHERE key = 'acme')")
    out.append(f"INSERT INTO facts ({cols}) VALUES ('{ADA_AT_ACME}', 1, {ids}, {Y2020}, 1, {MAX}, 0, {S1}, {S2}, "
               "1.0, 'invalidated', NULL, NULL)")
    out.append(f"INSERT INTO facts ({cols}) VALUES ('{ADA_AT_ACME}', 2, {ids}, {Y2020}, 1, {Y2023}, 1, {S2}, {MAX}, "
               "1.0, NULL, NULL, 'invalidated')")
    out.append("INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at) "
               f"SELECT '{EPISODE}', id, 'Ada joined Acme.', {Y2020}, 3, {S1} FROM namespaces")
    return out


def _check_upgraded(mem: Memory) -> None:
    assert mem.store.schema_version() >= 10
    old = mem.versions(ADA_AT_ACME)
    assert [(v.version, v.valid_to_text, v.recorded_by) for v in old] == [(1, None, None), (2, "2023", None)]
    assert mem.fact(ADA_AT_ACME).to_dict()["recorded_by"] is None
    assert mem.episode(EPISODE).recorded_by is None
    # written after the upgrade: recorded
    with mem.acting_as("tok-a"):
        new = mem.add_fact("Ada", "works_at", "Hooli", valid_from="2023")
        ep = mem.add_episode("Ada moved to Hooli.")
    assert new.recorded_by == "tok-a" and mem.episode(ep.id).recorded_by == "tok-a"
    assert [f.id for f in mem.facts(recorded_by="tok-a")] == [new.id]
    assert [(f.object, f.recorded_by) for f in mem.history("Ada")] == [
        ("Acme", None), ("Acme", None), ("Hooli", "tok-a")]
    buf = io.StringIO()
    export_jsonl(mem, buf)
    facts = [json.loads(x) for x in buf.getvalue().splitlines() if '"fact"' in x]
    assert sorted((r["version"], r["object"], r["recorded_by"]) for r in facts) == [
        (1, "acme", None), (1, "hooli", "tok-a"), (2, "acme", None)]


def test_a_sqlite_store_at_0009_is_upgraded(tmp_path: Path) -> None:
    path = sqlite_at(tmp_path / "old.db", 9, _rows_at_0009())
    con = sqlite3.connect(path)
    assert "recorded_by" not in {r[1] for r in con.execute("PRAGMA table_info(facts)")}
    con.close()
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version), max(name) FROM schema_migrations").fetchone() >= (10, "")
    assert con.execute("SELECT name FROM schema_migrations WHERE version = 10").fetchone() == ("0010_recorded_by",)
    assert con.execute("SELECT count(*) FROM facts WHERE recorded_by IS NULL").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM episodes WHERE recorded_by IS NULL").fetchone() == (1,)
    con.close()


@pytest.fixture
def pg_at_0009() -> Iterator[str]:
    with postgres_at(9, _rows_at_0009()) as url:
        yield url


def test_a_postgres_store_at_0009_is_upgraded(pg_at_0009: str) -> None:
    conninfo, schema = split_schema(pg_at_0009)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                           "AND column_name = 'recorded_by'", (schema,)).fetchone() == (0,)
    with chronomem.open(pg_at_0009, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT name FROM schema_migrations WHERE version = 10").fetchone() == (
            "0010_recorded_by",)
        assert con.execute("SELECT count(*) FROM facts WHERE recorded_by IS NULL").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM episodes WHERE recorded_by IS NULL").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                           "AND column_name = 'recorded_by'", (schema,)).fetchone() == (2,)
