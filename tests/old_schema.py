"""Stores at an older schema, for migration tests: the real migration files
up to a version applied by hand, then rows as that version's code wrote
them. Opening the store with today's code runs the later migrations."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import psycopg

from chronomem.store.migrations import load_migrations
from chronomem.store.postgres.store import split_schema
from conftest import pg_test_url

_TABLE = ("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
          "applied_at {} NOT NULL)")


def sqlite_at(path: Path, last: int, rows: Sequence[str]) -> str:
    """A SQLite file at migration ``last`` holding ``rows`` (SQL statements)."""
    con = sqlite3.connect(path)
    con.execute(_TABLE.format("INTEGER"))
    for number, name, sql in load_migrations("sqlite"):
        if number <= last:
            con.executescript(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (number, name))
    for statement in rows:
        con.execute(statement)
    con.commit()
    con.close()
    return str(path)


@contextmanager
def postgres_at(last: int, rows: Sequence[str], base: str | None = None) -> Iterator[str]:
    """The URL of a PostgreSQL schema of its own at migration ``last``
    holding ``rows`` (on the server of ``base``, by default the tests'
    one); the schema is dropped afterwards."""
    schema = f"t_m{last:02d}_" + uuid.uuid4().hex[:12]
    base = base or pg_test_url()
    url = f"{base}{'&' if '?' in base else '?'}schema={schema}"
    conninfo, _ = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(f'CREATE SCHEMA "{schema}"')
    try:
        with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema},public") as con:
            con.execute(_TABLE.format("BIGINT"))
            for number, name, sql in load_migrations("postgres"):
                if number <= last:
                    con.execute(sql)
                    con.execute("INSERT INTO schema_migrations VALUES (%s, %s, 0)", (number, name))
            for statement in rows:
                con.execute(statement)
        yield url
    finally:
        with psycopg.connect(conninfo, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
