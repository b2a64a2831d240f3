"""The SQLite write transaction (:class:`SQLiteTx`) and the background WAL
checkpointer, split out of :mod:`chronomem.store.sqlite.store`."""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any, Protocol, Sequence

from ...core.time import MAX_US
from .. import fork as _fork
from ..names import NameCache
from ..protocol import PredicateRecord, Row
from ..sql.dialect import SQLITE
from ..sql.tokens import TokenSQL, TokenTxMixin
from ..sql.tx import BaseTx, TxSQL, TxStore, fact_values
from .episodes import EpisodeTxMixin

__all__ = ["SQLiteTx"]

log = logging.getLogger("chronomem.store.sqlite")

_CLOSE = f"UPDATE facts SET system_to = ?, close_kind = ?, closed_by = ? WHERE rowid = ? AND system_to = {MAX_US}"

# An insert this large into a table this much smaller (an initial import) builds
# the facts indexes once afterwards: SQLite then sorts each index instead of
# inserting into it row by row (247k ICEWS rows into an empty store: 2.3 s ->
# 1.9 s). Sorting everything costs about 0.7x of inserting per row, so it pays
# while the rows already there are under 40 % of the new ones.
REBUILD_MIN_ROWS = 50_000
REBUILD_MAX_SHARE = 0.4


class SQLiteTxStore(TxStore, Protocol):
    """What :class:`SQLiteTx` uses of its store
    (:class:`~chronomem.store.sqlite.store.SQLiteStore`), besides :class:`TxStore`; a
    protocol, so this module need not import the store (that import made a
    cycle)."""

    _con: sqlite3.Connection
    """The store's one connection, owned (opened and closed) by the store;
    the transaction runs its statements on it."""
    _last_sys: int | None
    """The store's cached last system time (``None``: read it again), owned
    by the store; a raw restore that moves the time on updates it."""

    def _entity_id(self, ns_id: int, key: str) -> int | None:
        """The entity of a name key, through the store's entity cache."""
        ...

    def drop_name_caches(self) -> None: ...
    def last_system_time(self) -> int: ...


class SQLiteTx(BaseTx, EpisodeTxMixin, TokenTxMixin):
    """Write primitives bound to an open ``BEGIN IMMEDIATE`` transaction
    (the ones both backends share are in :class:`~chronomem.store.sql.tx.BaseTx`)."""

    sql = TxSQL(SQLITE)
    token_sql = TokenSQL(SQLITE)
    store: SQLiteTxStore

    def __init__(self, store: SQLiteTxStore, names: NameCache, now: int) -> None:
        self.store = store
        self.names = names
        self.con = store._con
        self.now = now
        self._new_entities: set[int] = set()
        self._names_bumped = False

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.con.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.con.executemany(sql, rows)

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        return int(self.con.execute(sql, params).lastrowid or 0)

    def _names_changed(self) -> None:
        """Keys or predicates changed: drop this process's name caches and
        bump ``meta.names_version`` so other connections drop theirs."""
        self.store.drop_name_caches()
        if not self._names_bumped:
            self.con.execute(
                "INSERT INTO meta (key, value) VALUES ('names_version', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            self._names_bumped = True

    # -- shared writes (one writer at a time here: nothing to lock) -------
    def reserve_names(self, ns_id: int, entities: Sequence[object], predicates: Sequence[object]) -> None:
        return None

    def lock_groups(self, groups: Sequence[tuple[int, int]]) -> bool:
        return True  # one writer at a time: the names read in the transaction are current

    # -- entities -------------------------------------------------------
    def entity_id(self, ns_id: int, key: str) -> int | None:
        return self.store._entity_id(ns_id, key)

    def create_entity(self, ns_id: int, key: str, name: str, type: str | None, properties: str | None) -> int:
        eid = self._insert_id(self.sql.insert_entity, (ns_id, key, name, type, properties, self.now))
        self.con.execute(self.sql.insert_entity_key, (ns_id, key, eid))
        return self._entity_created(ns_id, key, name, eid)

    def move_entity_keys(self, from_id: int, to_id: int) -> list[str]:
        keys = [k for (k,) in self.con.execute("SELECT key FROM entity_keys WHERE entity_id = ?", (from_id,))]
        self.con.execute("UPDATE entity_keys SET entity_id = ? WHERE entity_id = ?", (to_id, from_id))
        self._names_changed()
        return keys

    def set_entity_keys(self, ns_id: int, keys: Sequence[str], entity_id: int) -> None:
        self.con.executemany(
            "UPDATE entity_keys SET entity_id = ? WHERE ns_id = ? AND key = ?",
            [(entity_id, ns_id, k) for k in keys],
        )
        self._names_changed()

    # -- predicates -----------------------------------------------------
    def create_predicate(self, ns_id: int, key: str, name: str) -> PredicateRecord:
        pid = self._insert_id(self.sql.insert_predicate, (ns_id, key, name))
        self.con.execute(self.sql.insert_predicate_key, (ns_id, key, pid))
        rec = PredicateRecord(pid, ns_id, key, name, "many", None, None, False)
        self.names.add_predicate(ns_id, key, rec)
        return rec

    def _defined_predicate(self, ns_id: int, key: str, predicate_id: int) -> PredicateRecord:
        rec = self.store.predicate(ns_id, key)
        assert rec is not None
        return rec

    # -- fact versions --------------------------------------------------
    def prefetch_believed(self, groups: Sequence[tuple[int, int]]) -> None:
        """Nothing: a group read from a local file costs microseconds, and a
        read of many at once would only hold more in memory."""

    def believed_rows(self, subject_id: int, predicate_id: int) -> list[Row]:
        return [Row(*r) for r in self.con.execute(self.sql.believed, (subject_id, predicate_id))]

    def existing_fact_ids(self, fact_ids: Sequence[str]) -> set[str]:
        """Which of ``fact_ids`` the store holds (any namespace), 500 per
        statement: a restore checks a batch, not one query per fact."""
        ids = list(fact_ids)
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            found.update(f for (f,) in self.con.execute(
                f"SELECT DISTINCT fact_id FROM facts WHERE {_in('fact_id', chunk)}", chunk))
        return found

    def insert_rows(self, rows: Sequence[Row]) -> None:
        values = [fact_values(r) for r in rows]
        if len(values) >= REBUILD_MIN_ROWS:
            # max(rowid) is a cheap upper bound of the row count
            (top,) = self.con.execute("SELECT coalesce(max(rowid), 0) FROM facts").fetchone()
            if top < REBUILD_MAX_SHARE * len(values):
                self._insert_then_index(values)
                return
        self.con.executemany(self.sql.insert_fact, values)

    def _insert_then_index(self, values: list[tuple[Any, ...]]) -> None:
        """Drop the facts indexes, insert, and create them again from their own
        DDL, all inside this transaction (a rollback restores them as they were)."""
        indexes = self.con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts' AND sql IS NOT NULL"
        ).fetchall()
        for name, _sql in indexes:
            self.con.execute(f'DROP INDEX "{name}"')
        self.con.executemany(self.sql.insert_fact, values)
        for _name, sql in indexes:
            self.con.execute(sql)
        log.debug("inserted %d fact versions, then rebuilt %d indexes", len(values), len(indexes))

    def close_rows(self, closes: Sequence[tuple[int, str, str | None]]) -> None:
        self.con.executemany(_CLOSE, [(self.now, kind, by, rowid) for rowid, kind, by in closes])

    def add_sources(self, items: Sequence[tuple[str, str | None, str | None]]) -> None:
        self.con.executemany(self.sql.insert_source, [(fid, src, ep, self.now) for fid, src, ep in items])

    # -- raw restore (JSONL import) --------------------------------------
    def note_system_time(self, us: int) -> None:
        """Make later transactions start after ``us`` (imported system times)."""
        if us > self.store.last_system_time():
            self.con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_system_time', ?)", (str(us),))
            self.store._last_sys = us


class _Checkpointer:
    """Copies the WAL into the database file from a background thread.

    Runs ``PRAGMA wal_checkpoint(PASSIVE)`` (never blocks writers) every
    ``interval`` seconds, and ``TRUNCATE`` on stop (skipped if a writer holds
    the lock: a close never waits). Commits therefore never
    pay for the checkpoint's fsync.

    Once the store has gone quiet (no new WAL frames since the last look) and
    everything is copied, it empties the WAL (``TRUNCATE``), so the file does
    not keep the size of the last burst. ``RESTART`` / ``TRUNCATE`` hold the
    write lock while they wait for readers, so they run with no busy wait:
    if anyone holds an older snapshot they give up at once and try again a
    tick later. (A ``RESTART`` with the store's 5 s busy timeout stalled
    writers behind long readers, and its retries slowed a 10k-fact subject
    read from 32 to 50-70 us.)
    """

    def __init__(self, path: str, busy_ms: int, interval: float = 0.5, min_pages: int = 256) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._interval = interval
        self._min_pages = min_pages
        self._final = True  # a TRUNCATE when it stops (not when a fork pauses it)
        self._resume = False
        self._start()
        _fork.track(self)

    def _start(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chronomem-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            con = sqlite3.connect(self._path, timeout=self._busy_ms / 1000, isolation_level=None,
                                  check_same_thread=False)
        except sqlite3.Error as exc:  # pragma: no cover
            log.warning("checkpoint thread could not open %s: %s", self._path, exc)
            return
        try:
            con.execute("PRAGMA busy_timeout = 0")
            last = -1
            while not self._stop.wait(self._interval):
                try:
                    busy, log_pages, done = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    quiet = log_pages == last and done == log_pages  # nothing new, all copied
                    if log_pages > 0 and (quiet or log_pages >= self._min_pages * 64):
                        busy, log_pages, done = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    last = log_pages
                except sqlite3.Error as exc:
                    log.debug("checkpoint skipped: %s", exc)
            if self._final:
                try:
                    # no busy wait: a TRUNCATE waits for a writer's whole transaction,
                    # so closing a reader during a bulk load would wait for the load
                    # (the writer's own close empties the WAL then)
                    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:  # pragma: no cover
                    log.debug("final checkpoint skipped: %s", exc)
        finally:
            con.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def stop_soon(self) -> None:
        """Stop without waiting (the store was dropped without ``close()``)."""
        self._stop.set()

    # -- fork: the thread and its connection must not be mid-call or open
    # when the process forks (see _fork); it resumes in the parent only
    def _before_fork(self) -> None:
        self._resume = not self._stop.is_set()
        if self._thread.is_alive():
            self._final = False
            self._stop.set()
            self._thread.join()
            self._final = True

    def _after_fork_parent(self) -> None:
        if self._resume:
            self._start()
        self._resume = False

    def _after_fork_child(self, parent_pid: int) -> None:
        self._stop.set()  # the parent's thread: never restarted here
        self._resume = False


def _in(column: str, values: Sequence[Any]) -> str:
    if len(values) == 1:
        return f"{column} = ?"
    return f"{column} IN ({','.join('?' * len(values))})"


def _split_sql(script: str) -> list[str]:
    statements: list[str] = []
    buf: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        buf.append(line)
        if stripped.endswith(";"):
            stmt = "\n".join(buf).strip().rstrip(";")
            if sqlite3.complete_statement(stmt + ";"):
                statements.append(stmt)
                buf = []
    if buf:
        statements.append("\n".join(buf))
    return statements
