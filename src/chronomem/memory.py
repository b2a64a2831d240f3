"""The :class:`Memory` façade: the one object every interface talks to.

Writes resolve names, build candidate versions and hand them to the write
engine (:mod:`chronomem.core.engine`) inside one store transaction; reads build a
:class:`~chronomem.store.protocol.FactQuery` and convert rows to :class:`Fact`.
Analyses over read results (timeline, diff, conflicts, ...) live in
:mod:`chronomem.core.analysis`.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import time
from typing import Any, Iterable, Mapping, Sequence

from .core import analysis as _analysis
from .core.codec import encode_literal, load_props, row_to_fact, tuples_to_facts
from .core.engine import TxWork
from .core.models import (
    Conflict,
    Diff,
    Event,
    Fact,
    Neighbor,
    Path,
    Provenance,
    Stats,
    Volatility,
)
from .core.names import normalize_key
from .core.time import (
    MAX_US,
    MIN_US,
    Precision,
    SystemClock,
    TimeLike,
    TimePoint,
    from_us,
    get_timezone,
    parse_time,
    peek_clock,
    timezone_name,
    to_us,
)
from .errors import (
    ConfirmationRequiredError,
    EntityNotFoundError,
    FactNotFoundError,
    InvalidInputError,
    InvalidIntervalError,
)
from .service.candidates import CandidateBuilder
from .service.evidence.episodes import EvidenceMixin
from .service.gcpause import paused_gc
from .service.identity import IdentityMixin
from .store.protocol import FactQuery, PredicateRecord, Row, Store, WriteTx

__all__ = ["Memory"]

log = logging.getLogger("chronomem")

_CORRECTABLE = frozenset(
    {"subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source", "episode_id",
     "properties", "literal"}
)
_DIRECTIONS = ("out", "in", "both")


def _count(value: object, name: str, minimum: int) -> int:
    """Validate an integer count argument (``hops``, ``limit``, ``top``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer of at least {minimum}, not {value!r}")
    return value


class Memory(EvidenceMixin, IdentityMixin):
    """A bi-temporal memory opened on one namespace of one store.

    Create it with :func:`chronomem.open`. Safe to share between threads; use
    one per process (several processes may open the same file).
    """

    def __init__(self, store: Store, namespace: str = "default", *, timezone: str | _dt.tzinfo | None = None,
                 clock: Any = None) -> None:
        if not isinstance(namespace, str) or not namespace.strip():
            raise InvalidInputError(f"namespace must be a non-empty string, not {namespace!r}")
        self._store = store
        self.namespace = namespace
        self.tz = get_timezone(timezone)
        self._tzname = timezone_name(self.tz)
        self._clock = clock if clock is not None else store.clock
        ns_id = store.namespace_id(namespace)
        assert ns_id is not None
        self._ns = ns_id

    # -- lifecycle -------------------------------------------------------
    @property
    def store(self) -> Store:
        return self._store

    @property
    def url(self) -> str:
        return self._store.url

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Memory {self._store.url} namespace={self.namespace!r}>"

    def now(self) -> _dt.datetime:
        """The store clock's current time (UTC)."""
        if self._clock is None:
            return _dt.datetime.now(_dt.timezone.utc)
        return peek_clock(self._clock)

    def _now_us(self) -> int:
        if type(self._clock) is SystemClock:
            return time.time_ns() // 1000
        return to_us(self.now())

    # -- time helpers ----------------------------------------------------
    def parse_time(self, value: TimeLike, field: str = "time") -> TimePoint:
        """Read a time value in this memory's timezone (see :mod:`chronomem.core.time`)."""
        return parse_time(value, field, self.tz)

    def _instant(self, value: TimeLike | None, field: str) -> int | None:
        if value is None:
            return None
        return parse_time(value, field, self.tz).us

    def _known(self, value: TimeLike | None) -> int | None:
        """A ``known_at`` argument as microseconds; the store first makes the
        answer at that system time final (``Store.settle``), so a read "as
        known at" T answers the same now and later."""
        us = self._instant(value, "known_at")
        if us is not None:
            self._store.settle(us)
        return us

    # -- name resolution -------------------------------------------------
    def _entity_for_write(self, tx: WriteTx, name: object, what: str = "entity") -> int:
        key = normalize_key(name, what)
        eid = tx.entity_id(self._ns, key)
        if eid is None:
            assert isinstance(name, str)
            eid = tx.create_entity(self._ns, key, name.strip(), None, None)
        return eid

    def _entity_for_read(self, name: object, what: str = "entity", known_at: int | None = None) -> int | None:
        """The entity a name resolves to — as the store knew it at ``known_at``
        (system time): a name moved by a later merge still names the entity
        it named then."""
        key = normalize_key(name, what)
        eid = self._store.entity_id(self._ns, key)
        if known_at is None or eid is None:
            return eid
        return _owner_at(self._store.merge_operations(self._ns), key, eid, known_at)

    def _require_entity(self, name: object, what: str = "entity") -> int:
        eid = self._entity_for_read(name, what)
        if eid is None:
            raise EntityNotFoundError(f"no entity named {name!r} in namespace {self.namespace!r}")
        return eid

    def _predicate_for_write(self, tx: WriteTx, name: object) -> PredicateRecord:
        key = normalize_key(name, "predicate")
        rec = tx.predicate(self._ns, key)
        if rec is None:
            assert isinstance(name, str)
            rec = tx.create_predicate(self._ns, key, name.strip())
        return rec

    def _predicate_for_read(self, name: object) -> PredicateRecord | None:
        return self._store.predicate(self._ns, normalize_key(name, "predicate"))

    # -- writes ----------------------------------------------------------
    def _candidate(self, tx: WriteTx, item: Mapping[str, Any]) -> tuple[Row, bool]:
        return CandidateBuilder(tx, self._ns, self.tz).build(item)

    def _work(self, tx: WriteTx) -> TxWork:
        fresh = tx.is_new_entity

        def load(subject_id: int, predicate_id: int) -> list[Row]:
            if fresh(subject_id):
                return []
            return tx.believed_rows(subject_id, predicate_id)

        return TxWork(tx.now, load)

    @staticmethod
    def _flush(tx: WriteTx, work: TxWork) -> None:
        work.drop_noops()
        if work.closes:
            tx.close_rows(work.closes)
        rows = work.result_rows()
        if rows:
            tx.insert_rows(rows)
        if work.sources:
            tx.add_sources(work.sources)

    def _fact_by_row(self, row: Row, work: TxWork | None = None) -> Fact:
        """The public view of a version this memory just wrote (or found)."""
        if row.rowid is None and (work is None or id(row) not in work.new_rows):
            # not written as such (a no-op write dropped it): read what is believed
            got = self._store.query(FactQuery(self._ns, fact_ids=[row.fact_id], all_versions=True))
            for r in got:
                if r.st == MAX_US or r.version == row.version:
                    return row_to_fact(r, self._now_us(), self.namespace, self._tzname)
            raise FactNotFoundError(f"fact {row.fact_id} vanished")  # pragma: no cover
        return row_to_fact(self._named(row), self._now_us(), self.namespace, self._tzname)

    def _named(self, row: Row) -> Row:
        """``row`` with its display names, from the store's name caches."""
        ids = [row.subject_id] if row.object_id is None else [row.subject_id, row.object_id]
        names = self._store.entity_names(ids)
        pred = self._store.predicate_by_id(row.predicate_id)
        return row.copy(
            subject_name=names.get(row.subject_id, ""),
            predicate_name=pred.name if pred is not None else "",
            object_name=names.get(row.object_id) if row.object_id is not None else None,
        )

    def add_fact(
        self,
        subject: str,
        predicate: str,
        object: Any,
        valid_from: TimeLike | None = None,
        valid_to: TimeLike | None = None,
        *,
        confidence: float = 1.0,
        source: str | None = None,
        episode_id: str | None = None,
        properties: Mapping[str, Any] | None = None,
        supersede: bool | None = None,
        literal: bool = False,
    ) -> Fact:
        """Record that ``subject -predicate-> object`` holds during ``[valid_from, valid_to)``.

        Never duplicates: an identical (or contained) re-add returns the
        existing fact and records the extra source; an overlapping or touching
        one coalesces into one fact. A single-valued predicate (or
        ``supersede=True``) closes the old value where the new one starts and
        splices out-of-order arrivals. See ``docs/concepts/time.md``.
        """
        item = {
            "subject": subject, "predicate": predicate, "object": object, "valid_from": valid_from,
            "valid_to": valid_to, "confidence": confidence, "source": source, "episode_id": episode_id,
            "properties": dict(properties) if isinstance(properties, Mapping) else properties,
            "supersede": supersede,
            "literal": literal,
        }
        # a shared write: writers of other (subject, predicate) groups run
        # beside it (on PostgreSQL; SQLite has one writer anyway)
        with self._store.write(shared=True) as tx:
            tx.reserve_names(self._ns, [subject] if literal else [subject, object], [predicate])
            cand, single = self._candidate(tx, item)
            tx.lock_groups([(cand.subject_id, cand.predicate_id)])  # may move tx.now: TxWork starts after
            work = self._work(tx)
            result, status = work.place(cand, single=single)
            self._flush(tx, work)
        log.debug("add_fact %s %s %s -> %s (%s)", subject, predicate, object, result.fact_id, status)
        return self._fact_by_row(result, work)

    def add_facts(self, items: Iterable[Mapping[str, Any] | Sequence[Any]]) -> list[str]:
        """Add many facts in one atomic transaction; returns one fact id per item
        (the existing fact's id where an item was a duplicate or coalesced).
        Items are dicts with :meth:`add_fact`'s parameter names, or tuples
        ``(subject, predicate, object[, valid_from[, valid_to]])``. If any item
        is invalid, nothing is written and the error names the item's index."""
        if not hasattr(items, "__iter__") or isinstance(items, (str, bytes, Mapping)):
            raise InvalidInputError(f"add_facts() needs a list of facts, not {type(items).__name__}")
        ids: list[str] = []
        # a batch keeps every new row alive until it commits: no full-heap GC passes meanwhile
        with paused_gc(), self._store.write() as tx:
            work = self._work(tx)
            builder = CandidateBuilder(tx, self._ns, self.tz)
            for index, item in enumerate(items):
                try:
                    if type(item) is dict or isinstance(item, Mapping):
                        mapping = item
                    elif isinstance(item, (tuple, list)) and 3 <= len(item) <= 5:
                        mapping = dict(zip(("subject", "predicate", "object", "valid_from", "valid_to"), item,
                                           strict=False))
                    else:
                        raise InvalidInputError(
                            "an item must be a dict or a tuple (subject, predicate, object[, valid_from[, valid_to]])"
                        )
                    cand, single = builder.build(mapping)
                except InvalidInputError as exc:
                    exc.args = (f"item {index}: {exc}",)  # keeps the type and fields (e.g. InvalidTimeError.field)
                    raise
                result, _status = work.place(cand, single=single)
                ids.append(result.fact_id)
            self._flush(tx, work)
        if work.redirects:
            # an item's fact may have been folded into another by a later item
            ids = [work.final_id(i) for i in ids]
        return ids

    def _believed(self, tx: WriteTx, work: TxWork, fact_id: str) -> Row:
        rows = tx.rows_of_fact(fact_id)
        if not rows or rows[0].ns_id != self._ns:
            raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {self.namespace!r}")
        live = work.find_believed(fact_id, rows[0].subject_id, rows[0].predicate_id)
        if live is None:
            last = rows[-1]
            raise FactNotFoundError(
                f"fact {fact_id} is no longer believed (its last version was {last.close_kind or 'closed'})"
            )
        return live

    def invalidate(
        self,
        subject: str,
        predicate: str,
        object: Any,
        ended: TimeLike | None = None,
        *,
        reason: str | None = None,
        literal: bool = False,
    ) -> Fact:
        """The world changed: close the valid interval of the matching fact at
        ``ended`` (default now). Raises :class:`FactNotFoundError` if no such
        fact is valid at ``ended``."""
        end = (parse_time(ended, "ended", self.tz) if ended is not None
               else TimePoint(self._now_us(), Precision.MICROSECOND))
        sid = self._entity_for_read(subject, "subject")
        pred = self._predicate_for_read(predicate)
        if literal or not isinstance(object, str):
            okey: tuple[int | None, str | None] = (None, encode_literal(object, self.tz))
        else:
            oid = self._entity_for_read(object, "object")
            okey = (oid, None)
        if sid is None or pred is None or okey == (None, None):
            raise FactNotFoundError(f"no fact {subject} -{predicate}-> {object} to invalidate")
        with self._store.write(shared=True) as tx:
            tx.lock_groups([(sid, pred.id)])
            work = self._work(tx)
            rows = list(work.group(sid, pred.id).by_obj.get(okey, []))
            target = next((r for r in rows if r.vf < end.us < r.vt), None)
            if target is None:
                if any(r.vf == end.us for r in rows):
                    raise InvalidIntervalError(
                        f"{subject} -{predicate}-> {object} starts at {end}; ending it there leaves an empty "
                        "interval: use retract() if it was never true"
                    )
                raise FactNotFoundError(f"no fact {subject} -{predicate}-> {object} is valid at {end}")
            result = work.truncate(target, end.us, int(end.precision), reason or "invalidated")
            self._flush(tx, work)
        return self._fact_by_row(result, work)

    def invalidate_fact(self, fact_id: str, ended: TimeLike | None = None, *, reason: str | None = None) -> Fact:
        """:meth:`invalidate` by id: close the valid interval of the believed
        version of ``fact_id`` at ``ended`` (default now), finding and closing
        it in one write transaction. Raises :class:`FactNotFoundError` if no
        such fact is believed in this namespace and
        :class:`InvalidIntervalError` if ``ended`` does not lie inside its
        valid interval (at its start it would leave an empty interval: use
        :meth:`retract` if it was never true). Returns the new, ended version."""
        end = (parse_time(ended, "ended", self.tz) if ended is not None
               else TimePoint(self._now_us(), Precision.MICROSECOND))
        with self._store.write(shared=True) as tx:
            # a fact's (subject, predicate) group changes only in exclusive
            # writes (correct, merge), so it can be read before locking it
            rows = tx.rows_of_fact(fact_id)
            if not rows or rows[0].ns_id != self._ns:
                raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {self.namespace!r}")
            tx.lock_groups([(rows[0].subject_id, rows[0].predicate_id)])  # may move tx.now: TxWork starts after
            work = self._work(tx)
            target = self._believed(tx, work, fact_id)
            if not target.vf < end.us < target.vt:
                fact = row_to_fact(self._named(target), 0, self.namespace, self._tzname)
                if target.vf == end.us:
                    raise InvalidIntervalError(
                        f"{fact.subject} -{fact.predicate}-> {fact.object} starts at {end}; ending it there leaves "
                        "an empty interval: use retract() if it was never true"
                    )
                raise InvalidIntervalError(
                    f"fact {fact_id} {fact.interval_text} is not valid at {end}, so it cannot end there"
                )
            result = work.truncate(target, end.us, int(end.precision), reason or "invalidated")
            self._flush(tx, work)
        return self._fact_by_row(result, work)

    def correct(self, fact_id: str, **changes: Any) -> Fact:
        """The record was wrong: write a corrected version of ``fact_id``.

        The previous version stays readable with ``known_at``. Changeable:
        subject, predicate, object, valid_from, valid_to, confidence, source,
        episode_id, properties, literal.
        """
        unknown = set(changes) - _CORRECTABLE
        if unknown:
            raise InvalidInputError(f"cannot correct field(s): {', '.join(sorted(unknown))}")
        if not changes:
            raise InvalidInputError("correct() needs at least one field to change")
        with self._store.write() as tx:
            work = self._work(tx)
            old = self._believed(tx, work, fact_id)
            old_fact = row_to_fact(self._named(old), 0, self.namespace, self._tzname)
            item: dict[str, Any] = {
                "subject": old_fact.subject, "predicate": old_fact.predicate, "object": old_fact.object,
                "valid_from": None if old.vf == MIN_US else TimePoint(old.vf, Precision(old.vf_prec)),
                "valid_to": None if old.vt == MAX_US else TimePoint(old.vt, Precision(old.vt_prec)),
                "confidence": old.confidence, "source": old.source, "episode_id": old.episode_id,
                "properties": load_props(old.properties) or None, "literal": old.object_lit is not None,
            }
            item.update(changes)
            cand, single = self._candidate(tx, item)
            cand.fact_id = old.fact_id
            cand.version = old.version + 1
            cand.invalidated_by = old.invalidated_by if "valid_to" not in changes else None
            # values this fact had cut short get their interval back first, so
            # the corrected version cuts them where it now starts
            work.close_version(old, "corrected", None)
            self._unsupersede(tx, work, fact_id)
            result, _ = work.place(cand, single=single, keep=old)
            self._flush(tx, work)
        return self._fact_by_row(result, work)

    def _unsupersede(self, tx: WriteTx, work: TxWork, fact_id: str) -> None:
        """Restore the values that ``fact_id`` had superseded (it was never true)."""
        for closed in tx.rows_closed_by(self._ns, fact_id):
            if closed.close_kind != "superseded":
                continue
            live = work.find_believed(closed.fact_id, closed.subject_id, closed.predicate_id)
            if live is not None and live.invalidated_by != fact_id:
                continue  # changed since: leave it
            versions = tx.rows_of_fact(closed.fact_id)
            if live is None and max(v.version for v in versions) != closed.version:
                continue  # retracted, coalesced or rewritten since: leave it
            cand = closed.copy(version=max(v.version for v in versions) + 1, rowid=None)
            pred = self._store.predicate_by_id(closed.predicate_id)
            work.place(cand, single=pred is not None and pred.cardinality == "one", keep=live,
                       keep_kind="restored")

    def retract(self, fact_id: str, reason: str | None = None) -> Fact:
        """It was never true: stop believing ``fact_id`` (history keeps it).
        Values it had superseded are restored. Returns the retracted version."""
        with self._store.write() as tx:
            work = self._work(tx)
            row = self._believed(tx, work, fact_id)
            work.retract(row, reason or "retracted")
            self._unsupersede(tx, work, fact_id)
            self._flush(tx, work)
        return max(self.versions(fact_id), key=lambda f: f.version)

    def erase(self, fact_id: str | None = None, *, entity: str | None = None, confirm: bool = False,
              reason: str | None = None) -> int:
        """Physically delete one fact (every version, its sources, and the
        facts coalesced into it) or an entity with all its facts, its names
        and the entities merged into it, for privacy. Needs ``confirm=True``.
        Leaves an erasure-log row without content. Returns the number of
        versions deleted (``docs/concepts/time.md``, "Erasure")."""
        if (fact_id is None) == (entity is None):
            raise InvalidInputError("erase() takes exactly one of fact_id or entity=")
        if not confirm:
            raise ConfirmationRequiredError("erase() deletes data permanently; call it again with confirm=True")
        with self._store.write() as tx:
            work = self._work(tx)
            if fact_id is not None:
                rows = tx.rows_of_fact(fact_id)
                if not rows or rows[0].ns_id != self._ns:
                    raise FactNotFoundError(f"no fact with id {fact_id!r}")
                # facts coalesced into one another are one statement: they go
                # together, whichever id is given (the kept one comes first)
                family = tx.coalesced_family(fact_id)
                if family[0] != fact_id:
                    rows = tx.rows_of_fact(family[0])
                live = work.find_believed(family[0], rows[0].subject_id, rows[0].predicate_id)
                if live is not None:
                    work.retract(live, "erased")
                    for fid in family:  # the values any of them had superseded are believed again
                        self._unsupersede(tx, work, fid)
                self._flush(tx, work)
                n = sum(tx.erase_fact(fid) for fid in family)
                tx.log_erasure(self._ns, "fact", n, reason)
            else:
                eid = tx.entity_id(self._ns, normalize_key(entity, "entity"))
                if eid is None:
                    raise EntityNotFoundError(f"no entity named {entity!r}")
                n = tx.erase_entity(eid)
                tx.log_erasure(self._ns, "entity", n, reason)
        self._store.after_erasure("fact" if fact_id is not None else "entity")  # e.g. SQLite's WAL
        return n

    # -- entities, aliases, predicates -----------------------------------
    # -- reads -----------------------------------------------------------
    def _query(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        object: Any = None,
        *,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        direction: str = "out",
        limit: int | None = None,
        all_versions: bool = False,
        overlap: tuple[int, int] | None = None,
        literal: bool = False,
    ) -> FactQuery | None:
        if direction not in _DIRECTIONS:
            raise InvalidInputError(f"direction must be one of {', '.join(_DIRECTIONS)}, not {direction!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be a non-negative integer, not {limit!r}")
        as_of_us = self._instant(as_of, "as_of")
        known_us = self._known(known_at)
        # Names resolve inside the read's own SQL (in its snapshot, with no
        # cache another process could have made stale), except "as known
        # at" a past time: a name a later merge moved named what it named then.
        subject_ids = subject_key = None
        if subject is not None:
            if known_us is None:
                subject_key = normalize_key(subject, "subject")
            else:
                sid = self._entity_for_read(subject, "subject", known_us)
                if sid is None:
                    return None
                subject_ids = [sid]
        predicate_key = None if predicate is None else normalize_key(predicate, "predicate")
        object_id = object_lit = None
        if object is not None:
            if literal or not isinstance(object, str):
                object_lit = encode_literal(object, self.tz)
            else:
                object_id = self._entity_for_read(object, "object", known_us)
                if object_id is None:
                    object_lit = encode_literal(object, self.tz)
        return FactQuery(
            self._ns, subject_ids, object_id, object_lit, direction,  # type: ignore[arg-type]
            as_of_us, known_us, all_versions, overlap, None, limit, subject_key, predicate_key,
        )

    def _run(self, q: FactQuery | None) -> list[Fact]:
        if q is None:
            return []
        store = self._store
        rows = store.query_tuples(q)
        if not rows:
            return []
        return tuples_to_facts(rows, self._now_us(), self.namespace, self._tzname, store.entity_names,
                               store.predicate_names)

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
        out = self._run(self._query(subject, predicate, object, as_of=as_of, known_at=known_at,
                                    direction=direction, limit=limit, literal=literal))
        if decay_half_life is not None:
            out = self.with_decay(out, decay_half_life, as_of)
        return out

    def facts_sql(self, subject: str | None = None, predicate: str | None = None, object: Any = None,
                  **kwargs: Any) -> tuple[str, list[Any]]:
        """The SQL (and parameters) :meth:`facts` would run, for ``--sql``.
        Names are looked up inside it. One entity's outgoing facts (no
        ``limit``) are selected without ``ORDER BY``: :meth:`facts` sorts
        those few rows by ``(valid_from, rowid)`` itself, faster than SQLite's
        sorter; every other shape is ordered in SQL."""
        q = self._query(subject, predicate, object, **kwargs)
        if q is None:
            return "-- no such entity or predicate: the query returns nothing without touching the store", []
        return self._store.read_sql(q)

    def current(self, subject: str, predicate: str | None = None) -> list[Fact]:
        """What is true now (as currently believed)."""
        return self.facts(subject, predicate, as_of=self.now(), direction="out")

    def between(self, start: TimeLike | None, end: TimeLike | None, *, subject: str | None = None,
                predicate: str | None = None, object: Any = None, known_at: TimeLike | None = None,
                direction: str = "out") -> list[Fact]:
        """Facts whose valid interval overlaps ``[start, end)``."""
        lo = self._instant(start, "start")
        hi = self._instant(end, "end")
        lo = MIN_US if lo is None else lo
        hi = MAX_US if hi is None else hi
        if hi <= lo:
            raise InvalidIntervalError(f"end ({end}) must be after start ({start})")
        return self._run(self._query(subject, predicate, object, known_at=known_at, direction=direction,
                                     overlap=(lo, hi)))

    def history(self, subject: str, predicate: str | None = None, *, direction: str = "out") -> list[Fact]:
        """Every version on both axes (the audit trail), oldest record first."""
        facts = self._run(self._query(subject, predicate, direction=direction, all_versions=True))
        return sorted(facts, key=lambda f: (f.system_from, f.id, f.version))

    def fact(self, fact_id: str, *, known_at: TimeLike | None = None) -> Fact:
        """One fact by id: the version believed at ``known_at`` (default now)."""
        at = self._known(known_at)
        rows = self._store.query(FactQuery(self._ns, fact_ids=[fact_id], all_versions=True))
        if not rows:
            raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {self.namespace!r}")
        now = self._now_us()
        for r in rows:
            if (at is None and r.st == MAX_US) or (at is not None and r.sf <= at < r.st):
                return row_to_fact(r, now, self.namespace, self._tzname)
        last = max(rows, key=lambda r: r.version)
        return row_to_fact(last, now, self.namespace, self._tzname)

    def versions(self, fact_id: str) -> list[Fact]:
        """All versions of one fact, oldest first."""
        rows = self._store.query(FactQuery(self._ns, fact_ids=[fact_id], all_versions=True))
        now = self._now_us()
        return sorted((row_to_fact(r, now, self.namespace, self._tzname) for r in rows), key=lambda f: f.version)

    def evidence(self, fact_id: str) -> list[Provenance]:
        """Every recorded source of a fact: its first source, then extra ones."""
        versions = self.versions(fact_id)
        if not versions:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")
        first = versions[0]
        out = []
        if first.source or first.episode_id:
            out.append(Provenance(fact_id, first.source, first.episode_id, first.system_from))
        for fid, src, ep, at in self._store.sources([fact_id]):
            out.append(Provenance(fid, src, ep, from_us(at)))
        return out

    def timeline(self, entity: str, start: TimeLike | None = None, end: TimeLike | None = None) -> list[Event]:
        """Chronological events about ``entity`` on both axes, each with a sentence."""
        self._require_entity(entity)
        rows = self._run(self._query(entity, direction="both", all_versions=True))
        return _analysis.timeline(rows, self._instant(start, "start"), self._instant(end, "end"))

    def diff(self, t1: TimeLike, t2: TimeLike, subject: str | None = None, predicate: str | None = None,
             axis: str = "valid") -> Diff:
        """What changed between ``t1`` and ``t2`` on the valid or system axis."""
        if axis not in ("valid", "system"):
            raise InvalidInputError(f"axis must be 'valid' or 'system', not {axis!r}")
        a = self.parse_time(t1, "t1")
        b = self.parse_time(t2, "t2")
        if axis == "valid":
            before = self.facts(subject, predicate, as_of=a)
            after = self.facts(subject, predicate, as_of=b)
        else:
            before = self.facts(subject, predicate, known_at=a)
            after = self.facts(subject, predicate, known_at=b)
        single = {p.name for p in self.predicates() if p.cardinality == "one"}
        return _analysis.diff(before, after, a.datetime, b.datetime, axis, single)  # type: ignore[arg-type]

    def conflicts(self, as_of: TimeLike | None = None) -> list[Conflict]:
        """Facts of one (subject, predicate) valid at the same time: errors for
        single-valued predicates, a review list for undeclared ones."""
        preds = {p.name: p for p in self.predicates()}
        facts = self.facts(as_of=as_of)
        return _analysis.conflicts(facts, preds)

    def volatility(self, top: int = 20, start: TimeLike | None = None, end: TimeLike | None = None) -> list[Volatility]:
        """How often each (subject, predicate) changed value, most volatile first."""
        _count(top, "top", 0)
        if start is not None or end is not None:
            facts = self.between(start, end)
        else:
            facts = self.facts()
        return _analysis.volatility(facts, top)

    def neighbors(self, entity: str, hops: int = 1, as_of: TimeLike | None = None) -> list[Neighbor]:
        """Entities within ``hops`` edges, every edge valid at ``as_of``."""
        self._require_entity(entity)
        _count(hops, "hops", 1)
        return _analysis.neighbors(lambda name: self.facts(name, as_of=as_of, direction="both"), entity, hops)

    def paths(self, source: str, target: str, max_hops: int = 3, as_of: TimeLike | None = None,
              limit: int = 50) -> list[Path]:
        """Simple paths from ``source`` to ``target``, every edge valid at ``as_of``."""
        src = self.entity(source).name
        dst = self.entity(target).name
        _count(max_hops, "max_hops", 1)
        _count(limit, "limit", 0)
        return _analysis.paths(lambda name: self.facts(name, as_of=as_of, direction="both"), src, dst,
                               max_hops, limit)

    def search_facts(self, text: str, *, as_of: TimeLike | None = None, limit: int = 100) -> list[Fact]:
        """Case-insensitive substring search over entity and predicate names."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("search text must be a non-empty string")
        _count(limit, "limit", 0)
        needle = text.strip().casefold()
        out: dict[tuple[str, int], Fact] = {}
        for rec in self._store.entities_by_key_substring(self._ns, normalize_key(text, "text"), limit):
            for f in self.facts(rec.name, as_of=as_of, direction="both", limit=limit):
                out[(f.id, f.version)] = f
        for p in self._store.predicates(self._ns):
            if needle in p.name.casefold() or normalize_key(text, "text") in p.key:
                for f in self.facts(predicate=p.name, as_of=as_of, limit=limit):
                    out[(f.id, f.version)] = f
        return sorted(out.values(), key=lambda f: (f.subject, f.predicate, f.valid_from or from_us(0)))[:limit]

    def recent_changes(self, limit: int = 20) -> list[Event]:
        """The latest system-time events (versions recorded or closed), newest first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, not {limit!r}")
        now = self._now_us()
        events: list[tuple[int, int, Event]] = []
        for r in self._store.recent_rows(self._ns, limit):
            fact = row_to_fact(r, now, self.namespace, self._tzname)
            kind = "recorded" if r.version == 1 else "new version"
            events.append((r.sf, r.rowid or 0, Event(fact.system_from, kind, "system", fact.id,
                                                     f"{kind}: {fact.line()}", fact)))
            if r.st != MAX_US and fact.system_to is not None:
                closed = r.close_kind or "closed"
                events.append((r.st, r.rowid or 0, Event(fact.system_to, closed, "system", fact.id,
                                                         f"{closed}: {fact.line()}", fact)))
        events.sort(key=lambda e: (e[0], e[1]), reverse=True)
        return [e for _at, _rowid, e in events[:limit]]

    def stats(self) -> Stats:
        s = self._store.stats(self._ns, self._now_us())
        return Stats(
            namespace=self.namespace, entities=s["entities"], facts=s["facts"], current=s["current"],
            ended=s["facts"] - s["current"], retracted=s["retracted"], versions=s["versions"],
            predicates=s["predicates"], namespaces=tuple(self._store.namespaces()),
        )

    def with_decay(self, facts: Sequence[Fact], half_life_days: float, at: TimeLike | None = None) -> list[Fact]:
        """Read-time confidence decay: each fact's confidence halves every
        ``half_life_days`` since it was recorded. Stored rows never change."""
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) or not half_life_days > 0:
            raise InvalidInputError("decay half-life must be positive")
        ref = self.parse_time(at, "at").datetime if at is not None else self.now()
        return _analysis.decay(facts, half_life_days, ref)


def _owner_at(merges: Sequence[tuple[int, str, int | None]], key: str, current: int, at: int) -> int:
    """Which entity owned name ``key`` at system time ``at``, given the merges
    (oldest first) that moved it: during ``[merged, undone)`` a moved key names
    the kept entity, before and after that the folded one."""
    owner: int | None = None
    first_fold: int | None = None
    for when, payload, undone in merges:
        data = json.loads(payload)
        if key not in data.get("keys", ()):
            continue
        if first_fold is None:
            first_fold = int(data["fold"])
        if when <= at:
            owner = int(data["keep"]) if undone is None or at < undone else int(data["fold"])
    if owner is not None:
        return owner
    return first_fold if first_fold is not None else current
