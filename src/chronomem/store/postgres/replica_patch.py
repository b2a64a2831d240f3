"""A pinned read the standby answered, made the primary's answer.

The standby (:mod:`.replica`) answers a read "as known at" T only once it
has replayed every commit stamped at or before T, so it finds exactly the
versions the primary believed at T, with the same content. Two things later
transactions do to those rows can still be missing there (the standby's
replay lag; ``docs/postgres.md``, "Read replica"):

* a **close**: ``UPDATE facts SET system_to, close_kind, closed_by`` on a
  version that was still believed (``system_to = MAX_US``). It is the only
  update of a fact row, and it happens at most once per row (the statement
  requires ``system_to = MAX_US``): a version the standby shows closed is
  closed the same way on the primary.
* an **erasure**: ``DELETE`` of every version of a fact; the rows are gone.

So after the standby's rows, one round trip to the primary, keyed by
primary key (``rowid``; ``(fact_id, version)`` for a ``keys_only`` read,
the ``facts_version`` unique index), asks for exactly the rows that differ:
those the standby showed open that the primary has closed since (with their
closing columns), and those the primary no longer has. A close does not
change which versions a read at T selects (``system_to`` moves from
``MAX_US`` to a time after T), so membership changes only by erasure:

* without ``LIMIT``, dropping the erased rows leaves the primary's rows in
  the primary's order (the order's columns never change);
* with ``LIMIT`` (offset 0), rows that all still exist are also the
  primary's first rows (every row the primary orders before the last of
  them is one the standby had too); if one was erased the primary would
  show the next one instead, so :func:`patch` returns ``None`` and the
  primary runs the read (erasures are rare);
* with an SQL ``OFFSET`` (a deep page's narrow read) the skipped rows are
  not seen: the same round trip asks whether the namespace has an erasure
  stamped after the settled time the standby is known to have replayed; if
  so, the primary runs the read.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core.time import MAX_US
from ..protocol import KEY_COLUMNS, KEY_OBJECT_COLUMNS, READ_COLUMNS, FactQuery

__all__ = ["Patched", "patch"]

Execute = Callable[[str, Sequence[Any]], Sequence[Sequence[Any]]]


class _Shape:
    """Where a read's key and closing columns are in its rows."""

    __slots__ = ("key", "system_to", "close_kind", "closed_by", "sql")

    def __init__(self, columns: Sequence[str], key: Sequence[str]) -> None:
        def at(c: str) -> int | None:
            return columns.index(c) if c in columns else None

        self.key = tuple(columns.index(c) for c in key)
        self.system_to, self.close_kind, self.closed_by = at("system_to"), at("close_kind"), at("closed_by")
        if key == ("rowid",):
            keys, match = "unnest(%s::bigint[], %s::boolean[]) AS r(k, open)", "f.rowid = r.k"
            out = "r.k, NULL::integer"
        else:  # the facts_version index (C collation)
            keys = "unnest(%s::text[], %s::integer[], %s::boolean[]) AS r(k, v, open)"
            match, out = 'f.fact_id = r.k COLLATE "C" AND f.version = r.v', "r.k::text, r.v"
        # rows missing on the primary (erased: system_to is NOT NULL in the
        # table, NULL here) and rows open on the standby that the primary has
        # closed since; nothing for a row that is the same (most of them)
        self.sql = (f"SELECT {out}, f.system_to, f.close_kind, f.closed_by FROM {keys} "
                    f"LEFT JOIN facts f ON {match} "
                    f"WHERE f.rowid IS NULL OR (r.open AND f.system_to <> {MAX_US})")


_READ = _Shape(READ_COLUMNS, ("rowid",))
_KEYS = _Shape(KEY_COLUMNS, ("fact_id", "version"))
_KEY_OBJECTS = _Shape(KEY_OBJECT_COLUMNS, ("rowid",))

# a row (key NULL) when the namespace has an erasure stamped after a time
_ERASED_SINCE = (" UNION ALL SELECT NULL, NULL, NULL, NULL, NULL WHERE EXISTS "
                 "(SELECT 1 FROM erasures WHERE ns_id = %s AND erased_at > %s)")


class Patched:
    """What :func:`patch` did: ``closed`` rows took the primary's closing
    columns, ``erased`` rows were dropped."""

    __slots__ = ("rows", "closed", "erased")

    def __init__(self, rows: list[tuple[Any, ...]], closed: int, erased: int) -> None:
        self.rows, self.closed, self.erased = rows, closed, erased


def patch(q: FactQuery, rows: list[tuple[Any, ...]], execute: Execute, replayed_time: int) -> Patched | None:
    """The primary's answer to ``q`` from the ``rows`` the standby gave for
    it, with one ``execute`` on the primary; ``None`` when only the primary
    can answer (an erasure changed which rows a ``LIMIT`` or ``OFFSET``
    selects). ``replayed_time``: a settled time the standby had replayed
    (every erasure stamped at or before it is on the standby)."""
    if not rows:  # nothing to close or erase, and nothing can be added at a settled time
        return Patched(rows, 0, 0)
    shape = (_KEY_OBJECTS if q.key_objects else _KEYS) if q.keys_only else _READ
    sto = shape.system_to
    open_ = [False] * len(rows) if sto is None else [r[sto] == MAX_US for r in rows]
    if len(shape.key) == 1:
        (i,) = shape.key
        keys: list[Any] = [r[i] for r in rows]
        params: list[Any] = [keys, open_]
    else:
        i, j = shape.key
        keys = [(r[i], r[j]) for r in rows]
        params = [[k[0] for k in keys], [k[1] for k in keys], open_]
    sql = shape.sql
    if q.offset:
        sql += _ERASED_SINCE
        params += [q.ns_id, replayed_time]
    got = execute(sql, params)
    if not got:
        return Patched(rows, 0, 0)
    gone: set[Any] = set()
    closes: dict[Any, tuple[Any, Any, Any]] = {}
    for k, v, system_to, close_kind, closed_by in got:
        if k is None:
            return None  # an erasure the OFFSET may have skipped over
        key = k if len(shape.key) == 1 else (k, v)
        if system_to is None:
            gone.add(key)
        else:
            closes[key] = (system_to, close_kind, closed_by)
    if gone and q.limit is not None:
        return None  # the primary's page has other rows in it
    out: list[tuple[Any, ...]] = []
    for r, key in zip(rows, keys, strict=True):
        if key in gone:
            continue
        c = closes.get(key)
        if c is not None:
            row = list(r)
            for at, value in zip((sto, shape.close_kind, shape.closed_by), c, strict=True):
                if at is not None:
                    row[at] = value
            r = tuple(row)
        out.append(r)
    return Patched(out, len(closes), len(gone))
