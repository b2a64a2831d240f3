"""A store's in-process name caches (:class:`NameCache`), bounded.

A process that touches many entities (a 1M-fact store has ~100k) would
otherwise keep every name key and display name it ever read or wrote. Each
of the two entity maps holds at most :data:`MAX_NAMES` entries (docs/limits.md):

* name keys (``(ns_id, key)`` -> entity id) are least-recently-used: a hit
  moves the key to the end, and past the bound the oldest quarter goes;
* display names (entity id -> name) are read without a lock, so a hit does not
  reorder them: past the bound a copy without the oldest-loaded quarter is
  published (a reader holding the old dict still finds what it asked for).

A miss falls back to the store, never to a wrong answer: nothing may treat
the cache as complete (PostgreSQL's bulk mode keeps its own per-transaction
map, see ``PgTx.entity_id``). Predicates are few (one per relation name) and
stay unbounded.
"""

from __future__ import annotations

from itertools import islice
from types import MappingProxyType
from typing import Iterable, Mapping

from .protocol import PredicateRecord

__all__ = ["MAX_NAMES", "NameCache"]

# entries of each entity map (name keys, display names): ~150-200 bytes each
# in CPython, so at most ~35 MB for both; a store of at most this many entities
# fits whole (a 1M-fact store of the benchmark workload has 100k)
MAX_NAMES = 100_000


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

    __slots__ = ("names", "entity_keys", "max_names", "_keys", "_predicates", "_by_id", "_cardinalities")

    def __init__(self, max_names: int | None = None) -> None:
        self.max_names = MAX_NAMES if max_names is None else max_names
        """The bound of each entity map (read from :data:`MAX_NAMES` when made)."""
        self.names: dict[int, str] = {}
        """Entity id -> display name. A plain dict the store fills and
        ``Store.entity_names`` returns as is (the read path); a name never
        changes and an id is never reused, so an entry is only dropped by
        replacing the dict: for an erased entity, or past the bound
        (:meth:`trim_names`). Look it up here, never keep it."""
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
        keys = self._keys
        k = (ns_id, key)
        eid = keys.pop(k, None)
        if eid is not None:
            keys[k] = eid  # most recently used: to the end
        return eid

    def add_entity(self, ns_id: int, key: str, name: str, entity_id: int) -> None:
        """An entity created or read: its name key and display name."""
        names = self.names
        names[entity_id] = name
        if len(names) > self.max_names:
            self.trim_names()
        self.add_entity_key(ns_id, key, entity_id)

    def add_entity_key(self, ns_id: int, key: str, entity_id: int) -> None:
        keys = self._keys
        keys[(ns_id, key)] = entity_id
        if len(keys) > self.max_names:
            self._trim_keys()

    def add_entity_keys(self, ns_id: int, keys: Iterable[tuple[str, int]]) -> None:
        """``(key, entity_id)`` pairs of one namespace (past the bound, the
        first ones go again)."""
        cache = self._keys
        bound = self.max_names
        for k, eid in keys:
            cache[(ns_id, k)] = eid
            if len(cache) > bound:
                self._trim_keys()

    def _trim_keys(self) -> None:
        """Drop the least recently used quarter of the name keys."""
        keys = self._keys
        for k in list(islice(keys, max(1, len(keys) - self.max_names * 3 // 4))):
            keys.pop(k, None)

    def trim_names(self) -> None:
        """If past the bound, publish a copy of the display names without the
        oldest-loaded quarter (readers may hold the current dict: it is not
        changed in place)."""
        names = self.names
        over = len(names) - self.max_names * 3 // 4
        if len(names) > self.max_names and over > 0:
            self.names = dict(islice(names.items(), over, None))

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
