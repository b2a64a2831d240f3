"""Reads never wait for a writer (issue 15, point 6): while another process
holds the write lock for a long bulk load (one ``add_facts`` transaction),
opening the same store with ``busy_timeout=1`` and reading from it, through the
Python API and the ``chronomem facts`` CLI, completes at once. An up-to-date
store is opened with a read of its schema version (the migration lock is taken
only when there is something to apply), and closing it does not wait for the
writer either (its final WAL checkpoint does not wait)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import chronomem

# about 5 s of writing in one transaction on 2 cores (SQLite); PostgreSQL is slower per fact
LOAD = {"sqlite": 200_000, "postgres": 60_000}
_LOCK_KEY = 1668442479  # the store-wide advisory lock's first key (0001_initial.sql)

_WRITER = """
import sys, chronomem
mem = chronomem.open(sys.argv[1], embedder=None)
items = [{"subject": f"E{i}", "predicate": "p", "object": f"v{i}"} for i in range(int(sys.argv[2]))]
print("loading", flush=True)
mem.add_facts(items)
mem.close()
print("done", flush=True)
"""


def _env() -> dict[str, str]:
    # the chronomem under test (a worktree's, with PYTHONPATH), in every process
    src = str(Path(chronomem.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": src}


def _write_lock_held(backend: str, target: str) -> bool:
    """Whether some writer holds the store's write lock now (asked without waiting)."""
    if backend == "sqlite":
        con = sqlite3.connect(target, timeout=0, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            assert "locked" in str(exc) or "busy" in str(exc), exc
            return True
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")
            con.close()
        return False
    import psycopg

    from chronomem.store.postgres.setup import split_schema

    conninfo, schema = split_schema(target)
    assert schema is not None
    with psycopg.connect(conninfo, autocommit=True) as pg:
        row: Any = pg.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_LOCK_KEY, schema)).fetchone()
        if row[0]:
            pg.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (_LOCK_KEY, schema))
        return not row[0]


def _read_with_api(target: str) -> float:
    start = time.monotonic()
    mem = chronomem.open(target, busy_timeout=0.001, embedder=None)
    try:
        facts = mem.facts(subject="A")
        assert [(f.subject, f.predicate, f.object) for f in facts] == [("A", "p", "B")]
        assert mem.stats().facts == 1  # the load's rows are not visible yet
    finally:
        mem.close()
    return time.monotonic() - start


def _read_with_cli(target: str) -> float:
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "chronomem", "--db", target, "facts", "--subject", "A"],
        env=_env(), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "A -p-> B" in out.stdout
    return time.monotonic() - start


def test_open_and_read_during_a_bulk_load_never_wait(backend: str, store_url: str) -> None:
    with chronomem.open(store_url, embedder=None) as mem:
        mem.add_fact("A", "p", "B")
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, store_url, str(LOAD[backend])],
                              env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "loading"
        deadline = time.monotonic() + 30
        while not _write_lock_held(backend, store_url):
            assert writer.poll() is None and time.monotonic() < deadline, "the load never took the lock"
            time.sleep(0.01)
        api = [_read_with_api(store_url) for _ in range(3)]
        cli = _read_with_cli(store_url)
        # every read above happened while the load still held the lock
        assert _write_lock_held(backend, store_url), "the load ended before the reads did: make LOAD larger"
        assert max(api) < 1.0, api  # an open and a read, no wait (the CLI time is mostly its start-up)
        assert cli < 5.0, cli
        assert writer.wait(timeout=120) == 0
        assert writer.stdout.read().strip() == "done"
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    with chronomem.open(store_url, embedder=None) as mem:
        assert mem.stats().facts == LOAD[backend] + 1


def test_an_up_to_date_store_opens_without_the_write_lock(tmp_path: Path) -> None:
    """Opening takes the write lock only to apply migrations: a file another
    connection holds locked opens (and reads) when up to date, and an old one
    is migrated under the lock."""
    path = str(tmp_path / "m.db")
    chronomem.open(path, embedder=None).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with chronomem.open(path, busy_timeout=0.001, embedder=None) as mem:
            assert mem.facts() == []
        # a file missing its last migration needs the lock, and says so
        last = holder.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        holder.execute("DELETE FROM schema_migrations WHERE version = ?", (last,))
        holder.execute("COMMIT")
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(chronomem.StoreLockedError):
            chronomem.open(path, busy_timeout=0.001, embedder=None)
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
