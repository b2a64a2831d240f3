"""Importing a transcript in the background, once at a time.

A hook must return at once, and an import may take seconds (a long session,
a model to load for the vectors), so the hook only :func:`start`\\ s a
detached child process (``python -m chronomem.adapters.hooks.ingest``, its
own session, no terminal, no inherited pipes) and exits; the child does the
import (:func:`chronomem.io.import_source`, incremental: a re-run adds only
the new lines) and logs what it did to the hook log.

Imports of one (database, namespace, transcript) never pile up: the child
holds an :class:`IngestLock` (an OS file lock, released by the kernel if the
child dies) while it works. A request is first written down as a *pending*
mark; a hook that finds the lock held only leaves that mark, and the running
child, which re-checks for a mark before it lets go of the lock and again
after, runs the import once more. However many ``Stop`` events arrive during
one import, at most one more import follows it.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import subprocess
import sys
import time
from typing import IO, Any, Sequence

from .guard import Deadline
from .runlog import log_to_file, state_dir
from .target import db_key

__all__ = ["CHILD_TIME_LIMIT", "IngestLock", "main", "prune_locks", "run_pending", "start"]

log = logging.getLogger("chronomem.hooks")

#: an import left running this long is ended (what it committed stays; the next run resumes)
CHILD_TIME_LIMIT = 900.0
#: lock files of transcripts not imported for this long are removed (one pair per session otherwise stays)
_STALE_LOCK_SECONDS = 14 * 86400


class IngestLock:
    """The lock and the pending mark of one (database, namespace, transcript)."""

    def __init__(self, db: str, namespace: str, path: str) -> None:
        key = "\0".join((db_key(db), namespace, os.path.abspath(path)))
        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        folder = state_dir() / "locks"
        self.lock_path = folder / f"{name}.lock"
        self.pending_path = folder / f"{name}.pending"
        self._fp: IO[bytes] | None = None

    def mark_pending(self) -> None:
        self.pending_path.parent.mkdir(parents=True, exist_ok=True)
        self.pending_path.touch()

    def take_pending(self) -> bool:
        """Remove the pending mark; whether there was one."""
        try:
            self.pending_path.unlink()
        except FileNotFoundError:
            return False
        return True

    def pending(self) -> bool:
        return self.pending_path.exists()

    def acquire(self) -> bool:
        """Take the lock without waiting; whether it was free."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fp = open(self.lock_path, "a+b")  # noqa: SIM115 (held until release)
        if not _try_lock(fp):
            fp.close()
            return False
        self._fp = fp
        os.utime(self.lock_path)  # its age says when this transcript was last imported (prune_locks)
        return True

    def release(self) -> None:
        if self._fp is not None:
            _unlock(self._fp)
            self._fp.close()
            self._fp = None

    def busy(self) -> bool:
        """Is an import holding the lock now?"""
        if self.acquire():
            self.release()
            return False
        return True


if sys.platform == "win32":  # pragma: no cover (the tests run on POSIX)
    import msvcrt

    def _try_lock(fp: IO[bytes]) -> bool:
        try:
            fp.seek(0)
            msvcrt.locking(fp.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fp: IO[bytes]) -> None:
        fp.seek(0)
        msvcrt.locking(fp.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fp: IO[bytes]) -> bool:
        try:
            fcntl.flock(fp.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def _unlock(fp: IO[bytes]) -> None:
        fcntl.flock(fp.fileno(), fcntl.LOCK_UN)


def start(db: str, namespace: str, path: str, fmt: str = "claude-code", embedder: str = "auto") -> bool:
    """Ask for an import of ``path``; start a detached child unless one is
    already running for it (then it runs once more when done). Returns
    whether a child was started."""
    lock = IngestLock(db, namespace, path)
    lock.mark_pending()  # before looking at the lock: a running child re-checks after it lets go
    if lock.busy():
        log.info("import of %s already running; it will run once more", path)
        return False
    cmd = [sys.executable, "-m", "chronomem.adapters.hooks.ingest", "--db", db_key(db),
           "--namespace", namespace, "--format", fmt, "--embedder", embedder, os.path.abspath(path)]
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                               "stderr": subprocess.DEVNULL, "close_fds": True, "cwd": os.path.expanduser("~")}
    if sys.platform == "win32":  # pragma: no cover
        options["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        options["start_new_session"] = True  # no terminal signals, outlives the hook and the agent's group
    subprocess.Popen(cmd, **options)  # never waited for: the agent goes on
    log.info("started an import of %s", path)
    return True


def _import(db: str, namespace: str, path: str, fmt: str, embedder: str) -> None:
    import chronomem
    from chronomem.io import import_source

    mem = chronomem.open(db, namespace=namespace, embedder=None if embedder == "none" else embedder)
    try:
        summary = import_source(mem, path, fmt)
    finally:
        mem.close()
    log.info("imported %s: %d added, %d updated, %d unchanged, %d skipped; %d secrets redacted",
             path, summary.added, summary.updated, summary.unchanged, summary.skipped, summary.redacted)


def run_pending(db: str, namespace: str, path: str, fmt: str, embedder: str) -> int:
    """Import while imports are asked for; the number run (0: another
    process holds the lock and will see the requests)."""
    lock = IngestLock(db, namespace, path)
    runs = 0
    while lock.acquire():
        try:
            while lock.take_pending():
                _import(db, namespace, path, fmt, embedder)
                runs += 1
        finally:
            lock.release()
        if not lock.pending():  # a request that came as the lock was let go: take it
            break
    return runs


def prune_locks(now: float | None = None) -> int:
    """Remove lock and pending files untouched for :data:`_STALE_LOCK_SECONDS`;
    how many. (A process still holding a removed lock at worst lets a second
    import of that transcript run beside it: imports are idempotent.)"""
    folder = state_dir() / "locks"
    cutoff = (time.time() if now is None else now) - _STALE_LOCK_SECONDS
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.endswith((".lock", ".pending")) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """The child process: import, log, exit 0 whatever happens."""
    parser = argparse.ArgumentParser(prog="python -m chronomem.adapters.hooks.ingest")
    parser.add_argument("--db", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--format", default="claude-code")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--time-limit", type=float, default=CHILD_TIME_LIMIT)
    parser.add_argument("path")
    args = parser.parse_args(argv)
    log_to_file()
    try:
        with Deadline(args.time_limit, f"import of {args.path}"):
            run_pending(args.db, args.namespace, args.path, args.format, args.embedder)
            prune_locks()
    except Exception as exc:
        from chronomem.errors import ChronomemError

        if isinstance(exc, ChronomemError):
            log.warning("import of %s failed: %s", args.path, exc)
        else:
            log.exception("import of %s failed", args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
