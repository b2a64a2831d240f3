"""Store reads both backends run with the same SQL, written once here.

A backend mixes in :class:`RowReadsMixin`, sets the class attribute
``_rows_sql = StoreSQL(its dialect)``, and implements
:meth:`RowReadsMixin._fetch`: run statements under its own locking and
connection handling and return their rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Iterator, Sequence

from ...core.time import MAX_US
from ..protocol import Row
from .dialect import Dialect
from .facts import SELECT_FACT, distinct_rows

__all__ = ["RowReadsMixin", "StoreSQL"]


class StoreSQL:
    """The shared read statements in dialect ``d``."""

    def __init__(self, d: Dialect) -> None:
        ph = d.ph
        self.newest_rows = f"{SELECT_FACT} WHERE f.ns_id = {ph} ORDER BY f.rowid DESC LIMIT {ph}"
        self.closed_rows = (
            f"{SELECT_FACT} WHERE f.ns_id = {ph} AND f.system_to < {MAX_US} ORDER BY f.system_to DESC LIMIT {ph}"
        )
        self.rows_after = f"{SELECT_FACT} WHERE f.ns_id = {ph} AND f.rowid > {ph} ORDER BY f.rowid LIMIT {ph}"
        self.merge_operations = (
            f"SELECT at, payload, undone_at FROM operations WHERE ns_id = {ph} AND kind = 'merge' ORDER BY at"
        )
        self.operations = f"SELECT id, kind, at, payload, undone_at FROM operations WHERE ns_id = {ph} ORDER BY at, id"
        self.entity_keys = f"SELECT key, entity_id, alias_name FROM entity_keys WHERE ns_id = {ph} ORDER BY key"
        # a shortened fact id: a prefix walks the fact_id index as a range (both
        # backends compare fact ids by code point: SQLite BINARY, PostgreSQL
        # COLLATE "C"); a suffix (the short id tables print) has no index to use
        self.fact_ids_by_prefix = (
            f"SELECT DISTINCT fact_id FROM facts WHERE ns_id = {ph} AND fact_id >= {ph} AND fact_id < {ph} "
            f"ORDER BY fact_id LIMIT {ph}"
        )
        self.fact_ids_from = (
            f"SELECT DISTINCT fact_id FROM facts WHERE ns_id = {ph} AND fact_id >= {ph} ORDER BY fact_id LIMIT {ph}"
        )
        self.fact_ids_by_suffix = (
            "SELECT DISTINCT fact_id FROM facts WHERE ns_id = {ph} AND length(fact_id) >= {n} "
            "AND substr(fact_id, length(fact_id) - {n} + 1) = {ph} ORDER BY fact_id LIMIT {ph}"
        ).replace("{ph}", ph)


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


class RowReadsMixin(ABC):
    """Fact-version, operation and name-key reads of a store."""

    _rows_sql: ClassVar[StoreSQL]

    @abstractmethod
    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]:
        """Every row of each ``(sql, params)``, run one after the other on one
        connection (no write of this store's process in between)."""

    def recent_rows(self, ns_id: int, limit: int) -> list[Row]:
        """Versions with the latest system-time events: the ``limit`` newest
        recorded and the ``limit`` most recently closed (may overlap)."""
        q = self._rows_sql
        newest, closed = self._fetch((q.newest_rows, (ns_id, limit)), (q.closed_rows, (ns_id, limit)))
        return distinct_rows(newest, closed)

    def iter_rows(self, ns_id: int, batch: int = 10000) -> Iterator[Row]:
        last = -1
        while True:
            (rows,) = self._fetch((self._rows_sql.rows_after, (ns_id, last, batch)))
            if not rows:
                return
            for r in rows:
                yield Row(*r)
            last = rows[-1][0]

    def merge_operations(self, ns_id: int) -> list[tuple[int, str, int | None]]:
        """``(at, payload, undone_at)`` of every merge in the namespace, oldest first."""
        (rows,) = self._fetch((self._rows_sql.merge_operations, (ns_id,)))
        return [(int(r[0]), str(r[1]), _int_or_none(r[2])) for r in rows]

    def operations(self, ns_id: int) -> list[tuple[str, str, int, str, int | None]]:
        """``(id, kind, at, payload, undone_at)`` of every operation in the namespace, oldest first."""
        (rows,) = self._fetch((self._rows_sql.operations, (ns_id,)))
        return [(str(r[0]), str(r[1]), int(r[2]), str(r[3]), _int_or_none(r[4])) for r in rows]

    def fact_ids_matching(self, ns_id: int, fragment: str, limit: int) -> list[str]:
        """The distinct fact ids of ``ns_id`` that start or end with
        ``fragment`` (case-sensitive), in id order, at most ``limit``."""
        if not fragment:
            return []
        q = self._rows_sql
        last = ord(fragment[-1])
        prefix: tuple[str, Sequence[Any]]
        if last < 0x10FFFF:
            prefix = (q.fact_ids_by_prefix, (ns_id, fragment, fragment[:-1] + chr(last + 1), limit))
        else:  # no code point follows the last one: read on from the fragment, keep its prefixes
            prefix = (q.fact_ids_from, (ns_id, fragment, limit))
        # the length is a literal: PostgreSQL has no substr(text, bigint) for a bound int
        suffix = (q.fact_ids_by_suffix.format(n=len(fragment)), (ns_id, fragment, limit))
        starts, ends = self._fetch(prefix, suffix)
        found = {str(r[0]) for r in starts if str(r[0]).startswith(fragment)}
        found.update(str(r[0]) for r in ends)
        return sorted(found)[:limit]

    def entity_keys(self, ns_id: int) -> list[tuple[str, int, str | None]]:
        """Every name key of a namespace: ``(key, entity_id, alias_name)``."""
        (rows,) = self._fetch((self._rows_sql.entity_keys, (ns_id,)))
        return [(str(r[0]), int(r[1]), r[2]) for r in rows]
