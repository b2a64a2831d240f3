"""PostgreSQL name reads — entities, predicates, name keys, display names
and cardinalities — with the store's in-process name caches (pooled
connection, or the thread's open transaction). Mixed into
:class:`~chronomem.store.postgres.store.PostgresStore`.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..names import NameCache
from ..protocol import EntityRecord, PredicateRecord

if TYPE_CHECKING:  # pragma: no cover
    from contextlib import AbstractContextManager

    from .tx import PgTx

__all__ = ["PgNameReadsMixin"]

_ENTITY_COLS = (
    "e.id, e.ns_id, e.key, e.name, e.type, e.properties, e.created_at, ARRAY(SELECT k.alias_name FROM entity_keys k "
    "WHERE k.entity_id = e.id AND k.alias_name IS NOT NULL ORDER BY k.alias_name)"
)
_PRED_COLS = (
    "p.id, p.ns_id, p.key, p.name, p.cardinality, p.inverse, p.description, p.declared, ARRAY(SELECT k.alias_name "
    "FROM predicate_keys k WHERE k.predicate_id = p.id AND k.alias_name IS NOT NULL ORDER BY k.alias_name)"
)


class PgNameReadsMixin:
    """Name reads of :class:`~chronomem.store.postgres.store.PostgresStore`
    (which owns the attributes declared here)."""

    # per thread: ``tx``, the open write transaction, and ``conn``, the
    # connection a write or read() pinned
    _local: threading.local
    # name keys, predicates, cardinalities and display names; the store's
    # transactions get it too
    _name_cache: NameCache
    # predicate id -> display name
    _pred_names: dict[int, str]

    if TYPE_CHECKING:  # pragma: no cover - provided by PostgresStore
        def _conn(self) -> AbstractContextManager[Any]: ...

    def entity_id(self, ns_id: int, key: str) -> int | None:
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            result: int | None = tx.entity_id(ns_id, key)
            return result
        with self._conn() as conn:
            row = conn.execute(
                "SELECT entity_id FROM entity_keys WHERE ns_id = %s AND key = %s", (ns_id, key)
            ).fetchone()
            return None if row is None else int(row[0])

    def has_entities(self, ns_id: int) -> bool:
        """Whether any name key of the namespace exists (inside a write: assumed,
        as the write's pending names are its own). A namespace once seen with one
        is remembered (no round trip): ``True`` only means "look", so an erasure
        of every entity since costs a read, never an answer."""
        seen: set[int] = self.__dict__.setdefault("_with_entities", set())
        if ns_id in seen or getattr(self._local, "tx", None) is not None:
            return True
        with self._conn() as conn:
            found = conn.execute("SELECT 1 FROM entity_keys WHERE ns_id = %s LIMIT 1", (ns_id,)).fetchone()
        if found is not None:
            seen.add(ns_id)
        return found is not None

    def entity_ids_for_keys(self, ns_id: int, keys: Sequence[str]) -> dict[str, int]:
        """The entities that name keys name, in one read (the keys that name
        nothing are simply absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        tx = getattr(self._local, "tx", None)
        if tx is not None:  # inside a write: its own lookups see its pending names
            found = {key: tx.entity_id(ns_id, key) for key in wanted}
            return {key: eid for key, eid in found.items() if eid is not None}
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT key, entity_id FROM entity_keys WHERE ns_id = %s AND key = ANY(%s)", (ns_id, wanted)
            ).fetchall()
        return {key: int(eid) for key, eid in rows}

    @staticmethod
    def _entity_records(rows: Sequence[Sequence[Any]]) -> list[EntityRecord]:
        return [EntityRecord(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], int(r[6]), tuple(r[7])) for r in rows]

    def entity_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of entity ids (cached: a name never changes and ids
        are never reused). The returned mapping covers at least ``ids``."""
        cache = self._name_cache
        names = self._cached_names(cache.names, "SELECT id, name FROM entities WHERE id = ANY(%s)", ids)
        cache.trim_names()  # past the bound: a smaller copy from now on (``names`` still covers ``ids``)
        return names

    def predicate_names(self, ids: Iterable[int]) -> dict[int, str]:
        """Display names of predicate ids (cached: a name never changes)."""
        return self._cached_names(self._pred_names, "SELECT id, name FROM predicates WHERE id = ANY(%s)", ids)

    def _cached_names(self, names: dict[int, str], select: str, ids: Iterable[int]) -> dict[int, str]:
        """``names`` (id -> display name) with the ones of ``ids`` it lacks
        read by ``select`` (``id, name`` of an array of ids)."""
        missing = [i for i in ids if i not in names] if ids else []
        if missing:
            with self._conn() as conn:
                for i, name in conn.execute(select, (missing,)):
                    names[int(i)] = str(name)
        return names

    def entity(self, entity_id: int) -> EntityRecord | None:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.id = %s", (entity_id,)).fetchall()
            got = self._entity_records(rows)
            return got[0] if got else None

    def entities(self, ns_id: int) -> list[EntityRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.ns_id = %s ORDER BY e.id", (ns_id,)
            ).fetchall()
            return self._entity_records(rows)

    def entities_by_key_substring(self, ns_id: int, text: str, limit: int) -> list[EntityRecord]:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.id IN ("
                "SELECT k.entity_id FROM entity_keys k JOIN entities e2 ON e2.id = k.entity_id "
                "WHERE k.ns_id = %s AND (lower(k.key) LIKE lower(%s) OR lower(e2.name) LIKE lower(%s))"
                ") ORDER BY e.id LIMIT %s",
                (ns_id, pattern, pattern, limit),
            ).fetchall()
            return self._entity_records(rows)

    @staticmethod
    def _pred_records(rows: Sequence[Sequence[Any]]) -> list[PredicateRecord]:
        return [
            PredicateRecord(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6], bool(r[7]), tuple(r[8]))
            for r in rows
        ]

    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        tx: PgTx | None = getattr(self._local, "tx", None)
        in_tx = tx is not None
        if in_tx:
            cached = self._name_cache.predicate(ns_id, key)
            if cached is not None:
                return cached
        # inside a write: the raw connection (predicates never wait on the
        # transaction's pending entity rows)
        with nullcontext(tx._conn) if tx is not None else self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_PRED_COLS} FROM predicate_keys pk JOIN predicates p ON p.id = pk.predicate_id "
                "WHERE pk.ns_id = %s AND pk.key = %s",
                (ns_id, key),
            ).fetchall()
            got = self._pred_records(rows)
        if not got:
            return None
        if in_tx:
            self._name_cache.add_predicate(ns_id, key, got[0])
        return got[0]

    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None:
        """Cached; the cache is checked against the names version at the start
        of every write, so inside a write it is exact (outside, another
        process's predicate change shows after this process's next write)."""
        cached = self._name_cache.predicate_by_id(predicate_id)
        if cached is not None:
            return cached
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_PRED_COLS} FROM predicates p WHERE p.id = %s", (predicate_id,)).fetchall()
            got = self._pred_records(rows)
        if not got:
            return None
        self._name_cache.add_predicate_by_id(got[0])
        return got[0]

    def predicates(self, ns_id: int) -> list[PredicateRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_PRED_COLS} FROM predicates p WHERE p.ns_id = %s ORDER BY p.key", (ns_id,)
            ).fetchall()
            return self._pred_records(rows)

    def _cardinality(self, predicate_id: int) -> str:
        got = self._name_cache.cardinality(predicate_id)
        if got is None:
            with self._conn() as conn:
                row = conn.execute("SELECT cardinality FROM predicates WHERE id = %s", (predicate_id,)).fetchone()
            got = str(row[0]) if row else "many"
            self._name_cache.add_cardinality(predicate_id, got)
        return got
