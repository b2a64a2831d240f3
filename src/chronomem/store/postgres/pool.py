"""The connection pool of a PostgreSQL store.

A small pool of our own instead of psycopg-pool, for what a memory needs when
its server restarts, crashes or goes away. With psycopg-pool 3.3, measured on a
throwaway cluster (issue 18): after any restart each stale pooled connection
failed one call; during an outage every call waited the pool's 30 s timeout;
and its reconnection backoff, doubling from 1 s, answered the first call
17.75 s after the server was back. Here:

* **Checked before use.** An idle connection is handed out only if its socket
  has nothing to read: a server that restarted, crashed or shut down has
  closed it (its FIN is readable), which costs one ``select`` to see and no
  round trip. A socket with something to read gets one empty query to decide.
* **No waiting on a dead server.** With no idle connection the caller connects
  itself, at once (``connect_timeout`` bounds a silent host): a refused
  connection is a :class:`~chronomem.errors.StoreUnavailableError` in
  milliseconds, and the first call after the server is back succeeds.
* **Bounded.** At most ``max_size`` connections exist; a caller beyond them
  waits up to ``wait_timeout`` for one to come back, then gets
  ``StoreUnavailableError``. Idle connections older than ``max_idle`` are
  closed when the pool is next used.

Thread-safe (one lock around the idle stack and the count). Fork: the store
swaps the pool for :class:`~chronomem.store.fork.Foreign` in a child.
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ...errors import StoreUnavailableError

__all__ = ["Deadlines", "Pool", "alive"]

log = logging.getLogger("chronomem.store.postgres")

# how often (seconds) the deadline watcher looks at the calls in flight: a
# deadline is kept to within this
_TICK = 0.25


def alive(conn: Any, psycopg: Any) -> bool:
    """Whether an idle autocommit connection can be used: open, not broken,
    idle, and its socket quiet (or answering an empty query)."""
    if conn.closed or conn.broken:
        return False
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    if not readable:
        return True
    # the server sent something nobody asked for: usually that it is closing
    # the connection (or closed it), rarely a notice; one round trip decides
    try:
        conn.execute("")
    except psycopg.Error:
        return False
    return not conn.broken


class Pool:
    """Connections of one store (see the module docstring)."""

    def __init__(self, connect: Callable[[], Any], psycopg: Any, *, max_size: int, wait_timeout: float,
                 max_idle: float = 600.0, name: str = "chronomem") -> None:
        self._connect = connect
        self._psycopg = psycopg
        self.max_size = max(1, max_size)
        self.wait_timeout = wait_timeout
        self.max_idle = max_idle
        self.name = name
        self._idle: list[tuple[Any, float]] = []  # (connection, returned at), most recent last
        self._count = 0  # connections that exist: idle and handed out
        self._cond = threading.Condition(threading.Lock())
        self._closed = False

    # -- lending ----------------------------------------------------------
    def getconn(self) -> Any:
        """A checked idle connection, or a new one; waits (up to
        ``wait_timeout``) only when ``max_size`` connections are all in use."""
        deadline = time.monotonic() + self.wait_timeout
        while True:
            stale: list[Any] = []
            with self._cond:
                if self._closed:
                    raise StoreUnavailableError("this memory's connection pool is closed", retry_after=None)
                now = time.monotonic()
                # the oldest first: idle longer than max_idle, closed (the server may have timed them out)
                while self._idle and now - self._idle[0][1] > self.max_idle:
                    stale.append(self._idle.pop(0)[0])
                    self._count -= 1
                conn = self._idle.pop()[0] if self._idle else None
                if conn is None:
                    if self._count < self.max_size:
                        self._count += 1  # reserved: connect outside the lock
                    else:
                        left = deadline - now
                        if left <= 0:
                            raise StoreUnavailableError(
                                f"all {self.max_size} connections of this memory stayed in use for "
                                f"{self.wait_timeout:g} s", retry_after=1)
                        self._cond.wait(left)
                        continue
            self._close_all(stale)
            if conn is not None:
                if alive(conn, self._psycopg):
                    return conn
                log.info("a pooled connection of %s was closed by the server: discarded", self.name)
                self._forget(conn)
                continue
            try:
                return self._connect()
            except BaseException:
                self._release_slot()
                raise

    def putconn(self, conn: Any) -> None:
        """Give a connection back: kept if it is usable and idle, else closed."""
        ok = not conn.closed and not conn.broken
        if ok and conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
            try:
                conn.execute("ROLLBACK")
            except self._psycopg.Error:
                ok = False
        with self._cond:
            if ok and not self._closed:
                self._idle.append((conn, time.monotonic()))
                self._cond.notify()
                return
        self._forget(conn)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        conn = self.getconn()
        try:
            yield conn
        finally:
            self.putconn(conn)

    def discard_idle(self) -> int:
        """Close every idle connection (after a connection-level failure the
        others most likely died with it); how many were closed."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        self._close_all([c for c, _ in idle])
        return len(idle)

    def stats(self) -> dict[str, int]:
        with self._cond:
            return {"size": self._count, "idle": len(self._idle), "max_size": self.max_size}

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        self._close_all([c for c, _ in idle])

    # -- internals --------------------------------------------------------
    def _forget(self, conn: Any) -> None:
        self._close_all([conn])
        self._release_slot()

    def _release_slot(self) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify()

    @staticmethod
    def _close_all(conns: list[Any]) -> None:
        for conn in conns:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a dead connection may fail; it is gone either way
                log.debug("closing a pooled connection failed", exc_info=True)


class Deadlines:
    """Cuts off a connection whose call outlives its deadline.

    A server that stops answering without closing its connections (a frozen
    process, a network partition) leaves libpq waiting for ever: the kernel
    acknowledges what is sent, and no statement timeout runs on a frozen
    server. A call arms its connection's deadline and disarms it when it
    returns; one daemon thread, awake only while something is armed, looks at
    the armed calls (at most one per connection in use) and shuts the socket
    of one past its deadline down, so the blocked call fails at once as a lost
    connection (and the connection is discarded)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._armed: dict[int, tuple[Any, float]] = {}  # token -> (connection, deadline)
        self._fired: set[int] = set()
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._idle = False  # the watcher waits with nothing armed: an arm wakes it

    def arm(self, conn: Any, seconds: float) -> int:
        """Start the clock on ``conn``; the token to :meth:`disarm` with."""
        token = next(self._tokens)
        with self._cond:
            self._armed[token] = (conn, time.monotonic() + seconds)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chronomem-pg-deadlines", daemon=True)
                self._thread.start()
            elif self._idle:
                self._cond.notify()  # (a busy watcher looks again within _TICK: no wake-up per call)
        return token

    @contextmanager
    def bounded(self, conn: Any, seconds: float, what: str) -> Iterator[None]:
        """Run the body within ``seconds`` on ``conn``: past them the
        connection is cut and the body's failure becomes
        :class:`StoreUnavailableError` (``what`` names the bound)."""
        token = self.arm(conn, seconds)
        try:
            yield
        except BaseException:
            if self.disarm(token):
                raise StoreUnavailableError(f"the database did not answer within {seconds:g} s ({what})",
                                            retry_after=5) from None
            raise
        self.disarm(token)

    def disarm(self, token: int) -> bool:
        """Stop the clock; whether the deadline had already cut the connection."""
        with self._cond:
            if self._armed.pop(token, None) is not None:
                return False
            if token in self._fired:
                self._fired.discard(token)
                return True
            return False

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._armed:
                    self._idle = True
                    self._cond.wait(30)
                    self._idle = False
                    if not self._armed:
                        self._thread = None  # idle: the next arm starts a new watcher
                        return
                    continue
                now = time.monotonic()
                due = [(t, c) for t, (c, at) in self._armed.items() if at <= now]
                for t, _ in due:
                    del self._armed[t]
                    self._fired.add(t)
                if not due:
                    self._cond.wait(min(_TICK, min(at for _, at in self._armed.values()) - now))
            for _, conn in due:
                _cut(conn)


def _cut(conn: Any) -> None:
    """Shut ``conn``'s socket down under libpq: its blocked read returns at once."""
    try:
        fd = os.dup(conn.fileno())
    except Exception:  # noqa: BLE001 - already closed: nothing to cut
        return
    try:
        with socket.socket(fileno=fd) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        log.debug("could not shut a stalled connection down", exc_info=True)
    log.warning("a database call got no answer before its deadline: its connection was cut")
