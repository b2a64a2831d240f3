"""Reads on a streaming standby of a PostgreSQL store (``read_replica=``).

:class:`Replica` owns the standby's own connection pool and decides, for one
read, whether the standby may answer it; ``docs/postgres.md`` ("Read
replica") gives the reasoning. In short:

* **Pinned reads.** A read "as known at" T first settles T on the primary
  (:meth:`PostgresStore.settle`): from then on no commit can carry a system
  time at or before T. With a replica, the settle also returns the
  primary's WAL insert position L, taken after every write stamped at or
  before T had committed (:meth:`settled` keeps ``(settled time, L)``
  pairs). A standby whose replay position has reached L (the end of the
  last record it applied, ``pg_last_wal_replay_lsn()``) has applied every
  one of those commits, and no later commit adds a version believed at T:
  the versions it finds believed at T are the primary's. Below L, or
  unknown, the read goes to the primary; it never waits for the standby.
  What later transactions did to those versions (closes, erasures) comes
  from one check on the primary (:mod:`.replica_patch`), so the answer is
  the primary's; :meth:`replayed_time` gives that check the latest settled
  time the standby is known to have replayed.
* **Stale reads.** Inside :meth:`chronomem.Memory.stale_reads` every read
  outside a transaction may go to the standby, whatever it has replayed.
* **Never fails because of the standby.** A standby that refuses a
  connection, dies, stalls past ``read_timeout``, cancels a statement for a
  recovery conflict or errs in any other way sends that read to the primary
  (logged once per outage); after a connection-level failure it is not
  asked again for :data:`RETRY_AFTER` seconds, after a stall for
  ``read_timeout`` seconds (each stall costs a read that long).

Only a physical standby of the store's own primary is used: each new
connection checks ``pg_is_in_recovery()`` and that the server's system
identifier is the primary's (a standby made by ``pg_basebackup`` shares it).
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from typing import Any, Callable

from ...errors import ChronomemError, InvalidInputError, StoreError, StoreUnavailableError
from .pool import Deadlines, Pool
from .setup import _redact, connect, connection_kwargs, connection_lost, split_params

__all__ = ["RETRY_AFTER", "Replica", "SETTLE_SQL", "SYSTEM_ID_SQL"]

log = logging.getLogger("chronomem.store.postgres")

#: seconds a standby that failed at the connection level is left alone
RETRY_AFTER = 2.0
#: the longest a read waits for one of the standby's pooled connections
#: before it goes to the primary instead
POOL_WAIT = 0.05
#: settled time pairs kept (older ones merge into a later one: still correct,
#: only more demanding of the standby)
MAX_MARKERS = 1024

#: the settle with the primary's WAL insert position after it (a function in
#: FROM runs before the select list is computed)
SETTLE_SQL = ("SELECT v, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint "
              "FROM chronomem_settle(%s, %s) AS v")
#: the server's identity (``None`` where the role may not read it)
SYSTEM_ID_SQL = "SELECT system_identifier FROM pg_control_system()"
_REPLAY_SQL = "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint"


def system_id(conn: Any, psycopg: Any) -> int | None:
    """The server's system identifier, ``None`` where it may not be read."""
    try:
        row = conn.execute(SYSTEM_ID_SQL).fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return None if row is None or row[0] is None else int(row[0])


class Replica:
    """The standby of one :class:`~.store.PostgresStore` (see the module docstring)."""

    def __init__(self, url: str, psycopg: Any, *, schema: str | None, pool_size: int, connect_timeout: float,
                 statement_timeout: float, deadlines: Deadlines) -> None:
        try:
            conninfo, own = split_params(url)
        except StoreError as exc:
            raise InvalidInputError(f"read_replica: {exc}") from None
        other = own.get("schema")
        if other is not None and other != schema:
            raise InvalidInputError(
                f"read_replica names schema {other!r} but the store is in {schema or 'the default schema'!r}: "
                "a standby holds the same schema as its primary (leave ?schema= out of read_replica)")
        self.url = _redact(url)
        self._psycopg = psycopg
        # the primary's system identifier (set once the store has read it;
        # ``None``: unknown, not compared)
        self.primary_id: int | None = None
        self._deadlines = deadlines
        kwargs = connection_kwargs(conninfo, schema, min(connect_timeout, 2.0), statement_timeout=statement_timeout)
        self._open: Callable[[], Any] = lambda: connect(psycopg, conninfo, kwargs)
        self._pool = Pool(self._connect, psycopg, max_size=pool_size, wait_timeout=POOL_WAIT,
                          name=f"chronomem-replica-{schema or 'default'}")
        self._lock = threading.Lock()
        # (settled system time, primary WAL insert position after it), both increasing
        self._times: list[int] = []
        self._lsns: list[int] = []
        # the highest replay position seen on the standby (-1: not known)
        self._replayed = -1
        self._down_until = 0.0
        self._down = False
        # where reads went: the standby, or the primary because the standby
        # was behind, down, had no free connection or erred
        self.counts = {"replica": 0, "behind": 0, "down": 0, "busy": 0, "error": 0}
        # what the primary's check after a pinned read found (.replica_patch):
        # reads whose rows took later closes, reads that dropped erased rows,
        # reads whose check looked every row up by key (an erasure or many
        # closes since), and reads the primary ran again (an erasure moved a
        # LIMIT or OFFSET)
        self.patches = {"closed": 0, "erased": 0, "by_key": 0, "primary_again": 0}

    # -- connections --------------------------------------------------------
    def _connect(self) -> Any:
        conn = self._open()
        try:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if not (row and row[0]):
                raise InvalidInputError(f"read_replica: {self.url} is not a standby (pg_is_in_recovery() is false)")
            got = system_id(conn, self._psycopg)
            if got is not None and self.primary_id is not None and got != self.primary_id:
                raise InvalidInputError(f"read_replica: {self.url} is not a standby of this store's primary "
                                  f"(system identifier {got}, the primary's is {self.primary_id})")
        except BaseException:
            conn.close()
            raise
        # a new connection may be to a restarted standby, which may show less
        # than the last one did until it has replayed again: ask it afresh
        with self._lock:
            self._replayed = -1
        return conn

    def check(self) -> None:
        """At open: one connection, to refuse a server that is not a standby
        of the primary now (:class:`InvalidInputError`); a standby that does
        not answer only logs (reads go to the primary until it does)."""
        try:
            self._pool.putconn(self._pool.getconn())
        except InvalidInputError:
            self._pool.close()
            raise
        except (StoreError, self._psycopg.Error) as exc:
            self._went_down(exc)

    def close(self) -> None:
        self._pool.close()

    # -- what is final where -------------------------------------------------
    def settled(self, upto: int, lsn: int) -> None:
        """A settle on the primary returned: every system time up to ``upto``
        is final, and every commit stamped at or before it ends before WAL
        position ``lsn``."""
        with self._lock:
            if self._times and upto <= self._times[-1]:
                return
            self._times.append(upto)
            self._lsns.append(lsn)
            if len(self._times) > MAX_MARKERS:
                del self._times[: MAX_MARKERS // 2], self._lsns[: MAX_MARKERS // 2]

    def marker(self, known_at: int) -> tuple[int, int] | None:
        """The settled time at or after ``known_at`` and the WAL position a
        standby must have replayed to answer a read as known at ``known_at``
        (``None``: not settled here, the primary answers)."""
        with self._lock:
            i = bisect.bisect_left(self._times, known_at)
            return (self._times[i], self._lsns[i]) if i < len(self._lsns) else None

    def replayed_time(self, at_least: int) -> int:
        """The latest settled time whose commits the standby is known to have
        replayed (every write stamped at or before it is there), or
        ``at_least`` (one the caller knows it has) if that is later."""
        with self._lock:
            i = bisect.bisect_right(self._lsns, self._replayed)
            return max(at_least, self._times[i - 1]) if i else at_least

    # -- reads ------------------------------------------------------------------
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def getconn(self) -> Any | None:
        """A standby connection, or ``None`` (down, or all busy): read on the primary."""
        if not self.available():
            self._count("down")
            return None
        pool = self._pool.stats()
        if pool["idle"] == 0 and pool["size"] >= pool["max_size"]:
            self._count("busy")  # every standby connection in use: the primary is as good
            return None
        try:
            return self._pool.getconn()
        except (ChronomemError, self._psycopg.Error) as exc:  # down, or (later) not a standby any more
            self._went_down(exc)
            self._count("down")
            return None

    def putconn(self, conn: Any) -> None:
        self._pool.putconn(conn)

    def fetch(self, sql: str, params: Any, *, need: int | None, timeout: float) -> list[tuple[Any, ...]] | None:
        """Run one read on the standby: its rows, or ``None`` when the primary
        must answer (the standby has not replayed ``need``, or is unusable)."""
        conn = self.getconn()
        if conn is None:
            return None
        try:
            with self._deadlines.bounded(conn, timeout, "read_timeout on the read replica"):
                if need is not None and not self._replayed_to(conn, need):
                    self._count("behind")
                    return None
                rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
        except (StoreUnavailableError, self._psycopg.Error) as exc:
            self.failed(exc, timeout)
            return None
        finally:
            self._pool.putconn(conn)
        self._count("replica")
        self._came_back()
        return rows

    def _replayed_to(self, conn: Any, need: int) -> bool:
        if self._replayed >= need:  # replay only moves forward (reset on a new connection)
            return True
        row = conn.execute(_REPLAY_SQL).fetchone()
        at = -1 if row is None or row[0] is None else int(row[0])
        with self._lock:
            self._replayed = max(self._replayed, at)
            return self._replayed >= need

    def failed(self, exc: BaseException, stall: float = 0.0) -> None:
        """A read on the standby failed (``stall``: after waiting that long
        for an answer): the caller reads on the primary."""
        if isinstance(exc, StoreUnavailableError) or connection_lost(exc, self._psycopg):
            self._pool.discard_idle()
            self._went_down(exc, stall if isinstance(exc, StoreUnavailableError) else 0.0)
        else:  # e.g. a statement cancelled for a conflict with recovery
            log.warning("a read on the read replica failed (%s); the primary answered it",
                        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        self._count("down" if self._down else "error")

    def _went_down(self, exc: BaseException, stall: float = 0.0) -> None:
        with self._lock:
            # a standby that stalled is left alone as long as it made a read wait
            self._down_until = time.monotonic() + max(RETRY_AFTER, stall)
            was, self._down = self._down, True
            self._replayed = -1
        if not was:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning("the read replica %s is unavailable (%s): reads go to the primary", self.url, msg)

    def _came_back(self) -> None:
        if self._down:
            with self._lock:
                was, self._down = self._down, False
            if was:
                log.warning("the read replica %s answers again", self.url)

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def patched(self, what: str) -> None:
        with self._lock:
            self.patches[what] += 1

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {**self.counts, **self.patches, "replayed": self._replayed}
