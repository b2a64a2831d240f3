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

So after the standby's rows, one statement on the primary (one round trip,
one snapshot), keyed by primary key (``rowid``; ``(fact_id, version)`` for
a ``keys_only`` read, the ``facts_version`` unique index), returns one row:
how many of those rows still exist, and the closing columns of those closed
after t_r, the latest settled time the standby is known to have replayed (a
close stamped at or before t_r committed before the standby's replay
position, so the standby has it already). Usually that is a count equal to
the number of rows and no close: the standby's rows are the answer. A close
does not change which versions a read at T selects (``system_to`` moves
from ``MAX_US`` to a time after T), so membership changes only by erasure:

* without ``LIMIT``, a second statement names the rows that still exist
  (with the closes again, from its own snapshot); dropping the others
  leaves the primary's rows in the primary's order (the order's columns
  never change);
* with ``LIMIT`` (offset 0), rows that all still exist are also the
  primary's first rows (every row the primary orders before the last of
  them is one the standby had too); if one was erased the primary would
  show the next one instead, so :func:`patch` returns ``None`` and the
  primary runs the read (erasures are rare);
* with an SQL ``OFFSET`` (a deep page's narrow read) the skipped rows are
  not seen: the same statement asks whether the namespace has an erasure
  stamped after t_r (``erasures``, written by the erasing transaction); if
  so, the primary runs the read.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ...core.time import MAX_US
from ..protocol import KEY_COLUMNS, KEY_OBJECT_COLUMNS, READ_COLUMNS, FactQuery

__all__ = ["Patched", "patch"]

Execute = Callable[[str, dict[str, Any]], Sequence[Sequence[Any]]]


# every write takes its system time from the clock before it changes a row
# (chronomem_tick, 0003_concurrent_writes.sql); a sequence read is not
# transactional, so it sees a tick the statement's snapshot may not
_MOVED = "(SELECT last_value FROM chronomem_clock) > %(t)s"


def _by_group(column: str) -> str:
    """The usual check, one statement: a header row (``h``: whether the
    clock moved past ``%(t)s``; if so, whether the namespace has an erasure
    stamped after it) and, only if the clock moved, the versions of the
    rows' subjects (or predicates: ``column``) closed after ``%(t)s``, at
    most ``%(cap)s`` of them (``c``). ``facts_subject`` and
    ``facts_predicate`` lead with the column and ``system_to``: each group
    is one index range of the rows closed since, where one primary-key
    lookup per returned row costs three or four pages a row."""
    return (
        f"SELECT 'h', NULL::bigint, NULL::text, NULL::integer, NULL::bigint, NULL::text, NULL::text, {_MOVED}, "
        f"CASE WHEN {_MOVED} THEN EXISTS (SELECT 1 FROM erasures WHERE ns_id = %(ns)s AND erased_at > %(t)s) "
        "ELSE false END "
        "UNION ALL (SELECT 'c', f.rowid, f.fact_id, f.version, f.system_to, f.close_kind, f.closed_by, NULL, NULL "
        f"FROM facts f WHERE f.{column} = ANY(%(g)s::text::bigint[]) AND f.system_to > %(t)s "
        f"AND f.system_to < {MAX_US} AND {_MOVED} LIMIT %(cap)s)")


_BY_SUBJECT, _BY_PREDICATE = _by_group("subject_id"), _by_group("predicate_id")


class _Shape:
    """Where a read's key and closing columns are in its rows, and the one
    statement that compares them with the primary's (:meth:`check_sql`)."""

    __slots__ = ("key", "system_to", "close_kind", "closed_by", "subject", "predicate", "_from", "_keys", "sql")

    def __init__(self, columns: Sequence[str], key: Sequence[str]) -> None:
        def at(c: str) -> int | None:
            return columns.index(c) if c in columns else None

        self.key = tuple(columns.index(c) for c in key)
        self.system_to, self.close_kind, self.closed_by = at("system_to"), at("close_kind"), at("closed_by")
        self.subject, self.predicate = columns.index("subject_id"), columns.index("predicate_id")
        if key == ("rowid",):  # an index scan of the primary key
            self._from, self._keys = "facts f WHERE f.rowid = ANY(%(k)s::text::bigint[])", ("f.rowid", "NULL::integer")
        else:  # (fact_id, version): the facts_version index (C collation)
            self._from = ('unnest(%(k)s::text::text[], %(v)s::text::integer[]) AS r(k, v) '
                          'JOIN facts f ON f.fact_id = r.k COLLATE "C" AND f.version = r.v')
            self._keys = ("f.fact_id", "f.version")
        # (present, erasures) -> the statement, composed once
        self.sql = {(p, e): self.check_sql(present=p, erasures=e) for p in (False, True) for e in (False, True)}

    def check_sql(self, *, present: bool, erasures: bool) -> str:
        """One row, from one snapshot: whether the primary's clock has moved
        past ``%(t)s`` (a settled time the standby has replayed); only if it
        has (else nothing after ``%(t)s`` was written, and the keys are not
        read at all), how many of the keys exist, the keys and closing
        columns of those closed after ``%(t)s`` (a close stamped at or before
        it is on the standby too), with ``present`` every key that exists,
        and with ``erasures`` whether the namespace has an erasure stamped
        after ``%(t)s``."""
        later = f"FILTER (WHERE f.system_to <> {MAX_US} AND f.system_to > %(t)s)"
        k, v = self._keys
        cols = [_MOVED, f"count(*), array_agg({k}) {later}, array_agg({v}) {later}",
                f"array_agg(f.system_to) {later}", f"array_agg(f.close_kind) {later}",
                f"array_agg(f.closed_by) {later}"]
        cols.append(f"array_agg({k}), array_agg({v})" if present else "NULL, NULL")
        cols.append("EXISTS (SELECT 1 FROM erasures WHERE ns_id = %(ns)s AND erased_at > %(t)s)" if erasures
                    else "false")
        # the clock test is a one-time filter: when false the scan does not run
        return f"SELECT {', '.join(cols)} FROM {self._from} {'AND' if 'WHERE' in self._from else 'WHERE'} {_MOVED}"


_READ = _Shape(READ_COLUMNS, ("rowid",))
_KEYS = _Shape(KEY_COLUMNS, ("fact_id", "version"))
_KEY_OBJECTS = _Shape(KEY_OBJECT_COLUMNS, ("rowid",))


def _array(items: Iterable[str]) -> str:
    """An array literal, bound as text and cast in SQL: psycopg dumps a list
    element by element, which cost 8 ms for 2,857 row ids (the join: 0.2 ms)."""
    return "{" + ",".join(items) + "}"


def _quoted(s: str) -> str:
    """A text element of an array literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Patched:
    """What :func:`patch` did: ``closed`` rows took the primary's closing
    columns, ``erased`` rows were dropped, ``by_key``: it looked every row
    up by its key."""

    __slots__ = ("rows", "closed", "erased", "by_key")

    def __init__(self, rows: list[tuple[Any, ...]], closed: int, erased: int, by_key: bool = False) -> None:
        # by_key: the check looked every row up by its key (an erasure, or many closes, since)
        self.rows, self.closed, self.erased, self.by_key = rows, closed, erased, by_key


def patch(q: FactQuery, rows: list[tuple[Any, ...]], execute: Execute, replayed_time: int) -> Patched | None:
    """The primary's answer to ``q`` from the ``rows`` the standby gave for
    it, usually with one ``execute`` on the primary (a second one, a lookup
    per row, when an erasure or more closes than the cap happened since);
    ``None`` when only the primary can answer (an erasure changed which
    rows a ``LIMIT`` or ``OFFSET`` selects). ``replayed_time``: a settled
    time the standby had replayed (every close and erasure stamped at or
    before it is on the standby)."""
    if not rows:  # nothing to close or erase, and nothing can be added at a settled time
        return Patched(rows, 0, 0)
    shape = (_KEY_OBJECTS if q.key_objects else _KEYS) if q.keys_only else _READ
    # the versions closed since, by the rows' subjects or predicates (the fewer)
    subjects, predicates = {r[shape.subject] for r in rows}, {r[shape.predicate] for r in rows}
    by_subject = len(subjects) <= len(predicates)
    groups = subjects if by_subject else predicates
    cap = 2 * len(rows) + 64  # more than that: the lookups by key cost less
    got = execute(_BY_SUBJECT if by_subject else _BY_PREDICATE,
                  {"g": _array(map(str, groups)), "t": replayed_time, "ns": q.ns_id, "cap": cap})
    head = next(r for r in got if r[0] == "h")
    if not head[7]:  # the clock has not moved since t: nothing was written, the standby's rows are the primary's
        return Patched(rows, 0, 0)
    single = len(shape.key) == 1
    if single:
        (i,) = shape.key
        keys: list[Any] = [r[i] for r in rows]
    else:
        i, j = shape.key
        keys = [(r[i], r[j]) for r in rows]
    erased = bool(head[8])
    gone: set[Any] = set()
    closes: dict[Any, tuple[Any, Any, Any]] = {}
    by_key = erased or sum(r[0] == "c" for r in got) >= cap
    if by_key:
        if erased and q.offset:
            return None  # an erasure the OFFSET may have skipped over
        # a lookup per row: which still exist, and their closes, from one snapshot
        params: dict[str, Any] = {"k": _array(map(str, keys))} if single else {
            "k": _array(_quoted(k[0]) for k in keys), "v": _array(str(k[1]) for k in keys)}
        params.update(t=replayed_time, ns=q.ns_id)
        (_, n, ck, cv, c_to, c_kind, c_by, pk, pv, _) = execute(shape.sql[True, False], params)[0]
        if n < len(set(keys)):
            if q.limit is not None:
                return None  # a row of the page is gone: the primary's page has another in its place
            pk, pv = pk or [], pv or []
            gone = set(keys).difference(pk if single else zip(pk, pv, strict=True))
        if ck is not None:
            closes = {(k if single else (k, v)): (a, b, c) for k, v, a, b, c in zip(ck, cv, c_to, c_kind, c_by,
                                                                                     strict=True)}
    else:
        closes = {(rowid if shape is not _KEYS else (fid, ver)): (a, b, c)
                  for tag, rowid, fid, ver, a, b, c, _m, _e in got if tag == "c"}
    sto = shape.system_to
    if sto is None:
        closes = {}  # a read without closing columns (KEY_OBJECT_COLUMNS)
    if not gone and not closes:
        return Patched(rows, 0, 0, by_key)
    out: list[tuple[Any, ...]] = []
    closed = 0
    for r, key in zip(rows, keys, strict=True):
        if key in gone:
            continue
        c = closes.get(key)
        if c is not None and sto is not None and r[sto] != c[0]:  # closed on the primary after the standby's rows
            closed += 1
            row = list(r)
            for at, value in zip((sto, shape.close_kind, shape.closed_by), c, strict=True):
                if at is not None:
                    row[at] = value
            r = tuple(row)
        out.append(r)
    return Patched(out, closed, len(gone), by_key)
