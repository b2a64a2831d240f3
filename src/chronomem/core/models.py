"""Result types. All are frozen dataclasses with ``to_dict()`` (JSON-ready)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from .time import Precision, TimePoint, format_us, get_timezone, to_us
from .version import CloseKind

__all__ = [
    "CloseKind",
    "Conflict",
    "Diff",
    "DiffChange",
    "Entity",
    "Event",
    "Fact",
    "FactBar",
    "Neighbor",
    "Path",
    "Predicate",
    "Provenance",
    "Stats",
    "Volatility",
]

Cardinality = Literal["one", "many"]
Direction = Literal["out", "in", "both"]
Axis = Literal["valid", "system"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, _dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Precision):
        return value.label
    if isinstance(value, _Dictable):  # its own form (a nested Fact keeps its times at their precision)
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _fields(value: Any) -> dict[str, Any]:
    return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}


class _Dictable:
    """A result type whose ``to_dict()`` is its JSON form (one form for every interface)."""

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


def _render(dt: _dt.datetime | None, prec: Precision | None, tz: str = "UTC") -> str | None:
    if dt is None or prec is None:
        return None
    return format_us(to_us(dt), prec, get_timezone(tz))


def _time_literal(value: Any, tz: str) -> str | None:
    """A time-valued literal object as text (``"1990-05-17"``), ``None`` for other values."""
    if isinstance(value, _dt.datetime):
        return format_us(to_us(value), Precision.MICROSECOND if value.microsecond else Precision.SECOND,
                         get_timezone(tz))
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, TimePoint):
        return value.render(get_timezone(tz))
    return None


@dataclass(frozen=True)
class Fact(_Dictable):
    """One system-time version of a reified statement ``subject -predicate-> object``.

    ``valid_from is None`` means the start is unknown; ``valid_to is None``
    means still true. ``system_to is None`` means the store still believes this
    version. ``current`` is computed at read time: believed and valid now.

    What ended it: ``ended_by`` is a :class:`CloseKind`, for a version no
    longer believed why it stopped being believed (``retracted``,
    ``corrected``, ``merged``, ...), for a believed one what cut its valid
    interval short (``superseded`` or ``invalidated``; ``None`` while open or
    for an end written with the fact). ``invalidated_by`` is the superseding
    fact's id (only ever a fact id), ``ended_reason`` the free-text reason
    given to ``invalidate`` / ``retract`` / ``correct`` (``None`` if none was).

    ``recorded_by`` is who wrote this version: the server token's name, the
    name given to :meth:`~chronomem.Memory.acting_as` or ``open(agent=...)``,
    else the local OS user; ``None`` for a version written before chronomem
    recorded it (schema 10) or imported from an export that did not carry it.
    """

    id: str
    subject: str
    predicate: str
    object: Any
    valid_from: _dt.datetime | None
    valid_to: _dt.datetime | None
    system_from: _dt.datetime
    system_to: _dt.datetime | None
    confidence: float = 1.0
    source: str | None = None
    episode_id: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    invalidated_by: str | None = None
    current: bool = False
    literal: bool = False
    valid_from_precision: Precision | None = None
    valid_to_precision: Precision | None = None
    version: int = 1
    namespace: str = "default"
    ended_reason: str | None = None
    timezone: str = "UTC"
    ended_by: CloseKind | None = None
    recorded_by: str | None = None

    @property
    def valid_from_text(self) -> str | None:
        """``valid_from`` rendered at its precision, e.g. ``"2024-03"``: as it
        was written. A partial time (year/month/day) is a calendar value and
        reads the same in every zone; a full timestamp renders in the
        memory's timezone."""
        return _render(self.valid_from, self.valid_from_precision, self.timezone)

    @property
    def valid_to_text(self) -> str | None:
        return _render(self.valid_to, self.valid_to_precision, self.timezone)

    @property
    def interval_text(self) -> str:
        """``[2024-03, 2025)``; ``…`` for an unknown start or an open end."""
        return f"[{self.valid_from_text or '…'}, {self.valid_to_text or '…'})"

    def valid_at(self, when: _dt.datetime) -> bool:
        """Whether the valid interval contains ``when`` (half-open)."""
        if self.valid_from is not None and when < self.valid_from:
            return False
        return self.valid_to is None or when < self.valid_to

    @property
    def object_text(self) -> str:
        """The object as a line shows it: an entity's name, a time literal at
        its precision (``1990-05-17``), any other literal as its ``repr``
        (``'text'``, ``42``)."""
        if not self.literal:
            return str(self.object)
        return _time_literal(self.object, self.timezone) or repr(self.object)

    def line(self, *, mark_current: bool = True) -> str:
        """One human/LLM-friendly line; ``(current)`` marks a fact true now, as
        known now (``mark_current=False`` leaves it out, for a line shown
        under another basis)."""
        obj = self.object_text
        mark = " (current)" if self.current and mark_current else ""
        return f"{self.subject} -{self.predicate}-> {obj} {self.interval_text}{mark} [{self.id}]"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["valid_from"] = self.valid_from_text
        out["valid_to"] = self.valid_to_text
        out["ended_by"] = None if self.ended_by is None else self.ended_by.value
        if self.literal:  # a time literal in the form its fact's times take
            out["object"] = _time_literal(self.object, self.timezone) or out["object"]
        return out


@dataclass(frozen=True)
class Entity(_Dictable):
    id: int
    name: str
    key: str
    type: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    namespace: str = "default"
    created_at: _dt.datetime | None = None


@dataclass(frozen=True)
class Predicate(_Dictable):
    name: str
    key: str
    cardinality: Cardinality = "many"
    inverse: str | None = None
    aliases: tuple[str, ...] = ()
    description: str | None = None
    declared: bool = False


@dataclass(frozen=True)
class Provenance(_Dictable):
    """One piece of evidence recorded for a fact."""

    fact_id: str
    source: str | None
    episode_id: str | None
    recorded_at: _dt.datetime


EventKind = Literal["started", "ended", "recorded", "corrected", "retracted", "superseded", "coalesced", "merged",
                    "restored", "erased"]


@dataclass(frozen=True)
class Event(_Dictable):
    """A timeline event. ``at`` is on the valid axis for started/ended and on the
    system axis for the rest (``axis`` says which). ``recorded_by``: who
    wrote the version the event comes from (``recorded``: the first;
    ``started`` / ``ended``: the believed one; a correction, restore or merge:
    the version it wrote); ``None`` where no version records it (a
    retraction writes none) or it was not recorded."""

    at: _dt.datetime
    kind: str
    axis: Axis
    fact_id: str
    text: str
    fact: Fact | None = None
    precision: Precision | None = None
    recorded_by: str | None = None


@dataclass(frozen=True)
class DiffChange(_Dictable):
    subject: str
    predicate: str
    old: Fact
    new: Fact


@dataclass(frozen=True)
class Diff(_Dictable):
    t1: _dt.datetime
    t2: _dt.datetime
    axis: Axis
    added: tuple[Fact, ...] = ()
    removed: tuple[Fact, ...] = ()
    changed: tuple[DiffChange, ...] = ()
    unchanged: tuple[Fact, ...] = ()
    # each list's length before a page was cut (-1: the list's own length)
    added_total: int = -1
    removed_total: int = -1
    changed_total: int = -1
    unchanged_total: int = -1

    def __post_init__(self) -> None:
        for name in ("added", "removed", "changed", "unchanged"):
            if getattr(self, name + "_total") < 0:
                object.__setattr__(self, name + "_total", len(getattr(self, name)))

    @property
    def empty(self) -> bool:
        return not (self.added_total or self.removed_total or self.changed_total)


@dataclass(frozen=True)
class Conflict(_Dictable):
    """Facts of one (subject, predicate) that are valid at the same time.

    ``kind`` is ``"cardinality"`` for a single-valued predicate (an error to
    fix) or ``"review"`` for an undeclared predicate with several values at
    once (possibly fine: a review list).
    """

    subject: str
    predicate: str
    kind: Literal["cardinality", "review"]
    facts: tuple[Fact, ...]
    overlap_from: _dt.datetime | None
    overlap_to: _dt.datetime | None
    facts_total: int = -1  # how many facts conflict (``facts`` may be the first of them; -1: len(facts))

    def __post_init__(self) -> None:
        if self.facts_total < 0:
            object.__setattr__(self, "facts_total", len(self.facts))


BarStatus = Literal["valid", "ended", "not_yet", "superseded", "invalidated", "retracted"]


@dataclass(frozen=True)
class FactBar(_Dictable):
    """One fact of an entity drawn over valid time (a timeline bar), as
    believed at the read's ``known_at`` and judged at its ``as_of`` (the cursor).

    ``start``/``end`` are the shown version's valid interval (``None``: unknown
    start / open end). ``status``, relative to the cursor (the basis): ``"valid"``
    (valid at it), ``"not_yet"`` (starts after it), ``"ended"`` (ended at or before it), ``"superseded"`` /
    ``"invalidated"`` (ended by a later value / by ``invalidate``; ``ended_by``
    says which) or ``"retracted"`` (no longer believed; the last version is
    shown). ``corrected`` marks a fact that ``correct()`` rewrote. ``group`` is
    the predicate (``"← predicate"`` for an incoming fact), ``label`` the other
    end (the object, or the subject of an incoming fact), ``target`` the other
    entity (``None`` for a literal), ``title`` a one-line description.
    """

    fact_id: str
    group: str
    label: str
    start: _dt.datetime | None
    end: _dt.datetime | None
    status: BarStatus = "valid"
    corrected: bool = False
    title: str = ""
    ended_by: Literal["superseded", "invalidated"] | None = None
    target: str | None = None


@dataclass(frozen=True)
class Volatility(_Dictable):
    subject: str
    predicate: str
    changes: int
    values: int
    mean_duration_days: float | None


@dataclass(frozen=True)
class Neighbor(_Dictable):
    entity: str
    hops: int
    via: tuple[Fact, ...]


@dataclass(frozen=True)
class Path(_Dictable):
    entities: tuple[str, ...]
    facts: tuple[Fact, ...]

    @property
    def hops(self) -> int:
        return len(self.facts)


@dataclass(frozen=True)
class Stats(_Dictable):
    namespace: str
    entities: int
    facts: int
    current: int
    ended: int
    retracted: int
    versions: int
    predicates: int
    namespaces: tuple[str, ...]
