"""The fact-read SQL both backends run, composed once here.

A backend supplies its placeholder (``?`` or ``%s``) and how it writes a
membership test (``IN (?, ?)`` with expanded parameters, or ``= ANY(%s)``
with one array parameter); everything else — the two time axes, the
direction branches, the order — is shared, so both backends answer every
:class:`~chronomem.store.base.FactQuery` identically.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..timeutil import MAX_US
from .base import READ_COLUMNS, FactQuery, Row

__all__ = ["SELECT_FACT", "SELECT_READ", "InClause", "compose_fact_sql", "distinct_rows"]

# Fact versions with their three names (the Row shape: FACT_COLUMNS + names).
SELECT_FACT = (
    "SELECT f.rowid, f.fact_id, f.version, f.ns_id, f.subject_id, f.predicate_id, f.object_id, "
    "f.object_lit, f.valid_from, f.valid_from_prec, f.valid_to, f.valid_to_prec, f.system_from, "
    "f.system_to, f.confidence, f.source, f.episode_id, f.properties, f.invalidated_by, "
    "f.close_kind, f.closed_by, s.name, p.name, o.name "
    "FROM facts f JOIN entities s ON s.id = f.subject_id JOIN predicates p ON p.id = f.predicate_id "
    "LEFT JOIN entities o ON o.id = f.object_id"
)
# The read path: READ_COLUMNS, no joins (names come from in-process caches).
SELECT_READ = "SELECT " + ", ".join("f." + c for c in READ_COLUMNS) + " FROM facts f"

# (column, values, params) -> SQL text; appends its parameters to params
InClause = Callable[[str, Sequence[Any], list[Any]], str]


def compose_fact_sql(q: FactQuery, head: str, union_order: str, ph: str, in_: InClause,
                     nothing: str, valid_from_max: int | None = None) -> tuple[str, list[Any]]:
    """SQL and parameters for ``q``. ``head`` is the ``SELECT ... FROM facts f``
    part; ``union_order`` orders a two-branch ``UNION ALL`` by column number;
    ``nothing`` is the backend's always-false condition. ``valid_from_max``
    adds ``f.valid_from <= valid_from_max``: a backend that knows the first
    ``q.limit`` rows all start by then uses it so the sort before the LIMIT
    sees only those rows, not all of a busy entity's."""
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
    if q.predicate_ids is not None:
        common.append(in_("f.predicate_id", q.predicate_ids, cparams))
    if q.fact_ids is not None:
        common.append(in_("f.fact_id", q.fact_ids, cparams))
    branches: list[tuple[list[str], list[Any]]] = []
    if q.subject_ids is None:
        params: list[Any] = [q.ns_id]
        where = [f"f.ns_id = {ph}"]
        if q.object_id is not None:
            where.append(f"f.object_id = {ph}")
            params.append(q.object_id)
        if q.object_lit is not None:
            where.append(f"f.object_lit = {ph}")
            params.append(q.object_lit)
        branches.append((where, params))
    else:
        if q.direction in ("out", "both"):
            params = []
            where = [in_("f.subject_id", q.subject_ids, params)]
            if q.object_id is not None:
                where.append(f"f.object_id = {ph}")
                params.append(q.object_id)
            if q.object_lit is not None:
                where.append(f"f.object_lit = {ph}")
                params.append(q.object_lit)
            branches.append((where, params))
        if q.direction in ("in", "both") and q.object_lit is None:
            params = []
            where = [in_("f.object_id", q.subject_ids, params)]
            if q.object_id is not None:
                where.append(f"f.subject_id = {ph}")
                params.append(q.object_id)
            if q.direction == "both":
                # a self-loop appears once
                where.append("NOT (" + in_("f.subject_id", q.subject_ids, params) + ")")
            branches.append((where, params))
    parts: list[str] = []
    all_params: list[Any] = []
    for where, params in branches:
        parts.append(head + " WHERE " + " AND ".join(where + common))
        all_params += params + cparams
    if not parts:
        return f"{head} WHERE {nothing}", []
    if len(parts) > 1:
        sql = "SELECT * FROM (" + " UNION ALL ".join(parts) + f") AS u ORDER BY {union_order}"
    else:
        # (valid_from, rowid) is the index order of predicate-wide reads:
        # no sort step for them
        sql = parts[0] + " ORDER BY f.valid_from, f.rowid"
    if q.limit is not None:
        sql += f" LIMIT {ph}"
        all_params.append(q.limit)
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
