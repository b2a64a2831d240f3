"""Analyses over fact reads: timeline, diff, conflicts, volatility,
neighbours and paths (the algorithms are pure, in
:mod:`chronomem.core.analysis`; this layer reads their input)."""

from __future__ import annotations

import dataclasses
from operator import itemgetter
from typing import AbstractSet, Any, Callable, Mapping, Sequence

from ..core import analysis as _analysis
from ..core.codec import decode_literal
from ..core.models import Conflict, Diff, DiffChange, Event, Fact, FactBar, Neighbor, Path, Predicate, Volatility
from ..core.models import _time_literal as time_literal_text
from ..core.time import MAX_US, MIN_US, TimeLike, TimePoint, from_us
from ..errors import InvalidInputError, InvalidIntervalError
from ..store.protocol import FactQuery
from .identity import Identity
from .reads import FactReads, window
from .scope import Scope, count

__all__ = ["Analyses", "EntityTimeline"]


#: history's order on ``KEY_COLUMNS`` rows: system_from, fact_id, version
_HISTORY_ORDER = itemgetter(4, 0, 1)


@dataclasses.dataclass(frozen=True)
class EntityTimeline:
    """One page of an entity's bars and version history, from one read
    (:meth:`Analyses.entity_timeline`)."""

    bars: list[FactBar]  # this page of fact_bars()
    bars_total: int
    statuses: dict[str, int]  # every bar's status, counted
    history: list[Fact]  # this page of the versions recorded by known_at, newest first
    history_total: int


class Analyses:
    """The analyses of one namespace's facts."""

    def __init__(self, scope: Scope, reads: FactReads, identity: Identity) -> None:
        self._scope = scope
        self._reads = reads
        self._identity = identity

    def timeline(self, entity: str, start: TimeLike | None = None, end: TimeLike | None = None, *,
                 limit: int | None = None, offset: int = 0) -> list[Event]:
        """Chronological events about ``entity`` on both axes, each with a
        sentence; ``limit`` / ``offset`` (default: all, from the first) page
        them. Events interleave both axes, so every version is read to order
        them; a page is cut before the answer is returned."""
        self._scope.require_entity(entity)
        window(None, limit, offset)  # checked before the read
        lo, hi = self._scope.instant(start, "start"), self._scope.instant(end, "end")
        if lo is not None and hi is not None and hi < lo:
            raise InvalidIntervalError(f"end ({end}) must not be before start ({start})")
        q = self._reads.query(entity, direction="both", all_versions=True)
        if q is None:
            return []
        # order the events by keys made from a narrow read of every version,
        # then build facts and sentences only for the page's facts (and the
        # facts that ended them, when they touch the entity too)
        krows = self._reads.rows(dataclasses.replace(q, keys_only=True))
        keys = _analysis.timeline_keys(krows, lo, hi)
        page = window(keys, limit, offset)
        if not page:
            return []
        present = {r[0] for r in krows}
        want = {k[2] for k in page}
        need = want | {r[6] for r in krows if r[0] in want and r[6] in present}  # invalidated_by
        versions = {(r[0], r[1]) for r in krows if r[0] in need}
        rows = self._reads.rows(FactQuery(q.ns_id, fact_ids=sorted(need), all_versions=True))
        facts = self._reads.facts_of([r for r in rows if (r[0], r[1]) in versions])
        events = self._events(facts, present, lo, hi)
        picked = _analysis.pick_events(keys, page, events)
        if picked is None:  # a write between the two reads: order the whole entity's facts as one read
            facts = self._reads.run(q)
            events = self._events(facts, {f.id for f in facts}, lo, hi)
            return window(events, limit, offset)
        return picked

    def _events(self, facts: list[Fact], present: AbstractSet[str], lo: int | None, hi: int | None) -> list[Event]:
        # the facts that cut them short but touch the entity only through them
        enders = self._reads.enders(f for f in facts if f.invalidated_by and f.invalidated_by not in present)
        return _analysis.timeline(facts, lo, hi, enders)

    def diff(self, t1: TimeLike, t2: TimeLike, subject: str | None = None, predicate: str | None = None,
             axis: str = "valid", *, known_at: TimeLike | None = None, as_of: TimeLike | None = None,
             limit: int | None = None, offset: int = 0) -> Diff:
        """What changed between ``t1`` and ``t2`` on the valid or system axis.
        On the valid axis both reads are as believed at ``known_at`` (default
        now); on the system axis both are of the facts valid at ``as_of``
        (default: any time). The other axis' parameter is an error.
        ``limit`` (default: all) / ``offset`` cut each of ``added``,
        ``removed`` and ``changed`` to one page and leave ``unchanged``
        empty; ``added_total`` ... ``unchanged_total`` count them all. A page
        is found on narrow reads and only its facts are built."""
        window(None, limit, offset)
        if axis not in ("valid", "system"):
            raise InvalidInputError(f"axis must be 'valid' or 'system', not {axis!r}")
        if axis == "system" and known_at is not None:
            raise InvalidInputError("known_at pins the valid-axis diff; on axis='system' t1 and t2 are the "
                                    "system times (use as_of to pin valid time)")
        if axis == "valid" and as_of is not None:
            raise InvalidInputError("as_of pins the system-axis diff; on axis='valid' t1 and t2 are the "
                                    "valid times (use known_at to pin system time)")
        a = self._scope.read_time(t1, "t1")
        b = self._scope.read_time(t2, "t2")
        known_at, as_of = self._scope.basis(known_at, "known_at"), self._scope.basis(as_of, "as_of")
        if limit is not None or offset:
            page = self._diff_page(a, b, subject, predicate, axis, known_at, as_of,
                                   2**62 if limit is None else limit, offset)
            if page is not None:
                return page
            full = self.diff(a, b, subject, predicate, axis, known_at=known_at, as_of=as_of)
            end = None if limit is None else offset + limit
            return dataclasses.replace(full, added=full.added[offset:end], removed=full.removed[offset:end],
                                       changed=full.changed[offset:end], unchanged=(),
                                       added_total=len(full.added), removed_total=len(full.removed),
                                       changed_total=len(full.changed), unchanged_total=len(full.unchanged))
        if axis == "valid":
            before = self._reads.facts(subject, predicate, as_of=a, known_at=known_at)
            after = self._reads.facts(subject, predicate, as_of=b, known_at=known_at)
        else:
            before = self._reads.facts(subject, predicate, known_at=a, as_of=as_of)
            after = self._reads.facts(subject, predicate, known_at=b, as_of=as_of)
        single = {p.name for p in self._identity.predicates() if p.cardinality == "one"}
        return _analysis.diff(before, after, a.datetime, b.datetime, axis, single)  # type: ignore[arg-type]

    def _diff_page(self, a: TimePoint, b: TimePoint, subject: str | None, predicate: str | None, axis: str,
                   known_at: TimeLike | None, as_of: TimeLike | None, limit: int, offset: int) -> Diff | None:
        """:meth:`diff` with each list cut to ``limit`` from ``offset`` and
        ``unchanged`` left empty (the ``*_total`` fields count them all): the
        lists are made on narrow reads, then only the page's facts are built.
        ``None`` if the full reads saw other versions (a write between them)."""
        if axis != "valid":
            return None  # the system axis pairs versions by fact id: from the facts
        qa = self._reads.query(subject, predicate, as_of=a, known_at=known_at)
        qb = self._reads.query(subject, predicate, as_of=b, known_at=known_at)
        ra, rb = self._key_rows(qa), self._key_rows(qb)
        single = {p.name for p in self._identity.predicates() if p.cardinality == "one"}
        subjects, preds, text, value = self._row_objects(ra + rb)
        added, removed, changed, unchanged = _analysis.diff_rows(ra, rb, single, subjects, preds, text, value)
        end = offset + limit
        page_a, page_r, page_c = added[offset:end], removed[offset:end], changed[offset:end]
        new = self._facts_of_rows(qb, page_a + [c[1] for c in page_c])
        old = self._facts_of_rows(qa, page_r + [c[0] for c in page_c])
        if new is None or old is None:
            return None
        return Diff(a.datetime, b.datetime, "valid", tuple(new[r[0]] for r in page_a), tuple(old[r[0]] for r in page_r),
                    tuple(DiffChange(new[y[0]].subject, new[y[0]].predicate, old[x[0]], new[y[0]]) for x, y in page_c),
                    (), len(added), len(removed), len(changed), unchanged)

    def _key_rows(self, q: FactQuery | None) -> list[tuple[Any, ...]]:
        return [] if q is None else self._reads.rows(dataclasses.replace(q, keys_only=True, key_objects=True))

    def _row_objects(self, rows: Sequence[Sequence[Any]]) -> tuple[
            dict[int, str], dict[int, str], Callable[[Sequence[Any]], str], Callable[[Sequence[Any]], Any]]:
        """The names of ``rows``' subjects and predicates, and each row's
        :attr:`Fact.object_text` and :attr:`Fact.object` as the codec makes
        them (memoized: many rows share an object)."""
        store, tzname = self._scope.store, self._scope.tzname
        names = store.entity_names({r[3] for r in rows} | {r[5] for r in rows if r[5] is not None})
        preds = store.predicate_names({r[4] for r in rows})
        texts: dict[tuple[Any, Any], str] = {}

        def value(r: Sequence[Any]) -> Any:
            return names.get(r[5], "") if r[6] is None else decode_literal(r[6], tzname)

        def text(r: Sequence[Any]) -> str:
            key = (r[5], r[6])
            got = texts.get(key)
            if got is None:
                if r[6] is None:
                    got = names.get(r[5], "")
                elif r[6][:2] == "s:":
                    got = repr(r[6][2:])
                else:
                    v = decode_literal(r[6], tzname)
                    got = time_literal_text(v, tzname) or repr(v)
                texts[key] = got
            return got

        return names, preds, text, value

    def _facts_of_rows(self, q: FactQuery | None, rows: Sequence[Sequence[Any]]) -> dict[int, Fact] | None:
        """The facts of narrow ``rows`` of ``q``, by rowid, read back by rowid
        (still believed at ``q``'s ``known_at``); ``None`` if one is not (the
        store changed between the reads)."""
        want = sorted({r[0] for r in rows})
        got: list[tuple[Any, ...]] = []
        for i in range(0, len(want), 500):  # a bounded statement
            assert q is not None
            got += self._reads.rows(FactQuery(q.ns_id, rowids=want[i: i + 500], known_at=q.known_at))
        if len(got) != len(want):
            return None
        return {r[-1]: f for r, f in zip(got, self._reads.facts_of(got), strict=True)}  # rowid is READ_COLUMNS' last

    def conflicts(self, as_of: TimeLike | None = None, *, known_at: TimeLike | None = None,
                  limit: int | None = None, offset: int = 0,
                  facts_per_conflict: int | None = None) -> list[Conflict]:
        """Facts of one (subject, predicate) valid at the same time (at
        ``as_of``; default: anywhere in history), as believed at ``known_at``
        (default now): errors for single-valued predicates, a review list for
        undeclared ones. ``limit`` / ``offset`` (default: all) page the list;
        ``facts_per_conflict`` (default: all) keeps each conflict's first
        facts (``facts_total`` counts them all). A page is found on a narrow
        read of every fact; only its facts are built."""
        window(None, limit, offset)
        if facts_per_conflict is not None:
            count(facts_per_conflict, "facts_per_conflict", 1)
        preds = {p.name: p for p in self._identity.predicates()}
        if limit is not None or facts_per_conflict is not None:
            page = self._conflict_page(preds, as_of, known_at, limit, offset, facts_per_conflict)
            if page is not None:
                return page
        facts = self._reads.facts(as_of=as_of, known_at=known_at)
        found = window(_analysis.conflicts(facts, preds), limit, offset)
        if facts_per_conflict is None:
            return found
        return [dataclasses.replace(c, facts=c.facts[:facts_per_conflict]) for c in found]

    def _conflict_page(self, preds: Mapping[str, Predicate], as_of: TimeLike | None, known_at: TimeLike | None,
                       limit: int | None, offset: int, per: int | None) -> list[Conflict] | None:
        """:meth:`conflicts` found on a narrow read; only the page's
        conflicts' first ``per`` facts are built. ``None``: the store changed
        between the reads."""
        q = self._reads.query(as_of=as_of, known_at=known_at)
        rows = self._key_rows(q)
        subjects, names, text, _value = self._row_objects(rows)
        page = window(_analysis.conflict_rows(rows, subjects, names, preds, text), limit, offset)
        shown = [c[3][:per] if per is not None else c[3] for c in page]
        facts = self._facts_of_rows(q, [r for rs in shown for r in rs])
        if facts is None:
            return None
        return [Conflict(subject, predicate, kind, tuple(facts[r[0]] for r in rs),  # type: ignore[arg-type]
                         None if lo is None else from_us(lo), None if hi is None else from_us(hi), len(cluster))
                for (subject, predicate, kind, cluster, lo, hi), rs in zip(page, shown, strict=True)]

    def volatility(self, top: int = 20, start: TimeLike | None = None, end: TimeLike | None = None) -> list[Volatility]:
        """How often each (subject, predicate) changed value, most volatile first."""
        count(top, "top", 0)
        if start is not None or end is not None:
            facts = self._reads.between(start, end)
        else:
            facts = self._reads.facts()
        return _analysis.volatility(facts, top)

    def neighbors(self, entity: str, hops: int = 1, as_of: TimeLike | None = None, *,
                  known_at: TimeLike | None = None) -> list[Neighbor]:
        """Entities within ``hops`` edges, every edge valid at ``as_of`` as
        believed at ``known_at`` (default now)."""
        self._scope.require_entity(entity)
        count(hops, "hops", 1)
        as_of, known_at = self._scope.basis(as_of, "as_of"), self._scope.basis(known_at, "known_at")
        return _analysis.neighbors(lambda name: self._edge_facts(name, as_of, known_at), entity, hops)

    def paths(self, source: str, target: str, max_hops: int = 3, as_of: TimeLike | None = None,
              limit: int = 50, *, known_at: TimeLike | None = None) -> list[Path]:
        """Simple paths from ``source`` to ``target``, every edge valid at
        ``as_of`` as believed at ``known_at`` (default now)."""
        src = self._identity.entity(source).name
        dst = self._identity.entity(target).name
        count(max_hops, "max_hops", 1)
        count(limit, "limit", 0)
        as_of, known_at = self._scope.basis(as_of, "as_of"), self._scope.basis(known_at, "known_at")
        return _analysis.paths(lambda name: self._edge_facts(name, as_of, known_at), src, dst, max_hops, limit)

    def _edge_facts(self, name: str, as_of: TimeLike | None, known_at: TimeLike | None) -> list[Fact]:
        """The facts between ``name`` and another entity (either direction; no
        literal: a traversal skips those), in :meth:`FactReads.facts`' order."""
        q = self._reads.query(name, as_of=as_of, known_at=known_at, direction="both")
        return [] if q is None else self._reads.run(dataclasses.replace(q, entity_objects=True))

    def edges(self, entity: str, as_of: TimeLike | None = None, *, known_at: TimeLike | None = None) -> list[Fact]:
        """The facts valid at ``as_of`` (default: any time) as believed at
        ``known_at`` (default now) between ``entity`` and another entity, in
        either direction: ``facts(entity, direction="both")`` without the
        literal-valued ones, which are not read at all (a graph's edges)."""
        self._scope.require_entity(entity)
        return self._edge_facts(entity, self._scope.basis(as_of, "as_of"), self._scope.basis(known_at, "known_at"))

    def valid_span(self, entity: str, *, known_at: TimeLike | None = None) -> tuple[int, int] | None:
        """The earliest and the latest known valid-time bound (microseconds)
        among the facts touching ``entity`` (either direction, all of history,
        as believed at ``known_at``); ``None`` if none has one. From a narrow
        read: no fact is built (a graph's time slider)."""
        self._scope.require_entity(entity)
        q = self._reads.query(entity, known_at=self._scope.basis(known_at, "known_at"), direction="both")
        rows = [] if q is None else self._reads.rows(dataclasses.replace(q, keys_only=True))
        starts = [r[2] for r in rows if r[2] != MIN_US]
        ends = [r[3] for r in rows if r[3] != MAX_US]
        if not starts and not ends:
            return None
        return min(starts + ends), max(starts + ends)

    def fact_bars(self, entity: str, *, as_of: TimeLike | None = None,
                  known_at: TimeLike | None = None) -> list[FactBar]:
        """One timeline bar per fact touching ``entity`` (either direction), as
        believed at ``known_at`` (default now), each with its status at
        ``as_of`` (default now): current, future, ended, superseded,
        invalidated or retracted, and whether it was corrected. Outgoing facts
        first, then by predicate, start and id."""
        name = self._identity.entity(entity).name
        known = self._scope.known(known_at)
        cursor = self._scope.instant(as_of, "as_of")
        versions = self._reads.history(name, direction="both")
        return _analysis.fact_bars(name, versions, known, self._scope.now_us() if cursor is None else cursor)

    def entity_timeline(self, entity: str, *, as_of: TimeLike | None = None, known_at: TimeLike | None = None,
                        limit: int | None = None, offset: int = 0) -> EntityTimeline:
        """:meth:`fact_bars` and the version history (newest first, only the
        versions recorded by ``known_at``) of ``entity``, both paged by
        ``limit`` / ``offset``: what an entity page shows. Both are ordered
        on a narrow read of every version; only the page's bars and history
        rows become facts."""
        window(None, limit, offset)
        name = self._identity.entity(entity).name
        known = self._scope.known(known_at)
        cursor = self._scope.instant(as_of, "as_of")
        cur = self._scope.now_us() if cursor is None else cursor
        q = self._reads.query(name, direction="both", all_versions=True)
        eid = self._scope.entity_id(name)
        if q is None or eid is None:
            return EntityTimeline([], 0, {}, [], 0)
        krows = self._reads.rows(dataclasses.replace(q, keys_only=True))
        preds = self._scope.store.predicate_names({r[10] for r in krows})
        order, statuses, retracted = _analysis.bar_order(krows, eid, preds, known, cur)
        shown_bars = window(order, limit, offset)
        hist = sorted((r for r in krows if known is None or r[4] <= known), key=_HISTORY_ORDER, reverse=True)
        shown_hist = window(hist, limit, offset)
        ids = {b[0] for b in shown_bars} | {r[0] for r in shown_hist}
        pairs = {(r[0], r[1]) for r in krows if r[0] in ids}
        rows = self._reads.rows(FactQuery(q.ns_id, fact_ids=sorted(ids), all_versions=True)) if ids else []
        facts = {(f.id, f.version): f for f in self._reads.facts_of([r for r in rows if (r[0], r[1]) in pairs])}
        want = {b[0] for b in shown_bars}
        bars, _ = _analysis.bar_page(name, [f for f in facts.values() if f.id in want], known, cur, 0, None,
                                     retracted)
        by_id = {b.fact_id: b for b in bars}
        page = [by_id.get(b[0]) for b in shown_bars]
        history = [facts.get((r[0], r[1])) for r in shown_hist]
        if any(b is None or (b.status, b.group) != (status, group)
               for b, (_fid, status, group) in zip(page, shown_bars, strict=True)) or None in history:
            # the reads saw different versions (a write between them): one read of every version
            return self._entity_timeline_full(name, known, cur, limit, offset)
        return EntityTimeline([b for b in page if b is not None], len(order), statuses,
                              [f for f in history if f is not None], len(hist))

    def _entity_timeline_full(self, name: str, known: int | None, cursor: int, limit: int | None,
                              offset: int) -> EntityTimeline:
        rows = self._reads.history_rows(name, direction="both")
        if known is not None:
            rows = [r for r in rows if r[10] <= known]  # system_from
        versions = self._reads.facts_of(rows)
        bars, statuses = _analysis.bar_page(name, versions, known, cursor, offset, limit)
        return EntityTimeline(bars, sum(statuses.values()), statuses, window(versions[::-1], limit, offset),
                              len(versions))
