"""A PostgreSQL server crash keeps every acknowledged write
(``durability="normal"``, the default); ``durability="async"`` may lose the
last ones, as documented (``docs/postgres.md``, "Durability").

The crash tests run a throwaway cluster of their own (initdb into a temp dir,
run as the ``postgres`` user when the tests run as root, on a free loopback
port), write through the public API, SIGKILL every process of the server
(the postmaster and all its children, as the OOM killer would), start it
again and read what survived.

So that nothing but chronomem's own commits flushes the WAL, the cluster has
``wal_writer_delay = 10s``, no autovacuum, no background writer,
``wal_level = minimal`` (no standby snapshots, which would kick the WAL
writer), and the WAL writer itself is held with SIGSTOP while a test writes:
an acknowledged write whose commit record was not flushed is then lost every
time, not by chance (the empty wait transaction chronomem once used, which
flushed nothing, fails here every time). The tests skip only where initdb /
pg_ctl are not installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import psycopg
import pytest

import chronomem
from chronomem.errors import InvalidInputError
from chronomem.store.postgres.store import PostgresStore
from chronomem.store.postgres.tx import CommitPlan
from conftest import pg_test_url
from pg_cluster import Cluster, throwaway

# a record that ends exactly at a WAL page boundary: the insert position is
# reported past the next page's header (GetXLogInsertRecPtr), the flush
# position at the boundary
_PAGE_HEADER = 40

_SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{root}'
max_connections = 20
shared_buffers = 32MB
fsync = on
synchronous_commit = on
wal_writer_delay = 10s
wal_level = minimal
max_wal_senders = 0
autovacuum = off
bgwriter_lru_maxpages = 0
checkpoint_timeout = 1h
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    for c in throwaway(_SETTINGS, "the crash test cannot run a server of its own"):
        with psycopg.connect(c.url, autocommit=True) as con:
            # two roles that are not superusers (chronomem creates their
            # schemas); one may not call pg_logical_emit_message (see CommitPlan)
            for role in ("agent", "restricted"):
                con.execute(f"CREATE ROLE {role} LOGIN")
                con.execute(f"GRANT CREATE ON DATABASE postgres TO {role}")
            con.execute("REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC")
            con.execute("GRANT EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) TO agent")
        yield c


def _role_url(c: Cluster, role: str) -> str:
    return f"postgresql://{role}@127.0.0.1:{c.port}/postgres?schema=team_{role}"


def _crash_and_restart(c: Cluster, *open_memories: chronomem.Memory) -> None:
    c.crash()
    for m in open_memories:  # their connections died with the server
        m.close()
    c.start()


def _assert_flushed(c: Cluster, what: str) -> None:
    lag = c.unflushed()
    assert lag <= _PAGE_HEADER, f"{what} returned with {lag} bytes of its WAL not flushed"


def _write_everything(c: Cluster, mem: chronomem.Memory) -> Callable[[chronomem.Memory], None]:
    """Shared and exclusive writes, each found flushed when it returns;
    returns the check of all of them, for after the crash."""
    mem.define_predicate("status", cardinality="one")
    _assert_flushed(c, "define_predicate")
    for i in range(3):  # shared writes
        mem.add_fact(f"agent{i}", "works_on", f"ticket{i}")
        _assert_flushed(c, "add_fact")
    mem.add_fact("agent0", "status", "busy")
    mem.add_fact("agent0", "status", "idle")  # closes "busy"
    _assert_flushed(c, "add_fact")
    batch = [(f"svc{i}", "depends_on", f"db{i % 3}") for i in range(20)]
    mem.add_facts(batch)  # exclusive, as corrections, merges, erasure and imports
    _assert_flushed(c, "add_facts")
    episode = mem.add_episode("Alice took over ticket0 on Monday.", occurred_at="2025-03-03")
    _assert_flushed(c, "add_episode")
    wrong = mem.add_fact("agent1", "works_on", "ticket99")
    mem.retract(wrong.id)
    _assert_flushed(c, "retract")

    def check(m: chronomem.Memory) -> None:
        for i in range(3):
            assert f"ticket{i}" in {f.object for f in m.facts(f"agent{i}", "works_on")}, f"agent{i}'s fact was lost"
        assert "ticket99" not in {f.object for f in m.facts("agent1", "works_on")}, "the retraction was lost"
        assert [f.object for f in m.facts("agent0", "status")] == ["idle"]
        assert {(f.subject, f.object) for f in m.facts(predicate="depends_on")} == {(s, o) for s, _, o in batch}
        assert m.episode(episode.id).text == "Alice took over ticket0 on Monday."

    return check


def test_acknowledged_writes_survive_a_server_crash(cluster: Cluster) -> None:
    # the default durability as a superuser, as a role that may call
    # pg_logical_emit_message (early lock release) and one that may not
    # (synchronous commit)
    urls = {"postgres": cluster.url, "agent": _role_url(cluster, "agent"),
            "restricted": _role_url(cluster, "restricted")}
    for role, emit in (("postgres", True), ("agent", True), ("restricted", False)):
        store = PostgresStore(urls[role])
        try:
            assert store.commit_plan == CommitPlan("normal", "on", emit), role
        finally:
            store.close()
    mems = {role: chronomem.open(url, namespace="crash", embedder=None) for role, url in urls.items()}
    # "full" flushes even where the URL (or role, database) turns synchronous_commit off
    full = chronomem.open(cluster.url + "?options=-c%20synchronous_commit%3Doff", namespace="full",
                          durability="full", embedder=None)
    try:
        cluster.hold_wal_writer()
        checks = {role: _write_everything(cluster, m) for role, m in mems.items()}
        full.add_fact("agent9", "works_on", "ticket9")
        _assert_flushed(cluster, 'add_fact with durability="full"')
        _crash_and_restart(cluster, *mems.values(), full)
    finally:
        for m in (*mems.values(), full):
            m.close()

    for role, check in checks.items():
        with chronomem.open(urls[role], namespace="crash", embedder=None) as m:
            check(m)
    with chronomem.open(cluster.url, namespace="full", embedder=None) as m:
        assert [f.object for f in m.facts("agent9", "works_on")] == ["ticket9"]


def test_async_durability_can_lose_acknowledged_writes(cluster: Cluster) -> None:
    """The documented trade, and proof that the crash test can fail: a write
    acknowledged before its flush is lost (here every time, the WAL writer
    being held). The same holds for "normal" on a session whose
    synchronous_commit is off (URL options, role or database settings)."""
    durable = chronomem.open(cluster.url, namespace="fast", embedder=None)
    fast = chronomem.open(cluster.url, namespace="fast", durability="async", embedder=None)
    off = chronomem.open(cluster.url + "?options=-c%20synchronous_commit%3Doff", namespace="fast", embedder=None)
    try:
        durable.add_fact("Acme", "ceo", "Alice")
        cluster.hold_wal_writer()
        for i in range(5):
            fast.add_fact("Acme", "board_member", f"async{i}")
            off.add_fact("Acme", "board_member", f"off{i}")
        assert cluster.unflushed() > _PAGE_HEADER, "the asynchronous commits were flushed before the crash"
        _crash_and_restart(cluster, durable, fast, off)
    finally:
        for m in (durable, fast, off):
            m.close()

    with chronomem.open(cluster.url, namespace="fast", embedder=None) as m:
        assert [f.object for f in m.facts("Acme", "ceo")] == ["Alice"]
        kept = {f.object for f in m.facts("Acme", "board_member")}
    assert len(kept & {f"async{i}" for i in range(5)}) < 5, 'no write acknowledged with durability="async" was lost'
    assert len(kept & {f"off{i}" for i in range(5)}) < 5, "no write acknowledged with synchronous_commit=off was lost"


def test_commit_plans() -> None:
    # (durability, the session's synchronous_commit) -> what the acknowledgement waits with
    assert CommitPlan("normal", "on").sync == "on"
    assert CommitPlan("normal", "remote_apply").sync == "remote_apply"
    assert CommitPlan("normal", "off").sync is None
    assert CommitPlan("full", "off").sync == "on"
    assert CommitPlan("full", "local").sync == "local"
    assert CommitPlan("async", "on").sync is None
    end = "chronomem_end_write()"
    setting = ("SELECT set_config('synchronous_commit', %s, true)", ("on",))
    commit, unlock = ("COMMIT", ()), (f"SELECT {end}", ())
    emit = "pg_logical_emit_message(true, 'chronomem', '')"
    assert CommitPlan("async").statements(end) == [commit, unlock]
    # the wait for the flush: one statement after COMMIT, its own (autocommit) transaction
    assert CommitPlan("normal").statements(end) == [commit, (f"SELECT {end}, {emit}", ())]
    assert CommitPlan("full", "off").statements(end) == [
        commit, (f"SELECT set_config('synchronous_commit', %s, true), {end}, {emit}", ("on",))]
    assert CommitPlan("normal", emit=False).statements(end) == [setting, commit, unlock]


def test_unknown_durability_is_refused_before_connecting(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="durability must be one of 'normal', 'full', 'async'"):
        chronomem.open(pg_test_url(), durability="fast")
    with pytest.raises(InvalidInputError, match="durability must be 'normal' or 'full' on SQLite"):
        chronomem.open(str(tmp_path / "m.db"), durability="async")
    assert not (tmp_path / "m.db").exists()
