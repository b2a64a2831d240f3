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

    def entity_keys(self, ns_id: int) -> list[tuple[str, int, str | None]]:
        """Every name key of a namespace: ``(key, entity_id, alias_name)``."""
        (rows,) = self._fetch((self._rows_sql.entity_keys, (ns_id,)))
        return [(str(r[0]), int(r[1]), r[2]) for r in rows]
