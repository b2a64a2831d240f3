"""The SQLite fact read path (``Store.read_sql`` / ``Store.query_tuples``)
and its SQL shape cache, mixed into
:class:`~chronomem.store.sqlite.store.SQLiteStore`.

The SQL text of a read depends only on the query's shape, so it is composed
once per shape (:func:`~chronomem.store.sql.facts.compose_fact_sql`) and only
the parameters are rebuilt (:func:`_query_params`) for every read.
"""

from __future__ import annotations

import sqlite3
import threading
from operator import itemgetter
from typing import Any, Sequence

from ..protocol import READ_COLUMNS, FactQuery
from ..sql.dialect import SQLITE
from ..sql.facts import READS, caller_sorts, compose_fact_sql, cutoff_shape, limit_cutoff

__all__ = ["FactReadsMixin"]

# statement shapes the cache keeps at most
_SQL_CACHE_MAX = 512


class FactReadsMixin:
    """The read path of :class:`~chronomem.store.sqlite.store.SQLiteStore`
    (which owns the attributes declared here)."""

    _lock: threading.RLock
    _con: sqlite3.Connection
    # the read path's cursor (used under _lock; a new cursor per statement
    # costs more than the statement's own overhead)
    _read_cur: sqlite3.Cursor
    # query shape -> SQL text
    _sql_cache: dict[tuple[Any, ...], str]

    def read_sql(self, q: FactQuery) -> tuple[str, list[Any]]:
        """The SQL and parameters :meth:`query_tuples` runs for ``q``."""
        if q.object_in is not None or q.offset:  # rare shapes (lists of varying length, deep pages): no cache slot
            return self._compose_sql(q)
        # The SQL text depends only on the query's shape: build it once per shape.
        shape = (
            q.all_versions, q.known_at is None, q.as_of is None, q.overlap is None,
            None if q.fact_ids is None else len(q.fact_ids),
            None if q.subject_ids is None else len(q.subject_ids),
            q.object_id is None, q.object_lit is None, q.direction, q.limit is None,
            q.subject_key is None, q.predicate_key is None, q.ended_by is None, q.keys_only,
            q.recorded_by is None,
            q.entity_objects, q.key_objects, None if q.rowids is None else len(q.rowids),
        )
        sql = self._sql_cache.get(shape)
        if sql is None:
            sql, params = self._compose_sql(q)
            if len(self._sql_cache) < _SQL_CACHE_MAX:
                self._sql_cache[shape] = sql
            return sql, params
        return sql, _query_params(q)

    def _compose_sql(self, q: FactQuery) -> tuple[str, list[Any]]:
        # the read path sorts one entity's rows itself (see caller_sorts)
        return compose_fact_sql(q, READS, SQLITE, order=False)

    def query_tuples(self, q: FactQuery) -> list[tuple[Any, ...]]:
        """The read path: raw tuples in ``READ_COLUMNS`` order, no names
        (resolve them with :meth:`entity_names` / :meth:`predicate_names`)."""
        with self._lock:
            if q.limit is None or not cutoff_shape(q):
                sql, params = self.read_sql(q)
                rows: list[tuple[Any, ...]] = self._read_cur.execute(sql, params).fetchall()
                if len(rows) > 1 and caller_sorts(q) and not q.keys_only:
                    rows.sort(key=_READ_ORDER)
                return rows
            # the cut-off and the read must see one snapshot
            own = not self._con.in_transaction
            if own:
                self._con.execute("BEGIN")
            try:
                cutoff = limit_cutoff(q, lambda sql, params: self._con.execute(sql, params).fetchall(), SQLITE)
                if cutoff is None:
                    sql, params = self.read_sql(q)
                else:
                    sql, params = compose_fact_sql(q, READS, SQLITE, cutoff)
                return self._con.execute(sql, params).fetchall()
            finally:
                if own:
                    self._con.execute("COMMIT")


def _query_params(q: FactQuery) -> list[Any]:
    """The parameters of :meth:`FactReadsMixin._compose_sql`'s SQL, in its order."""
    cparams: list[Any] = []
    if not q.all_versions and q.known_at is not None:
        cparams += [q.known_at, q.known_at]
    if q.as_of is not None:
        cparams += [q.as_of, q.as_of]
    if q.overlap is not None:
        cparams += [q.overlap[1], q.overlap[0]]
    if q.ended_by is not None:
        cparams.append(q.ended_by)
    if q.recorded_by is not None:
        cparams.append(q.recorded_by)
    if q.predicate_key is not None:
        cparams += [q.ns_id, q.predicate_key]
    if q.fact_ids is not None:
        cparams += q.fact_ids
    if q.rowids is not None:
        cparams += q.rowids
    out: list[Any] = []
    if q.subject_ids is None and q.subject_key is None:
        out.append(q.ns_id)
        if q.object_id is not None:
            out.append(q.object_id)
        if q.object_lit is not None:
            out.append(q.object_lit)
        out += cparams
    else:
        entity: Sequence[Any] = (q.ns_id, q.subject_key) if q.subject_ids is None else q.subject_ids
        if q.direction in ("out", "both"):
            out += entity
            if q.object_id is not None:
                out.append(q.object_id)
            if q.object_lit is not None:
                out.append(q.object_lit)
            out += cparams
        if q.direction in ("in", "both") and q.object_lit is None:
            out += entity
            if q.object_id is not None:
                out.append(q.object_id)
            if q.direction == "both":
                out += entity
            out += cparams
    if q.limit is not None:
        out.append(q.limit)
    return out


# (valid_from, rowid) of a READ_COLUMNS tuple: the order of every read
_READ_ORDER = itemgetter(READ_COLUMNS.index("valid_from"), READ_COLUMNS.index("rowid"))
