"""The embedded SQLite backend (the default).

One file, WAL journal, ``busy_timeout``; every write runs in a
``BEGIN IMMEDIATE`` transaction through this object's single connection, so
writers from several processes serialize on SQLite's lock and never interleave.

Durability: ``synchronous=NORMAL`` in WAL mode (the default here). A committed
transaction is in the WAL file before ``commit()`` returns, so it survives
``kill -9`` of the process. A power loss or OS crash can lose the last
transactions committed since the last checkpoint-sync, but never corrupts the
database. ``durability="full"`` (``synchronous=FULL``) fsyncs every commit and
also survives power loss.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ...core.time import MAX_US, Clock, SystemClock, from_us, peek_clock, to_us
from ...errors import InvalidInputError, SchemaVersionError, StoreError, StoreLockedError
from .. import fork as _fork
from ..migrations import Int8Row, load_migrations, requantize_vectors, split_steps
from ..names import NameCache
from ..protocol import Capabilities
from ..sql.dialect import SQLITE
from ..sql.reads import RowReadsMixin, StoreSQL
from ..sql.tokens import TokenReadsMixin, TokenSQL
from . import lexstats
from .episodes import EpisodeStoreMixin
from .fact_reads import FactReadsMixin
from .fact_reads import _query_params as _query_params  # re-exported: tests import it from here
from .health import SQLiteHealthMixin
from .lexindex import LexIndex
from .name_reads import NameReadsMixin
from .tx import SQLiteTx, _Checkpointer, _in, _split_sql

__all__ = ["SQLiteStore"]


log = logging.getLogger("chronomem.store.sqlite")

# a read "as known at" a time waits at most this long (seconds) for an open
# write (Store.settle); after that it answers without the finality guarantee
SETTLE_WAIT = 5.0

# name-cache warm-up: after this many cache misses in a process, the names
# of a namespace (or all display names) are read at once, if at most _WARM_MAX
# (and at most the caches' bound, chronomem.store.names.MAX_NAMES)
_WARM_AFTER = 256
_WARM_MAX = 500_000
# SQLite's page cache per connection (KiB) and memory-mapped I/O (bytes).
# Mapped pages of the file count in the process's RSS as a read touches them
# (1,000 subject reads of a 1M-fact store: +225 MB with a 1 GB map), without
# making reads faster than this cache over the OS's own file cache
# (docs/limits.md, "Memory")
_CACHE_KIB = 16_384
_MMAP_BYTES = 0
# a store with at most this many entities loads all display names at the
# first miss (a few milliseconds; spares the next reads a lookup each)
_WARM_SMALL = 20_000


def _int8_vectors(con: sqlite3.Connection) -> None:
    """Migration 0009's step: the float32 BLOBs of ``episode_vectors`` into
    ``episode_vectors_int8`` as int8 bytes and a scale."""
    def read(model_id: int, rowid: int, limit: int) -> list[tuple[int, int, int, bytes]]:
        return [(int(m), int(r), int(ns), bytes(v)) for m, r, ns, v in con.execute(
            "SELECT model_id, episode_rowid, ns_id, vector FROM episode_vectors "
            "WHERE (model_id, episode_rowid) > (?, ?) ORDER BY model_id, episode_rowid LIMIT ?",
            (model_id, rowid, limit))]

    def write(rows: list[Int8Row]) -> None:
        con.executemany("INSERT INTO episode_vectors_int8 (model_id, episode_rowid, ns_id, vector, scale) "
                        "VALUES (?, ?, ?, ?, ?)", rows)

    n = requantize_vectors(read, write)
    log.info("migration 0009: %d vectors stored as int8", n)


def _index_stats(con: sqlite3.Connection) -> None:
    """Migration 0015's step: count each namespace's index rows and tokens."""
    log.info("migration 0015: %d index rows counted per namespace", lexstats.recount(con))


# the Python steps migrations name (``-- step: NAME``, see chronomem.store.migrations)
_STEPS = {"int8_vectors": _int8_vectors, "index_stats": _index_stats}


def _drop(owned: list[Any]) -> None:
    """What a store that is garbage-collected (never closed) still owns."""
    con, checkpointer = owned
    if checkpointer is not None:
        checkpointer.stop_soon()
    if con is not None:
        try:
            con.close()
        except sqlite3.Error:  # pragma: no cover
            pass


class SQLiteStore(FactReadsMixin, NameReadsMixin, RowReadsMixin, EpisodeStoreMixin, SQLiteHealthMixin,
                  TokenReadsMixin):
    """SQLite implementation of :class:`~chronomem.store.protocol.Store`.

    Its fact read path is :class:`~.fact_reads.FactReadsMixin`, its name
    reads :class:`~.name_reads.NameReadsMixin`."""

    backend = "sqlite"
    _rows_sql = StoreSQL(SQLITE)
    token_sql = TokenSQL(SQLITE)

    def __init__(
        self,
        path: str,
        *,
        clock: Any = None,
        durability: str = "normal",
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = path
        self.url = "sqlite:///" + path if path != ":memory:" else "sqlite://:memory:"
        self._clock: Clock = clock or SystemClock()
        # episodes and prefix search; a file store names its file (an in-memory one has none)
        self.capabilities = Capabilities(episodes=True, entity_prefix_search=True,
                                         local_path=None if path == ":memory:" else path, flush_in_parts=True)
        self._lock = threading.RLock()
        if path != ":memory:":
            parent = Path(path).expanduser().resolve().parent
            if not parent.exists():
                parent.mkdir(parents=True, exist_ok=True)
        self._busy_ms = int(busy_timeout * 1000)
        if durability not in ("normal", "full"):
            raise InvalidInputError(
                f"durability must be 'normal' or 'full' on SQLite, not {durability!r}"
                + (" ('async' is PostgreSQL's)" if durability == "async" else "")
            )
        self.durability = durability
        self._con = self._connect()
        self._checkpointer: _Checkpointer | None = None
        if path != ":memory:":
            # The writer never checkpoints (that is where SQLite fsyncs in WAL
            # mode); a background thread with its own connection does.
            self._checkpointer = _Checkpointer(path, self._busy_ms)
        # A store dropped without close() closes its connection and stops its
        # thread at once: a sqlite3.Connection sits in a reference cycle with
        # its statement cache, so it would stay open until the cycle collector
        # ran, holding the file open (and across a fork, see _fork).
        self._owned: list[Any] = [self._con, self._checkpointer]
        weakref.finalize(self, _drop, self._owned)
        # set while a fork is under way (see _fork): whether this store's
        # lock was taken and its connection closed for it
        self._fork_held = False
        self._fork_closed = False
        # the pid of the process that opened this store, once a fork made
        # this copy foreign (then every use raises StoreError)
        self._foreign_of: int | None = None
        # the read path's cursor (used under self._lock; a new cursor per
        # statement costs more than the statement's own overhead)
        self._read_cur = self._con.cursor()
        # name keys, predicates and display names; its transactions get it too
        self._name_cache = NameCache()
        # the same caches, read-only keys, as tests inspect them (and _names)
        self._entity_cache = self._name_cache.entity_keys
        self._sql_cache: dict[tuple[Any, ...], str] = {}
        self._data_version = -1
        self._names_version = -1
        # a process that keeps missing the name caches loads a namespace's
        # keys (or all display names) at once, if there are not too many
        self._key_misses = 0
        self._warm_keys: set[int] = set()
        self._name_misses = 0
        self._names_warm = False
        self._last_sys: int | None = None
        # every system time up to this one is final (see settle)
        self._settled = -(2**63)
        self._pred_names: dict[int, str] = {}
        # a warm process's numpy copy of the FTS5 index (lexindex.py)
        self._lexcopy = LexIndex(path)
        self._migrate()
        _fork.track(self)

    @property
    def _names(self) -> dict[int, str]:
        """The display-name cache (an erasure replaces the dict: never keep it)."""
        return self._name_cache.names

    # -- lifecycle ------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        """A new connection with this store's settings."""
        path = self.path
        try:
            con = sqlite3.connect(path, timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from None
        try:
            con.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            if path != ":memory:":
                con.execute("PRAGMA journal_mode = WAL")
                con.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer thread does it
            con.execute(f"PRAGMA synchronous = {'FULL' if self.durability == 'full' else 'NORMAL'}")
            con.execute("PRAGMA foreign_keys = OFF")
            con.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
            con.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            con.execute("PRAGMA temp_store = MEMORY")
            con.execute("PRAGMA secure_delete = ON")  # deleted content is zeroed in the file (erasure)
        except sqlite3.DatabaseError as exc:
            con.close()
            raise StoreError(f"{path!r} is not a usable SQLite database: {exc}") from None
        return con

    # -- fork (see _fork: the child must inherit no SQLite file state) ----
    def _before_fork(self) -> None:
        if self._foreign_of is not None or self.path == ":memory:":
            return
        # wait for this store's SQLite calls in flight (a write holds the lock
        # for its whole transaction), at most as long as a writer would
        self._fork_held = self._lock.acquire(timeout=self._busy_ms / 1000)
        if not self._fork_held:
            log.warning("fork: %s stayed busy for %.0f s; the child must not open it", self.path,
                        self._busy_ms / 1000)
            return
        if self._con.in_transaction:  # the forking thread is inside a transaction of ours
            log.warning("fork inside a transaction on %s: the child must not open it", self.path)
            return
        self._read_cur.close()
        self._con.close()
        self._fork_closed = True

    def _after_fork_parent(self) -> None:
        try:
            if self._fork_closed:
                self._con = self._owned[0] = self._connect()
                self._read_cur = self._con.cursor()
                self._data_version = -1  # a new connection counts from its own start
        finally:
            self._fork_closed = False
            if self._fork_held:
                self._fork_held = False
                self._lock.release()

    def _after_fork_child(self, parent_pid: int) -> None:
        if self._foreign_of is not None:
            return
        if not self._fork_closed:
            _fork.keep(self._con, self._read_cur)  # never finalized here
        self._owned[:] = [None, None]  # nothing of it is this process's to close
        self._con = self._read_cur = _fork.Foreign(parent_pid)  # type: ignore[assignment]
        self._checkpointer = None
        self._foreign_of = parent_pid
        self._fork_closed = self._fork_held = False
        self._lock = threading.RLock()

    def _migrate(self) -> None:
        """Apply the migrations this file lacks. An up-to-date file is checked
        with a plain read (WAL: it never waits on a writer), so opening it
        takes no write lock; the lock is taken only when there is something to
        apply, and the check is then repeated under it (another process may
        have applied them meanwhile)."""
        migrations = load_migrations("sqlite")
        latest = max(n for n, _, _ in migrations)
        with self._lock:
            if not self._pending(self._applied(), migrations, latest):
                return
            con = self._con
            self._begin_immediate()
            try:
                con.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
                )
                done = self._applied() or set()
                for number, name, sql in self._pending(done, migrations, latest):
                    log.info("applying migration %s", name)
                    for step, piece in split_steps(sql):
                        if step is not None:
                            _STEPS[step](con)
                            continue
                        for statement in _split_sql(piece):
                            con.execute(statement)
                    con.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?,?,?)",
                        (number, name, to_us(self._clock())),
                    )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def _applied(self) -> set[int] | None:
        """The migrations this file records (``None``: no table yet), read
        without a lock."""
        try:
            return {v for (v,) in self._con.execute("SELECT version FROM schema_migrations")}
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreLockedError(f"database is locked by another writer: {exc}") from None
            raise StoreError(str(exc)) from None

    @staticmethod
    def _pending(done: set[int] | None, migrations: Sequence[tuple[int, str, str]],
                 latest: int) -> list[tuple[int, str, str]]:
        """The migrations not in ``done`` (every one when ``done`` is ``None``);
        :class:`SchemaVersionError` for a file newer than this chronomem."""
        if done and max(done) > latest:
            raise SchemaVersionError(
                f"database schema version {max(done)} is newer than this chronomem ({latest}); upgrade chronomem"
            )
        return [m for m in migrations if done is None or m[0] not in done]

    def schema_version(self) -> int:
        row = self._con.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @property
    def clock(self) -> Clock:
        return self._clock

    def close(self) -> None:
        if self._foreign_of is not None:
            return  # the parent's: nothing of it is this process's to close
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        with self._lock:
            self._owned[:] = [None, None]
            try:
                self._con.close()
            except sqlite3.Error:  # pragma: no cover
                pass

    # -- transactions ---------------------------------------------------
    def _begin_immediate(self) -> None:
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreLockedError(f"database is locked by another writer: {exc}") from None
            raise StoreError(str(exc)) from None

    def _check_caches(self) -> bool:
        """If another connection committed since we last looked (``PRAGMA
        data_version``), forget the last system time and, if that commit
        changed names (``meta.names_version``, bumped by aliases, merges,
        predicate definitions and erasure), drop the name caches; returns
        whether they were dropped. Ordinary writes keep the caches: a name
        they add is simply not cached yet."""
        version = self._con.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return False
        self._data_version = version
        self._last_sys = None
        row = self._con.execute("SELECT value FROM meta WHERE key = 'names_version'").fetchone()
        names_version = int(row[0]) if row else 0
        if names_version == self._names_version:
            return False
        self._names_version = names_version
        self.drop_name_caches()
        return True

    def _warm_limits(self) -> tuple[int, int, int]:
        # read here at each warm-up, so this module's settings take effect
        bound = self._name_cache.max_names
        return _WARM_AFTER, min(_WARM_MAX, bound), min(_WARM_SMALL, bound)

    def last_system_time(self) -> int:
        with self._lock:  # the one connection is shared by this store's threads
            row = self._con.execute("SELECT value FROM meta WHERE key = 'last_system_time'").fetchone()
        return int(row[0]) if row else -(2**63)

    @contextmanager
    def write(self, *, shared: bool = False) -> Iterator[SQLiteTx]:
        """One atomic ``BEGIN IMMEDIATE`` write transaction. SQLite has one
        writer at a time, so ``shared`` (see the Store protocol) changes nothing."""
        with self._lock:
            self._begin_immediate()
            try:
                self._check_caches()
                last = self._last_sys
                if last is None:  # another connection may have written
                    last = self.last_system_time()
                now = max(to_us(self._clock()), last + 1)
                self._con.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_system_time', ?)", (str(now),)
                )
                tx = SQLiteTx(self, self._name_cache, now)
                yield tx
                tx.flush_index_counts()
                self._con.execute("COMMIT")
                # our own commits do not change data_version, so this stays
                # valid until another connection writes
                self._last_sys = max(now, self._last_sys or now)
            except BaseException:
                try:
                    self._con.execute("ROLLBACK")
                finally:
                    self.drop_name_caches()
                    self._last_sys = None
                raise

    def settle(self, known_at: int) -> None:
        """Make the answer of a read "as known at" ``known_at`` final: if a
        write may still be in flight with a system time at or before it, wait
        for it (``BEGIN IMMEDIATE``), and move the clock past ``known_at``
        (when it is not in the future) so no later write is stamped at or
        before it. Does nothing inside a transaction of this connection."""
        if known_at <= self._settled:
            return
        with self._lock:
            if self._con.in_transaction:
                return
            last = self.last_system_time()
            if known_at > last:
                # wait for an open write at most SETTLE_WAIT: a read should
                # not fail because a long import holds the write lock
                self._con.execute(f"PRAGMA busy_timeout = {min(self._busy_ms, int(SETTLE_WAIT * 1000))}")
                try:
                    self._begin_immediate()
                except StoreLockedError:
                    log.warning("a write has held the lock for %.0f s: this read as known at %s may not be final",
                                SETTLE_WAIT, from_us(known_at).isoformat())
                    return
                finally:
                    self._con.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
                try:
                    last = self.last_system_time()
                    if last < known_at <= to_us(peek_clock(self._clock)):
                        self._con.execute(
                            "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_system_time', ?)",
                            (str(known_at),),
                        )
                        last = known_at
                    self._con.execute("COMMIT")
                except BaseException:
                    self._con.execute("ROLLBACK")
                    raise
                self._last_sys = None
            self._settled = max(self._settled, last)

    @contextmanager
    def read(self) -> Iterator[None]:
        """A consistent snapshot for several statements."""
        with self._lock:
            self._con.execute("BEGIN")
            try:
                self._check_caches()
                yield None
            finally:
                self._con.execute("COMMIT")

    # -- names ----------------------------------------------------------
    def namespace_id(self, name: str, create: bool = True) -> int | None:
        with self._lock:
            row = self._con.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
            if row:
                return int(row[0])
            if not create:
                return None
            with self.write() as tx:
                row = self._con.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
                if row:
                    return int(row[0])
                cur = self._con.execute(
                    "INSERT INTO namespaces (name, created_at) VALUES (?, ?)", (name, tx.now)
                )
                return int(cur.lastrowid or 0)

    def namespaces(self) -> list[str]:
        with self._lock:
            return [n for (n,) in self._con.execute("SELECT name FROM namespaces ORDER BY name")]

    # -- other reads ----------------------------------------------------
    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]:
        with self._lock:
            return [self._con.execute(sql, params).fetchall() for sql, params in queries]

    def sources(self, fact_ids: Sequence[str]) -> list[tuple[str, str | None, str | None, int]]:
        if not fact_ids:
            return []
        with self._lock:
            return [
                (r[0], r[1], r[2], r[3])
                for r in self._con.execute(
                    "SELECT fact_id, source, episode_id, recorded_at FROM fact_sources WHERE "
                    + _in("fact_id", fact_ids) + " ORDER BY rowid",
                    list(fact_ids),
                )
            ]

    def stats(self, ns_id: int, now: int) -> dict[str, int]:
        with self._lock:
            con = self._con

            def one(sql: str, *params: Any) -> int:
                return int(con.execute(sql, params).fetchone()[0] or 0)

            versions, facts, current, retracted = con.execute(
                f"SELECT count(*), sum(system_to = {MAX_US}), "
                f"sum(system_to = {MAX_US} AND valid_from <= ? AND valid_to > ?), "
                "count(DISTINCT CASE WHEN close_kind = 'retracted' THEN fact_id END) "
                "FROM facts WHERE ns_id = ?",
                (now, now, ns_id),
            ).fetchone()
            return {
                "entities": one("SELECT count(*) FROM entities WHERE ns_id = ?", ns_id),
                "predicates": one("SELECT count(*) FROM predicates WHERE ns_id = ?", ns_id),
                "versions": int(versions or 0),
                "facts": int(facts or 0),
                "current": int(current or 0),
                "retracted": int(retracted or 0),
            }

    def file_size(self) -> int:
        if self.path == ":memory:":
            return 0
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return total
