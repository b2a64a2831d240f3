"""Sortable identifiers: UUIDv7 (RFC 9562), monotonic within a process."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_lock = threading.Lock()
_last_ms = 0
_last_rand = 0
_RAND_BITS = 74
_RAND_MASK = (1 << _RAND_BITS) - 1


def _next_value() -> int:
    global _last_ms, _last_rand
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1
            if rand > _RAND_MASK:  # pragma: no cover - 2**74 ids in one ms
                ms += 1
                rand = int.from_bytes(os.urandom(10), "big") >> 6
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 6
        _last_ms, _last_rand = ms, rand
    rand_a = rand >> 62
    rand_b = rand & ((1 << 62) - 1)
    return (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b


def new_id() -> str:
    """A new UUIDv7 string; ids made later in this process sort after earlier ones."""
    h = f"{_next_value():032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
