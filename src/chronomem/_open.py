"""``chronomem.open``: pick a backend from a path or URL."""

from __future__ import annotations

import datetime as _dt
import os
from typing import TYPE_CHECKING, Any

from .memory import Memory
from .store import open_store, resolve_url

if TYPE_CHECKING:  # pragma: no cover
    from .service.evidence.embed import Embedder

__all__ = ["open", "open_store_at", "resolve_url"]

# resolve_url (``(backend, location)`` for a path or URL) and the dispatch to
# a backend live in ``store/``: the one place that knows the backends


def open(
    target: str | os.PathLike[str] = ":memory:",
    namespace: str = "default",
    *,
    timezone: str | _dt.tzinfo | None = None,
    clock: Any = None,
    durability: str = "normal",
    busy_timeout: float = 30.0,
    embedder: "Embedder | str | None" = "auto",
    agent: str | None = None,
    read_replica: str | None = None,
) -> Memory:
    """Open (creating if needed) a memory.

    ``target`` is a file path, ``":memory:"``, ``sqlite:///relative/or/absolute``
    or (with the ``postgres`` extra) ``postgresql://user@host/db[?schema=name]``.
    ``timezone`` is how times without an offset are read (default UTC);
    ``clock`` supplies system time (tests pass a :class:`FakeClock`).
    ``durability``: on SQLite ``"normal"`` or ``"full"`` (``synchronous=NORMAL``
    or ``FULL``); on PostgreSQL ``"normal"`` (a write returns once the server
    has flushed its commit, as the session's ``synchronous_commit`` says:
    ``on`` unless the server, database, role or URL turns it off), ``"full"``
    (flushed even then) or ``"async"`` (a server crash may lose the last
    acknowledged writes; ``docs/postgres.md``, "Durability"). Any other value
    raises :class:`InvalidInputError`.
    ``embedder`` (evidence memory) is ``"auto"`` (the built-in model the
    store's vectors were made with, else MiniLM), a built-in name
    (``"minilm"``, ``"bge-small"``, ``"e5-multilingual"``), an
    :class:`~chronomem.service.evidence.Embedder`, or ``None`` for lexical search
    only; models load on first use (see :meth:`Memory.use_embedder`).
    ``agent`` is who this memory's writes are recorded as (``recorded_by``;
    default: the local user; a server records each request's token name
    through :meth:`Memory.acting_as`).
    ``read_replica`` (PostgreSQL) is the URL of a streaming standby of the
    store's server: a fact read "as known at" a time the standby has
    replayed runs there, and so does every read inside
    :meth:`Memory.stale_reads`; everything else, and every read the standby
    cannot answer now, runs on the primary (``docs/postgres.md``, "Read
    replica"). A SQLite target refuses it (:class:`InvalidInputError`).
    """
    store = open_store_at(target, clock=clock, durability=durability, busy_timeout=busy_timeout,
                          read_replica=read_replica)
    try:
        mem = Memory(store, namespace, timezone=timezone, clock=clock, agent=agent)
    except BaseException:
        store.close()
        raise
    if embedder != "auto":
        try:
            mem.use_embedder(embedder)
        except BaseException:
            mem.close()
            raise
    return mem


#: Open (creating if needed) the store behind a path or URL, without choosing
#: a namespace (``chronomem copy`` and ``migrate`` use it): the dispatcher itself.
open_store_at = open_store
