"""Analyses over fact reads: timeline, diff, conflicts, volatility,
neighbours and paths (the algorithms are pure, in
:mod:`chronomem.core.analysis`; this layer reads their input)."""

from __future__ import annotations

from ..core import analysis as _analysis
from ..core.models import Conflict, Diff, Event, FactBar, Neighbor, Path, Volatility
from ..core.time import TimeLike
from ..errors import InvalidInputError
from .identity import Identity
from .reads import FactReads
from .scope import Scope, count

__all__ = ["Analyses"]


class Analyses:
    """The analyses of one namespace's facts."""

    def __init__(self, scope: Scope, reads: FactReads, identity: Identity) -> None:
        self._scope = scope
        self._reads = reads
        self._identity = identity

    def timeline(self, entity: str, start: TimeLike | None = None, end: TimeLike | None = None) -> list[Event]:
        """Chronological events about ``entity`` on both axes, each with a sentence."""
        self._scope.require_entity(entity)
        rows = self._reads.run(self._reads.query(entity, direction="both", all_versions=True))
        ids = {f.id for f in rows}
        # the facts that cut them short but touch the entity only through them
        enders = self._reads.enders(f for f in rows if f.invalidated_by and f.invalidated_by not in ids)
        return _analysis.timeline(rows, self._scope.instant(start, "start"), self._scope.instant(end, "end"),
                                  enders)

    def diff(self, t1: TimeLike, t2: TimeLike, subject: str | None = None, predicate: str | None = None,
             axis: str = "valid", *, known_at: TimeLike | None = None, as_of: TimeLike | None = None) -> Diff:
        """What changed between ``t1`` and ``t2`` on the valid or system axis.
        On the valid axis both reads are as believed at ``known_at`` (default
        now); on the system axis both are of the facts valid at ``as_of``
        (default: any time). The other axis' parameter is an error."""
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
        if axis == "valid":
            before = self._reads.facts(subject, predicate, as_of=a, known_at=known_at)
            after = self._reads.facts(subject, predicate, as_of=b, known_at=known_at)
        else:
            before = self._reads.facts(subject, predicate, known_at=a, as_of=as_of)
            after = self._reads.facts(subject, predicate, known_at=b, as_of=as_of)
        single = {p.name for p in self._identity.predicates() if p.cardinality == "one"}
        return _analysis.diff(before, after, a.datetime, b.datetime, axis, single)  # type: ignore[arg-type]

    def conflicts(self, as_of: TimeLike | None = None, *, known_at: TimeLike | None = None) -> list[Conflict]:
        """Facts of one (subject, predicate) valid at the same time (at
        ``as_of``; default: anywhere in history), as believed at ``known_at``
        (default now): errors for single-valued predicates, a review list for
        undeclared ones."""
        preds = {p.name: p for p in self._identity.predicates()}
        facts = self._reads.facts(as_of=as_of, known_at=known_at)
        return _analysis.conflicts(facts, preds)

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
        return _analysis.neighbors(
            lambda name: self._reads.facts(name, as_of=as_of, known_at=known_at, direction="both"), entity, hops)

    def paths(self, source: str, target: str, max_hops: int = 3, as_of: TimeLike | None = None,
              limit: int = 50, *, known_at: TimeLike | None = None) -> list[Path]:
        """Simple paths from ``source`` to ``target``, every edge valid at
        ``as_of`` as believed at ``known_at`` (default now)."""
        src = self._identity.entity(source).name
        dst = self._identity.entity(target).name
        count(max_hops, "max_hops", 1)
        count(limit, "limit", 0)
        as_of, known_at = self._scope.basis(as_of, "as_of"), self._scope.basis(known_at, "known_at")
        return _analysis.paths(
            lambda name: self._reads.facts(name, as_of=as_of, known_at=known_at, direction="both"), src, dst,
            max_hops, limit)

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
