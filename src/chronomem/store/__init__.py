"""Storage backends behind one protocol (:mod:`chronomem.store.base`)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError
from .base import Store

__all__ = ["Store", "open_store"]


def open_store(url: str, *, clock: Any = None, durability: str = "normal") -> Store:
    """Open a server-backed store by URL (``durability``: see
    ``docs/postgres.md``, "Durability")."""
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url, clock=clock, durability=durability)
    raise InvalidInputError(f"unsupported store URL {url!r}")
