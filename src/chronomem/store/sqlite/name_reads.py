"""SQLite name reads — entities, predicates, name keys and display names —
through the store's in-process name caches, with the caches' warm-up: a
process that keeps missing them loads a namespace's keys (or all display
names) at once, if there are not too many. Mixed into
:class:`~chronomem.store.sqlite.store.SQLiteStore`.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..names import NameCache
from ..protocol import EntityRecord, PredicateRecord
from ..sql.dialect import SQLITE
from .tx import _in

__all__ = ["NameReadsMixin"]


class NameReadsMixin(ABC):
    """Name reads of :class:`~chronomem.store.sqlite.store.SQLiteStore`
    (which owns the attributes declared here)."""

    _lock: threading.RLock
    _con: sqlite3.Connection
    # name keys, predicates and display names; the store's transactions get it too
    _name_cache: NameCache
    # predicate id -> display name
    _pred_names: dict[int, str]
    # warm-up state: name-key misses, and the namespaces whose keys were loaded
    # (or found too many); display-name misses, and whether names were loaded
    _key_misses: int
    _warm_keys: set[int]
    _name_misses: int
    _names_warm: bool

    if TYPE_CHECKING:  # pragma: no cover - provided by SQLiteStore
        def _check_caches(self) -> bool: ...

    @abstractmethod
    def _warm_limits(self) -> tuple[int, int, int]:
        """The warm-up thresholds ``(after, max, small)``: load after this many
        misses, if at most ``max`` names; a store of at most ``small``
        entities loads every display name at its first miss. The store
        supplies them (they are tunable module settings there)."""

    def drop_name_caches(self) -> None:
        """Forget every cached name key and predicate (ids' display names
        never change and stay cached)."""
        self._name_cache.drop_keys()
        self._warm_keys.clear()
        self._key_misses = 0

    def _entity_id(self, ns_id: int, key: str, *, warm: bool = False) -> int | None:
        """The entity a name key names (cached, with its display name).
        ``warm`` (the read path): a process that keeps missing loads the
        namespace's keys and names at once; a write never pays for that."""
        cache = self._name_cache
        cached = cache.entity_id(ns_id, key)
        if cached is not None:
            return cached
        if warm and ns_id not in self._warm_keys:
            self._key_misses += 1
            warm_after, warm_max, _ = self._warm_limits()
            if self._key_misses >= warm_after:
                self._warm_keys.add(ns_id)
                (n,) = self._con.execute("SELECT count(*) FROM entity_keys WHERE ns_id = ?", (ns_id,)).fetchone()
                if n <= warm_max:
                    cache.add_entity_keys(
                        ns_id, self._con.execute("SELECT key, entity_id FROM entity_keys WHERE ns_id = ?", (ns_id,))
                    )
                    cached = cache.entity_id(ns_id, key)
                    if cached is not None:
                        return cached
        row = self._con.execute(
            "SELECT k.entity_id, e.name FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
            "WHERE k.ns_id = ? AND k.key = ?", (ns_id, key)
        ).fetchone()
        if row is None:
            return None
        eid = int(row[0])
        cache.add_entity(ns_id, key, row[1], eid)
        return eid

    def entity_id(self, ns_id: int, key: str) -> int | None:
        with self._lock:
            self._check_caches()
            return self._entity_id(ns_id, key, warm=True)

    def has_entities(self, ns_id: int) -> bool:
        """Whether any name key of the namespace exists (the primary key's first column).
        A namespace once seen with one is remembered: ``True`` only means "look", so an
        erasure of every entity since costs a read, never an answer."""
        seen: set[int] = self.__dict__.setdefault("_with_entities", set())
        if ns_id in seen:
            return True
        with self._lock:
            found = self._con.execute("SELECT 1 FROM entity_keys WHERE ns_id = ? LIMIT 1", (ns_id,)).fetchone()
        if found is not None:
            seen.add(ns_id)
        return found is not None

    def entity_ids_for_keys(self, ns_id: int, keys: Sequence[str]) -> dict[str, int]:
        """The entities that name keys name, in one read for the keys the
        cache does not hold (the keys that name nothing are simply absent)."""
        out: dict[str, int] = {}
        with self._lock:
            self._check_caches()
            cache = self._name_cache
            missing = []
            for key in dict.fromkeys(keys):
                eid = cache.entity_id(ns_id, key)
                if eid is None:
                    missing.append(key)
                else:
                    out[key] = eid
            for i in range(0, len(missing), 500):  # under SQLite's bound-parameter limit
                params: list[Any] = [ns_id]
                in_keys = SQLITE.is_in("k.key", missing[i:i + 500], params, pad=True)
                for key, eid, name in self._con.execute(
                    "SELECT k.key, k.entity_id, e.name FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
                    "WHERE k.ns_id = ? AND " + in_keys, params,
                ):
                    cache.add_entity(ns_id, key, name, int(eid))
                    out[key] = int(eid)
        return out

    def _entity_record(self, r: Sequence[Any]) -> EntityRecord:
        aliases = tuple(
            a for (a,) in self._con.execute(
                "SELECT alias_name FROM entity_keys WHERE entity_id = ? AND alias_name IS NOT NULL ORDER BY alias_name",
                (r[0],),
            )
        )
        return EntityRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], aliases)

    def entity_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of entity ids (cached: a name never changes and ids
        are never reused, see migration 0004). The returned mapping covers at
        least ``ids``."""
        names = self._name_cache.names  # (replaced, never shrunk, by an erasure: NameCache.forget_entity)
        missing = [i for i in ids if i not in names] if ids else []
        if missing:
            with self._lock:
                if not self._names_warm:
                    warm_after, warm_max, warm_small = self._warm_limits()
                    self._name_misses += 1
                    if self._name_misses == 1:
                        # a small store loads every name at its first miss
                        # (max(id) bounds the count: ids are never reused)
                        (top,) = self._con.execute("SELECT max(id) FROM entities").fetchone()
                        load = (top or 0) <= warm_small
                    else:
                        load = False
                    if not load and self._name_misses >= warm_after:
                        self._names_warm = True
                        (n,) = self._con.execute("SELECT count(*) FROM entities").fetchone()
                        load = n <= warm_max
                    if load:
                        self._names_warm = True
                        names.update(self._con.execute("SELECT id, name FROM entities"))
                        missing = [i for i in missing if i not in names]
                for start in range(0, len(missing), 500):
                    chunk = missing[start:start + 500]
                    for eid, name in self._con.execute(
                        "SELECT id, name FROM entities WHERE " + _in("id", chunk), chunk
                    ):
                        names[eid] = name
                # past the bound the cache moves on to a smaller copy; ``names``,
                # returned, still covers ``ids``
                self._name_cache.trim_names()
        return names

    def predicate_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of predicate ids (cached: a name never changes)."""
        names = self._pred_names
        missing = [i for i in ids if i not in names] if ids else []
        if missing:
            with self._lock:
                for pid, name in self._con.execute(
                    "SELECT id, name FROM predicates WHERE " + _in("id", missing), missing
                ):
                    names[pid] = name
        return names

    def entity(self, entity_id: int) -> EntityRecord | None:
        with self._lock:
            r = self._con.execute(
                "SELECT id, ns_id, key, name, type, properties, created_at FROM entities WHERE id = ?", (entity_id,)
            ).fetchone()
            return None if r is None else self._entity_record(r)

    def entities(self, ns_id: int) -> list[EntityRecord]:
        with self._lock:
            rows = self._con.execute(
                "SELECT id, ns_id, key, name, type, properties, created_at FROM entities WHERE ns_id = ? ORDER BY id",
                (ns_id,),
            ).fetchall()
            return [self._entity_record(r) for r in rows]

    def entities_by_key_substring(self, ns_id: int, text: str, limit: int) -> list[EntityRecord]:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock:
            rows = self._con.execute(
                "SELECT DISTINCT e.id, e.ns_id, e.key, e.name, e.type, e.properties, e.created_at "
                "FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
                "WHERE k.ns_id = ? AND (k.key LIKE ? ESCAPE '\\' OR lower(e.name) LIKE lower(?) ESCAPE '\\') "
                "ORDER BY e.id LIMIT ?",
                (ns_id, pattern, pattern, limit),
            ).fetchall()
            return [self._entity_record(r) for r in rows]

    def _pred_record(self, r: Sequence[Any]) -> PredicateRecord:
        aliases = tuple(
            a for (a,) in self._con.execute(
                "SELECT alias_name FROM predicate_keys WHERE predicate_id = ? AND alias_name IS NOT NULL "
                "ORDER BY alias_name",
                (r[0],),
            )
        )
        return PredicateRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), aliases)

    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        with self._lock:
            self._check_caches()
            cached = self._name_cache.predicate(ns_id, key)
            if cached is not None:
                return cached
            r = self._con.execute(
                "SELECT p.id, p.ns_id, p.key, p.name, p.cardinality, p.inverse, p.description, p.declared "
                "FROM predicate_keys k JOIN predicates p ON p.id = k.predicate_id WHERE k.ns_id = ? AND k.key = ?",
                (ns_id, key),
            ).fetchone()
            if r is None:
                return None
            rec = self._pred_record(r)
            self._name_cache.add_predicate(ns_id, key, rec)
            return rec

    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None:
        with self._lock:
            self._check_caches()
            cached = self._name_cache.predicate_by_id(predicate_id)
            if cached is not None:
                return cached
            r = self._con.execute(
                "SELECT id, ns_id, key, name, cardinality, inverse, description, declared FROM predicates WHERE id = ?",
                (predicate_id,),
            ).fetchone()
            if r is None:
                return None
            rec = self._pred_record(r)
            self._name_cache.add_predicate_by_id(rec)
            return rec

    def predicates(self, ns_id: int) -> list[PredicateRecord]:
        with self._lock:
            rows = self._con.execute(
                "SELECT id, ns_id, key, name, cardinality, inverse, description, declared FROM predicates "
                "WHERE ns_id = ? ORDER BY key",
                (ns_id,),
            ).fetchall()
            return [self._pred_record(r) for r in rows]
