"""One version of a fact: the unit the write engine works on and the stores
keep. Times are integer UTC microseconds with the ``MIN_US`` / ``MAX_US``
sentinels (unknown start, open end, still believed)."""

from __future__ import annotations

from typing import Any

from .time import MAX_US

__all__ = ["ObjKey", "Row"]

ObjKey = tuple[int | None, str | None]


class Row:
    """One version of a fact, as stored. Mutable only inside the write engine,
    and only for versions that the running transaction created."""

    __slots__ = (
        "rowid", "fact_id", "version", "ns_id", "subject_id", "predicate_id",
        "object_id", "object_lit", "vf", "vf_prec", "vt", "vt_prec", "sf", "st",
        "confidence", "source", "episode_id", "properties", "invalidated_by",
        "close_kind", "closed_by", "subject_name", "predicate_name", "object_name",
    )

    def __init__(
        self,
        rowid: int | None,
        fact_id: str,
        version: int,
        ns_id: int,
        subject_id: int,
        predicate_id: int,
        object_id: int | None,
        object_lit: str | None,
        vf: int,
        vf_prec: int,
        vt: int,
        vt_prec: int,
        sf: int,
        st: int = MAX_US,
        confidence: float = 1.0,
        source: str | None = None,
        episode_id: str | None = None,
        properties: str | None = None,
        invalidated_by: str | None = None,
        close_kind: str | None = None,
        closed_by: str | None = None,
        subject_name: str | None = None,
        predicate_name: str | None = None,
        object_name: str | None = None,
    ) -> None:
        self.rowid = rowid
        self.fact_id = fact_id
        self.version = version
        self.ns_id = ns_id
        self.subject_id = subject_id
        self.predicate_id = predicate_id
        self.object_id = object_id
        self.object_lit = object_lit
        self.vf = vf
        self.vf_prec = vf_prec
        self.vt = vt
        self.vt_prec = vt_prec
        self.sf = sf
        self.st = st
        self.confidence = confidence
        self.source = source
        self.episode_id = episode_id
        self.properties = properties
        self.invalidated_by = invalidated_by
        self.close_kind = close_kind
        self.closed_by = closed_by
        self.subject_name = subject_name
        self.predicate_name = predicate_name
        self.object_name = object_name

    @property
    def okey(self) -> ObjKey:
        return (self.object_id, self.object_lit)

    def copy(self, **changes: Any) -> "Row":
        new = Row.__new__(Row)
        for name in Row.__slots__:
            setattr(new, name, changes.get(name, getattr(self, name)))
        return new

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (
            f"Row({self.fact_id[:8]} v{self.version} s={self.subject_id} p={self.predicate_id} "
            f"o={self.object_id or self.object_lit} [{self.vf},{self.vt}) sys[{self.sf},{self.st}))"
        )
