"""A memory on PostgreSQL rides out its server's restarts, crashes and lock
stalls (issue 18, point 5; ``docs/postgres.md``, "Outages and timeouts"):

* after a restart or a crash, no call fails on a stale pooled connection;
* while the server is down every call fails at once with the typed
  ``StoreUnavailableError`` (retry_after set), never a plain ``StoreError``
  and never a wait on a pool timeout;
* the first call after the server is back succeeds;
* a write whose connection dies while it commits is ``WriteOutcomeUnknownError``
  naming the facts to read back; a write that waits too long for a lock is
  ``StoreLockedError`` after ``busy_timeout``.

The restart and crash tests run a throwaway cluster of their own
(``pg_cluster.py``); the others use the test database.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import psycopg
import pytest

import chronomem
from chronomem.errors import StoreError, StoreLockedError, StoreUnavailableError, WriteOutcomeUnknownError
from chronomem.store.postgres.pool import Pool
from chronomem.store.postgres.store import PostgresStore
from chronomem.store.postgres.tx import PgTx
from conftest import pg_schema_url
from pg_cluster import SMALL_SETTINGS, Cluster, throwaway


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway(SMALL_SETTINGS, "the outage tests cannot run a server of their own")


def _fill_pool(mem: chronomem.Memory, n: int = 4) -> None:
    """Leave ``n`` idle connections in the memory's pool (n held at once,
    then given back), each used for a read first."""
    pool = mem.store._pool  # type: ignore[attr-defined]
    held = [pool.getconn() for _ in range(n)]
    for conn in held:
        conn.execute("SELECT 1")
        pool.putconn(conn)
    assert pool.stats()["idle"] == n


def _calls(mem: chronomem.Memory, tag: str) -> None:
    """Reads and writes of every kind a caller makes, all of which must succeed."""
    assert mem.facts("Acme", "ceo")
    mem.add_fact("Acme", "office", f"office-{tag}")
    mem.add_facts([(f"svc-{tag}", "depends_on", "db")])
    mem.search("office", k=3)
    assert mem.stats().facts > 0


def test_no_call_fails_after_a_restart(cluster: Cluster) -> None:
    mem = chronomem.open(cluster.url + "?schema=restart", embedder=None)
    try:
        mem.define_predicate("ceo", cardinality="one")
        mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
        mem.add_episode("the office moved to Oslo")
        for round_ in range(2):
            _fill_pool(mem)
            cluster.restart()
            _calls(mem, f"r{round_}")  # every pooled connection is stale: none may fail a call
    finally:
        mem.close()


def test_an_outage_is_typed_and_fast_and_recovery_is_immediate(cluster: Cluster) -> None:
    mem = chronomem.open(cluster.url + "?schema=outage", embedder=None)
    try:
        mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
        _fill_pool(mem)
        cluster.crash()
        for call in (lambda: mem.facts("Acme", "ceo"), lambda: mem.add_fact("Acme", "ceo", "Bob"),
                     lambda: mem.add_facts([("x", "y", "z")]), lambda: mem.search("Acme"), mem.stats):
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError) as info:
                call()
            assert time.monotonic() - started < 5, "a call waited on a dead server"
            assert info.value.retry_after is not None
            assert "unavailable" in str(info.value) or "cannot connect" in str(info.value)
        cluster.start()
        started = time.monotonic()
        assert [f.object for f in mem.facts("Acme", "ceo")] == ["Alice"]  # the first call after the return
        assert time.monotonic() - started < 1.0, "recovery took longer than a second"
        mem.add_fact("Acme", "ceo", "Bob", valid_from="2024")  # and writes work again
    finally:
        mem.close()


def test_a_frozen_server_fails_a_read_after_read_timeout(cluster: Cluster) -> None:
    """A server that answers nothing (SIGSTOP: its sockets stay open) fails a
    read after ``read_timeout`` (here 1 s, from the URL), not when it thaws."""
    mem = chronomem.open(cluster.url + "?schema=frozen&read_timeout=1", embedder=None)
    try:
        mem.add_fact("Acme", "ceo", "Alice")
        _fill_pool(mem, 1)
        frozen = cluster.freeze()
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="did not answer within 1 s"):
                mem.facts("Acme", "ceo")
            assert 0.9 < time.monotonic() - started < 5
        finally:
            cluster.thaw(frozen)
        assert [f.object for f in mem.facts("Acme", "ceo")] == ["Alice"]  # the cut connection was replaced
    finally:
        mem.close()


def test_a_write_cut_off_while_committing_is_an_unknown_outcome_naming_its_fact(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_schema_url(request)
    mem = chronomem.open(url, embedder=None)
    try:
        mem.add_fact("Acme", "ceo", "Alice")
        commit = PgTx.commit

        def cut_off(tx: Any) -> None:
            pid = tx.conn.info.backend_pid
            with psycopg.connect(url.split("?")[0], autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
            commit(tx)

        monkeypatch.setattr(PgTx, "commit", cut_off)
        with pytest.raises(WriteOutcomeUnknownError) as info:
            mem.add_fact("Acme", "office", "Oslo")
        monkeypatch.setattr(PgTx, "commit", commit)
        assert len(info.value.fact_ids) == 1
        assert info.value.fact_ids[0] in str(info.value)
        # it did not commit here (the backend died first); the memory goes on
        assert mem.facts("Acme", "office") == []
        assert mem.add_fact("Acme", "office", "Oslo").object == "Oslo"
    finally:
        mem.close()


def test_a_write_held_behind_a_lock_is_store_locked_after_busy_timeout(request: pytest.FixtureRequest) -> None:
    url = pg_schema_url(request)
    holder = chronomem.open(url, embedder=None)
    waiter = chronomem.open(url, embedder=None, busy_timeout=0.5)
    try:
        holder.add_fact("Acme", "ceo", "Alice")
        inside, release = threading.Event(), threading.Event()

        def hold() -> None:
            with holder.store.write():  # the store's exclusive write lock
                inside.set()
                release.wait(30)

        t = threading.Thread(target=hold)
        t.start()
        try:
            assert inside.wait(30)
            started = time.monotonic()
            with pytest.raises(StoreLockedError, match="busy_timeout"):
                waiter.add_facts([("Acme", "office", "Oslo")])
            assert 0.4 < time.monotonic() - started < 10
        finally:
            release.set()
            t.join(30)
        assert waiter.add_facts([("Acme", "office", "Oslo")])  # the lock is free again
    finally:
        holder.close()
        waiter.close()


def test_a_pooled_connection_the_server_dropped_is_replaced_unseen(request: pytest.FixtureRequest) -> None:
    url = pg_schema_url(request)
    store = PostgresStore(url)
    try:
        with store._conn() as conn:
            pid = conn.info.backend_pid
        with psycopg.connect(url.split("?")[0], autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        time.sleep(0.1)  # the FIN reaches the idle socket
        assert store.schema_version() > 0  # no error: the dead connection was discarded before use
        with store._conn() as conn:
            assert conn.info.backend_pid != pid
    finally:
        store.close()


def test_an_unreachable_server_is_unavailable_and_bad_credentials_are_not() -> None:
    with pytest.raises(StoreUnavailableError, match="cannot connect"):
        PostgresStore("postgresql://postgres@127.0.0.1:1/test", connect_timeout=2)
    with pytest.raises(StoreError, match="cannot connect") as info:
        PostgresStore("postgresql://postgres@127.0.0.1:5432/no_such_database_here", connect_timeout=2)
    assert not isinstance(info.value, StoreUnavailableError)


def test_a_full_pool_waits_then_is_unavailable() -> None:
    made: list[int] = []

    class Conn:
        closed = broken = False

        def close(self) -> None:
            self.closed = True

    def connect() -> Conn:
        made.append(1)
        return Conn()

    pool = Pool(connect, psycopg, max_size=2, wait_timeout=0.2)
    a, b = pool.getconn(), pool.getconn()
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="all 2 connections"):
        pool.getconn()
    assert 0.15 < time.monotonic() - started < 5
    assert pool.stats() == {"size": 2, "idle": 0, "max_size": 2}
    b.closed = True  # a dead connection given back is not kept, and frees its slot
    pool.putconn(b)
    assert pool.stats() == {"size": 1, "idle": 0, "max_size": 2}
    c = pool.getconn()
    assert len(made) == 3 and c is not a
    pool.close()
    # an idle connection past max_idle is closed when the pool is next used, not handed out
    made.clear()
    pool = Pool(connect, psycopg, max_size=2, wait_timeout=0.2, max_idle=0.05)
    old = pool.getconn()
    old.info = type("Info", (), {"transaction_status": psycopg.pq.TransactionStatus.IDLE})()
    pool.putconn(old)
    time.sleep(0.1)
    fresh = pool.getconn()
    assert fresh is not old and old.closed and len(made) == 2
    assert pool.stats() == {"size": 1, "idle": 0, "max_size": 2}
    pool.close()


def test_http_and_mcp_say_unavailable_with_a_retry_hint(cluster: Cluster) -> None:
    """The web API answers 503 with ``Retry-After`` and MCP one sentence that
    says to retry (issue 18: it was HTTP 500 and "fix that argument")."""
    import anyio
    from mcp import Client as McpClient

    from chronomem.adapters.mcp import build_server
    from chronomem.adapters.web import create_app
    from test_web_support import Client, err

    mem = chronomem.open(cluster.url + "?schema=surfaces", embedder=None)
    try:
        mem.add_fact("Acme", "ceo", "Alice")
        web, server = Client(create_app(mem)), build_server(mem)
        cluster.crash()
        try:
            r = web.get("/api/facts", params={"subject": "Acme"})
            err(r, 503, "StoreUnavailableError")
            assert r.headers["retry-after"] == "1"

            async def call() -> Any:
                async with McpClient(server, mode="legacy") as client:
                    return await client.call_tool("facts", {"subject": "Acme"})

            got = anyio.run(call)
            text = "".join(getattr(b, "text", "") for b in got.content)
            assert got.is_error and "(StoreUnavailableError)" in text and "retry the call" in text, text
        finally:
            cluster.start()
        assert web.get("/api/facts", params={"subject": "Acme"}).status_code == 200
    finally:
        mem.close()


def test_a_deadline_cuts_a_blocked_call_and_only_that_one() -> None:
    """The watcher shuts the socket of a call past its deadline down: the
    blocked read returns at once; a call disarmed in time is never cut."""
    import socket

    from chronomem.store.postgres.pool import Deadlines

    class Conn:
        def __init__(self, sock: socket.socket) -> None:
            self.sock = sock

        def fileno(self) -> int:
            return self.sock.fileno()

    deadlines = Deadlines()
    quick_a, quick_b = socket.socketpair()
    slow_a, slow_b = socket.socketpair()
    try:
        quick = deadlines.arm(Conn(quick_a), 0.2)
        assert deadlines.disarm(quick) is False  # returned in time
        slow = deadlines.arm(Conn(slow_a), 0.3)
        started = time.monotonic()
        assert slow_a.recv(1) == b""  # blocked until the deadline shut the socket down
        assert 0.25 < time.monotonic() - started < 3
        assert deadlines.disarm(slow) is True
        quick_b.sendall(b"x")
        assert quick_a.recv(1) == b"x"  # the disarmed one was left alone
    finally:
        for s in (quick_a, quick_b, slow_a, slow_b):
            s.close()
