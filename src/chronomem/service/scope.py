"""What every service of one :class:`~chronomem.Memory` shares: the store,
the namespace, the timezone and the clock, and how names and times are read
in them. It holds no other state; the services hold theirs."""

from __future__ import annotations

import contextvars
import datetime as _dt
import functools
import getpass
import json
import time
from typing import Any, Sequence

from ..core.codec import row_to_fact
from ..core.limits import MAX_COUNT, check_count
from ..core.models import Fact
from ..core.names import normalize_key
from ..core.phrases import ResolvedTime, resolve_time
from ..core.time import FIRST_US, LAST_US, SystemClock, TimeLike, TimePoint, from_us, parse_time, peek_clock, to_us
from ..core.version import Row
from ..store.protocol import PredicateRecord, Store
from .suggest import unknown_entity

__all__ = ["ACTING_AS", "Scope", "count", "local_user"]

#: Who the writes of the current request or task are recorded as: set by
#: :meth:`chronomem.Memory.acting_as` (the server sets the token's name per
#: request). A context variable, so a thread pool or event loop running many
#: requests through one Memory keeps each request's writer apart.
ACTING_AS: contextvars.ContextVar[str | None] = contextvars.ContextVar("chronomem_acting_as", default=None)


@functools.cache
def local_user() -> str:
    """The name an embedded write is recorded as when nobody said: the OS
    user (``getpass.getuser``), or ``"local"`` where there is none. Asked
    once per process: without USER / LOGNAME set, getpass reads the passwd
    database (13 us), which every write transaction would pay again."""
    try:
        name = getpass.getuser()
    except Exception:  # no USER/LOGNAME and no passwd entry (some containers)
        return "local"
    return name or "local"


def count(value: object, name: str, minimum: int, maximum: int = MAX_COUNT) -> int:
    """Validate an integer count argument (``hops``, ``limit``, ``top``): at
    least ``minimum``, at most ``maximum`` (:mod:`chronomem.core.limits`)."""
    return check_count(value, name, minimum, maximum)


class Scope:
    """One namespace of one store, read in one timezone by one clock."""

    __slots__ = ("store", "ns_id", "namespace", "tz", "tzname", "clock", "agent")

    def __init__(self, store: Store, ns_id: int, namespace: str, tz: _dt.tzinfo, tzname: str, clock: Any,
                 agent: str | None = None) -> None:
        self.store = store
        self.ns_id = ns_id
        self.namespace = namespace
        self.tz = tz
        self.tzname = tzname
        self.clock = clock
        self.agent = agent  # open(agent=...): who this memory's writes are recorded as

    def recorded_by(self) -> str:
        """Who a write made now is recorded as: the request's
        :meth:`~chronomem.Memory.acting_as`, else this memory's ``agent``,
        else the local user."""
        return ACTING_AS.get() or self.agent or local_user()

    # -- time ------------------------------------------------------------
    def now(self) -> _dt.datetime:
        """The clock's current time (UTC)."""
        if self.clock is None:
            return _dt.datetime.now(_dt.timezone.utc)
        return peek_clock(self.clock)

    def store_now(self) -> _dt.datetime:
        """The time a read "as known now" is at: the clock, but never before
        the last system time the store stamped (a clock that went back, or a
        writer ahead of this process), so ``known_at=store_now()`` sees every
        committed write."""
        now = self.now()
        last = self.store.last_system_time()
        if FIRST_US <= last <= LAST_US and last > to_us(now):
            return from_us(last)
        return now

    def now_us(self) -> int:
        if type(self.clock) is SystemClock:
            return time.time_ns() // 1000
        return to_us(self.now())

    def parse_time(self, value: TimeLike, field: str = "time") -> TimePoint:
        """Read a *written* time in this memory's timezone, strictly: ISO and
        partial dates or typed values, never a phrase (see :mod:`chronomem.core.time`)."""
        return parse_time(value, field, self.tz)

    def resolve_time(self, value: TimeLike, field: str = "at", now: _dt.datetime | None = None) -> ResolvedTime:
        """Read a *read basis* (``as_of``, ``known_at``, ``at``, ...): what
        :meth:`parse_time` reads plus the time phrases of
        :mod:`chronomem.core.phrases`, resolved against ``now`` (default: the
        store clock, :meth:`store_now`, asked only for a phrase that needs it)."""
        return resolve_time(value, field, self.store_now if now is None else now, self.tz)

    def read_time(self, value: TimeLike, field: str) -> TimePoint:
        """A read basis as a :class:`TimePoint` (phrases accepted)."""
        if not isinstance(value, str):  # typed values: the strict reader, without the phrase machinery
            return parse_time(value, field, self.tz)
        return self.resolve_time(value, field).point

    def basis(self, value: TimeLike | None, field: str) -> TimePoint | None:
        """A read basis (or ``None``) resolved once, for a read that runs
        several queries at it ("now" and "today" must not move between them)."""
        return None if value is None else self.read_time(value, field)

    def instant(self, value: TimeLike | None, field: str) -> int | None:
        """A read basis (or ``None``) as microseconds (phrases accepted)."""
        if value is None:
            return None
        return self.read_time(value, field).us

    def known(self, value: TimeLike | None) -> int | None:
        """A ``known_at`` argument as microseconds; the store first makes the
        answer at that system time final (``Store.settle``), so a read "as
        known at" T answers the same now and later."""
        us = self.instant(value, "known_at")
        if us is not None:
            self.store.settle(us)
        return us

    def fact(self, row: Row, now_us: int) -> Fact:
        """The public view of a stored version (``now_us`` decides ``current``)."""
        return row_to_fact(row, now_us, self.namespace, self.tzname)

    # -- names -----------------------------------------------------------
    def entity_id(self, name: object, what: str = "entity", known_at: int | None = None) -> int | None:
        """The entity a name resolves to — as the store knew it at ``known_at``
        (system time): a name moved by a later merge still names the entity
        it named then."""
        key = normalize_key(name, what)
        eid = self.store.entity_id(self.ns_id, key)
        if known_at is None or eid is None:
            return eid
        return owner_at(self.store.merge_operations(self.ns_id), key, eid, known_at)

    def require_entity(self, name: object, what: str = "entity") -> int:
        eid = self.entity_id(name, what)
        if eid is None:
            raise unknown_entity(self.store, self.ns_id, self.namespace, str(name))
        return eid

    def predicate(self, name: object) -> PredicateRecord | None:
        return self.store.predicate(self.ns_id, normalize_key(name, "predicate"))

    def single_valued(self, predicate_id: int) -> bool:
        """Whether a value of this predicate supersedes the one before it."""
        pred = self.store.predicate_by_id(predicate_id)
        return pred is not None and pred.cardinality == "one"

    def named(self, row: Row) -> Row:
        """``row`` with its display names, from the store's name caches."""
        ids = [row.subject_id] if row.object_id is None else [row.subject_id, row.object_id]
        names = self.store.entity_names(ids)
        pred = self.store.predicate_by_id(row.predicate_id)
        return row.copy(
            subject_name=names.get(row.subject_id, ""),
            predicate_name=pred.name if pred is not None else "",
            object_name=names.get(row.object_id) if row.object_id is not None else None,
        )


def owner_at(merges: Sequence[tuple[int, str, int | None]], key: str, current: int, at: int) -> int:
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
