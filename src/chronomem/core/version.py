"""One version of a fact: the unit the write engine works on and the stores
keep. Times are integer UTC microseconds with the ``MIN_US`` / ``MAX_US``
sentinels (unknown start, open end, still believed)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, Callable, Literal

from .time import MAX_US

__all__ = ["CLOSE_KINDS", "END_KINDS", "CloseKind", "ObjKey", "Row", "legacy_end_cause"]


class CloseKind(str, Enum):
    """What ended a version: why it stopped being believed (``Row.close_kind``,
    stored as the value), or, for a believed version, what cut its valid
    interval short (``Row.end_kind``: only ``SUPERSEDED`` or ``INVALIDATED``).
    :attr:`~chronomem.Fact.ended_by` shows it. What a closed version's
    ``closed_by`` holds depends on the kind: :attr:`cause`. A ``str`` enum, so
    it compares equal to (and renders in JSON as) its value."""

    SUPERSEDED = "superseded"  # a later value of a single-valued predicate cut it
    INVALIDATED = "invalidated"  # invalidate(): the world changed
    CORRECTED = "corrected"  # correct(): the record was wrong; a new version replaces it
    RETRACTED = "retracted"  # retract() / erasure: it was never true
    COALESCED = "coalesced"  # folded into an overlapping or touching equal fact
    MERGED = "merged"  # its entity was merged into another
    UNMERGED = "unmerged"  # the merge that made it was undone
    RESTORED = "restored"  # a retraction gave back the value it had cut short

    @property
    def cause(self) -> Literal["fact", "operation", "reason", "none"]:
        """What ``closed_by`` names for this kind: the id of the fact that
        closed it, the id of an operation (a merge), the free-text reason
        given (``None`` when none was), or nothing."""
        return _CAUSES[self]

    def __str__(self) -> str:
        return self.value


_CAUSES: dict[CloseKind, Literal["fact", "operation", "reason", "none"]] = {
    CloseKind.SUPERSEDED: "fact", CloseKind.COALESCED: "fact", CloseKind.MERGED: "operation",
    CloseKind.UNMERGED: "operation", CloseKind.INVALIDATED: "reason", CloseKind.RETRACTED: "reason",
    CloseKind.CORRECTED: "reason", CloseKind.RESTORED: "none",
}

#: every kind by its stored value
CLOSE_KINDS: dict[str, CloseKind] = {k.value: k for k in CloseKind}

#: the kinds a believed version's ``end_kind`` can hold
END_KINDS = frozenset({CloseKind.SUPERSEDED.value, CloseKind.INVALIDATED.value})

_FACT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def legacy_end_cause(invalidated_by: str | None, close_kind: str | None, closed_by: str | None,
                     is_fact_id: Callable[[str], bool]) -> tuple[str | None, str | None, str | None, str | None]:
    """``(end_kind, invalidated_by, end_reason, closed_by)`` of a version
    written before end causes were typed (schema 0004, export format 3), when
    ``invalidated_by`` held the superseding fact's id or the free-text reason
    given to ``invalidate`` (``"invalidated"``: none), and the close of an
    invalidated or retracted version named its reason, or the kind itself for
    none. The same rule as migration ``0005_end_reason.sql``; ``is_fact_id``
    says whether a text is a fact's id (a UUIDv7 or a fact the caller knows)."""
    if close_kind in (CloseKind.INVALIDATED.value, CloseKind.RETRACTED.value) and closed_by == close_kind:
        closed_by = None
    if invalidated_by is None:
        return None, None, None, closed_by
    if _FACT_ID.fullmatch(invalidated_by) or is_fact_id(invalidated_by):
        return CloseKind.SUPERSEDED.value, invalidated_by, None, closed_by
    reason = None if invalidated_by == CloseKind.INVALIDATED.value else invalidated_by
    return CloseKind.INVALIDATED.value, None, reason, closed_by


ObjKey = tuple[int | None, str | None]


class Row:
    """One version of a fact, as stored. Mutable only inside the write engine,
    and only for versions that the running transaction created.

    What cut the valid interval short travels with the version as three
    fields: ``end_kind`` (``"superseded"`` / ``"invalidated"``, ``None`` for an
    open interval or an end written with the fact), ``invalidated_by`` (the
    superseding fact's id, never anything else) and ``end_reason`` (the
    free text given to ``invalidate``). ``close_kind`` / ``closed_by`` say why
    the version stopped being believed, once it has.

    ``stated_to`` / ``stated_to_prec`` keep the end the write (or the
    correction) gave the version when another value cut it short and no
    closed version records that end: a value cut on arrival (placement rule
    1) or cut before it was ever stored. ``None`` otherwise (``MAX_US`` for an
    open end). Internal bookkeeping: a retraction or correction of the
    cutter gives the version this end back.

    ``recorded_by`` is who wrote the version (the writer's name the unit of
    work stamps on every version a transaction inserts; an import keeps the
    exported one). ``None``: not recorded (written before schema 10).
    Not part of what a version says: two versions alike but for it are equal
    in content (:func:`~chronomem.core.engine.same_content`)."""

    __slots__ = (
        "rowid", "fact_id", "version", "ns_id", "subject_id", "predicate_id",
        "object_id", "object_lit", "valid_from", "valid_from_prec", "valid_to", "valid_to_prec",
        "system_from", "system_to",
        "confidence", "source", "episode_id", "properties", "invalidated_by",
        "close_kind", "closed_by", "end_kind", "end_reason", "stated_to", "stated_to_prec",
        "recorded_by", "subject_name", "predicate_name", "object_name",
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
        valid_from: int,
        valid_from_prec: int,
        valid_to: int,
        valid_to_prec: int,
        system_from: int,
        system_to: int = MAX_US,
        confidence: float = 1.0,
        source: str | None = None,
        episode_id: str | None = None,
        properties: str | None = None,
        invalidated_by: str | None = None,
        close_kind: str | None = None,
        closed_by: str | None = None,
        end_kind: str | None = None,
        end_reason: str | None = None,
        stated_to: int | None = None,
        stated_to_prec: int | None = None,
        recorded_by: str | None = None,
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
        self.valid_from = valid_from
        self.valid_from_prec = valid_from_prec
        self.valid_to = valid_to
        self.valid_to_prec = valid_to_prec
        self.system_from = system_from
        self.system_to = system_to
        self.confidence = confidence
        self.source = source
        self.episode_id = episode_id
        self.properties = properties
        self.invalidated_by = invalidated_by
        self.close_kind = close_kind
        self.closed_by = closed_by
        self.end_kind = end_kind
        self.end_reason = end_reason
        self.stated_to = stated_to
        self.stated_to_prec = stated_to_prec
        self.recorded_by = recorded_by
        self.subject_name = subject_name
        self.predicate_name = predicate_name
        self.object_name = object_name

    @property
    def okey(self) -> ObjKey:
        return (self.object_id, self.object_lit)

    def copy(self, **changes: Any) -> "Row":
        """A copy with ``changes`` (field names; an unknown one raises AttributeError)."""
        new = Row.__new__(Row)
        for name in _FIELDS:
            setattr(new, name, getattr(self, name))
        for name, value in changes.items():
            setattr(new, name, value)
        return new

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (
            f"Row({self.fact_id[:8]} v{self.version} s={self.subject_id} p={self.predicate_id} "
            f"o={self.object_id or self.object_lit} [{self.valid_from},{self.valid_to}) "
            f"sys[{self.system_from},{self.system_to}))"
        )


_FIELDS: tuple[str, ...] = Row.__slots__
