"""The fact-read SQL both backends run, composed once here.

A backend supplies its :class:`~chronomem.store.sql.dialect.Dialect` (the
placeholder, how a membership test binds its values, the always-false
condition); everything else — the two time axes, the direction branches,
the order — is shared, so both backends answer every
:class:`~chronomem.store.protocol.FactQuery` identically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...core.time import MAX_US
from ..protocol import FACT_COLUMNS, KEY_COLUMNS, KEY_OBJECT_COLUMNS, READ_COLUMNS, FactQuery, Row
from .dialect import Dialect

__all__ = ["KEYS", "READS", "SELECT_FACT", "SELECT_READ", "FactHead", "caller_sorts", "compose_fact_sql",
           "cutoff_shape", "distinct_rows", "limit_cutoff"]

# Fact versions with their three names (the Row shape: FACT_COLUMNS + names).
SELECT_FACT = (
    "SELECT " + ", ".join("f." + c for c in FACT_COLUMNS) + ", s.name, p.name, o.name "
    "FROM facts f JOIN entities s ON s.id = f.subject_id JOIN predicates p ON p.id = f.predicate_id "
    "LEFT JOIN entities o ON o.id = f.object_id"
)
# The read path: READ_COLUMNS, no joins (names come from in-process caches).
SELECT_READ = "SELECT " + ", ".join("f." + c for c in READ_COLUMNS) + " FROM facts f"

# the order of every read; a two-branch UNION ALL can only name it by column positions
ORDER_COLUMNS = ("valid_from", "fact_id", "version")


@dataclass(frozen=True, eq=False)
class FactHead:
    """The ``SELECT ... FROM facts f`` part of a fact read and the positions
    of :data:`ORDER_COLUMNS` in it (compared and hashed by identity)."""

    sql: str
    union_order: str

    @classmethod
    def of(cls, sql: str, columns: Sequence[str]) -> FactHead:
        return cls(sql, ", ".join(str(columns.index(c) + 1) for c in ORDER_COLUMNS))


READS = FactHead.of(SELECT_READ, READ_COLUMNS)
#: the head of a ``keys_only`` read (chosen by :func:`compose_fact_sql` itself)
KEYS = FactHead.of("SELECT " + ", ".join("f." + c for c in KEY_COLUMNS) + " FROM facts f", KEY_COLUMNS)
#: the head of a ``keys_only`` read with ``key_objects`` (no fact_id: a LIMITed
#: two-branch read of it is ordered by valid_from, rowid)
KEY_OBJECTS = FactHead("SELECT " + ", ".join("f." + c for c in KEY_OBJECT_COLUMNS) + " FROM facts f",
                       f"{KEY_OBJECT_COLUMNS.index('valid_from') + 1}, {KEY_OBJECT_COLUMNS.index('rowid') + 1}")


def entity_by_key(d: Dialect) -> str:
    """The id of the entity a name key names in a namespace (parameters: ns_id, key)."""
    return f"SELECT entity_id FROM entity_keys WHERE ns_id = {d.ph} AND key = {d.ph}"


def caller_sorts(q: FactQuery) -> bool:
    """Whether a backend may run ``q`` without ``ORDER BY`` and sort the rows
    itself (by ``valid_from, rowid``): one entity's outgoing facts, no LIMIT.
    Its index (subject, system_to, predicate, valid_from) does not give that
    order, so SQLite would run a sorter, which costs more than sorting the
    handful of rows in Python."""
    return q.limit is None and q.direction == "out" and (q.subject_ids is not None or q.subject_key is not None)


def compose_fact_sql(q: FactQuery, fact_head: FactHead, d: Dialect, valid_from_max: int | None = None,
                     order: bool = True) -> tuple[str, list[Any]]:
    """SQL and parameters for ``q`` in dialect ``d``, selecting ``fact_head``
    (:data:`READS`, the read path's). ``valid_from_max``
    adds ``f.valid_from <= valid_from_max``: a backend that knows the first
    ``q.limit`` rows all start by then uses it so the sort before the LIMIT
    sees only those rows, not all of a busy entity's. ``order=False``: leave
    out the ``ORDER BY`` where :func:`caller_sorts` allows it."""
    if q.keys_only:
        # unordered: the caller orders them
        fact_head, order = KEY_OBJECTS if q.key_objects else KEYS, q.limit is not None
    head, ph, in_ = fact_head.sql, d.ph, d.is_in
    common: list[str] = []
    cparams: list[Any] = []
    if valid_from_max is not None:
        common.append(f"f.valid_from <= {ph}")
        cparams.append(valid_from_max)
    if not q.all_versions:
        if q.known_at is None:
            common.append(f"f.system_to = {MAX_US}")
        else:
            common.append(f"f.system_from <= {ph} AND f.system_to > {ph}")
            cparams += [q.known_at, q.known_at]
    if q.as_of is not None:
        common.append(f"f.valid_from <= {ph} AND f.valid_to > {ph}")
        cparams += [q.as_of, q.as_of]
    if q.overlap is not None:
        common.append(f"f.valid_from < {ph} AND f.valid_to > {ph}")
        cparams += [q.overlap[1], q.overlap[0]]
    if q.ended_by is not None:
        common.append(f"f.valid_to <= {ph}")
        cparams.append(q.ended_by)
    if q.recorded_by is not None:
        common.append(f"f.recorded_by = {ph}")
        cparams.append(q.recorded_by)
    if q.entity_objects:
        common.append("f.object_id IS NOT NULL")
    if q.predicate_key is not None:
        common.append(f"f.predicate_id = (SELECT predicate_id FROM predicate_keys WHERE ns_id = {ph} AND key = {ph})")
        cparams += [q.ns_id, q.predicate_key]
    if q.fact_ids is not None:
        common.append(in_("f.fact_id", q.fact_ids, cparams))
    if q.rowids is not None:
        common.append(in_("f.rowid", q.rowids, cparams))
    branches: list[tuple[list[str], list[Any]]] = []

    def with_object(where: list[str], params: list[Any]) -> tuple[list[str], list[Any]]:
        """An outgoing branch: ``where`` plus the object filters."""
        if q.object_id is not None:
            where.append(f"f.object_id = {ph}")
            params.append(q.object_id)
        if q.object_lit is not None:
            where.append(f"f.object_lit = {ph}")
            params.append(q.object_lit)
        if q.object_in is not None:
            ids, lits = q.object_in
            alts = ([in_("f.object_id", ids, params)] if ids else []) + (
                [in_("f.object_lit", lits, params)] if lits else [])
            where.append("(" + " OR ".join(alts) + ")" if alts else d.false)
        return where, params

    def entity(column: str, params: list[Any]) -> str:
        """``column`` is the query's entity (its ids, or the one its key names)."""
        if q.subject_key is not None:
            params += [q.ns_id, q.subject_key]
            return f"{column} = ({entity_by_key(d)})"
        assert q.subject_ids is not None
        return in_(column, q.subject_ids, params)

    if q.subject_ids is None and q.subject_key is None:
        branches.append(with_object([f"f.ns_id = {ph}"], [q.ns_id]))
    else:
        if q.direction in ("out", "both"):
            params: list[Any] = []
            branches.append(with_object([entity("f.subject_id", params)], params))
        if q.direction in ("in", "both") and q.object_lit is None:
            params = []
            where = [entity("f.object_id", params)]
            if q.object_id is not None:
                where.append(f"f.subject_id = {ph}")
                params.append(q.object_id)
            if q.direction == "both":
                # a self-loop appears once
                where.append("NOT (" + entity("f.subject_id", params) + ")")
            branches.append((where, params))
    parts: list[str] = []
    all_params: list[Any] = []
    for where, params in branches:
        parts.append(head + " WHERE " + " AND ".join(where + common))
        all_params += params + cparams
    if not parts:
        return f"{head} WHERE {d.false}", []
    if len(parts) > 1:
        sql = "SELECT * FROM (" + " UNION ALL ".join(parts) + ") AS u" + (
            f" ORDER BY {fact_head.union_order}" if order or not q.keys_only else "")
    elif order or not (caller_sorts(q) or q.keys_only):
        # (valid_from, rowid) is the index order of predicate-wide reads:
        # no sort step for them
        sql = parts[0] + " ORDER BY f.valid_from, f.rowid"
    else:
        sql = parts[0]
    if q.limit is not None:
        sql += f" LIMIT {ph}"
        all_params.append(q.limit)
        if q.offset:
            sql += f" OFFSET {ph}"
            all_params.append(q.offset)
    return sql, all_params


def distinct_rows(*batches: Sequence[Sequence[Any]]) -> list[Row]:
    """Rows from several ``SELECT_FACT`` results, each version once, in order."""
    seen: set[int] = set()
    out: list[Row] = []
    for batch in batches:
        for r in batch:
            if r[0] not in seen:
                seen.add(r[0])
                out.append(Row(*r))
    return out


# an entity with more predicates than this gets no cut-off (the walk would cost more)
CUTOFF_MAX_PREDICATES = 256


def cutoff_shape(q: FactQuery) -> bool:
    """Whether ``q`` is a LIMITed "believed now" read of one subject's facts
    (no other filter): the shape :func:`limit_cutoff` serves."""
    one_subject = q.subject_key is not None if q.subject_ids is None else len(q.subject_ids) == 1
    return not (q.limit is None or q.limit < 1 or not one_subject or q.direction == "in"
                or q.known_at is not None or q.all_versions or q.overlap is not None or q.ended_by is not None
                or q.recorded_by is not None or q.predicate_key is not None or q.fact_ids is not None
                or q.rowids is not None or q.object_id is not None
                or q.object_lit is not None or q.keys_only or q.entity_objects or q.offset != 0)


def limit_cutoff(q: FactQuery, execute: Callable[[str, list[Any]], Sequence[Sequence[Any]]],
                 d: Dialect) -> int | None:
    """For a LIMITed read of one entity's believed facts (``recall``'s read):
    a ``valid_from`` by which the first ``q.limit`` rows surely start, found
    without sorting all of a busy entity's rows. Per predicate, the
    ``facts_subject`` index yields the subject's rows in ``valid_from``
    order, so each predicate's first ``limit`` matches cost an index walk;
    the ``limit``-th smallest of those bounds the answer (incoming rows can
    only move it earlier). ``None``: no bound (another shape, fewer rows than
    the limit, or too many predicates). The caller runs it and the read in
    one snapshot; ``execute(sql, params)`` returns the rows."""
    if not cutoff_shape(q) or q.limit is None:
        return None
    if q.subject_ids is not None:
        sid = q.subject_ids[0]
    else:
        got = execute(entity_by_key(d), [q.ns_id, q.subject_key])
        if not got:
            return None
        sid = int(got[0][0])
    ph = d.ph
    step = (f"SELECT min(predicate_id) FROM facts WHERE subject_id = {ph} AND system_to = {MAX_US} "
            f"AND predicate_id > {ph}")
    preds: list[int] = []
    last = -(2**63)
    while len(preds) <= CUTOFF_MAX_PREDICATES:
        rows = execute(step, [sid, last])
        if not rows or rows[0][0] is None:
            break
        last = int(rows[0][0])
        preds.append(last)
    if len(preds) > CUTOFF_MAX_PREDICATES:
        return None
    walk = (f"SELECT f.valid_from FROM facts f WHERE f.subject_id = {ph} AND f.system_to = {MAX_US} "
            f"AND f.predicate_id = {ph}"
            + (f" AND f.valid_from <= {ph} AND f.valid_to > {ph}" if q.as_of is not None else "")
            + f" ORDER BY f.valid_from LIMIT {ph}")
    starts: list[int] = []
    for pid in preds:
        params: list[Any] = [sid, pid] + ([q.as_of, q.as_of] if q.as_of is not None else []) + [q.limit]
        starts.extend(int(r[0]) for r in execute(walk, params))
    if len(starts) < q.limit:
        return None
    starts.sort()
    return starts[q.limit - 1]
