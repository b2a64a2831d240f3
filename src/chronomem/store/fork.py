"""Fork safety: no SQLite or PostgreSQL state of ours crosses ``fork()``.

Why. SQLite's unix VFS keeps one lock record per open file per process
(``unixInodeInfo``, ``unixShmNode``) and every connection of the process
shares it: a connection takes a POSIX lock only when the record says the
process does not hold it yet. A forked child inherits those records but not
the locks (POSIX locks belong to a process). A connection the child opens to
a file the parent had open therefore finds "already locked" and takes no
lock at all: no other process can see it, and the last of them to close
believes it is alone, checkpoints and deletes the WAL the child is still
committing to. Those commits are gone (``/proc/locks`` shows the forked
child holding 0 locks where a spawned one holds 2). psycopg connections and
pools share the parent's sockets and threads.

So every store registers here. Before a fork each one waits for its SQLite
calls in flight and closes its file connections (the checkpointer threads
stop at a safe point), so the child inherits no SQLite file state; the
parent reopens them afterwards. In the child every inherited store is
*foreign*: using it raises :class:`~chronomem.errors.StoreError`, closing
it does nothing, and what it held is kept alive so the child never finalizes
the parent's connections.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import Any, NoReturn, Protocol

from ..errors import StoreError

__all__ = ["ForkAware", "Foreign", "foreign_error", "keep", "track"]

log = logging.getLogger("chronomem.store")


class ForkAware(Protocol):
    def _before_fork(self) -> None: ...

    def _after_fork_parent(self) -> None: ...

    def _after_fork_child(self, parent_pid: int) -> None: ...


_tracked: "weakref.WeakSet[Any]" = weakref.WeakSet()
_paused: list[ForkAware] = []  # what _before paused, in order (strong refs until after)
_lock = threading.Lock()
_parent_pid = 0
# objects a child inherited from its parent: referenced forever, so the child
# never closes or finalizes them (that would release locks or end sessions)
_inherited: list[Any] = []


def track(obj: ForkAware) -> None:
    """Have ``obj``'s fork hooks called around every ``os.fork()``."""
    with _lock:
        _tracked.add(obj)


def keep(*objs: Any) -> None:
    """Keep inherited objects alive for the rest of this (child) process."""
    _inherited.extend(o for o in objs if o is not None)


def foreign_error(owner_pid: int) -> StoreError:
    return StoreError(
        f"this memory was opened in process {owner_pid}; open it again in this process ({os.getpid()})"
    )


class Foreign:
    """Stands in for a connection or pool a child inherited: any use raises
    the clear error instead of touching the parent's state."""

    __slots__ = ("_owner",)

    def __init__(self, owner_pid: int) -> None:
        object.__setattr__(self, "_owner", owner_pid)

    def __getattr__(self, name: str) -> NoReturn:
        raise foreign_error(object.__getattribute__(self, "_owner"))

    def __repr__(self) -> str:
        return f"<foreign to process {object.__getattribute__(self, '_owner')}>"


def _before() -> None:
    global _parent_pid
    _lock.acquire()
    _parent_pid = os.getpid()
    _paused[:] = list(_tracked)
    for obj in _paused:
        try:
            obj._before_fork()
        except Exception:  # pragma: no cover - a hook must never break fork()
            log.exception("fork: could not pause %r", obj)


def _after_parent() -> None:
    try:
        for obj in _paused:
            try:
                obj._after_fork_parent()
            except Exception:  # pragma: no cover
                log.exception("fork: could not resume %r", obj)
    finally:
        _paused.clear()
        _lock.release()


def _after_child() -> None:
    global _lock
    try:
        for obj in list(_tracked):
            try:
                obj._after_fork_child(_parent_pid)
            except Exception:  # pragma: no cover
                log.exception("fork: could not detach %r", obj)
    finally:
        _paused.clear()
        _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_after_parent, after_in_child=_after_child)
