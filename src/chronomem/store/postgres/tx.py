"""Write primitives of the PostgreSQL backend (one write transaction).

Kept apart from :mod:`chronomem.store.postgres.store` (connection pool, reads)
and :mod:`chronomem.store.postgres.setup` (migrations). Every method runs on
the connection of the open transaction, which holds the store's write lock,
exclusively or (a shared write) shared plus the locks of its names and groups
(see ``docs/architecture.md``, "Concurrency").
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ...core.names import normalize_key
from ...core.time import MAX_US
from ...errors import ChronomemError, InvalidInputError, StoreError
from ..names import NameCache
from ..protocol import PredicateRecord, Row
from ..sql.dialect import POSTGRES
from ..sql.tokens import TokenSQL, TokenTxMixin
from ..sql.tx import INSERT_COLS, RAW_COLS, BaseTx, TxSQL, TxStore, fact_values
from .episodes import PgEpisodeTxMixin, PgEpisodeTxStore
from .setup import import_psycopg

if TYPE_CHECKING:  # pragma: no cover
    import psycopg

__all__ = ["PgTx", "RAW_COLS", "FACT_INSERT_COLS", "CAN_EMIT_SQL", "DURABILITY", "CommitPlan", "check_durability"]

log = logging.getLogger("chronomem.store.postgres")

_SQL = TxSQL(POSTGRES)
# fact inserts also set the ``single`` flag (see PgTx._single_flags)
FACT_INSERT_COLS = (*INSERT_COLS, "single")
_INSERT_HEAD = f"INSERT INTO facts ({', '.join(FACT_INSERT_COLS)}) VALUES "
_VALUES = f"({', '.join(['%s'] * len(FACT_INSERT_COLS))})"
# advisory locks on the keys of an array, in its order (sorted: no two writers wait on each other in a cycle)
_LOCK = "SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k"
# the same, then the transaction's system time (see lock_groups)
_LOCK_TICK = f"SELECT chronomem_tick(%s) FROM ({_LOCK}) AS locked"
# batches at least this large go through COPY
_COPY_MIN = 64
# name-lookup misses in one transaction that switch it to bulk mode
_BULK_MISSES = 64
_ID_BLOCK = 1000
# at most this many believed versions are read at once in bulk mode (a
# namespace with more is read group by group: a round trip each, which made
# loads in calls of 50,000 several times slower at 100,000)
_PREFETCH_MAX = 500_000


# chronomem.open(url, durability=...) on PostgreSQL (docs/postgres.md, "Durability")
DURABILITY = ("normal", "full", "async")

# can the session's role call the WAL-writing wait (see CommitPlan)?
CAN_EMIT_SQL = (
    "SELECT coalesce(bool_or(has_function_privilege(oid, 'EXECUTE')), false) FROM pg_proc "
    "WHERE proname = 'pg_logical_emit_message' AND pronamespace = 'pg_catalog'::regnamespace "
    "AND proargtypes[2] = 'text'::regtype"
)


def check_durability(durability: str) -> None:
    """Refuse a ``durability`` PostgreSQL does not know."""
    if durability not in DURABILITY:
        raise InvalidInputError(
            f"durability must be one of {', '.join(map(repr, DURABILITY))} on PostgreSQL, not {durability!r}"
        )


@dataclass(frozen=True)
class CommitPlan:
    """How a store's write transactions commit: ``durability``, the
    session's own ``synchronous_commit`` (server, database, role or URL
    ``options``) and whether the role may call ``pg_logical_emit_message``."""

    durability: str
    session: str = "on"
    emit: bool = True

    def __post_init__(self) -> None:
        check_durability(self.durability)

    @property
    def sync(self) -> str | None:
        """The ``synchronous_commit`` an acknowledgement waits with; ``None``:
        none waits (``"async"``, or ``"normal"`` where the session itself
        says ``off``). ``"full"`` waits even then."""
        if self.durability == "async" or (self.durability == "normal" and self.session == "off"):
            return None
        return "on" if self.session == "off" else self.session

    def statements(self, end: str) -> list[tuple[str, Sequence[Any]]]:
        """What follows a transaction's last statement, in one pipelined
        round trip; ``end`` (a call, ``chronomem_end_write()``) releases the
        store's write lock.

        Early lock release: COMMIT asynchronously (``chronomem_begin_*`` set
        ``synchronous_commit`` off for the transaction) and release the lock,
        then wait for the flush with a second, synchronous transaction. Its
        commit record comes after ours, so its flush covers ours, but only
        if it writes WAL: a transaction that writes none commits
        asynchronously whatever ``synchronous_commit`` says (PostgreSQL's
        ``RecordTransactionCommit``). The empty wait this once used flushed
        nothing, and a server crash lost acknowledged writes
        (``tests/test_pg_crash.py``). A transactional logical message is the
        least WAL there is, with no row to bloat or contend on, and any role
        may call it by default. Measured against committing synchronously
        with the locks held through the flush (``docs/postgres.md``,
        "Durability"): the same with one writer, within 5% on a fast disk,
        twice as fast for writers of one group or exclusive writes on a disk
        whose flush takes milliseconds. Where EXECUTE on
        ``pg_logical_emit_message`` is revoked, commit synchronously.
        An error from the wait reaches the caller although the write is
        committed: it is not known to be durable."""
        sync = self.sync
        if sync is None:
            # the server's WAL writer flushes within 3 x wal_writer_delay; nobody waits
            return [("COMMIT", ()), (f"SELECT {end}", ())]
        setting = "set_config('synchronous_commit', %s, true)"
        if not self.emit:
            return [(f"SELECT {setting}", (sync,)), ("COMMIT", ()), (f"SELECT {end}", ())]
        # the wait is one statement, a transaction of its own (autocommit, no
        # BEGIN / COMMIT around it: two statements fewer): the lock is
        # released as it runs, and its commit waits for the flush, with the
        # setting it makes for itself where the session's differs
        if sync != self.session:
            return [("COMMIT", ()), (f"SELECT {setting}, {end}, {_EMIT}", (sync,))]
        return [("COMMIT", ()), (f"SELECT {end}, {_EMIT}", ())]


# the least WAL a transaction can write (see CommitPlan.statements)
_EMIT = "pg_logical_emit_message(true, 'chronomem', '')"


def _bump_names(conn: "psycopg.Connection[Any]") -> None:
    conn.execute(
        "INSERT INTO meta AS m (key, value) VALUES ('names_version', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = (m.value::bigint + 1)::text"
    )


class PgTxStore(TxStore, PgEpisodeTxStore, Protocol):
    """What :class:`PgTx` uses of its store
    (:class:`~chronomem.store.postgres.store.PostgresStore`), besides
    :class:`TxStore` and :class:`PgEpisodeTxStore`; a protocol, so this module
    need not import the store (that import made a cycle)."""

    @property
    def schema(self) -> str | None:
        """The store's schema (``None``: the connection's search path)."""
        ...

    @property
    def commit_plan(self) -> CommitPlan:
        """How the store's write transactions commit."""
        ...

    def _clear_caches(self) -> None:
        """Drop the store's name caches (keys, predicates, cardinalities)."""
        ...

    def _cardinality(self, predicate_id: int) -> str:
        """A predicate's cardinality, through the name cache."""
        ...

    def _errors(self) -> AbstractContextManager[None]:
        """Turn driver errors raised inside into :class:`StoreError` s."""
        ...

    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None: ...

    def first_trip(self, tx: "PgTx", sql: str) -> Any:
        """Run a transaction's first round trip (replacing a dead connection once)."""
        ...

    def saw_names_version(self, version: int) -> bool:
        """Whether the store's names changed since this process last looked."""
        ...


class PgTx(BaseTx, PgEpisodeTxMixin, TokenTxMixin):
    """Write primitives bound to an open PostgreSQL transaction (the ones
    both backends share are in :class:`~chronomem.store.sql.tx.BaseTx`)."""

    sql = _SQL
    token_sql = TokenSQL(POSTGRES)
    store: PgTxStore

    def __init__(self, store: PgTxStore, names: NameCache, conn: "psycopg.Connection[Any]", now: int, *,
                 shared: bool = False, begin: str = "chronomem_begin_write") -> None:
        self.store = store
        self.names = names
        self._conn = conn
        # the client's clock until the transaction begins (begin's argument),
        # then the server's system time for it
        self.now = now
        # begun with its first round trip (start): BEGIN and ``begin``, a
        # chronomem_begin_* function, sent ahead of what that trip sends
        self._begin = begin
        self.begun = False
        self.names_version = -1
        # the names version changed when it began: names read from the cache
        # before then may be stale (see lock_groups)
        self._names_stale = False
        self._may_relock = False
        # the connection went back to the pool (replaced: PostgresStore.first_trip)
        self.returned = False
        # a shared write (see PostgresStore.write): it may touch only the
        # groups it locked, and ticks its system time once they are locked
        self.shared = shared
        self._locked_groups: set[tuple[int, int]] = set()
        self._held: set[int] = set()
        # bulk mode (see entity_id): namespaces whose every name key this
        # transaction holds in _bulk_keys (its own map: the store's cache is
        # bounded, so never complete), and entities created but not yet sent
        # to the server
        self._misses: dict[int, int] = {}
        self._complete: set[int] = set()
        self._bulk_keys: dict[tuple[int, str], int] = {}
        self._pending: list[tuple[int, int, str, str, str | None, str | None, int]] = []
        # statements whose results nobody reads (closes, small inserts,
        # sources): sent in one pipelined batch with the next statement that
        # needs a result, or with COMMIT
        self._queued: list[tuple[str, Sequence[Any]]] = []
        # bulk mode for believed versions (see believed_rows)
        self._believed_queries = 0
        self._prefetch_tried = False
        self._prefetched: dict[tuple[int, int], list[Row]] = {}
        self._prefetch_subjects: set[int] = set()
        # the groups of the current part of add_facts read at once (prefetch_believed)
        self._prefetch_groups: set[tuple[int, int]] = set()
        self._served: set[tuple[int, int]] = set()
        self._free_ids: list[int] = []
        self._new_entities: set[int] = set()
        # believed versions loaded in this transaction, per (subject, predicate):
        # rowid -> (valid_from, valid_to); used to set the ``single`` flag
        self._loaded: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}
        self._row_group: dict[int, tuple[int, int]] = {}
        self._names_bumped = False
        self._synthetic = 0
        self._client: "psycopg.ClientCursor[Any] | None" = None  # quotes the values of _batch

    @property
    def conn(self) -> "psycopg.Connection[Any]":
        """The transaction's connection, once the transaction has begun and
        after sending any pending entities and queued statements."""
        if not self.begun:
            self.start()
        if self._pending:
            self._flush_entities()
        if self._queued:
            self._send_queued()
        return self._conn

    def _send_queued(self, *, commit: bool = False) -> None:
        queued, self._queued = self._queued, []
        if commit:
            end = "chronomem_end_shared()" if self.shared else "chronomem_end_write()"
            queued += self.store.commit_plan.statements(end)
        if len(queued) == 1:
            self._conn.execute(queued[0][0], queued[0][1] or None)
            return
        self._batch(queued)

    def use(self, conn: "psycopg.Connection[Any]") -> None:
        """Run on ``conn`` from now on (a replacement before the transaction began)."""
        self._conn = conn
        self._client = None
        self.returned = False

    def start(self, then: Sequence[tuple[str, Sequence[Any] | None]] = ()) -> "psycopg.Cursor[Any]":
        """Begin the transaction, with ``then`` in the same round trip:
        ``BEGIN``, the ``chronomem_begin_*`` function (the store's lock, a
        system time, the names version), then ``then``. Returns the cursor on
        the begin row (``nextset()`` moves to ``then``'s results)."""
        if self.begun:
            raise StoreError("internal error: a write transaction began twice")
        self.begun = True  # from here on a failure rolls back and unlocks
        sql = "; ".join(["BEGIN", "SELECT now_us, names_version FROM %s(%d)" % (self._begin, self.now),
                         *self._quoted(then)])
        cur: psycopg.Cursor[Any] = self.store.first_trip(self, sql)
        cur.nextset()
        row = cur.fetchone()
        assert row is not None
        self.now, self.names_version = int(row[0]), int(row[1])
        self._names_stale = self.store.saw_names_version(self.names_version)
        return cur

    def _quoted(self, statements: Sequence[tuple[str, Sequence[Any] | None]]) -> list[str]:
        """``statements`` with their values quoted in (psycopg's client-side binding)."""
        if self._client is None:
            self._client = import_psycopg().ClientCursor(self._conn)
        mogrify = self._client.mogrify
        return [mogrify(sql, params or None) for sql, params in statements]

    def _batch(self, statements: Sequence[tuple[str, Sequence[Any] | None]]) -> "psycopg.Cursor[Any]":
        """Run ``statements`` in one round trip: one simple-protocol query,
        the values bound client side (psycopg quotes them). Measured against
        a pipeline of the same statements (``bench/pg_write_bench.py``): the
        same one round trip, far less client work (one send and one wait,
        not one per statement), which is most of a per-call write's cost.
        Each statement still runs on a snapshot of its own, and the first
        that fails stops the rest. The cursor is on the first result
        (``nextset()`` moves on)."""
        return self._conn.execute("; ".join(self._quoted(statements)), prepare=False)

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> "psycopg.Cursor[Any]":
        return self.conn.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.cursor().executemany(sql, rows)

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        row = self.conn.execute(sql, params).fetchone()
        assert row is not None
        return int(row[0])

    def commit(self) -> None:
        """Send what is queued and COMMIT, in one round trip."""
        if not self.begun:
            if not self._queued:
                return  # nothing sent, nothing to commit
            self.start()
        if self._pending:
            self._flush_entities()
        self._send_queued(commit=True)

    def _flush_entities(self) -> None:
        pending, self._pending = self._pending, []
        cur = self._conn.cursor()
        with cur.copy("COPY entities (id, ns_id, key, name, type, properties, created_at) FROM STDIN") as copy:
            for item in pending:
                copy.write_row(item)
        with cur.copy("COPY entity_keys (ns_id, key, entity_id) FROM STDIN") as copy:
            for eid, ns_id, key, _name, _type, _props, _at in pending:
                copy.write_row((ns_id, key, eid))

    def _names_changed(self) -> None:
        self._complete.clear()
        self._bulk_keys.clear()
        self._misses.clear()
        self.store._clear_caches()
        if not self._names_bumped:
            _bump_names(self.conn)
            self._names_bumped = True

    # -- shared writes ---------------------------------------------------
    def _lock_key(self, *parts: object) -> int:
        """A 64-bit advisory lock key for ``parts`` in this store's schema
        (the single-bigint key space, apart from the two-int4 store locks)."""
        digest = hashlib.blake2b(repr((self.store.schema, *parts)).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    def reserve_names(self, ns_id: int, entities: Sequence[object], predicates: Sequence[object]) -> None:
        """Shared writes: lock every name this transaction may create (the
        ones not known yet), in one sorted round trip, so two writers never
        create one name twice and never wait on each other in a cycle. Values
        that are not valid names are skipped (the write itself rejects them)."""
        if not self.shared:
            return
        keys: set[int] = set()
        cache = self.names
        for kind, names, known in (("e", entities, cache.entity_id), ("p", predicates, cache.predicate)):
            for name in names:
                if not isinstance(name, str):
                    continue
                try:
                    key = normalize_key(name, "name")
                except ChronomemError:
                    continue
                if known(ns_id, key) is None:
                    keys.add(self._lock_key(kind, ns_id, key))
        self._take_locks(sorted(keys - self._held))

    def lock_groups(self, groups: Sequence[tuple[int, int]]) -> bool:
        """Shared writes: lock the (subject, predicate) groups this
        transaction writes (sorted, one round trip: the transaction's first
        as a rule, BEGIN sent with it) and only then take its system time, so
        within a group versions are stamped in commit order.

        ``False``: the store's names changed (a merge, a new alias, a
        predicate's definition, elsewhere) before this transaction began, so
        ids or cardinalities the caller took from the name cache before then
        may be stale: the caches are dropped; resolve the names again (under
        the transaction's lock now) and call lock_groups again, once."""
        if not self.shared:
            return True
        if self._locked_groups and not self._may_relock:
            raise StoreError("a shared write locks its groups once, before it reads them")
        new = set(groups) - self._locked_groups
        if self._may_relock and not new:
            # names read again under the lock gave the groups already locked:
            # their time and believed rows stand (a second tick would stamp
            # the write a microsecond after its own first one)
            self._may_relock = False
            return True
        self._locked_groups |= new
        keys = sorted({self._lock_key("g", s, p) for s, p in new} - self._held)
        self._take_locks(keys, tick=True, groups=sorted(new))
        fresh = not self._names_stale
        self._names_stale = False
        self._may_relock = not fresh
        return fresh

    def _take_locks(self, keys: Sequence[int], *, tick: bool = False,
                    groups: Sequence[tuple[int, int]] = ()) -> None:
        """Take advisory locks; with ``tick``, then take the system time and
        read the believed versions of ``groups`` (served by believed_rows),
        all in one round trip. Each statement runs after the one before it,
        so the reads see every write committed before the locks were granted."""
        if not keys and not tick:
            return
        # the locks (in the order given) and the tick in one statement: the
        # aggregate takes every lock before its one row reaches the tick
        sql, params = (_LOCK_TICK, [self.now, list(keys)]) if tick else (_LOCK, [list(keys)])
        # the reads are statements of their own: each reads a snapshot taken
        # after the locks were granted
        statements = [(sql, params), *[(_SQL.believed, group) for group in groups]]
        if not self.begun:
            cur = self.start(statements)  # BEGIN with them: one round trip
            cur.nextset()
        elif len(statements) == 1:
            cur = self.conn.execute(sql, params)
        else:
            self.conn  # noqa: B018 - sends what is pending first
            cur = self._batch(statements)
        self._held.update(keys)
        if tick:
            row = cur.fetchone()
            assert row is not None
            self.now = int(row[0])
        for group in groups:
            cur.nextset()
            self._prefetched[group] = [Row(*r) for r in cur.fetchall()]
            self._prefetch_subjects.add(group[0])

    def _check_group(self, subject_id: int, predicate_id: int) -> None:
        if self.shared and (subject_id, predicate_id) not in self._locked_groups:
            raise StoreError("internal error: a shared write read a group it has not locked")

    # -- entities -------------------------------------------------------
    def entity_id(self, ns_id: int, key: str) -> int | None:
        if ns_id in self._complete:
            return self._bulk_keys.get((ns_id, key))
        cache = self.names
        got = cache.entity_id(ns_id, key)
        if got is not None:
            return got
        row = self.conn.execute(
            "SELECT entity_id FROM entity_keys WHERE ns_id = %s AND key = %s", (ns_id, key)
        ).fetchone()
        if row is None:
            # Many misses in one transaction: a bulk load of new names. Under
            # the write lock nobody else adds names, so one read of all the
            # namespace's keys answers every later lookup without a round trip.
            misses = self._misses[ns_id] = self._misses.get(ns_id, 0) + 1
            if misses == _BULK_MISSES and not self.shared:
                # this transaction's map, dropped with it (the store's cache
                # is bounded: it may hold any part of them)
                self._bulk_keys.update(
                    ((ns_id, k), int(eid)) for k, eid in self.conn.execute(
                        "SELECT key, entity_id FROM entity_keys WHERE ns_id = %s", (ns_id,))
                )
                self._complete.add(ns_id)
            return None
        cache.add_entity_key(ns_id, key, int(row[0]))
        return int(row[0])

    def _claim_name(self, kind: str, ns_id: int, key: str) -> bool:
        """Shared writes: lock a name not reserved up front; ``True`` if
        another writer created it meanwhile (the caller reads it again)."""
        k = self._lock_key(kind, ns_id, key)
        if not self.shared or k in self._held:
            return False
        self._take_locks([k])
        table, col = ("entity_keys", "entity_id") if kind == "e" else ("predicate_keys", "predicate_id")
        return self.conn.execute(
            f"SELECT {col} FROM {table} WHERE ns_id = %s AND key = %s", (ns_id, key)
        ).fetchone() is not None

    def create_entity(self, ns_id: int, key: str, name: str, type: str | None, properties: str | None) -> int:
        if self._claim_name("e", ns_id, key):
            got = self.entity_id(ns_id, key)
            assert got is not None
            return got
        if ns_id in self._complete:
            # bulk mode: ids from the sequence in blocks, rows sent by COPY
            # before the next statement of this transaction
            if not self._free_ids:
                self._free_ids = [
                    int(i) for (i,) in self._conn.execute(
                        "SELECT nextval(pg_get_serial_sequence('entities', 'id')) FROM generate_series(1, %s)",
                        (_ID_BLOCK,),
                    )
                ]
                self._free_ids.reverse()
            eid = self._free_ids.pop()
            self._pending.append((eid, ns_id, key, name, type, properties, self.now))
        else:
            row = self.conn.execute(
                "WITH e AS (INSERT INTO entities (ns_id, key, name, type, properties, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id) "
                "INSERT INTO entity_keys (ns_id, key, entity_id) SELECT %s, %s, id FROM e RETURNING entity_id",
                (ns_id, key, name, type, properties, self.now, ns_id, key),
            ).fetchone()
            assert row is not None
            eid = int(row[0])
        if ns_id in self._complete:
            self._bulk_keys[(ns_id, key)] = eid
        return self._entity_created(ns_id, key, name, eid)

    def move_entity_keys(self, from_id: int, to_id: int) -> list[str]:
        keys = [
            str(k) for (k,) in self.conn.execute(
                "UPDATE entity_keys SET entity_id = %s WHERE entity_id = %s RETURNING key", (to_id, from_id)
            )
        ]
        keys.sort()
        self._names_changed()
        return keys

    def set_entity_keys(self, ns_id: int, keys: Sequence[str], entity_id: int) -> None:
        self.conn.execute(
            "UPDATE entity_keys SET entity_id = %s WHERE ns_id = %s AND key = ANY(%s)", (entity_id, ns_id, list(keys))
        )
        self._names_changed()

    # -- predicates -----------------------------------------------------
    def create_predicate(self, ns_id: int, key: str, name: str) -> PredicateRecord:
        if self._claim_name("p", ns_id, key):
            got = self.store.predicate(ns_id, key)
            assert got is not None
            return got
        row = self.conn.execute(
            "WITH p AS (INSERT INTO predicates (ns_id, key, name) VALUES (%s, %s, %s) RETURNING id) "
            "INSERT INTO predicate_keys (ns_id, key, predicate_id) SELECT %s, %s, id FROM p RETURNING predicate_id",
            (ns_id, key, name, ns_id, key),
        ).fetchone()
        assert row is not None
        rec = PredicateRecord(int(row[0]), ns_id, key, name, "many", None, None, False)
        self.names.add_predicate(ns_id, key, rec)
        self.names.add_cardinality(rec.id, "many")
        return rec

    def _defined_predicate(self, ns_id: int, key: str, predicate_id: int) -> PredicateRecord:
        self.names.forget_cardinality(predicate_id)
        rec = self.store.predicate_by_id(predicate_id)
        assert rec is not None
        return rec

    # -- fact versions --------------------------------------------------
    def _prefetch_believed(self, subject_id: int) -> None:
        """Bulk mode: read every believed version of the subject's namespace
        at once (under the write lock nothing else changes them), unless the
        namespace holds more than ``_PREFETCH_MAX`` of them."""
        self._prefetch_tried = True
        row = self.conn.execute("SELECT ns_id FROM entities WHERE id = %s", (subject_id,)).fetchone()
        if row is None:
            return
        # counted first: reading the rows to find there are too many held them all
        # (at 1M facts, 500,001 rows: a 953 MB peak for add_facts calls of 50,000)
        many = self.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM facts WHERE ns_id = %s AND system_to = {MAX_US} LIMIT %s) t",
            (row[0], _PREFETCH_MAX + 1),
        ).fetchone()
        if many is None or int(many[0]) > _PREFETCH_MAX:
            return
        rows = self._rows(f"SELECT {RAW_COLS} FROM facts WHERE ns_id = %s AND system_to = {MAX_US}", (row[0],))
        by_group: dict[tuple[int, int], list[Row]] = {}
        for r in rows:
            by_group.setdefault((r.subject_id, r.predicate_id), []).append(r)
        self._prefetched = by_group
        self._prefetch_subjects = {
            int(i) for (i,) in self.conn.execute("SELECT id FROM entities WHERE ns_id = %s", (row[0],))
        }

    def prefetch_believed(self, groups: Sequence[tuple[int, int]]) -> None:
        """A part of ``add_facts`` begins: read the believed versions of its
        groups in one query (a round trip per group made a load of 1M facts in
        calls of 50,000 take minutes; reading the whole namespace instead held
        up to ``_PREFETCH_MAX`` rows). What this transaction kept of earlier
        parts goes: they are in the store now, and the memory stays one part's."""
        self._prefetch_tried = True  # no namespace-wide prefetch in this transaction
        self._prefetched = {}
        self._prefetch_subjects = set()
        self._served.clear()
        self._loaded.clear()
        self._row_group.clear()
        self._prefetch_groups = set()
        want = set(groups)
        if len(want) < _BULK_MISSES:
            return  # a few round trips cost less than the query
        by_group: dict[tuple[int, int], list[Row]] = {}
        subjects = [g[0] for g in want]
        predicates = [g[1] for g in want]
        for r in self._rows(
            f"SELECT {RAW_COLS} FROM facts WHERE system_to = {MAX_US} AND (subject_id, predicate_id) IN "
            "(SELECT * FROM unnest(%s::bigint[], %s::bigint[]))",
            (subjects, predicates),
        ):
            by_group.setdefault((r.subject_id, r.predicate_id), []).append(r)
        self._prefetched = by_group
        self._prefetch_groups = want

    def believed_rows(self, subject_id: int, predicate_id: int) -> list[Row]:
        group = (subject_id, predicate_id)
        self._check_group(subject_id, predicate_id)
        if (group in self._prefetch_groups or subject_id in self._prefetch_subjects) and group not in self._served:
            rows = self._prefetched.pop(group, [])
        else:
            if group not in self._served:
                self._believed_queries += 1
                if self._believed_queries == _BULK_MISSES and not self._prefetch_tried and not self.shared:
                    self._prefetch_believed(subject_id)
                    if subject_id in self._prefetch_subjects:
                        return self.believed_rows(subject_id, predicate_id)
            rows = self._rows(_SQL.believed, (subject_id, predicate_id))
        self._served.add(group)
        # what is believed now, as read: drops the stand-ins insert_rows kept for
        # rows an earlier part of the batch wrote (add_facts in parts)
        loaded = self._loaded[group] = {}
        for r in rows:
            assert r.rowid is not None
            loaded[r.rowid] = (r.valid_from, r.valid_to)
            self._row_group[r.rowid] = group
        return rows

    def _single_flags(self, rows: Sequence[Row]) -> list[bool]:
        """The ``single`` flag of each new row: believed, written under a
        single-valued predicate, and not overlapping another believed value of
        its (subject, predicate). Overlaps exist only where values were
        recorded while the predicate was still multi-valued; those rows stay
        outside the exclusion constraint, as they were."""
        card = self.store._cardinality
        flags = [r.system_to == MAX_US and card(r.predicate_id) == "one" for r in rows]
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(rows):
            if flags[i]:
                groups.setdefault((r.subject_id, r.predicate_id), [])
        if not groups:
            return flags
        for i, r in enumerate(rows):
            g = (r.subject_id, r.predicate_id)
            if r.system_to == MAX_US and g in groups:
                groups[g].append(i)
        missing = [g for g in groups if g not in self._loaded]
        for g in missing:
            self._loaded[g] = {}
        query = [g for g in missing if g[0] not in self._new_entities]
        if query:
            for s, p, rowid, vf, vt in self.conn.execute(
                f"SELECT subject_id, predicate_id, rowid, valid_from, valid_to FROM facts WHERE system_to = {MAX_US} "
                "AND (subject_id, predicate_id) IN (SELECT * FROM unnest(%s::bigint[], %s::bigint[]))",
                ([g[0] for g in query], [g[1] for g in query]),
            ):
                self._loaded[(s, p)][rowid] = (vf, vt)
                self._row_group[rowid] = (s, p)
        for group, idx in groups.items():
            spans = list(self._loaded.get(group, {}).values()) + [(rows[i].valid_from, rows[i].valid_to) for i in idx]
            for i in idx:
                if not flags[i]:
                    continue
                lo, hi = rows[i].valid_from, rows[i].valid_to
                if sum(1 for vf, vt in spans if vf < hi and lo < vt) > 1:
                    flags[i] = False
                    log.warning(
                        "fact %s overlaps another believed value of a single-valued predicate "
                        "(recorded before the predicate became single-valued); left outside the constraint",
                        rows[i].fact_id,
                    )
        return flags

    def existing_fact_ids(self, fact_ids: Sequence[str]) -> set[str]:
        """Which of ``fact_ids`` the store holds (any namespace), in one
        statement: a restore checks a batch, not one round trip per fact."""
        rows = self.conn.execute("SELECT DISTINCT fact_id FROM facts WHERE fact_id = ANY(%s)", (list(fact_ids),))
        return {str(f) for (f,) in rows}

    def insert_rows(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        flags = self._single_flags(rows)
        data = [(*fact_values(r), flag) for r, flag in zip(rows, flags, strict=True)]
        with self.store._errors():
            if len(data) >= _COPY_MIN:
                with self.conn.cursor().copy(
                    f"COPY facts ({', '.join(FACT_INSERT_COLS)}) FROM STDIN"
                ) as copy:
                    for item in data:
                        copy.write_row(item)
            else:
                values = ", ".join([_VALUES] * len(data))
                self._queued.append((_INSERT_HEAD + values, [v for item in data for v in item]))
        for r in rows:
            group = (r.subject_id, r.predicate_id)
            # the prefetched versions of this group are out of date now: a
            # later part of the batch reads the group back from the store
            self._served.add(group)
            if r.system_to == MAX_US and group in self._loaded:
                # later inserts of this transaction see these as believed
                self._synthetic -= 1
                self._loaded[group][self._synthetic] = (r.valid_from, r.valid_to)

    def close_rows(self, closes: Sequence[tuple[int, str, str | None]]) -> None:
        if not closes:
            return
        by_reason: dict[tuple[str, str | None], list[int]] = {}
        for rowid, kind, by in closes:
            by_reason.setdefault((kind, by), []).append(rowid)
        for (kind, by), rowids in by_reason.items():
            self._queued.append((
                f"UPDATE facts SET system_to = %s, close_kind = %s, closed_by = %s WHERE rowid = ANY(%s) "
                f"AND system_to = {MAX_US}",
                (self.now, kind, by, rowids),
            ))
        for rowid, _kind, _by in closes:
            group = self._row_group.get(rowid)
            if group is not None:
                self._loaded[group].pop(rowid, None)

    def delete_rows(self, rowids: Sequence[int]) -> None:
        # (only work after a flush in the same transaction deletes: add_facts
        # in parts, where a later item replaces a version an earlier part wrote)
        if not rowids:
            return
        self._queued.append(("DELETE FROM facts WHERE rowid = ANY(%s)", (list(rowids),)))
        for rowid in rowids:
            group = self._row_group.get(rowid)
            if group is not None:
                self._loaded[group].pop(rowid, None)

    def reopen_rows(self, rowids: Sequence[int]) -> None:
        # (as delete_rows: only after a flush in the same transaction)
        if rowids:
            self._queued.append((f"UPDATE facts SET system_to = {MAX_US}, close_kind = NULL, closed_by = NULL "
                                 "WHERE rowid = ANY(%s)", (list(rowids),)))

    def add_sources(self, items: Sequence[tuple[str, str | None, str | None]]) -> None:
        if items:
            self._queued.append((
                _SQL.sources_head + ", ".join([_SQL.source_values] * len(items)),
                [v for fid, src, ep in items for v in (fid, src, ep, self.now)],
            ))

    # -- raw restore (JSONL import, copy) ---------------------------------
    def note_system_time(self, us: int) -> None:
        self.conn.execute("SELECT chronomem_note(%s)", (us,))
