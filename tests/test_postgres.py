"""PostgreSQL-specific guarantees: the database enforces the temporal
invariant, migrations are safe under concurrent opens, times map exactly to
``tstzrange`` and the store works from several threads.

The behaviour shared with SQLite is proven by the contract suite
(``tests/contract``), which runs on both backends.
"""

from __future__ import annotations

import datetime as _dt
import multiprocessing as mp
import threading
from typing import Any

import psycopg
import pytest

import chronomem
from chronomem import FakeClock, StoreError
from chronomem.store.postgres.store import PostgresStore, split_schema
from conftest import pg_schema_url, pg_test_url

UTC = _dt.timezone.utc


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> str:
    return pg_schema_url(request)


def _sql(url: str) -> psycopg.Connection[Any]:
    conninfo, schema = split_schema(url)
    return psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema},public")


def test_exclusion_constraint_rejects_an_overlapping_direct_insert(pg_url: str) -> None:
    with chronomem.open(pg_url, clock=FakeClock("2025-01-01T00:00:00Z")) as m:
        m.define_predicate("ceo", cardinality="one")
        m.add_fact("Acme", "ceo", "Alice", "2020", "2023")
    with _sql(pg_url) as con:
        row = con.execute(
            "SELECT ns_id, subject_id, predicate_id, object_id FROM facts WHERE system_to = 9223372036854775807"
        ).fetchone()
        assert row is not None
        ns, s, p, o = row
        assert con.execute("SELECT single FROM facts").fetchone() == (True,)
        insert = (
            "INSERT INTO facts (fact_id, version, ns_id, subject_id, predicate_id, object_id, valid_from, "
            "valid_from_prec, valid_to, valid_to_prec, system_from, system_to) "
            "VALUES (%s, 1, %s, %s, %s, %s, %s, 3, %s, 3, 1, 9223372036854775807)"
        )
        y2022 = int(_dt.datetime(2022, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
        y2024 = int(_dt.datetime(2024, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
        y2023 = int(_dt.datetime(2023, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
        with pytest.raises(psycopg.errors.ExclusionViolation):
            con.execute(insert, ("bypass-1", ns, s, p, o + 1 if o else 1, y2022, y2024))
        # a value that only touches the believed one ([2023, 2024)) is accepted
        con.execute(insert, ("bypass-2", ns, s, p, o, y2023, y2024))
        # and a closed (no longer believed) overlapping version is history, not a conflict
        con.execute(insert.replace("9223372036854775807)", "2)"), ("bypass-3", ns, s, p, o, y2022, y2024))


def test_the_time_ranges_map_sentinels_to_unbounded_ends(pg_url: str) -> None:
    with chronomem.open(pg_url) as m:
        m.add_fact("Acme", "hq", "Berlin", "2021-03-04T05:06:07.123456Z")
        m.add_fact("Acme", "founder", "Bob")
    with _sql(pg_url) as con:
        rows = dict(con.execute(
            "SELECT p.name, f.valid FROM facts f JOIN predicates p ON p.id = f.predicate_id"
        ).fetchall())
        hq, founder = rows["hq"], rows["founder"]
        assert hq.lower == _dt.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
        assert hq.upper is None and hq.upper_inf
        assert founder.lower_inf and founder.upper_inf
        # the GiST-indexed range columns answer as-of queries like the integer columns
        (n,) = con.execute("SELECT count(*) FROM facts WHERE valid @> '2022-01-01'::timestamptz "
                           "AND system @> now()").fetchone() or (0,)
        assert n == 2


def _open_and_write(url: str, i: int) -> int:
    with chronomem.open(url, namespace=f"ns{i % 2}") as m:
        m.add_fact(f"E{i}", "knows", "X")
        store = m.store
        assert isinstance(store, PostgresStore)
        return store.schema_version()


def test_concurrent_first_opens_migrate_once(pg_url: str) -> None:
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        versions = pool.starmap(_open_and_write, [(pg_url, i) for i in range(4)])
    assert len(set(versions)) == 1 and versions[0] >= 1
    with chronomem.open(pg_url, namespace="ns0") as m:
        assert set(m.store.namespaces()) == {"ns0", "ns1"}
        assert m.stats().facts == 2


def test_cardinality_change_with_old_overlaps_matches_sqlite(pg_url: str, tmp_path: Any) -> None:
    """Values recorded while a predicate was multi-valued may overlap; after it
    becomes single-valued a new value cuts both, on both backends alike."""
    results = []
    for target in (str(tmp_path / "m.db"), pg_url):
        with chronomem.open(target, clock=FakeClock("2025-01-01T00:00:00Z")) as m:
            m.add_fact("Acme", "ceo", "Alice", "2020")
            m.add_fact("Acme", "ceo", "Bob", "2021")
            m.define_predicate("ceo", cardinality="one")
            m.add_fact("Acme", "ceo", "Carol", "2022")
            m.add_fact("Acme", "ceo", "Dan", "2023")
            results.append(sorted((str(f.object), f.valid_from_text, f.valid_to_text) for f in m.facts("Acme")))
    assert results[0] == results[1]
    assert ("Carol", "2022", "2023") in results[0]


def test_one_memory_from_many_threads(pg_url: str) -> None:
    with chronomem.open(pg_url) as m:
        m.define_predicate("level", cardinality="one")
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                for k in range(15):
                    m.add_fact(f"T{t}", "level", str(k), f"{2000 + k}")
                    assert m.facts(f"T{t}", "level", as_of=f"{2000 + k}-06")[0].object == str(k)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert m.stats().current == 6
        assert [f.object for f in m.facts("T3", "level")] == [str(k) for k in range(15)]


def test_system_time_is_monotonic_even_when_the_clock_goes_back(pg_url: str) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=0.0)
    with chronomem.open(pg_url, clock=clock) as m:
        a = m.add_fact("Acme", "hq", "Berlin")
        b = m.add_fact("Acme", "hq", "Paris")
        assert b.system_from > a.system_from
    with chronomem.open(pg_url, clock=FakeClock("2020-01-01T00:00:00Z")) as m2:
        c = m2.add_fact("Acme", "hq", "Rome")
        assert c.system_from > b.system_from


def test_unreachable_server_is_one_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)


def test_bad_schema_name_is_rejected() -> None:
    with pytest.raises(StoreError, match="schema name"):
        chronomem.open(pg_test_url() + "?schema=bad;name")


def test_query_sql_runs_on_the_server(pg_url: str) -> None:
    with chronomem.open(pg_url) as m:
        m.add_fact("Acme", "hq", "Berlin", "2020")
        sql, params = m.facts_sql("Acme", as_of="2021")
        assert "%s" in sql
        with _sql(pg_url) as con:
            rows = con.execute(sql, params).fetchall()
        assert len(rows) == 1


def test_bulk_loads_match_sqlite(pg_url: str, tmp_path: Any) -> None:
    """Large add_facts batches take the bulk paths (name keys and believed
    versions read once, new entities sent by COPY); the result is SQLite's."""
    import random

    rnd = random.Random(5)
    items = []
    for i in range(3000):
        s = f"S{int(200 * rnd.random() ** 1.5)}"
        p = rnd.choice(["role", "knows", "visited"])
        o = f"O{rnd.randrange(150)}" if p != "role" else rnd.choice(["dev", "lead", "cto", "ceo"])
        vf = f"{rnd.randrange(1990, 2025)}-{rnd.randrange(1, 13):02d}"
        vt = None if rnd.random() < 0.6 else f"{rnd.randrange(2025, 2030)}"
        items.append({"subject": s, "predicate": p, "object": o, "valid_from": vf, "valid_to": vt,
                      "source": f"src{i % 7}"})
    states = []
    for target in (str(tmp_path / "bulk.db"), pg_url):
        chronomem.open(target, clock=FakeClock("2000-01-01T00:00:00Z")).close()  # migrations read the clock too
        with chronomem.open(target, clock=FakeClock("2025-01-01T00:00:00Z")) as m:
            m.define_predicate("role", cardinality="one")
            ids = []
            for start in range(0, len(items), 1000):
                ids += m.add_facts(items[start:start + 1000])
            facts = sorted(repr((f.subject, f.predicate, str(f.object), f.valid_from_text, f.valid_to_text,
                                 f.version, f.system_from, f.system_to, f.invalidated_by is not None))
                           for f in m.facts())
            versions = sorted(repr((f.subject, f.predicate, str(f.object), f.valid_from_text, f.valid_to_text,
                                    f.system_from, f.system_to)) for e in m.entities() for f in m.history(e.name))
            states.append((len(set(ids)), facts, versions, m.stats().to_dict()))
    assert states[0] == states[1]
    assert states[0][3]["versions"] > states[0][3]["facts"]  # supersession happened


def test_a_failed_write_releases_the_write_lock(pg_url: str) -> None:
    from chronomem import InvalidInputError

    with chronomem.open(pg_url) as m, chronomem.open(pg_url) as other:
        m.add_fact("A", "knows", "B")
        with pytest.raises(InvalidInputError):
            m.add_facts([("C", "knows", "D"), ("E", "knows")])  # the second item is invalid
        done: list[str] = []
        th = threading.Thread(target=lambda: done.append(other.add_fact("F", "knows", "G").id), daemon=True)
        th.start()
        th.join(timeout=20)
        assert done, "another store could not take the write lock"
        assert m.add_fact("H", "knows", "I").object == "I"
        assert sorted(f.subject for f in m.facts()) == ["A", "F", "H"]


def test_upgrading_to_the_sequence_clock_keeps_system_time_monotonic() -> None:
    """A store written before 0003 kept its clock in meta('last_system_time');
    0003 moves it to a sequence, and system time still never goes back."""
    import uuid

    from chronomem.store.migrations import load_migrations

    schema = "t_up_" + uuid.uuid4().hex[:12]
    url = f"{pg_test_url()}{'&' if '?' in pg_test_url() else '?'}schema={schema}"
    conninfo, _ = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(f'CREATE SCHEMA "{schema}"')
    try:
        with _sql(url) as con:
            con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                        "applied_at BIGINT NOT NULL)")
            for number, name, sql in load_migrations("postgres"):
                if number < 3:
                    con.execute(sql)
                    con.execute("INSERT INTO schema_migrations VALUES (%s, %s, 0)", (number, name))
            y2031 = int((_dt.datetime(2031, 1, 1, tzinfo=UTC) - _dt.datetime(1970, 1, 1, tzinfo=UTC))
                        / _dt.timedelta(microseconds=1))
            con.execute("INSERT INTO meta (key, value) VALUES ('last_system_time', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(y2031),))
        with chronomem.open(url, clock=FakeClock("2025-01-01T00:00:00Z")) as m:
            store = m.store
            assert isinstance(store, PostgresStore) and store.schema_version() >= 3
            f = m.add_fact("Kai", "likes", "Tea")
            assert f.system_from > _dt.datetime(2031, 1, 1, tzinfo=UTC)
        with _sql(url) as con:
            assert con.execute("SELECT count(*) FROM meta WHERE key = 'last_system_time'").fetchone() == (0,)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
