"""Reads on a real streaming standby (``open(url, read_replica=...)``).

A primary and a streaming standby of it run on loopback ports of the test's
own (``pg_cluster.replica_pair``: initdb, ``pg_basebackup -R``, as the
``postgres`` user under root), removed afterwards. Writes go to the primary;
reads "as known at" a settled time the standby has replayed must run on the
standby and answer exactly what a memory without a replica answers; a read
the standby has not replayed far enough, and every read while it is down,
goes to the primary. ``docs/postgres.md``, "Read replica".
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import pytest

psycopg = pytest.importorskip("psycopg")

import chronomem  # noqa: E402
from chronomem.core.time import MAX_US, to_us  # noqa: E402
from chronomem.errors import InvalidInputError  # noqa: E402
from chronomem.service.reads import DEEP_OFFSET  # noqa: E402
from chronomem.store.protocol import FactQuery  # noqa: E402
from pg_cluster import SMALL_SETTINGS, Cluster, replica_pair  # noqa: E402

SCHEMA = "replica_t"


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Cluster, Cluster]]:
    yield from replica_pair(SMALL_SETTINGS, "the read-replica tests cannot run a primary and standby of their own")


def _url(c: Cluster) -> str:
    return f"{c.url}?schema={SCHEMA}"


def _sql(c: Cluster, sql: str) -> Any:
    with psycopg.connect(c.url, autocommit=True) as con:
        row = con.execute(sql).fetchone()
        return None if row is None else row[0]


def _caught_up(primary: Cluster, standby: Cluster, timeout: float = 20.0) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    target = int(_sql(primary, "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"))
    deadline = time.monotonic() + timeout
    while int(_sql(standby, "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint") or -1) < target:
        assert time.monotonic() < deadline, "the standby did not catch up"
        time.sleep(0.02)


def _pin(pair: tuple[Cluster, Cluster], mem: chronomem.Memory, *times: Any) -> None:
    """Settle ``times`` through ``mem`` (as its first read at each would) and
    wait until the standby has replayed that far: the primary ships WAL once
    it is flushed, which for WAL no commit waited on (a read's page pruning)
    is the WAL writer's next round."""
    for t in times:
        mem.store.settle(to_us(t))  # type: ignore[attr-defined]
    _caught_up(*pair)


def _stats(mem: chronomem.Memory) -> dict[str, int]:
    got = mem.store.replica_stats()  # type: ignore[attr-defined]
    assert got is not None
    return dict(got)


def _dicts(got: Any) -> Any:
    """A read's answer as plain values (lists, models' ``to_dict()``)."""
    if isinstance(got, (list, tuple)):
        return [_dicts(x) for x in got]
    return got.to_dict() if hasattr(got, "to_dict") else got


@pytest.fixture(scope="module")
def world(pair: tuple[Cluster, Cluster]) -> Iterator[dict[str, Any]]:
    """Facts with supersessions and a correction written on the primary; T1
    settled between two rounds of writes, and the standby caught up."""
    primary, standby = pair
    with chronomem.open(_url(primary)) as w:
        w.define_predicate("works_at", cardinality="one")
        w.add_fact("alice", "works_at", "acme", "2019-01")
        w.add_fact("alice", "lives_in", "paris", "2018")
        w.add_fact("bob", "knows", "alice", "2017")
        fid = w.add_fact("alice", "likes", "tea", "2020").id
        t1 = w.now()
        w.store.settle(to_us(t1))  # type: ignore[attr-defined]
        w.add_fact("alice", "works_at", "globex", "2021-06")  # supersedes acme after T1
        w.correct(fid, object="coffee", reason="misheard")
        w.add_fact("alice", "lives_in", "berlin", "2022")
        t2 = w.now()
        w.store.settle(to_us(t2))  # type: ignore[attr-defined]
    _caught_up(primary, standby)
    yield {"t1": t1, "t2": t2}


@pytest.fixture()
def mems(pair: tuple[Cluster, Cluster], world: dict[str, Any]) -> Iterator[tuple[chronomem.Memory, chronomem.Memory]]:
    """(a memory with the standby as read replica, one on the primary alone)."""
    primary, standby = pair
    with chronomem.open(_url(primary), read_replica=standby.url) as rep, chronomem.open(_url(primary)) as only:
        yield rep, only


def test_pinned_reads_run_on_the_replica_and_match_the_primary(pair: Any, mems: Any, world: dict[str, Any]) -> None:
    rep, only = mems
    t1, t2 = world["t1"], world["t2"]
    _pin(pair, rep, t1, t2)
    before = _stats(rep)
    reads = [
        lambda m, k: m.facts("alice", known_at=k),
        lambda m, k: m.facts("alice", "works_at", known_at=k),
        lambda m, k: m.facts("alice", as_of="2021-01", known_at=k),
        lambda m, k: m.facts("alice", as_of="2023-01", known_at=k),
        lambda m, k: m.facts(object="alice", direction="in", known_at=k),
        lambda m, k: m.between("2018", "2022", subject="alice", known_at=k),
        lambda m, k: m.facts(predicate="lives_in", known_at=k),
        lambda m, k: m.diff("2019-06", "2022-06", "alice", known_at=k),
        lambda m, k: m.neighbors("alice", known_at=k),
    ]
    for known in (t1, t2):
        for read in reads:
            got, want = read(rep, known), read(only, known)
            assert _dicts(got) == _dicts(want)
            assert got  # not an empty answer matching an empty answer
    after = _stats(rep)
    # one fact query per read, two for the diff (both of its times)
    assert after["replica"] - before["replica"] == 2 * (len(reads) + 1), (before, after)
    assert after["behind"] == before["behind"] and after["down"] == before["down"]
    # the two times give different answers: the pins are real
    assert _dicts(rep.facts("alice", "works_at", known_at=t1)) != _dicts(rep.facts("alice", "works_at", known_at=t2))
    # history and reads of what is believed now stay on the primary
    n = _stats(rep)["replica"]
    assert _dicts(rep.history("alice")) == _dicts(only.history("alice"))
    assert _dicts(rep.facts("alice")) == _dicts(only.facts("alice"))
    assert _stats(rep)["replica"] == n


def test_the_connection_used_is_the_standby(mems: Any, world: dict[str, Any]) -> None:
    """The replica pool's connections are in recovery, the primary's are not."""
    rep, _ = mems
    store = rep.store
    conn = store._replica.getconn()  # type: ignore[attr-defined]
    try:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
    finally:
        store._replica.putconn(conn)  # type: ignore[attr-defined]
    with store._conn() as primary:  # type: ignore[attr-defined]
        assert primary.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False


def test_a_time_the_standby_has_not_replayed_is_read_on_the_primary(pair: Any, mems: Any,
                                                                    world: dict[str, Any]) -> None:
    """Replay paused: a write and a settle after it are not on the standby,
    so a read pinned after them goes to the primary; a read pinned at an
    earlier time still runs on the standby, and answers what the primary
    answers: the close of a version the standby has not replayed yet comes
    from the primary's check (docs/postgres.md, "Read replica")."""
    primary, standby = pair
    rep, only = mems
    t1 = world["t1"]
    _pin(pair, rep, t1, world["t2"])
    rep.facts("alice", known_at=t1)  # the standby's replay position is known
    _sql(standby, "SELECT pg_wal_replay_pause()")
    try:
        rep.add_fact("alice", "works_at", "initech", "2024")  # closes globex's believed version
        t3 = rep.now()
        before = _stats(rep)
        got = rep.facts("alice", known_at=t3)
        assert _dicts(got) == _dicts(only.facts("alice", known_at=t3))
        assert "initech" in [f.object for f in got]
        after = _stats(rep)
        assert after["behind"] == before["behind"] + 1 and after["replica"] == before["replica"]

        # a read at the earlier time runs on the paused standby and answers
        # exactly the primary's answer: globex closed (after T2, not replayed)
        old = rep.facts("alice", "works_at", known_at=world["t2"])
        want = only.facts("alice", "works_at", known_at=world["t2"])
        assert _stats(rep)["replica"] == after["replica"] + 1
        assert _stats(rep)["closed"] == after["closed"] + 1  # the primary's check patched it
        assert _dicts(old) == _dicts(want)
        assert [f.system_to is not None for f in want if f.object == "globex"] == [True]
        # the standby itself still has globex's version open
        assert _sql(standby, f"SELECT count(*) FROM {SCHEMA}.facts f JOIN {SCHEMA}.entities o ON o.id = f.object_id "
                             f"WHERE o.key = 'globex' AND f.system_to = {MAX_US}") == 1
    finally:
        _sql(standby, "SELECT pg_wal_replay_resume()")
    _caught_up(primary, standby)
    assert _dicts(rep.facts("alice", "works_at", known_at=world["t2"])) == \
           _dicts(only.facts("alice", "works_at", known_at=world["t2"]))


def test_closes_and_erasures_the_standby_has_not_replayed_come_from_the_primary(pair: Any, mems: Any) -> None:
    """Replay paused after T: a supersession, a correction, a retraction and
    erasures on the primary. Every read pinned at T (plain, paged, a deep
    page, a narrow keys-only read) still runs its query on the standby and
    answers exactly what the primary alone answers (every fact's
    ``to_dict()``); an erasure that changes a page's rows makes the primary
    run that read again."""
    primary, standby = pair
    rep, only = mems
    rep.define_predicate("role", cardinality="one")
    ids = {}
    for pred, obj, start in [("role", "intern", "2010"), ("likes", "jazz", "2011"), ("likes", "tea", "2012"),
                             ("lives_in", "rome", "2013"), ("likes", "chess", "2014"), ("likes", "go", "2015"),
                             ("likes", "rain", "2016")]:
        ids[obj] = rep.add_fact("dave", pred, obj, start).id
    rep.add_fact("gina", "likes", "coffee", "2009")  # a predicate-wide read has two subjects (gina's row first)
    # erin: more facts than a deep page skips (facts(offset >= DEEP_OFFSET) reads narrow rows with SQL OFFSET)
    rep.add_facts([{"subject": "erin", "predicate": "visited", "object": f"town{i}",
                    "valid_from": f"{1900 + i // 12}-{i % 12 + 1:02d}"} for i in range(DEEP_OFFSET + 20)])
    first_erin = rep.facts("erin", limit=1)[0].id
    t = rep.now()
    _pin(pair, rep, t)
    reads = {
        "all": lambda m: m.facts("dave", known_at=t),
        "role": lambda m: m.facts("dave", "role", known_at=t),
        "first": lambda m: m.facts("dave", known_at=t, limit=1),
        "page1": lambda m: m.facts("dave", known_at=t, limit=3),
        "page2": lambda m: m.facts("dave", known_at=t, limit=2, offset=3),
        "deep": lambda m: m.facts("erin", known_at=t, limit=5, offset=DEEP_OFFSET + 2),
        "in": lambda m: m.facts(object="rome", direction="in", known_at=t),
        "pred": lambda m: m.facts(predicate="likes", known_at=t),
        "span": lambda m: m.valid_span("dave", known_at=t),
    }
    ns = rep.store.namespace_id("default", create=False)  # type: ignore[attr-defined]
    narrow = FactQuery(ns, subject_ids=[rep.store.entity_id(ns, "dave")], known_at=to_us(t),  # type: ignore[attr-defined]
                       keys_only=True)
    before_pause = {k: _dicts(r(only)) for k, r in reads.items()}
    rep.define_predicate("mood", cardinality="one")
    frank = rep.add_fact("frank", "role", "r0", "2000").id

    def check(k: str, read: Callable[[chronomem.Memory], Any]) -> tuple[dict[str, int], dict[str, int]]:
        """``read`` through both memories: the same answer, its query run on the standby."""
        s0 = _stats(rep)
        got, want = read(rep), read(only)
        s1 = _stats(rep)
        assert _dicts(got) == _dicts(want), k
        assert s1["replica"] > s0["replica"], (k, s0, s1)  # its query ran on the standby
        assert s1["behind"] == s0["behind"] and s1["down"] == s0["down"], (k, s0, s1)
        return s0, s1

    t2 = rep.now()
    _pin(pair, rep, t2)  # frank's first role is on the standby (a later settle)
    _sql(standby, "SELECT pg_wal_replay_pause()")
    try:
        # closes only: a supersession, a correction, a retraction
        rep.add_fact("dave", "role", "engineer", "2020")  # closes intern's version (supersession)
        rep.correct(ids["tea"], object="green tea", reason="more precise")  # closes tea's
        rep.retract(ids["rain"], reason="never said")  # closes rain's
        for k, read in reads.items():
            s0, s1 = check(k, read)
            if k in ("all", "role", "first", "page1", "pred"):
                assert _dicts(read(only)) != before_pause[k], k  # the later writes do change the answer
                assert s1["closed"] == s0["closed"] + 1, (k, s0, s1)  # patched by the primary's check
            # the closes came by subject or predicate (one index range each), not row by row
            assert s1["by_key"] == s0["by_key"] and s1["primary_again"] == s0["primary_again"], (k, s0, s1)
        # more closes in a subject since than the check takes by subject (frank's mood, then the role
        # read at t2, last in the index's order): it looks the rows up one by one
        for i in range(70):
            rep.add_fact("frank", "mood", f"m{i}", f"{2000 + i}")
        rep.add_fact("frank", "role", "r1", "2001")
        s0, s1 = check("frank", lambda m: m.facts("frank", known_at=t2))
        assert s1["by_key"] == s0["by_key"] + 1 and s1["closed"] == s0["closed"] + 1, (s0, s1)
        assert [f.id for f in rep.facts("frank", known_at=t2)] == [frank]

        # erasures
        rep.erase(ids["jazz"], confirm=True)  # in page1: the primary's page 1 has another row now
        rep.erase(ids["go"], confirm=True)  # after page 1: "all" drops it
        rep.erase(first_erin, confirm=True)  # skipped by the deep page's OFFSET
        for k, read in reads.items():
            s0, s1 = check(k, read)
            if k in ("all", "page1", "page2", "deep"):
                assert _dicts(read(only)) != before_pause[k], k
            if k in ("all", "role", "first"):
                assert s1["closed"] == s0["closed"] + 1, (k, s0, s1)  # patched, not read again
                assert s1["primary_again"] == s0["primary_again"], (k, s0, s1)
            if k == "all":
                assert s1["erased"] == s0["erased"] + 1, (k, s0, s1)
            if k in ("page1", "page2", "deep"):
                assert s1["primary_again"] == s0["primary_again"] + 1, (k, s0, s1)
        # the store's narrow keys-only read (keyed by fact id and version)
        s0 = _stats(rep)
        got_rows = rep.store.query_tuples(narrow)  # type: ignore[attr-defined]
        assert sorted(got_rows) == sorted(only.store.query_tuples(narrow))  # type: ignore[attr-defined]
        assert _stats(rep)["replica"] == s0["replica"] + 1 and _stats(rep)["closed"] == s0["closed"] + 1
        assert {r[0] for r in got_rows}.isdisjoint({ids["jazz"], ids["go"]})
        # the standby still has all of it: the reads above were patched, not read after a replay
        assert _sql(standby, f"SELECT count(*) FROM {SCHEMA}.facts WHERE fact_id = '{ids['jazz']}'") == 1
    finally:
        _sql(standby, "SELECT pg_wal_replay_resume()")
    _caught_up(primary, standby)
    for k, read in reads.items():
        assert _dicts(read(rep)) == _dicts(read(only)), k


def test_the_checks_array_literals_round_trip(pair: Any) -> None:
    """The check binds its keys as one array literal (cheaper than psycopg's
    list dumper): fact ids with quotes, backslashes, commas and braces come
    back from the server as they were."""
    from chronomem.store.postgres.replica_patch import _array, _quoted

    values = ['a"b', "c\\d", "with,comma", "{braces}", " spaced ", "", "NULL", "plain-0123"]
    with psycopg.connect(pair[0].url, autocommit=True) as con:
        got = con.execute("SELECT %s::text::text[], %s::text::bigint[]",
                          (_array(_quoted(v) for v in values), _array(map(str, [1, -2, 2**62])))).fetchone()
    assert got == (values, [1, -2, 2**62])


def test_stale_reads_run_on_the_standby(pair: Any, mems: Any) -> None:
    primary, standby = pair
    rep, only = mems
    _caught_up(primary, standby)
    _sql(standby, "SELECT pg_wal_replay_pause()")
    try:
        rep.add_fact("carol", "lives_in", "oslo", "2020")
        assert [f.object for f in rep.facts("carol")] == ["oslo"]  # latest: the primary
        n = _stats(rep)["replica"]
        with rep.stale_reads():
            with pytest.raises(chronomem.EntityNotFoundError):
                rep.entity("carol")  # not replayed: the standby does not know carol yet
            assert rep.facts("carol") == []
        assert _stats(rep)["replica"] > n
        assert [f.object for f in rep.facts("carol")] == ["oslo"]
    finally:
        _sql(standby, "SELECT pg_wal_replay_resume()")
    _caught_up(primary, standby)
    with rep.stale_reads():
        assert [f.object for f in rep.facts("carol")] == ["oslo"]


def test_not_a_standby_is_refused(pair: Any) -> None:
    primary, _ = pair
    with pytest.raises(InvalidInputError, match="read_replica.*not a standby"):
        chronomem.open(_url(primary), read_replica=primary.url)


def test_a_bad_read_replica_is_refused_before_anything_is_written(pair: Any) -> None:
    primary, standby = pair
    fresh = f"{primary.url}?schema=never_made"
    for bad in ("mysql://x/y", 42, f"{standby.url}?schema=other", f"{standby.url}?schema=no-such!"):
        with pytest.raises(InvalidInputError, match="read_replica"):
            chronomem.open(fresh, read_replica=bad)  # type: ignore[arg-type]
    assert _sql(primary, "SELECT count(*) FROM pg_namespace WHERE nspname = 'never_made'") == 0


def test_sqlite_refuses_read_replica(tmp_path: Any, pair: Any) -> None:
    db = tmp_path / "m.db"
    with pytest.raises(InvalidInputError, match="read_replica"):
        chronomem.open(str(db), read_replica=pair[1].url)
    assert not db.exists()  # refused before anything was created


def test_cli_read_replica(pair: Any, world: dict[str, Any], tmp_path: Any) -> None:
    primary, standby = pair
    args = [sys.executable, "-m", "chronomem", "--db", _url(primary)]
    read = ["facts", "-s", "alice", "--known-at", world["t1"].isoformat(), "--json"]
    with_replica = subprocess.run([*args, "--read-replica", standby.url, *read], capture_output=True, text=True,
                                  timeout=30)
    plain = subprocess.run([*args, *read], capture_output=True, text=True, timeout=30)
    assert with_replica.returncode == 0, with_replica.stderr
    assert with_replica.stdout == plain.stdout and "acme" in plain.stdout
    refused = subprocess.run([sys.executable, "-m", "chronomem", "--db", str(tmp_path / "x.db"),
                              "--read-replica", standby.url, "facts", "-s", "alice"], capture_output=True, text=True,
                             timeout=30)
    assert refused.returncode == 1 and "read_replica" in refused.stderr


def test_a_standby_that_is_down_leaves_reads_on_the_primary(pair: Any, world: dict[str, Any]) -> None:
    """Stopped: every read answers from the primary (nothing fails); started
    again: reads go back to it once it answers."""
    primary, standby = pair
    t1 = world["t1"]
    with chronomem.open(_url(primary), read_replica=standby.url) as rep, chronomem.open(_url(primary)) as only:
        want = _dicts(only.facts("alice", known_at=t1))
        _pin(pair, rep, t1)
        assert _dicts(rep.facts("alice", known_at=t1)) == want
        assert _stats(rep)["replica"] == 1
        standby._run("pg_ctl", "-D", str(standby.data), "-m", "fast", "-w", "-t", "60", "stop")
        try:
            for _ in range(3):
                assert _dicts(rep.facts("alice", known_at=t1)) == want
            with rep.stale_reads():
                assert _dicts(rep.facts("alice", known_at=t1)) == want
                assert rep.facts("alice")
            s = _stats(rep)
            assert s["replica"] == 1 and s["down"] >= 4, s
            # opening while it is down works too (logged), and reads answer
            with chronomem.open(_url(primary), read_replica=standby.url) as late:
                assert _dicts(late.facts("alice", known_at=t1)) == want
        finally:
            standby.start()
        _caught_up(primary, standby)
        # a standby that was down when the memory opened is used once it answers
        deadline = time.monotonic() + 10
        while _stats(rep)["replica"] == 1:
            assert time.monotonic() < deadline, _stats(rep)
            assert _dicts(rep.facts("alice", known_at=t1)) == want
            time.sleep(0.2)


def test_a_stalled_standby_costs_one_read_timeout_then_is_left_alone(pair: Any, world: dict[str, Any]) -> None:
    """A frozen standby (SIGSTOP: connections open, nothing answers): the
    read waits ``read_timeout`` once and answers from the primary; the
    next reads go to the primary at once."""
    primary, standby = pair
    t1 = world["t1"]
    with chronomem.open(_url(primary) + "&read_timeout=1", read_replica=standby.url) as rep, \
            chronomem.open(_url(primary)) as only:
        want = _dicts(only.facts("alice", known_at=t1))
        _pin(pair, rep, t1)
        assert _dicts(rep.facts("alice", known_at=t1)) == want
        assert _stats(rep)["replica"] == 1
        pids = standby.freeze()
        try:
            start = time.monotonic()
            assert _dicts(rep.facts("alice", known_at=t1)) == want
            first = time.monotonic() - start
            start = time.monotonic()
            for _ in range(5):
                assert _dicts(rep.facts("alice", known_at=t1)) == want
            rest = time.monotonic() - start
        finally:
            standby.thaw(pids)
        assert 0.9 < first < 5, first
        assert rest < 0.5, rest
        s = _stats(rep)
        assert s["replica"] == 1 and s["down"] == 6, s
