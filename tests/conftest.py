"""Shared fixtures: every contract test runs once per storage backend.

``BACKENDS`` lists the backends the contract suite (``tests/contract``) and the
property tests run against: SQLite and PostgreSQL (each PostgreSQL test gets
its own schema in the database named by ``CHRONOMEM_TEST_PG_URL``, default
``postgresql://postgres@127.0.0.1:5432/test``, dropped afterwards; a missing
server fails the tests, it never skips them).

Fixtures:

* ``backend`` -- the backend name (parametrized over ``BACKENDS``);
* ``make_memory(namespace=..., clock=..., timezone=...)`` -- open a memory on
  this test's store; every call opens the *same* store, so two calls with
  different namespaces share one database (namespace isolation tests);
* ``clock`` -- the :class:`chronomem.FakeClock` the ``mem`` fixture uses
  (starts at 2025-01-01T00:00:00Z, ticks one second per call);
* ``mem`` -- a memory on the ``default`` namespace driven by ``clock``.

Contract tests use these fixtures and the public API only (never SQL), so they
run unchanged on every backend.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem import FakeClock, Memory
from contract._helpers import MemoryFactory

BACKENDS: list[str] = ["sqlite", "postgres"]

FAKE_START = "2025-01-01T00:00:00Z"
"""Start of every test's fake system clock (``mem`` fixture)."""


PG_URL_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def pg_test_url() -> str:
    """The PostgreSQL database tests use (``CHRONOMEM_TEST_PG_URL``)."""
    return os.environ.get("CHRONOMEM_TEST_PG_URL", PG_URL_DEFAULT)


# Schemas this test process made and emptied, ready for the next test: a
# fresh schema costs ~0.3 s to migrate and drop, emptying one a few ms.
_FREE_PG_SCHEMAS: list[str] = []
_ALL_PG_SCHEMAS: list[str] = []


def _empty_schema(con: Any, name: str) -> None:
    tables = [
        t for (t,) in con.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_migrations'", (name,)
        )
    ]
    with con.transaction():
        con.execute("SET LOCAL session_replication_role = replica")  # no FK checks while emptying
        for t in tables:
            con.execute(f'DELETE FROM "{name}"."{t}"')
        # the system clock (a sequence, see 0003_concurrent_writes.sql) starts over too
        if con.execute("SELECT to_regclass(%s)", (f'"{name}".chronomem_clock',)).fetchone()[0] is not None:
            con.execute(f"SELECT setval('\"{name}\".chronomem_clock', -9223372036854775807)")


def pg_schema_url(request: pytest.FixtureRequest) -> str:
    """A store URL on an empty schema of the test database, emptied after the
    test and reused by a later one (the store creates and migrates a new
    schema on open); every schema is dropped when the test process ends."""
    base = pg_test_url()
    psycopg = importlib.import_module("psycopg")
    if _FREE_PG_SCHEMAS:
        name = _FREE_PG_SCHEMAS.pop()
    else:
        name = "t_" + uuid.uuid4().hex[:16]
        _ALL_PG_SCHEMAS.append(name)

    def release() -> None:
        with psycopg.connect(base, autocommit=True) as con:
            try:
                _empty_schema(con, name)
            except psycopg.Error:
                con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
                return
        _FREE_PG_SCHEMAS.append(name)

    request.addfinalizer(release)
    # tests need no durability: synchronous_commit=off in the URL, which the
    # default durability follows (as durability="async"; docs/postgres.md,
    # "Durability"); tests/test_pg_crash.py tests the flush
    return f"{base}{'&' if '?' in base else '?'}schema={name}&options=-c%20synchronous_commit%3Doff"


@pytest.fixture(scope="session", autouse=True)
def _model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The rewritten int8 model is kept in this run's temporary folder, not
    in the user's ``~/.cache`` (subprocesses inherit the variable)."""
    before = os.environ.get("CHRONOMEM_CACHE_DIR")
    os.environ["CHRONOMEM_CACHE_DIR"] = str(tmp_path_factory.mktemp("model-cache"))
    yield
    if before is None:
        os.environ.pop("CHRONOMEM_CACHE_DIR", None)
    else:
        os.environ["CHRONOMEM_CACHE_DIR"] = before


@pytest.fixture(scope="session", autouse=True)
def _drop_pg_schemas() -> Iterator[None]:
    yield
    if not _ALL_PG_SCHEMAS:
        return
    psycopg = importlib.import_module("psycopg")
    with psycopg.connect(pg_test_url(), autocommit=True) as con:
        for name in _ALL_PG_SCHEMAS:
            con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def store_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """What to pass to :func:`chronomem.open` for ``backend`` in this test."""
    if backend == "sqlite":
        return str(tmp_path / "m.db")
    if backend == "postgres":
        return pg_schema_url(request)
    raise ValueError(f"unknown test backend {backend!r}")  # pragma: no cover


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    value = request.param
    assert isinstance(value, str)
    return value


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """This test's fresh store, as a path or URL for :func:`chronomem.open`
    (other processes can open it too)."""
    return store_target(backend, tmp_path, request)


@pytest.fixture
def make_memory(store_url: str) -> Iterator[MemoryFactory]:
    """Factory opening memories on this test's (single, fresh) store."""
    target = store_url
    opened: list[Memory] = []

    def factory(
        namespace: str = "default",
        *,
        clock: Any = None,
        timezone: str | _dt.tzinfo | None = None,
    ) -> Memory:
        m = chronomem.open(target, namespace=namespace, clock=clock, timezone=timezone)
        opened.append(m)
        return m

    yield factory
    for m in reversed(opened):
        m.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(FAKE_START, tick=1.0)


@pytest.fixture
def mem(make_memory: MemoryFactory, clock: FakeClock) -> Memory:
    return make_memory(clock=clock)
