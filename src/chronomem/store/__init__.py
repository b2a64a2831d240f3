"""Storage backends behind one protocol (:mod:`chronomem.store.protocol`), and
the one dispatcher from a path or URL to a backend: :func:`resolve_url`,
:func:`open_store` and :func:`missing_local_file`."""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidInputError
from .protocol import Capabilities, Store

__all__ = ["Capabilities", "Store", "missing_local_file", "open_store", "resolve_url"]


def resolve_url(target: str | os.PathLike[str]) -> tuple[str, str]:
    """Return ``(backend, location)`` for a path or URL."""
    text = os.fspath(target)
    if not isinstance(text, str) or not text:
        raise InvalidInputError("open() needs a path, ':memory:' or a URL")
    if text == ":memory:":
        return "sqlite", ":memory:"
    if text.startswith("sqlite://"):
        rest = text[len("sqlite://"):]
        if rest in ("", "/:memory:", ":memory:"):
            return "sqlite", ":memory:"
        if rest.startswith("/"):
            rest = rest[1:]
        return "sqlite", (rest if rest.startswith("/") or rest.startswith(".")
                          else ("/" + rest if text.startswith("sqlite:////") else rest))
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql", text
    if "://" in text:
        raise InvalidInputError(f"unsupported store URL {text!r}: use a file path, sqlite:///path or postgresql://...")
    return "sqlite", text


def missing_local_file(target: str | os.PathLike[str]) -> str | None:
    """The local database file that ``target`` names, if it does not exist
    yet (opening it would create it); ``None`` for ``":memory:"``, a server
    URL or an existing file. Raises :class:`InvalidInputError` for a target
    :func:`resolve_url` refuses."""
    backend, location = resolve_url(target)
    if backend == "sqlite" and location != ":memory:" and not os.path.exists(location):
        return location
    return None


def open_store(
    url: str | os.PathLike[str],
    *,
    clock: Any = None,
    durability: str = "normal",
    busy_timeout: float = 30.0,
    read_replica: str | None = None,
) -> Store:
    """Open (creating if needed) the store behind a path or URL (see
    :func:`resolve_url`). ``durability``: see :func:`chronomem.open` and
    ``docs/postgres.md``, "Durability"; ``busy_timeout``: how long a write
    waits for another writer's lock (SQLite's busy timeout, PostgreSQL's
    ``lock_timeout``) before :class:`~chronomem.errors.StoreLockedError`;
    ``read_replica``: a streaming standby's URL (PostgreSQL only, refused
    before anything is opened elsewhere; ``docs/postgres.md``, "Read replica")."""
    backend, location = resolve_url(url)
    if backend == "sqlite":
        from .sqlite.store import SQLiteStore

        if read_replica is not None:  # before the file is created (its capabilities say read_replica=False)
            raise InvalidInputError("read_replica: a SQLite memory has no read replica (it is a PostgreSQL option)")

        return SQLiteStore(location, clock=clock, durability=durability, busy_timeout=busy_timeout)
    from .postgres.store import PostgresStore

    return PostgresStore(location, clock=clock, durability=durability, busy_timeout=busy_timeout,
                         read_replica=read_replica)
