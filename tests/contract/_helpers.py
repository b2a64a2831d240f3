"""Small helpers for the contract tests (public API only)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Protocol

from chronomem import Fact, Memory

UTC = _dt.timezone.utc


class MemoryFactory(Protocol):
    """The ``make_memory`` fixture: open a memory on this test's store."""

    def __call__(
        self,
        namespace: str = "default",
        *,
        clock: Any = None,
        timezone: str | _dt.tzinfo | None = None,
    ) -> Memory: ...


US = _dt.timedelta(microseconds=1)


def utc(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0, second: int = 0,
        micro: int = 0) -> _dt.datetime:
    """An aware UTC datetime."""
    return _dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def objects(facts: list[Fact]) -> list[Any]:
    """The objects of ``facts`` in order (as returned)."""
    return [f.object for f in facts]


def obj_set(facts: list[Fact]) -> set[Any]:
    return {str(f.object) for f in facts}


def snapshot(mem: Memory) -> dict[str, Any]:
    """Everything the public API says is stored in ``mem``'s namespace, for
    "a failed write changed nothing" checks."""
    stats = mem.stats().to_dict()
    versions = sorted(
        (f.id, f.version, f.subject, f.predicate, str(f.object), f.valid_from_text, f.valid_to_text,
         f.system_from, f.system_to, f.confidence, f.source)
        for e in mem.entities()
        for f in mem.history(e.name)
    )
    return {
        "stats": stats,
        "entities": sorted((e.name, e.key, e.type, tuple(e.aliases)) for e in mem.entities()),
        "predicates": sorted((p.name, p.cardinality, p.declared) for p in mem.predicates()),
        "facts": sorted((f.id, f.version) for f in mem.facts()),
        "versions": versions,
    }


def valid_objects_at(mem: Memory, subject: str, predicate: str, when: Any, known_at: Any = None) -> list[Any]:
    """Sorted (as text) objects of ``subject -predicate->`` valid at ``when``."""
    return sorted(str(f.object) for f in mem.facts(subject, predicate, as_of=when, known_at=known_at))
