"""SQLite: a bulk insert much larger than the facts table builds the indexes
once afterwards (``store.sqlite_tx.REBUILD_*``). The indexes come back exactly
as they were, a rollback restores them, and smaller loads insert into them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import InvalidInputError
from chronomem.store.sqlite.tx import REBUILD_MIN_ROWS

N = REBUILD_MIN_ROWS + 2_000


def _items(n: int, tag: str) -> list[tuple[str, str, str, str]]:
    return [(f"{tag}_s{i % 997}", f"p{i % 13}", f"{tag}_o{i}", f"20{10 + i % 15}-0{1 + i % 9}") for i in range(n)]


def _indexes(path: Path) -> dict[str, tuple[str, int]]:
    con = sqlite3.connect(path)
    try:
        return {name: (sql, root) for name, sql, root in con.execute(
            "SELECT name, sql, rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts' "
            "AND sql IS NOT NULL")}
    finally:
        con.close()


def _plan(path: Path, sql: str) -> str:
    con = sqlite3.connect(path)
    try:
        return " ".join(str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + sql))
    finally:
        con.close()


def test_a_large_first_load_rebuilds_the_indexes_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    mem = chronomem.open(str(path))
    before = _indexes(path)
    assert len(before) >= 5
    ids = mem.add_facts(_items(N, "a"))
    assert len(ids) == N
    after = _indexes(path)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}  # same names, same DDL
    assert any(after[k][1] != before[k][1] for k in after)  # built anew
    assert "facts_subject" in _plan(path, "SELECT * FROM facts WHERE subject_id = 1 AND system_to = 9")
    assert "facts_predicate" in _plan(path, "SELECT * FROM facts WHERE predicate_id = 1 AND system_to = 9")
    assert mem.stats().facts == N
    got = mem.facts("a_s5", as_of="2030")
    assert got and all(f.subject == "a_s5" for f in got)
    want = sorted(f"a_o{i}" for i in range(N) if i % 997 == 5 and i % 13 == 5)
    assert sorted(f.object for f in mem.facts("a_s5", "p5")) == want and len(want) == 5
    mem.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_a_load_into_a_table_that_is_not_small_inserts_into_the_indexes(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    mem = chronomem.open(str(path))
    mem.add_facts(_items(N, "a"))
    first = _indexes(path)
    # the table now holds N rows: more than REBUILD_MAX_SHARE of the next load's N
    mem.add_facts(_items(N, "b"))
    assert _indexes(path) == first  # same root pages: no rebuild
    assert mem.stats().facts == 2 * N
    mem.close()


def test_a_failed_load_leaves_the_indexes_and_the_table_as_they_were(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "bulk.db"
    mem = chronomem.open(str(path))
    before = _indexes(path)
    from chronomem.store.sqlite import tx as sqlite_tx

    real = sqlite_tx.SQLiteTx._insert_then_index

    def failing(self: Any, values: list[tuple[Any, ...]]) -> None:
        real(self, values)
        raise InvalidInputError("simulated failure after the rebuild")

    monkeypatch.setattr(sqlite_tx.SQLiteTx, "_insert_then_index", failing)
    with pytest.raises(InvalidInputError):
        mem.add_facts(_items(N, "a"))
    assert _indexes(path) == before  # rolled back: the very same index pages
    assert mem.stats().facts == 0
    monkeypatch.undo()
    assert len(mem.add_facts(_items(10, "c"))) == 10
    mem.close()
