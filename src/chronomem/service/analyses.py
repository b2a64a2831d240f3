"""Analyses over fact reads: timeline, diff, conflicts, volatility,
neighbours and paths (the algorithms are pure, in
:mod:`chronomem.core.analysis`; this layer reads their input)."""

from __future__ import annotations

from ..core import analysis as _analysis
from ..core.models import Conflict, Diff, Event, Neighbor, Path, Volatility
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
        return _analysis.timeline(rows, self._scope.instant(start, "start"), self._scope.instant(end, "end"))

    def diff(self, t1: TimeLike, t2: TimeLike, subject: str | None = None, predicate: str | None = None,
             axis: str = "valid") -> Diff:
        """What changed between ``t1`` and ``t2`` on the valid or system axis."""
        if axis not in ("valid", "system"):
            raise InvalidInputError(f"axis must be 'valid' or 'system', not {axis!r}")
        a = self._scope.parse_time(t1, "t1")
        b = self._scope.parse_time(t2, "t2")
        if axis == "valid":
            before = self._reads.facts(subject, predicate, as_of=a)
            after = self._reads.facts(subject, predicate, as_of=b)
        else:
            before = self._reads.facts(subject, predicate, known_at=a)
            after = self._reads.facts(subject, predicate, known_at=b)
        single = {p.name for p in self._identity.predicates() if p.cardinality == "one"}
        return _analysis.diff(before, after, a.datetime, b.datetime, axis, single)  # type: ignore[arg-type]

    def conflicts(self, as_of: TimeLike | None = None) -> list[Conflict]:
        """Facts of one (subject, predicate) valid at the same time: errors for
        single-valued predicates, a review list for undeclared ones."""
        preds = {p.name: p for p in self._identity.predicates()}
        facts = self._reads.facts(as_of=as_of)
        return _analysis.conflicts(facts, preds)

    def volatility(self, top: int = 20, start: TimeLike | None = None, end: TimeLike | None = None) -> list[Volatility]:
        """How often each (subject, predicate) changed value, most volatile first."""
        count(top, "top", 0)
        if start is not None or end is not None:
            facts = self._reads.between(start, end)
        else:
            facts = self._reads.facts()
        return _analysis.volatility(facts, top)

    def neighbors(self, entity: str, hops: int = 1, as_of: TimeLike | None = None) -> list[Neighbor]:
        """Entities within ``hops`` edges, every edge valid at ``as_of``."""
        self._scope.require_entity(entity)
        count(hops, "hops", 1)
        return _analysis.neighbors(lambda name: self._reads.facts(name, as_of=as_of, direction="both"), entity, hops)

    def paths(self, source: str, target: str, max_hops: int = 3, as_of: TimeLike | None = None,
              limit: int = 50) -> list[Path]:
        """Simple paths from ``source`` to ``target``, every edge valid at ``as_of``."""
        src = self._identity.entity(source).name
        dst = self._identity.entity(target).name
        count(max_hops, "max_hops", 1)
        count(limit, "limit", 0)
        return _analysis.paths(lambda name: self._reads.facts(name, as_of=as_of, direction="both"), src, dst,
                               max_hops, limit)
