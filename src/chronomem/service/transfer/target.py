"""What the transfer services need of a memory: the store and namespace it is
opened on, its timezone and clock, its time parser and its batched add.

:class:`chronomem.Memory` satisfies :class:`MemoryLike`; the services type
against this protocol so they do not import the façade above them.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping, Protocol, Sequence

from ...core.time import TimeLike, TimePoint
from ...store.protocol import Store

__all__ = ["MemoryLike", "namespace_id"]


class MemoryLike(Protocol):
    """The part of :class:`chronomem.Memory` that export and import use."""

    @property
    def store(self) -> Store: ...

    @property
    def namespace(self) -> str: ...

    @property
    def tz(self) -> _dt.tzinfo: ...

    def now(self) -> _dt.datetime: ...

    def parse_time(self, value: TimeLike, field: str = "time") -> TimePoint: ...

    def add_facts(self, items: Iterable[Mapping[str, Any] | Sequence[Any]]) -> list[str]: ...


def namespace_id(mem: MemoryLike) -> int:
    """The store's id of ``mem``'s namespace (which opening the memory created)."""
    ns = mem.store.namespace_id(mem.namespace)
    assert ns is not None
    return ns
