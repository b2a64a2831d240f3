"""Storage backends behind one protocol (:mod:`chronomem.store.protocol`), and
the one dispatcher from a path or URL to a backend: :func:`resolve_url`,
:func:`open_store`, :func:`missing_local_file` and :func:`server_pool`."""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidInputError
from .protocol import Capabilities, Store

__all__ = ["SERVE_POOL_SIZE", "Capabilities", "Store", "missing_local_file", "open_store", "resolve_url",
           "server_pool"]

#: the connections ``chronomem serve`` opens to a PostgreSQL database unless
#: told otherwise (a library caller's store keeps 4; docs/team.md)
SERVE_POOL_SIZE = 10


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


def server_pool(target: str, pool_size: int | None) -> tuple[str, int | None]:
    """``(target, connections)`` for a server: on PostgreSQL the URL with
    ``pool_size`` set (``pool_size``, else the URL's own ``?pool_size=``, else
    :data:`SERVE_POOL_SIZE`) and that number; on SQLite, which has no pool,
    ``(target, None)``, and an :class:`InvalidInputError` if ``pool_size`` was
    asked for."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    backend, _location = resolve_url(target)
    if backend == "sqlite":
        if pool_size is not None:
            raise InvalidInputError("pool_size: a SQLite database has no connection pool; "
                                    "--pool-size is for a postgresql:// database")
        return target, None
    parts = urlsplit(target)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in query if k == "pool_size"]
    if pool_size is None:
        if given and given[-1].isdigit():
            return target, int(given[-1])  # the store checks its range
        pool_size = SERVE_POOL_SIZE
    from .postgres.setup import MAX_POOL_SIZE

    if not 1 <= pool_size <= MAX_POOL_SIZE:
        raise InvalidInputError(f"pool_size must be from 1 to {MAX_POOL_SIZE} connections, not {pool_size}")
    rest = [(k, v) for k, v in query if k != "pool_size"] + [("pool_size", str(pool_size))]
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), pool_size


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
