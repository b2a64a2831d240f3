"""Migration 0005: a store written at schema 0004 keeps its end causes, typed.

At 0004 ``invalidated_by`` held the superseding fact's id *or* the free-text
reason given to ``invalidate`` (``"invalidated"`` when none was), and the
close of an invalidated or retracted version named the reason or the kind
itself. Each store below is built at 0004 by applying the real migration
files 0001-0004, with the rows chronomem 0004 wrote for these calls (the
shapes were read off a store written by that version's code):

    invalidate("Priya", "works_at", "Helix", "2023-05", reason="resigned")
    invalidate("Kai", "works_at", "Orion", "2022")
    add_fact("Acme", "ceo", "Alice", "2015"); add_fact("Acme", "ceo", "Bob", "2022")
    retract(paris.id); retract(rome.id, reason="a joke")

plus a hand-made import whose fact ids are not UUIDs (one names the other
in ``invalidated_by``). Opening the store applies 0005 (and any later
migration); the public API then reads typed causes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterator

import psycopg
import pytest

import chronomem
from chronomem import CloseKind, FakeClock, Memory
from chronomem.store.postgres.store import split_schema
from old_schema import postgres_at, sqlite_at

MAX = 9223372036854775807
Y2015, Y2019, Y2020, Y2022, Y2023, Y2023_05 = (
    1420070400000000, 1546300800000000, 1577836800000000, 1640995200000000, 1672531200000000, 1682899200000000)
S1, S2, S3 = 1735689600000000, 1735689700000000, 1735689800000000  # system times, 2025-01-01
PRIYA, KAI, ALICE, BOB = (
    "01a23242-baa4-7431-a6cb-4e57b6fb7f73", "01a23242-baa5-7538-91ee-c05404675ed3",
    "01a23242-baa5-7538-91ee-c05404676ed3", "01a23242-baa5-7538-91ee-c05404677ed3")
PARIS, ROME = "01a23242-baa5-7538-91ee-c05404678ed3", "01a23242-baa6-73f8-b5d2-c2370e37b9cc"

_NAMES = {"priya": "Priya", "helix": "Helix", "kai": "Kai", "orion": "Orion", "acme": "Acme", "alice": "Alice",
          "bob": "Bob", "dana": "Dana", "paris": "Paris", "rome": "Rome"}
_PREDICATES = {"works_at": "many", "ceo": "one", "lives_in": "many", "likes": "many"}


def _e(key: str) -> str:
    return f"(SELECT id FROM entities WHERE key = '{key}')"


def _p(key: str) -> str:
    return f"(SELECT id FROM predicates WHERE key = '{key}')"


def _fact(fid: str, version: int, s: str, p: str, o: str, vf: int, vt: int, sf: int, st: int,
          invalidated_by: str | None, close_kind: str | None, closed_by: str | None) -> str:
    def q(v: str | None) -> str:
        return "NULL" if v is None else f"'{v}'"
    return ("INSERT INTO facts (fact_id, version, ns_id, subject_id, predicate_id, object_id, object_lit, "
            "valid_from, valid_from_prec, valid_to, valid_to_prec, system_from, system_to, confidence, "
            f"invalidated_by, close_kind, closed_by) VALUES ('{fid}', {version}, (SELECT id FROM namespaces), "
            f"{_e(s)}, {_p(p)}, {_e(o)}, NULL, {vf}, 1, {vt}, {2 if vt == Y2023_05 else 1 if vt != MAX else 0}, "
            f"{sf}, {st}, 1.0, {q(invalidated_by)}, {q(close_kind)}, {q(closed_by)})")


def _rows_at_0004() -> list[str]:
    """The data of the store, as chronomem 0004 stored it."""
    out = [f"INSERT INTO namespaces (name, created_at) VALUES ('default', {S1})"]
    out += [f"INSERT INTO entities (ns_id, key, name, created_at) SELECT id, '{k}', '{n}', {S1} FROM namespaces"
            for k, n in _NAMES.items()]
    out += [f"INSERT INTO entity_keys (ns_id, key, entity_id) SELECT ns_id, key, id FROM entities WHERE key = '{k}'"
            for k in _NAMES]
    out += [f"INSERT INTO predicates (ns_id, key, name, cardinality, declared) "
            f"SELECT id, '{k}', '{k}', '{c}', {1 if c == 'one' else 0} FROM namespaces"
            for k, c in _PREDICATES.items()]
    out += [f"INSERT INTO predicate_keys (ns_id, key, predicate_id) SELECT ns_id, key, id FROM predicates "
            f"WHERE key = '{k}'" for k in _PREDICATES]
    out += [
        # invalidate(reason="resigned"): the reason in both the close and invalidated_by
        _fact(PRIYA, 1, "priya", "works_at", "helix", Y2020, MAX, S1, S2, None, "invalidated", "resigned"),
        _fact(PRIYA, 2, "priya", "works_at", "helix", Y2020, Y2023_05, S2, MAX, "resigned", None, None),
        # invalidate() without a reason: the default text "invalidated"
        _fact(KAI, 1, "kai", "works_at", "orion", Y2019, MAX, S1, S2, None, "invalidated", "invalidated"),
        _fact(KAI, 2, "kai", "works_at", "orion", Y2019, Y2022, S2, MAX, "invalidated", None, None),
        # a single-valued predicate's new value: the superseding fact's id
        _fact(ALICE, 1, "acme", "ceo", "alice", Y2015, MAX, S1, S2, None, "superseded", BOB),
        _fact(ALICE, 2, "acme", "ceo", "alice", Y2015, Y2022, S2, MAX, BOB, None, None),
        _fact(BOB, 1, "acme", "ceo", "bob", Y2022, MAX, S2, MAX, None, None, None),
        # retract() without and with a reason
        _fact(PARIS, 1, "dana", "lives_in", "paris", Y2023, MAX, S1, S3, None, "retracted", "retracted"),
        _fact(ROME, 1, "dana", "lives_in", "rome", Y2023, MAX, S1, S3, None, "retracted", "a joke"),
        # a hand-made import: ids that are not UUIDs, one naming the other
        _fact("legacy-1", 1, "dana", "likes", "paris", Y2019, Y2022, S1, MAX, "legacy-2", None, None),
        _fact("legacy-2", 1, "dana", "likes", "rome", Y2022, MAX, S1, MAX, None, None, None),
    ]
    return out


def _sqlite_at_0004(tmp_path: Path) -> str:
    return sqlite_at(tmp_path / "old.db", 4, _rows_at_0004())


@pytest.fixture
def pg_at_0004() -> Iterator[str]:
    with postgres_at(4, _rows_at_0004()) as url:
        yield url


def _versions(mem: Memory, fact_id: str) -> list[tuple[Any, ...]]:
    return [(f.version, f.ended_by, f.ended_reason, f.invalidated_by) for f in mem.versions(fact_id)]


def _check_upgraded(mem: Memory) -> None:
    assert mem.store.schema_version() >= 5
    inv, sup, ret = CloseKind.INVALIDATED, CloseKind.SUPERSEDED, CloseKind.RETRACTED
    # the reason moved out of invalidated_by; the close keeps naming it
    assert _versions(mem, PRIYA) == [(1, inv, "resigned", None), (2, inv, "resigned", None)]
    # the default text was no reason
    assert _versions(mem, KAI) == [(1, inv, None, None), (2, inv, None, None)]
    # a fact id stays
    assert _versions(mem, ALICE) == [(1, sup, None, None), (2, sup, None, BOB)]
    assert _versions(mem, BOB) == [(1, None, None, None)]
    assert _versions(mem, PARIS) == [(1, ret, None, None)]
    assert _versions(mem, ROME) == [(1, ret, "a joke", None)]
    # an id that is not a UUID but names a fact of the store is a fact id
    assert _versions(mem, "legacy-1") == [(1, sup, None, "legacy-2")]
    texts = [e.text for e in mem.timeline("Priya") + mem.timeline("Acme") + mem.timeline("Kai")
             if e.kind == "ended"]
    assert texts == ["ended: Priya -works_at-> Helix [2020, 2023-05): resigned",
                     "ended: Acme -ceo-> Alice [2015, 2022): superseded by Bob",
                     "ended: Kai -works_at-> Orion [2019, 2022): invalidated"]
    # the upgraded store writes on as usual
    again = mem.invalidate("Acme", "ceo", "Bob", "2024", reason="stepped down")
    assert (again.ended_by, again.ended_reason, again.invalidated_by) == (inv, "stepped down", None)


def test_a_sqlite_store_at_0004_is_upgraded(tmp_path: Path) -> None:
    path = _sqlite_at_0004(tmp_path)
    with chronomem.open(path, clock=FakeClock("2026-01-01T00:00:00Z")) as mem:
        _check_upgraded(mem)
    con = sqlite3.connect(path)
    # nothing but fact ids is left in invalidated_by; no default text is left in closed_by
    assert con.execute("SELECT DISTINCT invalidated_by FROM facts WHERE invalidated_by IS NOT NULL "
                       "ORDER BY 1").fetchall() == [(BOB,), ("legacy-2",)]
    assert con.execute("SELECT count(*) FROM facts WHERE closed_by IN ('invalidated', 'retracted')").fetchone() == (0,)
    con.close()


def test_a_postgres_store_at_0004_is_upgraded(pg_at_0004: str) -> None:
    with chronomem.open(pg_at_0004, clock=FakeClock("2026-01-01T00:00:00Z")) as mem:
        _check_upgraded(mem)
    conninfo, schema = split_schema(pg_at_0004)
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        assert con.execute("SELECT DISTINCT invalidated_by FROM facts WHERE invalidated_by IS NOT NULL "
                           "ORDER BY 1").fetchall() == [(BOB,), ("legacy-2",)]
        assert con.execute("SELECT count(*) FROM facts WHERE closed_by IN ('invalidated', 'retracted')"
                           ).fetchone() == (0,)

