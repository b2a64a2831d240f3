"""Fact reads: one query builder (names, times and filters into a
:class:`~chronomem.store.protocol.FactQuery`) and one read path (the
store's tuples into :class:`~chronomem.core.models.Fact` values)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Sequence, TypeVar

from ..core.codec import encode_literal, tuples_to_facts
from ..core.ids import MIN_ID_CHARS, is_full_id
from ..core.limits import MAX_AGENT_CHARS, MAX_COUNT, MAX_FACTS_LIMIT, check_bool, check_count, check_text
from ..core.models import Event, Fact, Provenance, Stats
from ..core.names import normalize_key
from ..core.time import MAX_US, MIN_US, TimeLike, from_us, to_us
from ..errors import AmbiguousIdError, FactNotFoundError, InvalidInputError, InvalidIntervalError
from ..store.protocol import FactQuery
from .scope import Scope, count

__all__ = ["FactReads"]

T = TypeVar("T")

_DIRECTIONS = ("out", "in", "both")
#: from this offset on, a LIMITed read walks narrow rows to its page (:meth:`FactReads._deep_page`)
DEEP_OFFSET = 1000


#: an ambiguous shortened id lists at most this many of the facts it names
MAX_ID_CANDIDATES = 5
_HEX = re.compile(r"[0-9A-Fa-f-]+")


def _HISTORY_ORDER(r: Sequence[Any]) -> tuple[Any, ...]:
    return (r[10], r[0], r[1])  # system_from, fact_id, version (READ_COLUMNS)


def check_writer(value: object, field: str = "recorded_by") -> str:
    """A writer's name to filter by: a string of at most ``MAX_AGENT_CHARS``
    (matched exactly, as stored)."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string, not {value!r}")
    return check_text(value, field, MAX_AGENT_CHARS)


def window(items: list[T] | None, limit: int | None, offset: int) -> list[T]:
    """``items[offset:offset + limit]`` with both checked (``limit=None``: no
    limit; ``items=None``: only check them)."""
    off = count(offset, "offset", 0)
    if limit is not None:
        count(limit, "limit", 0)
    if items is None:
        return []
    if limit is None:
        return items[off:] if off else items
    return items[off: off + limit]


class FactReads:
    """Every read of facts in one namespace."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def query(self, subject: str | None = None, predicate: str | None = None, object: Any = None, *,
              as_of: TimeLike | None = None, known_at: TimeLike | None = None, direction: str = "out",
              limit: int | None = None, all_versions: bool = False, overlap: tuple[int, int] | None = None,
              literal: bool = False, ended_by: int | None = None,
              recorded_by: str | None = None) -> FactQuery | None:
        """The :class:`FactQuery` for :meth:`facts`' arguments (``None``: a name
        that resolves to nothing, so the answer is empty without a read)."""
        scope = self._scope
        if direction not in _DIRECTIONS:
            raise InvalidInputError(f"direction must be one of {', '.join(_DIRECTIONS)}, not {direction!r}")
        if limit is not None:  # facts() checks its own limit; here it may include facts()' offset
            check_count(limit, "limit", 0, MAX_FACTS_LIMIT + MAX_COUNT)
        check_bool(literal, "literal")
        if recorded_by is not None:
            check_writer(recorded_by)
        as_of_us = scope.instant(as_of, "as_of")
        known_us = scope.known(known_at)
        # Names resolve inside the read's own SQL (in its snapshot, with no
        # cache another process could have made stale), except "as known
        # at" a past time: a name a later merge moved named what it named then.
        subject_ids = subject_key = None
        if subject is not None:
            if known_us is None:
                subject_key = normalize_key(subject, "subject")
            else:
                sid = scope.entity_id(subject, "subject", known_us)
                if sid is None:
                    return None
                subject_ids = [sid]
        predicate_key = None if predicate is None else normalize_key(predicate, "predicate")
        object_id = object_lit = None
        if object is not None:
            if literal or not isinstance(object, str):
                object_lit = encode_literal(object, scope.tz)
            else:
                object_id = scope.entity_id(object, "object", known_us)
                if object_id is None:
                    object_lit = encode_literal(object, scope.tz)
        return FactQuery(
            scope.ns_id, subject_ids, object_id, object_lit, direction,  # type: ignore[arg-type]
            as_of_us, known_us, all_versions, overlap, None, limit, subject_key, predicate_key, ended_by=ended_by,
            recorded_by=recorded_by,
        )

    def run(self, q: FactQuery | None, offset: int = 0) -> list[Fact]:
        """The facts of ``q``, skipping the first ``offset`` rows before they
        become :class:`Fact` values (a page costs its rows, not the whole read's)."""
        rows = self.rows(q)
        return self.facts_of(rows[offset:] if offset else rows)

    def rows(self, q: FactQuery | None) -> list[tuple[Any, ...]]:
        """The store's raw tuples of ``q`` (``READ_COLUMNS`` order): an analysis
        orders and pages them before only a page of them becomes facts."""
        return [] if q is None else self._scope.store.query_tuples(q)

    def facts_of(self, rows: Sequence[Sequence[Any]]) -> list[Fact]:
        """:class:`Fact` values of raw tuples from :meth:`rows`."""
        if not rows:
            return []
        scope = self._scope
        store = scope.store
        return tuples_to_facts(rows, scope.now_us(), scope.namespace, scope.tzname, store.entity_names,
                               store.predicate_names)

    def by_ids(self, ids: Sequence[str], known_at: int | None) -> list[Fact]:
        """The facts ``ids`` (those believed at ``known_at``, default now), valid any time."""
        if not ids:
            return []
        return self.run(FactQuery(self._scope.ns_id, fact_ids=list(ids), known_at=known_at))

    def enders(self, facts: Iterable[Fact], known_at: int | None = None) -> dict[str, Fact]:
        """The facts (believed at ``known_at``, default now) that ``facts``
        name in ``invalidated_by`` (always a fact id), by id, in one read;
        one not believed then is absent."""
        ids = sorted({f.invalidated_by for f in facts if f.invalidated_by})
        return {f.id: f for f in self.by_ids(ids, known_at)}

    def facts(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        object: Any = None,
        *,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        direction: str = "out",
        limit: int | None = None,
        literal: bool = False,
        decay_half_life: float | None = None,
        offset: int = 0,
        recorded_by: str | None = None,
    ) -> list[Fact]:
        """Facts matching the filters. ``as_of`` pins valid time (``None``: all
        of history, each flagged ``current``); ``known_at`` pins system time
        (``None``: what the store believes now). ``direction`` is ``"out"``
        (subject is the entity), ``"in"`` (object is) or ``"both"``.
        ``decay_half_life`` (days) lowers confidence by age at read time.
        ``limit`` (default: no limit) and ``offset`` (default 0) page the
        answer in its order (valid start, then id): the read stops after
        ``offset + limit`` rows and only ``limit`` of them become facts.
        ``recorded_by`` keeps only the versions that writer recorded (exact
        name, :attr:`Fact.recorded_by`)."""
        if limit is not None:
            check_count(limit, "limit", 0, MAX_FACTS_LIMIT)
        off = count(offset, "offset", 0)
        if limit is not None and off:
            limit += off
        q = self.query(subject, predicate, object, as_of=as_of, known_at=known_at,
                       direction=direction, limit=limit, literal=literal, recorded_by=recorded_by)
        deep = self._deep_page(q, off) if q is not None and q.limit is not None and off >= DEEP_OFFSET else None
        out = self.run(q, off) if deep is None else deep
        if decay_half_life is not None:
            out = self.with_decay(out, decay_half_life, as_of)
        return out

    def _deep_page(self, q: FactQuery, offset: int) -> list[Fact] | None:
        """Rows ``offset`` on of LIMITed ``q`` walked on a narrow read
        (``KEY_COLUMNS``, in the read's own order), then only the page's full
        rows read by id: a deep page costs the narrow rows before it, not
        full ones. ``None`` if the second read saw other versions (a write
        between them: the caller reads the page the plain way)."""
        # one branch is ordered (valid_from, rowid): its rows are named by rowid (no
        # fact id read); a two-branch read is ordered (valid_from, fact_id, version)
        one_branch = q.direction != "both" or (q.subject_ids is None and q.subject_key is None)
        # the store skips the rows before the page (SQL OFFSET on the narrow read)
        assert q.limit is not None
        keys = self.rows(dataclasses.replace(q, keys_only=True, key_objects=one_branch, limit=q.limit - offset,
                                             offset=offset))
        if not keys:
            return []
        if one_branch:
            got = self.rows(FactQuery(q.ns_id, rowids=[k[0] for k in keys], known_at=q.known_at))
            by_rowid = {r[-1]: r for r in got}  # rowid: READ_COLUMNS' last
            rows = [by_rowid.get(k[0]) for k in keys]
        else:
            got = self.rows(FactQuery(q.ns_id, fact_ids=[k[0] for k in keys], known_at=q.known_at))
            by_key = {(r[0], r[1]): r for r in got}
            rows = [by_key.get((k[0], k[1])) for k in keys]
        if len(got) != len(keys) or None in rows:
            return None
        return self.facts_of(rows)  # type: ignore[arg-type]

    def facts_sql(self, /, subject: str | None = None, predicate: str | None = None, object: Any = None,
                  **kwargs: Any) -> tuple[str, list[Any]]:
        """The SQL (and parameters) :meth:`facts` would run, for ``--sql``.
        Names are looked up inside it. One entity's outgoing facts (no
        ``limit``) are selected without ``ORDER BY``: :meth:`facts` sorts
        those few rows by ``(valid_from, rowid)`` itself, faster than SQLite's
        sorter; every other shape is ordered in SQL."""
        scope = self._scope
        q = self.query(subject, predicate, object, **kwargs)
        if q is None:
            return "-- no such entity or predicate: the query returns nothing without touching the store", []
        return scope.store.read_sql(q)

    def current(self, subject: str, predicate: str | None = None) -> list[Fact]:
        """What is true now (as currently believed)."""
        scope = self._scope
        return self.facts(subject, predicate, as_of=scope.now(), direction="out")

    def between(self, start: TimeLike | None, end: TimeLike | None, *, subject: str | None = None,
                predicate: str | None = None, object: Any = None, known_at: TimeLike | None = None,
                direction: str = "out") -> list[Fact]:
        """Facts whose valid interval overlaps ``[start, end)``."""
        scope = self._scope
        lo = scope.instant(start, "start")
        hi = scope.instant(end, "end")
        lo = MIN_US if lo is None else lo
        hi = MAX_US if hi is None else hi
        if hi <= lo:
            raise InvalidIntervalError(f"end ({end}) must be after start ({start})")
        return self.run(self.query(subject, predicate, object, known_at=known_at, direction=direction,
                                     overlap=(lo, hi)))

    def history(self, subject: str, predicate: str | None = None, *, direction: str = "out",
                limit: int | None = None, offset: int = 0, recorded_by: str | None = None) -> list[Fact]:
        """Every version on both axes (the audit trail), oldest record first;
        ``limit`` / ``offset`` (default: all, from the first) page that order.
        The order is system time, so every version is read to find a page.
        ``recorded_by`` keeps only the versions that writer recorded."""
        window(None, limit, offset)  # checked before the read
        page: list[tuple[Any, ...]] = window(
            self.history_rows(subject, predicate, direction=direction, recorded_by=recorded_by), limit, offset)
        return self.facts_of(page)

    def history_rows(self, subject: str, predicate: str | None = None, *,
                     direction: str = "out", recorded_by: str | None = None) -> list[tuple[Any, ...]]:
        """:meth:`history`'s raw tuples in its order (system time, id, version):
        sorted before they become facts, so a page builds only its own."""
        rows = self.rows(self.query(subject, predicate, direction=direction, all_versions=True,
                                    recorded_by=recorded_by))
        rows.sort(key=_HISTORY_ORDER)
        return rows

    def resolve_id(self, fact_id: str, field: str = "fact_id") -> str:
        """The full id ``fact_id`` names: an id as it is, else the one fact
        of the namespace whose id starts or ends with it (at least 8
        characters: an id's start, or the short id tables print). Raises
        :class:`FactNotFoundError` when none does and
        :class:`AmbiguousIdError` (listing a few) when several do."""
        if not isinstance(fact_id, str):
            raise InvalidInputError(f"{field} must be a string, not {type(fact_id).__name__}")
        text = fact_id.strip()
        if is_full_id(text):
            return text  # a whole id: its own read says whether it exists
        if not text:
            raise InvalidInputError(f"{field} must not be empty")
        scope = self._scope
        if self.rows(FactQuery(scope.ns_id, fact_ids=[text], all_versions=True)):
            return text  # an imported fact keeps its id, whatever its form
        where = f"in namespace {scope.namespace!r}"
        if len(text) < MIN_ID_CHARS:
            raise FactNotFoundError(f"no fact with id {text!r} {where}; a shortened id needs at least "
                                    f"{MIN_ID_CHARS} characters (the start of the id, or the short id tables show)")
        if _HEX.fullmatch(text):
            text = text.lower()  # chronomem's ids are lower-case hex
        found = scope.store.fact_ids_matching(scope.ns_id, text, MAX_ID_CANDIDATES + 1)
        if len(found) == 1:
            return found[0]
        if not found:
            raise FactNotFoundError(f"no fact {where} has an id that starts or ends with {text!r}")
        raise AmbiguousIdError(text, tuple(found[:MAX_ID_CANDIDATES]), more=len(found) > MAX_ID_CANDIDATES,
                               field=field)

    def fact(self, fact_id: str, *, known_at: TimeLike | None = None) -> Fact:
        """One fact by id (or a unique shortened id, see :meth:`resolve_id`):
        the version believed at ``known_at`` (default now)."""
        at = self._scope.known(known_at)
        fact_id = self.resolve_id(fact_id)
        versions = self.versions_of(fact_id)
        if not versions:
            raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {self._scope.namespace!r}")
        for f in versions:
            if at is None and f.system_to is None:
                return f
            if at is not None and to_us(f.system_from) <= at and (f.system_to is None or at < to_us(f.system_to)):
                return f
        return versions[-1]

    def versions(self, fact_id: str) -> list[Fact]:
        """All versions of one fact (its id or a unique shortened id), oldest first."""
        return self.versions_of(self.resolve_id(fact_id))

    def versions_of(self, fact_id: str) -> list[Fact]:
        """:meth:`versions` of a whole id (no lookup of a shortened one)."""
        facts = self.run(FactQuery(self._scope.ns_id, fact_ids=[fact_id], all_versions=True))
        return sorted(facts, key=lambda f: f.version)

    def evidence(self, fact_id: str) -> list[Provenance]:
        """Every recorded source of a fact: its first source, then extra ones."""
        scope = self._scope
        fact_id = self.resolve_id(fact_id)
        versions = self.versions_of(fact_id)
        if not versions:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")
        first = versions[0]
        out = []
        if first.source or first.episode_id:
            out.append(Provenance(fact_id, first.source, first.episode_id, first.system_from))
        for fid, src, ep, at in scope.store.sources([fact_id]):
            out.append(Provenance(fid, src, ep, from_us(at)))
        return out

    def search_facts(self, text: str, *, as_of: TimeLike | None = None, limit: int = 100) -> list[Fact]:
        """Case-insensitive substring search over entity and predicate names."""
        scope = self._scope
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("search text must be a non-empty string")
        count(limit, "limit", 0)
        needle = text.strip().casefold()
        out: dict[tuple[str, int], Fact] = {}
        for rec in scope.store.entities_by_key_substring(scope.ns_id, normalize_key(text, "text"), limit):
            for f in self.facts(rec.name, as_of=as_of, direction="both", limit=limit):
                out[(f.id, f.version)] = f
        for p in scope.store.predicates(scope.ns_id):
            if needle in p.name.casefold() or normalize_key(text, "text") in p.key:
                for f in self.facts(predicate=p.name, as_of=as_of, limit=limit):
                    out[(f.id, f.version)] = f
        return sorted(out.values(), key=lambda f: (f.subject, f.predicate, f.valid_from or from_us(0)))[:limit]

    def recent_changes(self, limit: int = 20) -> list[Event]:
        """The latest system-time events (versions recorded or closed), newest first."""
        scope = self._scope
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, not {limit!r}")
        now = scope.now_us()
        events: list[tuple[int, int, Event]] = []
        for r in scope.store.recent_rows(scope.ns_id, limit):
            fact = scope.fact(r, now)
            kind = "recorded" if r.version == 1 else "new version"
            events.append((r.system_from, r.rowid or 0, Event(fact.system_from, kind, "system", fact.id,
                                                     f"{kind}: {fact.line()}", fact, recorded_by=r.recorded_by)))
            if r.system_to != MAX_US and fact.system_to is not None:
                closed = r.close_kind or "closed"
                events.append((r.system_to, r.rowid or 0, Event(fact.system_to, closed, "system", fact.id,
                                                         f"{closed}: {fact.line()}", fact)))
        events.sort(key=lambda e: (e[0], e[1]), reverse=True)
        return [e for _at, _rowid, e in events[:limit]]

    def stats(self) -> Stats:
        scope = self._scope
        s = scope.store.stats(scope.ns_id, scope.now_us())
        return Stats(
            namespace=scope.namespace, entities=s["entities"], facts=s["facts"], current=s["current"],
            ended=s["facts"] - s["current"], retracted=s["retracted"], versions=s["versions"],
            predicates=s["predicates"], namespaces=tuple(scope.store.namespaces()),
        )

    def with_decay(self, facts: Sequence[Fact], half_life_days: float, at: TimeLike | None = None) -> list[Fact]:
        """Read-time confidence decay: each fact's confidence halves every
        ``half_life_days`` since it was recorded. Stored rows never change."""
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) or not half_life_days > 0:
            raise InvalidInputError("decay half-life must be positive")
        ref = self._scope.read_time(at, "at").datetime if at is not None else self._scope.now()
        from ..core.analysis import decay  # only this read needs the analysis module

        return decay(facts, half_life_days, ref)
