"""Sortable identifiers: UUIDv7 (RFC 9562), monotonic within a process.

The 74 random bits after the millisecond timestamp are seeded randomly each
millisecond and then counted up (RFC 9562 §6.2 method 2), so ids made later in
this process always sort after earlier ones, even within one millisecond.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Iterator

__all__ = ["new_id", "id_block"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_MASK74 = (1 << 74) - 1
_MASK62 = (1 << 62) - 1
_VERSION = 0x7 << 76
_VARIANT = 0b10 << 62


def new_id() -> str:
    """A new UUIDv7 string."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms > _last_ms:
            _last_ms = ms
            # leave headroom so counting up within one ms never overflows
            _counter = int.from_bytes(os.urandom(10), "big") >> 7
        else:
            ms = _last_ms
            _counter += 1
            if _counter > _MASK74:  # pragma: no cover - 2**73 ids in one ms
                _last_ms += 1
                ms = _last_ms
                _counter = 0
        rand = _counter
    h = "%032x" % ((ms << 80) | _VERSION | ((rand >> 62) << 64) | _VARIANT | (rand & _MASK62))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def id_block(size: int = 4096) -> "Iterator[str]":
    """An endless iterator of new ids for one bulk write: reserves ``size``
    counter values at a time, so each id costs one format call."""
    global _last_ms, _counter
    while True:
        ms = time.time_ns() // 1_000_000
        with _lock:
            if ms > _last_ms:
                _last_ms = ms
                _counter = int.from_bytes(os.urandom(10), "big") >> 7
            else:
                ms = _last_ms
            start = _counter + 1
            _counter += size
            if _counter > _MASK74:  # pragma: no cover
                _last_ms += 1
                ms = _last_ms
                start, _counter = 0, size
        head = (ms << 80) | _VERSION | _VARIANT
        for rand in range(start, start + size):
            h = "%032x" % (head | ((rand >> 62) << 64) | (rand & _MASK62))
            yield f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
