"""Sortable identifiers: UUIDv7 (RFC 9562), monotonic within a process.

The 74 random bits after the millisecond timestamp are seeded randomly each
millisecond and then counted up (RFC 9562 §6.2 method 2), so ids made later in
this process always sort after earlier ones, even within one millisecond.
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Iterator

__all__ = ["MIN_ID_CHARS", "SHORT_ID_CHARS", "id_block", "is_full_id", "new_id", "short_id"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_MASK74 = (1 << 74) - 1
_MASK62 = (1 << 62) - 1
_VERSION = 0x7 << 76
_VARIANT = 0b10 << 62


def _reserve(n: int) -> tuple[int, int]:
    """Reserve ``n`` consecutive counter values: returns the millisecond and
    the first value. A new millisecond reseeds the counter at random (with
    headroom so counting up within one millisecond never overflows)."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms > _last_ms:
            _last_ms = ms
            _counter = (int.from_bytes(os.urandom(10), "big") >> 7) - 1
        start = _counter + 1
        _counter += n
        if _counter > _MASK74:  # pragma: no cover - 2**73 ids in one ms
            _last_ms += 1
            start, _counter = 0, n - 1
        return _last_ms, start


def _after_fork_in_child() -> None:
    """A forked child shares the parent's counter: jump it ahead by a random
    step, so the two never make the same id (and the child's still sort
    after the ones it inherited)."""
    global _counter, _lock
    _lock = threading.Lock()
    _counter += 1 + (int.from_bytes(os.urandom(6), "big") << 16)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _format(ms: int, rand: int) -> str:
    h = "%032x" % ((ms << 80) | _VERSION | ((rand >> 62) << 64) | _VARIANT | (rand & _MASK62))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_id() -> str:
    """A new UUIDv7 string."""
    return _format(*_reserve(1))


def id_block(size: int = 4096) -> Iterator[str]:
    """An endless iterator of new ids for one bulk write: reserves ``size``
    counter values at a time, so each id costs one format call."""
    while True:
        ms, start = _reserve(size)
        for rand in range(start, start + size):
            yield _format(ms, rand)


# -- short forms ---------------------------------------------------------------
#: a shortened fact id needs this many characters: fewer would name many facts
MIN_ID_CHARS = 8
#: the short id's length: the end of an id, its per-millisecond counter,
#: where ids made in one millisecond count up and so differ; its start is the
#: timestamp, shared by every id of the same minute
SHORT_ID_CHARS = 8
_FULL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_full_id(text: str) -> bool:
    """Has ``text`` the form of a whole id (taken as it is, with no lookup)?"""
    return _FULL.fullmatch(text) is not None


def short_id(fact_id: str, chars: int = SHORT_ID_CHARS) -> str:
    """The short form of a fact id that tables print: a chronomem id's last
    ``chars`` hex digits (default 8), any other id whole. Every call taking a
    fact id accepts it (``FactReads.resolve_id``)."""
    return fact_id[-chars:] if is_full_id(fact_id) and chars >= MIN_ID_CHARS else fact_id
