"""Pausing Python's cyclic garbage collector during bulk writes.

A bulk load keeps hundreds of thousands of new objects alive until it
commits (candidate rows, the engine's working set, the caller's input). Each
time the heap grows by a quarter, CPython runs a full collection that visits
every one of them, although none is garbage: on the 271k-row ICEWS load that
was about a quarter of the time. The write path creates no reference cycles,
so reference counting frees everything it drops; :func:`paused_gc` turns
only the cycle collector off for the duration and puts it back as it was.

It is process-wide state, so nested and concurrent pauses (threads) are
counted and the collector resumes when the last one ends, and only if it was
enabled when the first one began.
"""

from __future__ import annotations

import gc
import os
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["paused_gc"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cycle collector paused (see the module docstring)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def _after_fork_in_child() -> None:
    """A lock held by another thread at the fork would never be released here."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
