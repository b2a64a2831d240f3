"""A store's in-process name caches (:class:`NameCache`)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping

from .protocol import PredicateRecord

__all__ = ["NameCache"]


class NameCache:
    """What one store process remembers of names, so reads and writes skip
    a round trip.

    Owned by the store: it creates the cache, fills it from its reads and
    calls :meth:`drop_keys` when names change (an alias, merge, predicate
    definition or erasure, here or on another connection). Its write
    transactions get it too: they record the names they create and forget
    the entities they erase. It has no lock of its own: each store calls it
    where it always touched its caches (SQLite under the store's lock;
    PostgreSQL relies on single dict operations being atomic). Readers use
    :attr:`names` without a lock, so nothing is ever taken out of that dict in
    place: :meth:`forget_entity` publishes a copy without the name.
    """

    __slots__ = ("names", "entity_keys", "_keys", "_predicates", "_by_id", "_cardinalities")

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        """Entity id -> display name. A plain dict the store fills and
        ``Store.entity_names`` returns as is (the read path); never dropped
        (a name never changes, an id is never reused) but for an erased entity,
        whose name goes by replacing the dict (look it up here, never keep it)."""
        self._keys: dict[tuple[int, str], int] = {}
        self.entity_keys: Mapping[tuple[int, str], int] = MappingProxyType(self._keys)
        """``(ns_id, name key)`` -> entity id, read-only."""
        self._predicates: dict[tuple[int, str], PredicateRecord] = {}
        self._by_id: dict[int, PredicateRecord] = {}
        self._cardinalities: dict[int, str] = {}

    def drop_keys(self) -> None:
        """Names changed: forget every name key, predicate and cardinality
        (display names stay)."""
        self._keys.clear()
        self._predicates.clear()
        self._by_id.clear()
        self._cardinalities.clear()

    # -- entities ---------------------------------------------------------
    def entity_id(self, ns_id: int, key: str) -> int | None:
        return self._keys.get((ns_id, key))

    def add_entity(self, ns_id: int, key: str, name: str, entity_id: int) -> None:
        """An entity created or read: its name key and display name."""
        self.names[entity_id] = name
        self._keys[(ns_id, key)] = entity_id

    def add_entity_key(self, ns_id: int, key: str, entity_id: int) -> None:
        self._keys[(ns_id, key)] = entity_id

    def add_entity_keys(self, ns_id: int, keys: Iterable[tuple[str, int]]) -> None:
        """``(key, entity_id)`` pairs of one namespace."""
        self._keys.update(((ns_id, k), eid) for k, eid in keys)

    def forget_entity(self, entity_id: int) -> None:
        """An erased entity's display name (its keys go with :meth:`drop_keys`).

        A reader may hold :attr:`names` between reading rows and resolving
        their ids (``Store.entity_names``): popping from that dict could fail
        its lookup, so the cache swaps in a copy without the name (``dict()``
        of a dict copies without releasing the GIL; erasure is rare)."""
        if entity_id in self.names:
            names = dict(self.names)
            del names[entity_id]
            self.names = names

    # -- predicates -------------------------------------------------------
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        return self._predicates.get((ns_id, key))

    def add_predicate(self, ns_id: int, key: str, rec: PredicateRecord) -> None:
        """``rec`` under one of its name keys."""
        self._predicates[(ns_id, key)] = rec

    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None:
        return self._by_id.get(predicate_id)

    def add_predicate_by_id(self, rec: PredicateRecord) -> None:
        self._by_id[rec.id] = rec

    def cardinality(self, predicate_id: int) -> str | None:
        return self._cardinalities.get(predicate_id)

    def add_cardinality(self, predicate_id: int, cardinality: str) -> None:
        self._cardinalities[predicate_id] = cardinality

    def forget_cardinality(self, predicate_id: int) -> None:
        """A predicate whose definition this transaction changed."""
        self._cardinalities.pop(predicate_id, None)
