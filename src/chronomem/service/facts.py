"""Fact writes: add, invalidate, correct, retract and erase, each one
transaction through a :class:`~chronomem.service.unit_of_work.UnitOfWork`
(the rules are the write engine's, :mod:`chronomem.core.engine`)."""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Sequence

from ..core.codec import encode_literal, load_props
from ..core.engine import TxWork, same_content
from ..core.limits import MAX_BATCH, MAX_REASON_CHARS, check_bool, opt_text
from ..core.models import Fact
from ..core.names import normalize_key
from ..core.time import MAX_US, MIN_US, Precision, TimeLike, TimePoint
from ..core.version import CloseKind, Row
from ..errors import (
    ConfirmationRequiredError,
    FactNotFoundError,
    InvalidInputError,
    InvalidIntervalError,
    LimitExceededError,
)
from .gcpause import paused_gc
from .reads import FactReads
from .scope import Scope
from .suggest import unknown_entity
from .unit_of_work import UnitOfWork, writing

__all__ = ["FactWrites"]

log = logging.getLogger("chronomem")

# add_facts hands its work to the store every this many items (where the store
# can take it in parts: Capabilities.flush_in_parts), still in one transaction:
# the engine's working set (~1 KB per item) then never holds more than this
# many items' versions (docs/limits.md)
FLUSH_ROWS = 50_000

_CORRECTABLE = frozenset(
    {"subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source", "episode_id",
     "properties", "literal"}
)


def _reason(reason: object) -> str | None:
    """A free-text end reason as stored: ``None`` for none (or an empty text)."""
    if reason is None:
        return None
    return opt_text(reason, "reason", MAX_REASON_CHARS)


class FactWrites:
    """Every write of facts in one namespace."""

    def __init__(self, scope: Scope, reads: FactReads) -> None:
        self._scope = scope
        self._reads = reads

    def _written(self, row: Row, work: TxWork) -> Fact:
        """The public view of a version this memory just wrote (or found)."""
        scope = self._scope
        if row.rowid is None and id(row) not in work.new_rows:
            # not written as such (a no-op write dropped it): read what is believed
            versions = self._reads.versions_of(row.fact_id)
            for f in versions:
                if f.system_to is None:
                    return f
            for f in versions:
                if f.version == row.version:
                    return f
            raise FactNotFoundError(f"fact {row.fact_id} vanished")  # pragma: no cover
        return scope.fact(scope.named(row), scope.now_us())

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
        check_bool(literal, "literal")
        item = {
            "subject": subject, "predicate": predicate, "object": object, "valid_from": valid_from,
            "valid_to": valid_to, "confidence": confidence, "source": source, "episode_id": episode_id,
            "properties": dict(properties) if isinstance(properties, Mapping) else properties,
            "supersede": supersede,
            "literal": literal,
        }
        # a shared write: writers of other (subject, predicate) groups run
        # beside it (on PostgreSQL; SQLite has one writer anyway)
        with writing(self._scope, shared=True) as uow:
            for _ in range(2):
                uow.tx.reserve_names(self._scope.ns_id, [subject] if literal else [subject, object], [predicate])
                cand, single = uow.build(item)
                # may move tx.now: the work starts after. False (rarely): the
                # names changed before the transaction began; build again
                if uow.tx.lock_groups([(cand.subject_id, cand.predicate_id)]):
                    break
                uow.forget_names()
            work = uow.work
            result, status = work.place(cand, single=single)
        log.debug("add_fact %s %s %s -> %s (%s)", subject, predicate, object, result.fact_id, status)
        return self._written(result, work)

    def add_facts(self, items: Iterable[Mapping[str, Any] | Sequence[Any]]) -> list[str]:
        """Add many facts in one atomic transaction; returns one fact id per item
        (the existing fact's id where an item was a duplicate or coalesced).
        Items are dicts with :meth:`add_fact`'s parameter names, or tuples
        ``(subject, predicate, object[, valid_from[, valid_to]])``. If any item
        is invalid, nothing is written and the error names the item's index."""
        if not hasattr(items, "__iter__") or isinstance(items, (str, bytes, Mapping)):
            raise InvalidInputError(f"add_facts() needs a list of facts, not {type(items).__name__}")
        ids: list[str] = []
        # fact ids folded into another by coalescing, over every part flushed so far
        redirects: dict[str, str] = {}
        # a batch keeps every new row alive until it commits: no full-heap GC passes meanwhile
        with paused_gc(), writing(self._scope) as uow:
            builder = uow.builder
            step = FLUSH_ROWS if uow.tx.capabilities.flush_in_parts else MAX_BATCH + 1
            part: list[tuple[Row, bool]] = []
            for index, item in enumerate(items):
                if index == MAX_BATCH:
                    raise LimitExceededError("add_facts() items", MAX_BATCH, None, unit="items")
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
                    part.append(builder.build(mapping))
                except InvalidInputError as exc:
                    exc.args = (f"item {index}: {exc}",)  # keeps the type and fields (e.g. InvalidTimeError.field)
                    raise
                if len(part) == step:
                    # the items so far go to the store (same transaction): a later
                    # item replacing one of their versions deletes it again
                    redirects.update(self._place(uow, part, ids, last=False).redirects)
                    part = []
            work = self._place(uow, part, ids, last=True)
        redirects.update(work.redirects)
        if redirects:
            # an item's fact may have been folded into another by a later item
            work.redirects = redirects
            ids = [work.final_id(i) for i in ids]
        return ids

    @staticmethod
    def _place(uow: UnitOfWork, part: list[tuple[Row, bool]], ids: list[str], *, last: bool) -> TxWork:
        """Place one part's candidates (their groups read at once where the
        store can), append their fact ids, and hand the work to the store
        unless it is the ``last`` part (the unit of work flushes that one at
        commit); the part's work (its ``redirects``: facts folded by coalescing)."""
        if part:
            uow.prefetch((c.subject_id, c.predicate_id) for c, _single in part)
        work = uow.work
        place = work.place
        for cand, single in part:
            result, _status = place(cand, single=single)
            ids.append(result.fact_id)
        if not last:
            uow.flush(last=False)
        return work

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
        ``ended`` (default now), for ``reason`` if given (free text, kept as
        the new version's ``ended_reason``; its ``ended_by`` is
        ``invalidated``). Raises :class:`FactNotFoundError` if no such fact is
        valid at ``ended``."""
        why = _reason(reason)
        check_bool(literal, "literal")
        end = (self._scope.parse_time(ended, "ended") if ended is not None
               else TimePoint(self._scope.now_us(), Precision.MICROSECOND))
        scope = self._scope

        def group() -> tuple[int, int, tuple[int | None, str | None]]:
            sid = scope.entity_id(subject, "subject")
            pred = scope.predicate(predicate)
            if literal or not isinstance(object, str):
                okey: tuple[int | None, str | None] = (None, encode_literal(object, scope.tz))
            else:
                okey = (scope.entity_id(object, "object"), None)
            if sid is None or pred is None or okey == (None, None):
                raise FactNotFoundError(f"no fact {subject} -{predicate}-> {object} to invalidate")
            return sid, pred.id, okey

        sid, pid, okey = group()
        with writing(scope, shared=True) as uow:
            if not uow.tx.lock_groups([(sid, pid)]):
                # the names changed before the transaction began: read them again, under its lock
                sid, pid, okey = group()
                uow.tx.lock_groups([(sid, pid)])
            work = uow.work
            rows = list(work.group(sid, pid).by_obj.get(okey, []))
            target = next((r for r in rows if r.valid_from < end.us < r.valid_to), None)
            if target is None:
                if any(r.valid_from == end.us for r in rows):
                    raise InvalidIntervalError(
                        f"{subject} -{predicate}-> {object} starts at {end}; ending it there leaves an empty "
                        "interval: use retract() if it was never true"
                    )
                raise FactNotFoundError(f"no fact {subject} -{predicate}-> {object} is valid at {end}")
            result = work.truncate(target, end.us, int(end.precision), reason=why)
        return self._written(result, work)

    def invalidate_fact(self, fact_id: str, ended: TimeLike | None = None, *, reason: str | None = None) -> Fact:
        """:meth:`invalidate` by id: close the valid interval of the believed
        version of ``fact_id`` at ``ended`` (default now), finding and closing
        it in one write transaction. Raises :class:`FactNotFoundError` if no
        such fact is believed in this namespace and
        :class:`InvalidIntervalError` if ``ended`` does not lie inside its
        valid interval (at its start it would leave an empty interval: use
        :meth:`retract` if it was never true). Returns the new, ended version.
        Every ``fact_id`` here may be shortened: a unique start of the id, or
        its end (the short id tables print), of 8 characters or more."""
        why = _reason(reason)
        end = (self._scope.parse_time(ended, "ended") if ended is not None
               else TimePoint(self._scope.now_us(), Precision.MICROSECOND))
        scope = self._scope
        fact_id = self._reads.resolve_id(fact_id)
        with writing(scope, shared=True) as uow:
            tx = uow.tx
            # a fact's (subject, predicate) group changes only in exclusive
            # writes (correct, merge), so it can be read before locking it
            rows = tx.rows_of_fact(fact_id)
            if not rows or rows[0].ns_id != scope.ns_id:
                raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {scope.namespace!r}")
            tx.lock_groups([(rows[0].subject_id, rows[0].predicate_id)])  # may move tx.now: the work starts after
            work = uow.work
            target = uow.believed(fact_id)
            if not target.valid_from < end.us < target.valid_to:
                fact = scope.fact(scope.named(target), 0)
                if target.valid_from == end.us:
                    raise InvalidIntervalError(
                        f"{fact.subject} -{fact.predicate}-> {fact.object} starts at {end}; ending it there leaves "
                        "an empty interval: use retract() if it was never true"
                    )
                raise InvalidIntervalError(
                    f"fact {fact_id} {fact.interval_text} is not valid at {end}, so it cannot end there"
                )
            result = work.truncate(target, end.us, int(end.precision), reason=why)
        return self._written(result, work)

    def correct(self, /, fact_id: str, *, reason: str | None = None, **changes: Any) -> Fact:
        """The record was wrong: write a corrected version of ``fact_id``.

        The previous version stays readable with ``known_at`` (its
        ``ended_by`` is ``corrected``, its ``ended_reason`` the free-text
        ``reason`` if given). Changeable: subject, predicate, object,
        valid_from, valid_to, confidence, source, episode_id, properties,
        literal. ``fact_id`` may be shortened (see :meth:`invalidate_fact`).
        """
        why = _reason(reason)
        unknown = set(changes) - _CORRECTABLE
        if unknown:
            raise InvalidInputError(f"cannot correct field(s): {', '.join(sorted(unknown))}")
        if not changes:
            raise InvalidInputError("correct() needs at least one field to change")
        scope = self._scope
        fact_id = self._reads.resolve_id(fact_id)
        with writing(scope) as uow:
            work = uow.work
            old = uow.believed(fact_id)
            old_fact = scope.fact(scope.named(old), 0)
            item: dict[str, Any] = {
                "subject": old_fact.subject, "predicate": old_fact.predicate, "object": old_fact.object,
                "valid_from": (None if old.valid_from == MIN_US
                               else TimePoint(old.valid_from, Precision(old.valid_from_prec))),
                "valid_to": None if old.valid_to == MAX_US else TimePoint(old.valid_to, Precision(old.valid_to_prec)),
                "confidence": old.confidence, "source": old.source, "episode_id": old.episode_id,
                "properties": load_props(old.properties) or None, "literal": old.object_lit is not None,
            }
            item.update(changes)
            cand, single = uow.build(item)
            cand.fact_id = old.fact_id
            cand.version = old.version + 1
            if "valid_to" not in changes:  # the end stays, and so does what caused it (and the end it was given)
                cand.end_kind, cand.invalidated_by, cand.end_reason = old.end_kind, old.invalidated_by, old.end_reason
                cand.stated_to, cand.stated_to_prec = old.stated_to, old.stated_to_prec
            else:
                cand.end_kind = cand.invalidated_by = cand.end_reason = None
            if same_content(old, cand):
                return self._written(old, work)  # nothing changes: nothing is written, not even a restore
            # values this fact had cut short get their interval back first, so
            # the corrected version cuts them where it now starts
            work.close_version(old, CloseKind.CORRECTED, why)
            for fid in uow.tx.coalesced_family(fact_id):  # what the statement's folded parts cut, too
                uow.unsupersede(fid, then=cand if single else None)
            result, _ = work.place(cand, single=single, keep=old)
        return self._written(result, work)

    def retract(self, fact_id: str, reason: str | None = None) -> Fact:
        """It was never true: stop believing ``fact_id`` (history keeps it).
        Values it had superseded are restored. Returns the retracted version
        (``ended_by`` ``retracted``, ``ended_reason`` the free-text ``reason``
        if given). ``fact_id`` may be shortened (see :meth:`invalidate_fact`)."""
        why = _reason(reason)
        fact_id = self._reads.resolve_id(fact_id)
        with writing(self._scope) as uow:
            uow.work.retract(uow.believed(fact_id), why)
            # facts coalesced into it are one statement, taken back with it: what any of them cut is given back
            for fid in uow.tx.coalesced_family(fact_id):
                uow.unsupersede(fid)
        return max(self._reads.versions_of(fact_id), key=lambda f: f.version)

    def erase(self, fact_id: str | None = None, *, entity: str | None = None, confirm: bool = False,
              reason: str | None = None) -> int:
        """Physically delete one fact (every version, its sources, and the
        facts coalesced into it) or an entity with all its facts, its names
        and the entities merged into it, for privacy. Needs ``confirm=True``.
        Leaves an erasure-log row without content. Returns the number of
        versions deleted (``docs/concepts/time.md``, "Erasure"). ``fact_id``
        may be shortened (see :meth:`invalidate_fact`)."""
        if (fact_id is None) == (entity is None):
            raise InvalidInputError("erase() takes exactly one of fact_id or entity=")
        if not check_bool(confirm, "confirm"):  # confirm="no" must not erase
            raise ConfirmationRequiredError("erase() deletes data permanently; call it again with confirm=True")
        reason = _reason(reason)
        ns = self._scope.ns_id
        if fact_id is not None:
            fact_id = self._reads.resolve_id(fact_id)
        with writing(self._scope) as uow:
            tx, work = uow.tx, uow.work
            if fact_id is not None:
                rows = tx.rows_of_fact(fact_id)
                if not rows or rows[0].ns_id != ns:
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
                        uow.unsupersede(fid)
                uow.flush()
                n = sum(tx.erase_fact(fid) for fid in family)
                tx.log_erasure(ns, "fact", n, reason)
            else:
                eid = tx.entity_id(ns, normalize_key(entity, "entity"))
                if eid is None:
                    raise unknown_entity(self._scope.store, ns, self._scope.namespace, str(entity))
                n = tx.erase_entity(eid)
                tx.log_erasure(ns, "entity", n, reason)
        self._scope.store.after_erasure("fact" if fact_id is not None else "entity")  # e.g. SQLite's WAL
        return n
