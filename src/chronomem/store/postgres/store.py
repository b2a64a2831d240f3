"""The PostgreSQL backend: one memory shared by many agents on many machines.

``PostgresStore("postgresql://user@host/db[?schema=name]")`` (extra
``chronomem[postgres]``: psycopg 3). Tables live in the
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

Reads run on pooled autocommit connections (:mod:`.pool`); inside a write
transaction (same thread) they run on the transaction's connection and see
its changes, and :meth:`PostgresStore.read` pins one REPEATABLE READ snapshot.
With ``read_replica=`` (a streaming standby, :mod:`.replica`), a fact read
"as known at" a settled time the standby has replayed runs there (then one
check on the primary brings the closes and erasures the standby has not
replayed yet, :mod:`.replica_patch`), and so does every read outside a
transaction inside ``Memory.stale_reads()``.

Outages (``docs/postgres.md``, "Outages and timeouts"): a connection-level
failure is a :class:`~chronomem.errors.StoreUnavailableError`, never a
permanent-looking ``StoreError``. A pooled read that finds its connection dead
is run again once on a fresh connection (a read changes nothing), and so is
the first round trip of a write (nothing was sent yet); a write whose
connection dies while it commits raises
:class:`~chronomem.errors.WriteOutcomeUnknownError` instead (it may have
committed). A write waits at most ``busy_timeout`` for a lock
(``lock_timeout``: then :class:`~chronomem.errors.StoreLockedError`) and a
statement runs at most ``statement_timeout``.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ...core.time import MAX_US, Clock, SystemClock, from_us, peek_clock, to_us
from ...errors import (
    InvalidInputError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
    WriteOutcomeUnknownError,
)
from .. import fork as _fork
from ..names import NameCache
from ..protocol import STALE_READS, Capabilities, EpisodeStore, FactQuery, Row
from ..sql.dialect import POSTGRES
from ..sql.facts import READS, compose_fact_sql
from ..sql.reads import RowReadsMixin, StoreSQL
from ..sql.tokens import TokenReadsMixin, TokenSQL
from ..sql.tx import RAW_COLS
from .episodes import PgEpisodeStoreMixin
from .health import PgHealthMixin
from .name_reads import PgNameReadsMixin
from .pool import Deadlines, Pool
from .replica import SETTLE_SQL, Replica, system_id
from .replica_patch import patch
from .setup import _redact, connect, connection_kwargs, connection_lost, import_psycopg, migrate, split_params
from .setup import split_schema as split_schema  # re-exported: part of this module's API
from .tx import PgTx

__all__ = ["PostgresStore", "split_schema"]

log = logging.getLogger("chronomem.store.postgres")

# a read "as known at" a time waits at most this long (seconds) for open
# writes (settle); after that it answers without the finality guarantee
SETTLE_WAIT = 5.0
# the longest one statement may run (server side) before it is cancelled: a
# bound on runaway work, far above any single statement chronomem sends
STATEMENT_TIMEOUT = 300.0
# the longest a read waits for the server's answer (client side: a frozen
# server or a partition answers nothing) before its connection is cut
READ_TIMEOUT = 30.0

class PostgresStore(PgNameReadsMixin, RowReadsMixin, PgEpisodeStoreMixin, PgHealthMixin, TokenReadsMixin):
    """PostgreSQL implementation of :class:`~chronomem.store.protocol.Store`.

    Opening it (URL, connections, migrations) is in :mod:`.setup`, its name
    reads in :class:`~.name_reads.PgNameReadsMixin`."""

    backend = "postgresql"
    _rows_sql = StoreSQL(POSTGRES)
    token_sql = TokenSQL(POSTGRES)
    pgvector = False
    # episodes, prefix search and a read replica; a server store has no local file
    capabilities = Capabilities(episodes=True, entity_prefix_search=True, local_path=None, read_replica=True,
                                flush_in_parts=True)

    def __init__(self, url: str, *, clock: Any = None, pool_size: int = 4, connect_timeout: float = 10.0,
                 durability: str = "normal", busy_timeout: float = 30.0,
                 statement_timeout: float = STATEMENT_TIMEOUT, read_timeout: float = READ_TIMEOUT,
                 read_replica: str | None = None) -> None:
        psycopg = import_psycopg()

        from .tx import CAN_EMIT_SQL, CommitPlan, check_durability

        check_durability(durability)  # before connecting
        self.durability = durability
        self._psycopg = psycopg
        conninfo, own = split_params(url)
        schema = own.get("schema")
        self.schema = schema
        self.url = _redact(url)
        self._clock: Clock = clock or SystemClock()
        self.busy_timeout = busy_timeout
        self.read_timeout = float(own.get("read_timeout", read_timeout))  # the URL's wins
        pool_size = int(own.get("pool_size", pool_size))  # likewise (chronomem serve --pool-size sets it)
        self._deadlines = Deadlines()
        # the replica's URL is checked before the primary is touched (no
        # migration runs for an open that is refused); it connects later
        replica: Replica | None = None
        if read_replica is not None:
            if not isinstance(read_replica, str) or not read_replica.startswith(("postgresql://", "postgres://")):
                raise InvalidInputError("read_replica must be a postgresql:// URL of a streaming standby")
            replica = Replica(read_replica, psycopg, schema=schema, pool_size=pool_size,
                              connect_timeout=connect_timeout, statement_timeout=statement_timeout,
                              deadlines=self._deadlines)
        kwargs = connection_kwargs(conninfo, schema, connect_timeout, lock_timeout=busy_timeout,
                                   statement_timeout=statement_timeout)
        first = connect(psycopg, conninfo, kwargs)
        try:
            with self._errors():
                self.pgvector = migrate(first, schema, self._clock, psycopg)
            # how writes commit (CommitPlan): the synchronous_commit that the
            # server, database, role or URL options set (the same on every
            # connection of the pool), which "normal" follows
            with self._errors():
                row = first.execute(f"SELECT current_setting('synchronous_commit'), ({CAN_EMIT_SQL})").fetchone()
                if replica is not None:  # a standby of it has the same (pg_control_system)
                    replica.primary_id = system_id(first, psycopg)
        finally:
            first.close()
        self.commit_plan = CommitPlan(durability, str(row[0]), bool(row[1]))
        # callers beyond pool_size wait for a connection as long as a writer waits for a lock
        self._pool = Pool(lambda: connect(psycopg, conninfo, kwargs), psycopg, max_size=pool_size,
                          wait_timeout=busy_timeout, name=f"chronomem-{schema or 'default'}")
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
        self._replica = replica
        if replica is not None:
            try:
                replica.check()
            except BaseException:
                self._pool.close()
                raise
        _fork.track(self)

    # -- lifecycle ------------------------------------------------------
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
                if self._replica is not None:
                    self._replica.close()

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
        if self._replica is not None:  # its pool is the parent's too: the child reads on the primary
            _fork.keep(self._replica._pool)
            self._replica = None
        self._local = threading.local()  # the parent's open transaction is not ours
        self._write_lock = threading.RLock()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn driver errors into one-sentence :class:`StoreError` s: a lost
        or refused connection and a statement timeout into
        :class:`StoreUnavailableError`, a lock timeout into
        :class:`StoreLockedError`."""
        psycopg = self._psycopg
        try:
            yield
        except psycopg.errors.ExclusionViolation as exc:
            raise StoreError(
                "the database refused two overlapping believed values of a single-valued predicate "
                f"({exc.diag.message_detail or exc.diag.message_primary})"
            ) from None
        except psycopg.errors.LockNotAvailable:
            raise StoreLockedError(
                f"another writer held a lock this write needs for {self.busy_timeout:g} s (busy_timeout); "
                "retry in a moment"
            ) from None
        except psycopg.errors.QueryCanceled as exc:
            raise StoreUnavailableError(
                f"PostgreSQL cancelled a statement that ran too long ({exc.diag.message_primary or exc}); "
                "nothing was written", retry_after=5) from None
        except psycopg.Error as exc:
            msg = exc.diag.message_primary or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            if connection_lost(exc, psycopg):
                raise StoreUnavailableError(f"the database is unavailable: {msg}") from None
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
        with self._errors():
            read = (_StaleReadConn(self, self._replica) if self._replica is not None and STALE_READS.get()
                    else _ReadConn(self))
            try:
                yield read
            finally:
                read.release()

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
        the store's write lock exclusively.

        A shared transaction begins with its first round trip (``BEGIN`` and
        ``chronomem_begin_shared`` sent ahead of it, usually the group's lock
        and read: :meth:`PgTx.lock_groups`), which saves one round trip per
        ``add_fact``; an exclusive one begins here."""
        current = getattr(self._local, "tx", None)
        if current is not None:
            yield current  # nested: part of the open transaction
            return
        if self._closed:
            raise StoreError("this memory is closed")
        psycopg = self._psycopg
        with self._write_lock, self._errors():
            tx = PgTx(self, self._name_cache, self._pool.getconn(), to_us(self._clock()), shared=shared,
                      begin="chronomem_begin_shared" if shared else "chronomem_begin_write")
            self._local.conn = tx._conn
            self._local.tx = tx
            committing = False
            try:
                if not shared:
                    tx.start()
                yield tx
                committing = True
                tx.commit()
                if tx._names_bumped:
                    self._names_version = tx.names_version + 1
            except BaseException as exc:
                self._clear_caches()
                self._names_version = -1
                if tx.begun and not tx.returned:
                    self._rollback(tx._conn, unlock=True)
                if committing and isinstance(exc, psycopg.Error) and connection_lost(exc, psycopg):
                    # the COMMIT may have reached the server before the connection died
                    raise WriteOutcomeUnknownError(
                        "the connection to the database was lost while this write was committing: it may or "
                        "may not have been stored; read it back before writing it again") from None
                raise
            finally:
                self._local.conn = None
                self._local.tx = None
                if not tx.returned:
                    self._pool.putconn(tx._conn)

    def saw_names_version(self, version: int) -> bool:
        """A write transaction read the store's names version: whether it
        changed since this process last saw it (the name caches were then
        dropped)."""
        if version == self._names_version:
            return False
        self._clear_caches()
        self._names_version = version
        return True

    def first_trip(self, tx: PgTx, sql: str) -> Any:
        """Run ``sql``, a write transaction's first round trip (BEGIN, its
        ``chronomem_begin_*`` and what follows), on ``tx``'s connection: a
        connection that turns out dead is replaced once (nothing was sent
        that could commit; the pool closes the dead one)."""
        psycopg = self._psycopg
        for attempt in (1, 2):
            conn = tx._conn
            try:
                # the lock wait is bounded server side (lock_timeout); this bounds a server that answers nothing
                with self._deadlines.bounded(conn, self.busy_timeout + self.read_timeout,
                                             "busy_timeout + read_timeout; nothing was written"):
                    return conn.execute(sql, prepare=False)
            except psycopg.Error as exc:
                if attempt == 2 or not connection_lost(exc, psycopg):
                    raise
                self._rollback(conn, unlock=True)
                self._pool.putconn(conn)
                tx.returned = True  # (if no other connection comes, write() has none to give back)
                self._pool.discard_idle()  # they most likely died with it
                tx.use(self._pool.getconn())
                self._local.conn = tx._conn
        raise AssertionError("unreachable")  # pragma: no cover

    def settle(self, known_at: int) -> None:
        """Make the answer of a read "as known at" ``known_at`` final: wait
        until every write that began before has committed, and move the
        system clock past ``known_at`` (when it is not in the future) so no
        later write is stamped at or before it. Inside a transaction of this
        thread it does nothing (the transaction's own snapshot is the answer)."""
        if known_at <= self._settled or getattr(self._local, "conn", None) is not None:
            return
        psycopg = self._psycopg
        replica = self._replica
        with self._errors(), self._pool.connection() as conn:
            # wait for open writes at most SETTLE_WAIT: a read should not fail
            # (or hang) because a long bulk load holds the store's lock
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(SETTLE_WAIT * 1000)}ms",))
            try:
                # with a replica, also where the primary's WAL stands once
                # everything stamped up to the settled time has committed
                row = conn.execute(
                    "SELECT chronomem_settle(%s, %s)" if replica is None else SETTLE_SQL,
                    (known_at, to_us(peek_clock(self._clock)))
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
        if replica is not None:
            replica.settled(int(row[0]), int(row[1]))

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

    # -- fact reads -----------------------------------------------------
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
        replica = self._replica
        if (replica is not None and q.known_at is not None and not q.all_versions
                and getattr(self._local, "conn", None) is None and not STALE_READS.get()):
            # as known at a settled time: on the standby once it has replayed that far,
            # then the closes and erasures it has not replayed yet from the primary
            pin = replica.marker(q.known_at)
            if pin is not None:
                got = replica.fetch(sql, params, need=pin[1], timeout=self.read_timeout)
                if got is not None:
                    done = self._as_on_primary(q, got, replica.replayed_time(pin[0]))
                    if done is not None:
                        return done
        with self._conn() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
            return rows

    def _as_on_primary(self, q: FactQuery, rows: list[tuple[Any, ...]],
                       replayed_time: int) -> list[tuple[Any, ...]] | None:
        """The standby's ``rows`` for pinned ``q`` patched to the primary's
        answer (:mod:`.replica_patch`: one round trip by primary key);
        ``None``: an erasure changed a LIMITed or OFFSET read's rows, the
        primary runs it."""
        replica = self._replica
        assert replica is not None

        def execute(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
            with self._conn() as conn:
                got: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
                return got

        done = patch(q, rows, execute, replayed_time)
        if done is None:
            replica.patched("primary_again")
            return None
        if done.closed:
            replica.patched("closed")
        if done.erased:
            replica.patched("erased")
        if done.by_key:
            replica.patched("by_key")
        return done.rows

    def replica_stats(self) -> dict[str, int] | None:
        """Where the reads that could use the read replica went (``replica``,
        or the primary because it was ``behind``, ``down``, ``busy`` or
        erred: ``error``); of those the standby answered, how many the
        primary's check patched (``closed``: later closes; ``erased``:
        rows dropped), looked up row by row (``by_key``: an erasure or many
        closes since) or ran again (``primary_again``: an erasure moved a
        page); and the last replay position it reported (``replayed``,
        bytes; -1: unknown). ``None`` without a replica."""
        return None if self._replica is None else self._replica.stats()

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


class _ReadConn:
    """A pooled autocommit connection for reads outside a transaction. A
    statement whose connection turns out dead (the server restarted since it
    was checked) runs again once on a fresh connection: each statement is a
    transaction of its own and a read changes nothing. Everything but
    ``execute`` is the connection's own."""

    __slots__ = ("_store", "_conn", "_retried")

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._conn = store._pool.getconn()
        self._retried = False

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        psycopg = self._store._psycopg
        try:
            return self._timed(query, params, kwargs)
        except psycopg.Error as exc:
            if self._retried or not connection_lost(exc, psycopg):
                raise
            self._retried = True
            pool = self._store._pool
            pool.putconn(self._conn)  # dead: closed, not kept
            pool.discard_idle()  # they most likely died with it
            self._conn = pool.getconn()
            log.info("a read's connection was lost; ran it again on a new one")
            return self._timed(query, params, kwargs)

    def _timed(self, query: Any, params: Any, kwargs: dict[str, Any]) -> Any:
        """One statement within the store's ``read_timeout`` (client side)."""
        store = self._store
        with store._deadlines.bounded(self._conn, store.read_timeout, "read_timeout"):
            return self._conn.execute(query, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def release(self) -> None:
        self._store._pool.putconn(self._conn)


class _StaleReadConn(_ReadConn):
    """A read that accepts staleness (``Memory.stale_reads``): its statements
    run on the read replica; when the replica is unusable, or a statement
    fails there, that statement and the rest run on the primary."""

    __slots__ = ("_replica", "_primary")

    def __init__(self, store: PostgresStore, replica: Replica) -> None:  # no super(): no primary connection yet
        self._store = store
        self._replica = replica
        self._conn = replica.getconn()
        self._retried = False
        self._primary: _ReadConn | None = None

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if self._conn is not None:
            try:
                cur = self._timed(query, params, kwargs)
            except (StoreUnavailableError, self._store._psycopg.Error) as exc:
                self._replica.failed(exc, self._store.read_timeout)
                self._replica.putconn(self._conn)
                self._conn = None
            else:
                self._replica._count("replica")
                return cur
        if self._primary is None:
            self._primary = _ReadConn(self._store)
        return self._primary.execute(query, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn if self._conn is not None else self._primary_conn(), name)

    def _primary_conn(self) -> Any:
        if self._primary is None:
            self._primary = _ReadConn(self._store)
        return self._primary._conn

    def release(self) -> None:
        if self._conn is not None:
            self._replica.putconn(self._conn)
        if self._primary is not None:
            self._primary.release()


if TYPE_CHECKING:  # pragma: no cover - mypy checks the store against both protocols
    def _is_episode_store(store: PostgresStore) -> EpisodeStore:
        return store
