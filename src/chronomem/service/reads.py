"""Fact reads: one query builder (names, times and filters into a
:class:`~chronomem.store.protocol.FactQuery`) and one read path (the
store's tuples into :class:`~chronomem.core.models.Fact` values)."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..core import analysis as _analysis
from ..core.codec import encode_literal, tuples_to_facts
from ..core.models import Event, Fact, Provenance, Stats
from ..core.names import normalize_key
from ..core.time import MAX_US, MIN_US, TimeLike, from_us, to_us
from ..errors import FactNotFoundError, InvalidInputError, InvalidIntervalError
from ..store.protocol import FactQuery
from .scope import Scope, count

__all__ = ["FactReads"]

_DIRECTIONS = ("out", "in", "both")


class FactReads:
    """Every read of facts in one namespace."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def query(self, subject: str | None = None, predicate: str | None = None, object: Any = None, *,
              as_of: TimeLike | None = None, known_at: TimeLike | None = None, direction: str = "out",
              limit: int | None = None, all_versions: bool = False, overlap: tuple[int, int] | None = None,
              literal: bool = False, ended_by: int | None = None) -> FactQuery | None:
        """The :class:`FactQuery` for :meth:`facts`' arguments (``None``: a name
        that resolves to nothing, so the answer is empty without a read)."""
        scope = self._scope
        if direction not in _DIRECTIONS:
            raise InvalidInputError(f"direction must be one of {', '.join(_DIRECTIONS)}, not {direction!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be a non-negative integer, not {limit!r}")
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
        )

    def run(self, q: FactQuery | None) -> list[Fact]:
        scope = self._scope
        if q is None:
            return []
        store = self._scope.store
        rows = store.query_tuples(q)
        if not rows:
            return []
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
    ) -> list[Fact]:
        """Facts matching the filters. ``as_of`` pins valid time (``None``: all
        of history, each flagged ``current``); ``known_at`` pins system time
        (``None``: what the store believes now). ``direction`` is ``"out"``
        (subject is the entity), ``"in"`` (object is) or ``"both"``.
        ``decay_half_life`` (days) lowers confidence by age at read time."""
        out = self.run(self.query(subject, predicate, object, as_of=as_of, known_at=known_at,
                                    direction=direction, limit=limit, literal=literal))
        if decay_half_life is not None:
            out = self.with_decay(out, decay_half_life, as_of)
        return out

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

    def history(self, subject: str, predicate: str | None = None, *, direction: str = "out") -> list[Fact]:
        """Every version on both axes (the audit trail), oldest record first."""
        facts = self.run(self.query(subject, predicate, direction=direction, all_versions=True))
        return sorted(facts, key=lambda f: (f.system_from, f.id, f.version))

    def fact(self, fact_id: str, *, known_at: TimeLike | None = None) -> Fact:
        """One fact by id: the version believed at ``known_at`` (default now)."""
        at = self._scope.known(known_at)
        versions = self.versions(fact_id)
        if not versions:
            raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {self._scope.namespace!r}")
        for f in versions:
            if at is None and f.system_to is None:
                return f
            if at is not None and to_us(f.system_from) <= at and (f.system_to is None or at < to_us(f.system_to)):
                return f
        return versions[-1]

    def versions(self, fact_id: str) -> list[Fact]:
        """All versions of one fact, oldest first."""
        facts = self.run(FactQuery(self._scope.ns_id, fact_ids=[fact_id], all_versions=True))
        return sorted(facts, key=lambda f: f.version)

    def evidence(self, fact_id: str) -> list[Provenance]:
        """Every recorded source of a fact: its first source, then extra ones."""
        scope = self._scope
        versions = self.versions(fact_id)
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
                                                     f"{kind}: {fact.line()}", fact)))
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
        return _analysis.decay(facts, half_life_days, ref)
