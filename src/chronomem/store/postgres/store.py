"""The PostgreSQL backend: one memory shared by many agents on many machines.

``PostgresStore("postgresql://user@host/db[?schema=name]")`` (extra
``chronomem[postgres]``: psycopg 3 and psycopg-pool). Tables live in the
schema named by ``?schema=`` (created if missing) or in the connection's
default schema. Migrations (``store/migrations/postgres``, the same names as
SQLite's) are applied on open under a database-wide advisory lock, so several
processes may start at once.

Writes: an exclusive :meth:`PostgresStore.write` transaction starts with
``chronomem_begin_write``, which takes the store's advisory lock exclusively
and a system time from the store's clock (a sequence, see
``0003_concurrent_writes.sql``); a shared one (``add_fact``, ``invalidate``)
starts with ``chronomem_begin_shared`` and then locks only its names and its
(subject, predicate) group before it takes its time and reads the group. The
write engine runs unchanged on rows read inside the transaction. The
``facts_single_valued`` exclusion constraint (``btree_gist``) guarantees the
single-valued invariant even for a writer that bypasses the locks.
:meth:`PostgresStore.settle` makes a read "as known at" a time final.
``docs/architecture.md`` ("Concurrency") explains the choice.

Reads run on pooled autocommit connections; inside a write transaction (same
thread) they run on the transaction's connection and see its changes, and
:meth:`PostgresStore.read` pins one REPEATABLE READ snapshot.
"""

from __future__ import annotations

import logging
import re
import threading
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ...core.time import MAX_US, Clock, SystemClock, from_us, peek_clock, to_us
from ...errors import MissingExtraError, SchemaVersionError, StoreError
from .. import fork as _fork
from ..migrations import load_migrations
from ..names import NameCache
from ..protocol import Capabilities, EntityRecord, EpisodeStore, FactQuery, PredicateRecord, Row
from ..sql.dialect import POSTGRES
from ..sql.facts import FACTS, READS, compose_fact_sql
from ..sql.reads import RowReadsMixin, StoreSQL
from ..sql.tx import RAW_COLS
from .episodes import PgEpisodeStoreMixin
from .tx import PgTx

__all__ = ["PostgresStore", "split_schema"]

log = logging.getLogger("chronomem.store.postgres")

# a read "as known at" a time waits at most this long (seconds) for open
# writes (settle); after that it answers without the finality guarantee
SETTLE_WAIT = 5.0

# database-wide advisory lock key for migrations ("chronomem" in two int4s)
_MIGRATE_LOCK = (1668442479, 1835363693)
_SCHEMA_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_ENTITY_COLS = (
    "e.id, e.ns_id, e.key, e.name, e.type, e.properties, e.created_at, ARRAY(SELECT k.alias_name FROM entity_keys k "
    "WHERE k.entity_id = e.id AND k.alias_name IS NOT NULL ORDER BY k.alias_name)"
)
_PRED_COLS = (
    "p.id, p.ns_id, p.key, p.name, p.cardinality, p.inverse, p.description, p.declared, ARRAY(SELECT k.alias_name "
    "FROM predicate_keys k WHERE k.predicate_id = p.id AND k.alias_name IS NOT NULL ORDER BY k.alias_name)"
)


def split_schema(url: str) -> tuple[str, str | None]:
    """``(conninfo URL without ?schema=, schema or None)``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = None
    rest = []
    for k, v in query:
        if k == "schema":
            schema = v
        else:
            rest.append((k, v))
    if schema is not None and not _SCHEMA_RE.fullmatch(schema):
        raise StoreError(f"schema name {schema!r} must be letters, digits and underscores")
    # quote (not quote_plus): libpq reads "+" literally, so "-c%20x=y" must stay "%20"
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), schema


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(":" + parts.password + "@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise MissingExtraError("psycopg", "postgres") from None
    return psycopg


class PostgresStore(RowReadsMixin, PgEpisodeStoreMixin):
    """PostgreSQL implementation of :class:`~chronomem.store.protocol.Store`."""

    backend = "postgresql"
    _rows_sql = StoreSQL(POSTGRES)
    pgvector = False
    # episodes and prefix search; a server store has no local file
    capabilities = Capabilities(episodes=True, entity_prefix_search=True, local_path=None)

    def __init__(self, url: str, *, clock: Any = None, pool_size: int = 4, connect_timeout: float = 10.0,
                 durability: str = "normal") -> None:
        psycopg = _psycopg()
        from psycopg_pool import ConnectionPool

        from .tx import CAN_EMIT_SQL, CommitPlan, check_durability

        check_durability(durability)  # before connecting
        self.durability = durability
        self._psycopg = psycopg
        conninfo, schema = split_schema(url)
        self.schema = schema
        self.url = _redact(url)
        self._clock: Clock = clock or SystemClock()
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(1, int(connect_timeout))}
        # the URL's options (e.g. -c synchronous_commit=off, which "normal"
        # durability follows) as a parameter: split_schema re-encodes a
        # space as "+", which libpq does not decode
        options = dict(parse_qsl(urlsplit(conninfo).query)).get("options", "")
        if schema is not None:
            options = f"{options} -c search_path={schema},public".strip()
        if options:
            kwargs["options"] = options
        try:
            first = psycopg.connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"cannot connect to PostgreSQL at {_redact(conninfo)}: {msg}") from None
        try:
            self._migrate(first, schema)
            # how writes commit (CommitPlan): the synchronous_commit that the
            # server, database, role or URL options set (the same on every
            # connection of the pool), which "normal" follows
            with self._errors():
                row = first.execute(f"SELECT current_setting('synchronous_commit'), ({CAN_EMIT_SQL})").fetchone()
        finally:
            first.close()
        self.commit_plan = CommitPlan(durability, str(row[0]), bool(row[1]))
        self._pool = ConnectionPool(
            conninfo, min_size=1, max_size=max(1, pool_size), kwargs=kwargs, open=False,
            name=f"chronomem-{schema or 'default'}", timeout=max(connect_timeout, 30.0),
        )
        self._pool.open(wait=False)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        # name keys, predicates, cardinalities and display names; its
        # transactions get it too
        self._name_cache = NameCache()
        self._pred_names: dict[int, str] = {}
        self._names_version = -1
        # every system time up to this one is final (see settle)
        self._settled = -(2**63)
        self._closed = False
        self._foreign_of: int | None = None  # set in a forked child (see _fork)
        _fork.track(self)

    # -- lifecycle ------------------------------------------------------
    def _migrate(self, conn: Any, schema: str | None) -> None:
        migrations = load_migrations("postgres")
        latest = max(n for n, _, _ in migrations)
        with self._errors(), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _MIGRATE_LOCK)
            if schema is not None:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
            )
            done = {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}
            if done and max(done) > latest:
                raise SchemaVersionError(
                    f"database schema version {max(done)} is newer than this chronomem ({latest}); upgrade chronomem"
                )
            pending = [m for m in migrations if m[0] not in done]
            if pending:
                self._ensure_extension(conn, "btree_gist", "postgresql-contrib")
                for number, name, sql in pending:
                    log.info("applying migration %s", name)
                    conn.execute(sql)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                        (number, name, to_us(self._clock())),
                    )
                self._add_pgvector(conn)
            self.pgvector = bool(conn.execute(
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'episode_vectors' AND column_name = 'embedding')"
            ).fetchone()[0])

    def _add_pgvector(self, conn: Any) -> None:
        """Where the server has pgvector, keep each vector also as ``vector``
        (indexed per model with HNSW) for SQL users; results never depend on it."""
        if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            log.info("pgvector is not available: vectors are stored as real[] only")
            return
        try:
            with conn.transaction():  # a savepoint: lacking the privilege is not an error
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                conn.execute("ALTER TABLE episode_vectors ADD COLUMN IF NOT EXISTS embedding public.vector")
                conn.execute("UPDATE episode_vectors SET embedding = vector::public.vector WHERE embedding IS NULL")
                for model_id, dim in conn.execute("SELECT id, dim FROM embedding_models").fetchall():
                    conn.execute(
                        f"CREATE INDEX IF NOT EXISTS episode_vectors_hnsw_{int(model_id)} ON episode_vectors "
                        f"USING hnsw ((embedding::public.vector({int(dim)})) public.vector_cosine_ops) "
                        f"WHERE model_id = {int(model_id)}"
                    )
        except self._psycopg.Error as exc:
            log.warning("pgvector not enabled (%s): vectors are stored as real[] only", exc.diag.message_primary)

    def _ensure_extension(self, conn: Any, name: str, package: str) -> None:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone():
            return
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone()
        if not available:
            raise StoreError(
                f"the PostgreSQL server lacks the {name} extension: install {package} on the server"
            )
        # in schema public, so that dropping a store's schema never drops it
        conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")

    def schema_version(self) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

    @property
    def clock(self) -> Clock:
        return self._clock

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._foreign_of is None:  # the parent's pool is not this process's to close
                self._pool.close()

    # -- fork (see _fork): a child never uses, closes or finalizes the
    # parent's pool; its sockets and threads are the parent's
    def _before_fork(self) -> None:
        return None

    def _after_fork_parent(self) -> None:
        return None

    def _after_fork_child(self, parent_pid: int) -> None:
        if self._closed:
            return
        _fork.keep(self._pool)
        self._foreign_of = parent_pid
        self._pool = _fork.Foreign(parent_pid)  # type: ignore[assignment]
        self._local = threading.local()  # the parent's open transaction is not ours
        self._write_lock = threading.RLock()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn driver errors into one-sentence :class:`StoreError` s."""
        psycopg = self._psycopg
        try:
            yield
        except psycopg.errors.ExclusionViolation as exc:
            raise StoreError(
                "the database refused two overlapping believed values of a single-valued predicate "
                f"({exc.diag.message_detail or exc.diag.message_primary})"
            ) from None
        except psycopg.Error as exc:
            msg = exc.diag.message_primary or str(exc).strip().splitlines()[0]
            raise StoreError(f"PostgreSQL error: {msg}") from None

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            yield tx.conn  # sends the transaction's pending rows first
            return
        bound = getattr(self._local, "conn", None)
        if bound is not None:
            yield bound
            return
        if self._closed:
            raise StoreError("this memory is closed")
        with self._errors(), self._pool.connection() as conn:
            yield conn

    # -- transactions ---------------------------------------------------
    def last_system_time(self) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT last_value FROM chronomem_clock").fetchone()
            return int(row[0]) if row else -(2**63)

    @contextmanager
    def write(self, *, shared: bool = False) -> Iterator[PgTx]:
        """One atomic write transaction. ``shared=True`` lets it run beside
        other shared writes: the caller then locks what it touches with
        :meth:`PgTx.reserve_names` and :meth:`PgTx.lock_groups` before reading
        it (see ``0003_concurrent_writes.sql``); otherwise the transaction holds
        the store's write lock exclusively."""
        current = getattr(self._local, "tx", None)
        if current is not None:
            yield current  # nested: part of the open transaction
            return
        if self._closed:
            raise StoreError("this memory is closed")
        begin = "chronomem_begin_shared" if shared else "chronomem_begin_write"
        with self._write_lock, self._errors(), self._pool.connection() as conn:
            self._local.conn = conn
            try:
                # BEGIN and the write lock in one round trip (simple query protocol)
                cur = conn.execute(
                    "BEGIN; SELECT now_us, names_version FROM %s(%d)" % (begin, to_us(self._clock()))
                )
                cur.nextset()
                row = cur.fetchone()
                assert row is not None
                now, names_version = int(row[0]), int(row[1])
                if names_version != self._names_version:
                    self._clear_caches()
                    self._names_version = names_version
                tx = PgTx(self, self._name_cache, conn, now, shared=shared)
                self._local.tx = tx
                yield tx
                tx.commit()
                if tx._names_bumped:
                    self._names_version = names_version + 1
            except BaseException:
                self._clear_caches()
                self._names_version = -1
                self._rollback(conn, unlock=True)
                raise
            finally:
                self._local.conn = None
                self._local.tx = None

    def settle(self, known_at: int) -> None:
        """Make the answer of a read "as known at" ``known_at`` final: wait
        until every write that began before has committed, and move the
        system clock past ``known_at`` (when it is not in the future) so no
        later write is stamped at or before it. Inside a transaction of this
        thread it does nothing (the transaction's own snapshot is the answer)."""
        if known_at <= self._settled or getattr(self._local, "conn", None) is not None:
            return
        psycopg = self._psycopg
        with self._errors(), self._pool.connection() as conn:
            # wait for open writes at most SETTLE_WAIT: a read should not fail
            # (or hang) because a long bulk load holds the store's lock
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(SETTLE_WAIT * 1000)}ms",))
            try:
                row = conn.execute(
                    "SELECT chronomem_settle(%s, %s)", (known_at, to_us(peek_clock(self._clock)))
                ).fetchone()
            except psycopg.errors.LockNotAvailable:
                conn.execute("SELECT pg_advisory_unlock_all()")
                log.warning("a write has held the lock for %.0f s: this read as known at %s may not be final",
                            SETTLE_WAIT, from_us(known_at).isoformat())
                return
            finally:
                conn.execute("RESET lock_timeout")
        assert row is not None
        self._settled = max(self._settled, int(row[0]))

    def _rollback(self, conn: Any, unlock: bool = False) -> None:
        try:
            if conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
            if unlock:
                conn.execute("SELECT pg_advisory_unlock_all()")  # the write lock is a session lock
        except self._psycopg.Error:  # pragma: no cover - broken connection: the pool discards it
            log.debug("rollback failed", exc_info=True)

    def _clear_caches(self) -> None:
        self._name_cache.drop_keys()

    @contextmanager
    def read(self) -> Iterator[None]:
        """A consistent snapshot for several statements (this thread)."""
        if getattr(self._local, "conn", None) is not None:
            yield None
            return
        with self._errors(), self._pool.connection() as conn:
            self._local.conn = conn
            try:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield None
            finally:
                self._local.conn = None
                self._rollback(conn)

    # -- names ----------------------------------------------------------
    def namespace_id(self, name: str, create: bool = True) -> int | None:
        with self._conn() as conn:
            row = conn.execute("SELECT id FROM namespaces WHERE name = %s", (name,)).fetchone()
        if row:
            return int(row[0])
        if not create:
            return None
        with self.write() as tx:
            got = tx.conn.execute(
                "INSERT INTO namespaces (name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING RETURNING id",
                (name, tx.now),
            ).fetchone()
            if got is None:
                got = tx.conn.execute("SELECT id FROM namespaces WHERE name = %s", (name,)).fetchone()
            assert got is not None
            return int(got[0])

    def namespaces(self) -> list[str]:
        with self._conn() as conn:
            return [str(n) for (n,) in conn.execute("SELECT name FROM namespaces ORDER BY name")]

    def entity_id(self, ns_id: int, key: str) -> int | None:
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            result: int | None = tx.entity_id(ns_id, key)
            return result
        with self._conn() as conn:
            row = conn.execute(
                "SELECT entity_id FROM entity_keys WHERE ns_id = %s AND key = %s", (ns_id, key)
            ).fetchone()
            return None if row is None else int(row[0])

    @staticmethod
    def _entity_records(rows: Sequence[Sequence[Any]]) -> list[EntityRecord]:
        return [EntityRecord(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], int(r[6]), tuple(r[7])) for r in rows]

    def entity_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of entity ids (cached: a name never changes and ids
        are never reused). The returned mapping covers at least ``ids``."""
        return self._cached_names(self._name_cache.names, "SELECT id, name FROM entities WHERE id = ANY(%s)", ids)

    def predicate_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of predicate ids (cached: a name never changes)."""
        return self._cached_names(self._pred_names, "SELECT id, name FROM predicates WHERE id = ANY(%s)", ids)

    def _cached_names(self, names: dict[int, str], select: str, ids: Iterable[int]) -> dict[int, str]:
        """``names`` (id -> display name) with the ones of ``ids`` it lacks
        read by ``select`` (``id, name`` of an array of ids)."""
        missing = [i for i in ids if i not in names] if ids else []
        if missing:
            with self._conn() as conn:
                for i, name in conn.execute(select, (missing,)):
                    names[int(i)] = str(name)
        return names

    def entity(self, entity_id: int) -> EntityRecord | None:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.id = %s", (entity_id,)).fetchall()
            got = self._entity_records(rows)
            return got[0] if got else None

    def entities(self, ns_id: int) -> list[EntityRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.ns_id = %s ORDER BY e.id", (ns_id,)
            ).fetchall()
            return self._entity_records(rows)

    def entities_by_key_substring(self, ns_id: int, text: str, limit: int) -> list[EntityRecord]:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.id IN ("
                "SELECT k.entity_id FROM entity_keys k JOIN entities e2 ON e2.id = k.entity_id "
                "WHERE k.ns_id = %s AND (lower(k.key) LIKE lower(%s) OR lower(e2.name) LIKE lower(%s))"
                ") ORDER BY e.id LIMIT %s",
                (ns_id, pattern, pattern, limit),
            ).fetchall()
            return self._entity_records(rows)

    @staticmethod
    def _pred_records(rows: Sequence[Sequence[Any]]) -> list[PredicateRecord]:
        return [
            PredicateRecord(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6], bool(r[7]), tuple(r[8]))
            for r in rows
        ]

    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        tx: PgTx | None = getattr(self._local, "tx", None)
        in_tx = tx is not None
        if in_tx:
            cached = self._name_cache.predicate(ns_id, key)
            if cached is not None:
                return cached
        # inside a write: the raw connection (predicates never wait on the
        # transaction's pending entity rows)
        with nullcontext(tx._conn) if tx is not None else self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_PRED_COLS} FROM predicate_keys pk JOIN predicates p ON p.id = pk.predicate_id "
                "WHERE pk.ns_id = %s AND pk.key = %s",
                (ns_id, key),
            ).fetchall()
            got = self._pred_records(rows)
        if not got:
            return None
        if in_tx:
            self._name_cache.add_predicate(ns_id, key, got[0])
        return got[0]

    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None:
        """Cached; the cache is checked against the names version at the start
        of every write, so inside a write it is exact (outside, another
        process's predicate change shows after this process's next write)."""
        cached = self._name_cache.predicate_by_id(predicate_id)
        if cached is not None:
            return cached
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_PRED_COLS} FROM predicates p WHERE p.id = %s", (predicate_id,)).fetchall()
            got = self._pred_records(rows)
        if not got:
            return None
        self._name_cache.add_predicate_by_id(got[0])
        return got[0]

    def predicates(self, ns_id: int) -> list[PredicateRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_PRED_COLS} FROM predicates p WHERE p.ns_id = %s ORDER BY p.key", (ns_id,)
            ).fetchall()
            return self._pred_records(rows)

    def _cardinality(self, predicate_id: int) -> str:
        got = self._name_cache.cardinality(predicate_id)
        if got is None:
            with self._conn() as conn:
                row = conn.execute("SELECT cardinality FROM predicates WHERE id = %s", (predicate_id,)).fetchone()
            got = str(row[0]) if row else "many"
            self._name_cache.add_cardinality(predicate_id, got)
        return got

    # -- fact reads -----------------------------------------------------
    def query_sql(self, q: FactQuery) -> tuple[str, list[Any]]:
        """The SQL and parameters :meth:`query` runs for ``q``."""
        return compose_fact_sql(q, FACTS, POSTGRES)

    def read_sql(self, q: FactQuery) -> tuple[str, list[Any]]:
        """The SQL and parameters :meth:`query_tuples` runs for ``q``."""
        return compose_fact_sql(q, READS, POSTGRES)

    def query_tuples(self, q: FactQuery) -> list[tuple[Any, ...]]:
        """The read path: raw tuples in ``READ_COLUMNS`` order, no names
        (resolve them with :meth:`entity_names` / :meth:`predicate_names`).
        (SQLite's busy-entity cut-off, ``sql.facts.limit_cutoff``, made this
        backend slower when measured: 73 ms instead of 12 ms for a LIMITed
        read of a 25,000-fact entity, so it is not used here.)"""
        sql, params = self.read_sql(q)
        with self._conn() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
            return rows

    def query(self, q: FactQuery) -> list[Row]:
        sql, params = self.query_sql(q)
        with self._conn() as conn:
            return [Row(*r) for r in conn.execute(sql, params)]

    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]:
        with self._conn() as conn:
            return [conn.execute(sql, params).fetchall() for sql, params in queries]

    def raw_rows(self, ns_id: int) -> list[Row]:
        """Every version of a namespace without names (``RAW_COLS``), by rowid."""
        with self._conn() as conn:
            return [
                Row(*r) for r in conn.execute(
                    f"SELECT {RAW_COLS} FROM facts WHERE ns_id = %s ORDER BY rowid", (ns_id,)
                )
            ]

    def sources(self, fact_ids: Sequence[str]) -> list[tuple[str, str | None, str | None, int]]:
        if not fact_ids:
            return []
        with self._conn() as conn:
            return [
                (str(r[0]), r[1], r[2], int(r[3]))
                for r in conn.execute(
                    "SELECT fact_id, source, episode_id, recorded_at FROM fact_sources WHERE fact_id = ANY(%s) "
                    "ORDER BY id",
                    (list(fact_ids),),
                )
            ]

    def stats(self, ns_id: int, now: int) -> dict[str, int]:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM entities WHERE ns_id = %(ns)s), "
                "(SELECT count(*) FROM predicates WHERE ns_id = %(ns)s), "
                "(SELECT count(*) FROM facts WHERE ns_id = %(ns)s), "
                f"(SELECT count(DISTINCT fact_id) FROM facts WHERE ns_id = %(ns)s AND system_to = {MAX_US}), "
                f"(SELECT count(*) FROM facts WHERE ns_id = %(ns)s AND system_to = {MAX_US} "
                "AND valid_from <= %(now)s AND valid_to > %(now)s), "
                "(SELECT count(DISTINCT fact_id) FROM facts WHERE ns_id = %(ns)s AND close_kind = 'retracted')",
                {"ns": ns_id, "now": now},
            ).fetchone()
        keys = ("entities", "predicates", "versions", "facts", "current", "retracted")
        return {k: int(v or 0) for k, v in zip(keys, row, strict=True)}


if TYPE_CHECKING:  # pragma: no cover - mypy checks the store against both protocols
    def _is_episode_store(store: PostgresStore) -> EpisodeStore:
        return store
