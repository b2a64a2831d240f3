"""The serving process's memory, for ``stats``: a long-running server (MCP,
``serve``) keeps one warm index, and its RSS says what that costs. Stdlib
only (``resource``, ``/proc/self/statm``): no psutil."""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ...memory import Memory

__all__ = ["process_memory", "warm_in_background"]

log = logging.getLogger("chronomem.serve")


def _peak_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows has no resource module
        return None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _current_bytes() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            resident_pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):  # no /proc (macOS, Windows)
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def process_memory() -> dict[str, int | None]:
    """``{"rss_bytes": resident now, "peak_rss_bytes": resident at most so
    far}`` of this process, in bytes; ``None`` where the platform does not
    tell (no ``/proc``, no ``resource``)."""
    rss, peak = _current_bytes(), _peak_bytes()
    if rss is not None and peak is not None:
        peak = max(peak, rss)  # the kernel updates its high-water mark lazily: never report peak < current
    return {"rss_bytes": rss, "peak_rss_bytes": peak}


def warm_in_background(mem: Memory) -> threading.Thread:
    """Bring ``mem``'s dense-search caches up to date in a daemon thread
    (``Memory.prepare_search(warm=True)``), so a server's first question finds
    the vectors mapped, the ANN index open and the lexical copy made instead
    of building them."""

    def run() -> None:
        try:
            log.info("search caches ready: %s", mem.prepare_search(warm=True))
        except Exception:  # logged: a search builds what it needs anyway
            log.warning("preparing the search caches failed", exc_info=True)

    thread = threading.Thread(target=run, name="chronomem-warm", daemon=True)
    thread.start()
    return thread
