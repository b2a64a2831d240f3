"""The hard time limit of a hook process.

A watchdog thread ends the process with status 0 when the limit passes,
whatever the main thread is doing: a signal handler (``SIGALRM``) would only
run between bytecodes, so a read blocked inside SQLite or on a hung file
system would outlive it. Output is written under :attr:`Deadline.output`, a
lock the watchdog takes before ending the process, so the agent gets either
the whole JSON answer or nothing, never half of it.
"""

from __future__ import annotations

import logging
import os
import threading
import time

__all__ = ["Deadline"]

log = logging.getLogger("chronomem.hooks")


class Deadline:
    """``with Deadline(seconds, what):`` ends the process (status 0) if the
    block is still running ``seconds`` after it started."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        self.output = threading.Lock()
        self._done = threading.Event()
        self._started = 0.0

    def __enter__(self) -> "Deadline":
        self._started = time.monotonic()
        thread = threading.Thread(target=self._watch, name="chronomem-hook-deadline", daemon=True)
        thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def remaining(self) -> float:
        return max(0.0, self.seconds - (time.monotonic() - self._started))

    def _watch(self) -> None:
        if self._done.wait(self.seconds):
            return
        # a write under way finishes first (bounded: one small JSON line)
        self.output.acquire(timeout=1.0)
        log.warning("%s: time limit of %.3g s reached; gave up silently", self.what, self.seconds)
        for handler in logging.getLogger("chronomem").handlers:
            handler.flush()
        os._exit(0)  # not sys.exit: the main thread may be blocked in C and never see an exception
