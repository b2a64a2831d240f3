"""Migration 0008: a store written at schema 0007 opens, gains the
``stated_to`` / ``stated_to_prec`` columns (NULL for every old row: the end a
cut version was given was not recorded then) and reads the same.

Each store below is built at 0007 by applying the real migration files
0001-0007, with the rows chronomem 0007 wrote for::

    define_predicate("ceo", "one")
    add_fact("Acme", "ceo", "Alice", "2015"); add_fact("Acme", "ceo", "Bob", "2022")   # rule 2: Alice closed
    add_fact("Hooli", "ceo", "Bea", "2022"); add_fact("Hooli", "ceo", "Al", "2010")    # rule 1: Al cut on arrival

After the upgrade a retraction of Bob restores Alice from her closed version
as before; Al's end was never recorded, so retracting Bea leaves him as he
was (no error, nothing invented), while a value cut on arrival after the
upgrade gets its end back.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

import chronomem
from chronomem import CloseKind, FakeClock, Memory
from chronomem.store.postgres.store import split_schema
from old_schema import postgres_at, sqlite_at

MAX = 9223372036854775807
Y2010, Y2015, Y2022 = 1262304000000000, 1420070400000000, 1640995200000000
S1, S2, S3, S4 = 1735689600000000, 1735689700000000, 1735689800000000, 1735689900000000
ALICE, BOB = "01a23242-baa5-7538-91ee-c05404676ed3", "01a23242-baa5-7538-91ee-c05404677ed3"
BEA, AL = "01a23242-baa6-73f8-b5d2-c2370e37b9cc", "01a23242-baa6-73f8-b5d2-c2370e37b9cd"
_NAMES = {"acme": "Acme", "alice": "Alice", "bob": "Bob", "hooli": "Hooli", "bea": "Bea", "al": "Al"}


def _fact(fid: str, version: int, s: str, o: str, vf: int, vt: int, sf: int, st: int,
          invalidated_by: str | None, close_kind: str | None, closed_by: str | None, end_kind: str | None) -> str:
    def q(v: str | None) -> str:
        return "NULL" if v is None else f"'{v}'"
    return ("INSERT INTO facts (fact_id, version, ns_id, subject_id, predicate_id, object_id, object_lit, "
            "valid_from, valid_from_prec, valid_to, valid_to_prec, system_from, system_to, confidence, "
            f"invalidated_by, close_kind, closed_by, end_kind) VALUES ('{fid}', {version}, "
            f"(SELECT id FROM namespaces), (SELECT id FROM entities WHERE key = '{s}'), "
            f"(SELECT id FROM predicates WHERE key = 'ceo'), (SELECT id FROM entities WHERE key = '{o}'), NULL, "
            f"{vf}, 1, {vt}, {0 if vt == MAX else 1}, {sf}, {st}, 1.0, {q(invalidated_by)}, {q(close_kind)}, "
            f"{q(closed_by)}, {q(end_kind)})")


def _rows_at_0007() -> list[str]:
    out = [f"INSERT INTO namespaces (name, created_at) VALUES ('default', {S1})"]
    out += [f"INSERT INTO entities (ns_id, key, name, created_at) SELECT id, '{k}', '{n}', {S1} FROM namespaces"
            for k, n in _NAMES.items()]
    out += [f"INSERT INTO entity_keys (ns_id, key, entity_id) SELECT ns_id, key, id FROM entities WHERE key = '{k}'"
            for k in _NAMES]
    out += ["INSERT INTO predicates (ns_id, key, name, cardinality, declared) SELECT id, 'ceo', 'ceo', 'one', 1 "
            "FROM namespaces",
            "INSERT INTO predicate_keys (ns_id, key, predicate_id) SELECT ns_id, key, id FROM predicates"]
    out += [
        _fact(ALICE, 1, "acme", "alice", Y2015, MAX, S1, S2, None, "superseded", BOB, None),
        _fact(ALICE, 2, "acme", "alice", Y2015, Y2022, S2, MAX, BOB, None, None, "superseded"),
        _fact(BOB, 1, "acme", "bob", Y2022, MAX, S2, MAX, None, None, None, None),
        _fact(BEA, 1, "hooli", "bea", Y2022, MAX, S3, MAX, None, None, None, None),
        _fact(AL, 1, "hooli", "al", Y2010, Y2022, S4, MAX, BEA, None, None, "superseded"),
    ]
    return out


def _state(mem: Memory, subject: str) -> list[tuple[object, str, object, object]]:
    return [(f.object, f.interval_text, f.ended_by, f.invalidated_by) for f in mem.facts(subject, "ceo")]


SUP = CloseKind.SUPERSEDED
BEFORE_ACME = [("Alice", "[2015, 2022)", SUP, BOB), ("Bob", "[2022, …)", None, None)]
BEFORE_HOOLI = [("Al", "[2010, 2022)", SUP, BEA), ("Bea", "[2022, …)", None, None)]


def _check_upgraded(mem: Memory) -> None:
    assert mem.store.schema_version() >= 8
    assert _state(mem, "Acme") == BEFORE_ACME and _state(mem, "Hooli") == BEFORE_HOOLI
    assert [v.version for v in mem.versions(ALICE)] == [1, 2]
    mem.retract(BOB)  # a closed version holds Alice's end: restored as before the upgrade
    assert _state(mem, "Acme") == [("Alice", "[2015, …)", None, None)]
    mem.retract(BEA)  # Al's stated end was never recorded: he stays as he was
    assert _state(mem, "Hooli") == [("Al", "[2010, 2022)", SUP, BEA)]
    # written after the upgrade: the end is recorded and given back
    cy = mem.add_fact("Hooli", "ceo", "Cy", "2024")
    mem.add_fact("Hooli", "ceo", "Di", "2023")
    mem.retract(cy.id)
    assert _state(mem, "Hooli")[-1] == ("Di", "[2023, …)", None, None)


def test_a_sqlite_store_at_0007_is_upgraded(tmp_path: Path) -> None:
    path = sqlite_at(tmp_path / "old.db", 7, _rows_at_0007())
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1").fetchone() >= (8,)
    # the old rows hold no stated end; the one written after the upgrade does
    assert con.execute("SELECT count(*) FROM facts WHERE stated_to IS NOT NULL AND system_from <= ?",
                       (S4,)).fetchone() == (0,)
    (recorded,) = con.execute("SELECT count(*) FROM facts WHERE stated_to IS NOT NULL").fetchone()
    assert recorded >= 1
    con.close()


@pytest.fixture
def pg_at_0007() -> Iterator[str]:
    with postgres_at(7, _rows_at_0007()) as url:
        yield url


def test_a_postgres_store_at_0007_is_upgraded(pg_at_0007: str) -> None:
    with chronomem.open(pg_at_0007, clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None) as mem:
        _check_upgraded(mem)
    conninfo, schema = split_schema(pg_at_0007)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() >= (8,)
        assert con.execute("SELECT count(*) FROM facts WHERE stated_to IS NOT NULL AND system_from <= %s",
                           (S4,)).fetchone() == (0,)
        got = con.execute("SELECT count(*) FROM facts WHERE stated_to IS NOT NULL").fetchone()
        assert got is not None and got[0] >= 1
