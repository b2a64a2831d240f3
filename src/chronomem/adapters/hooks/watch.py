"""``chronomem watch PATH...``: import session files as they are written,
for clients without hooks.

A polling loop (the standard library only; no file-system events, which
differ by platform and miss network folders): each pass walks every watched
path, compares each file's size and modification time with the last pass,
and imports what changed with :func:`chronomem.io.import_source`, which
itself adds only the messages not stored yet. The first pass imports each
path whole (unchanged files are skipped unread by their stored
fingerprints) and learns its format when ``auto``. After that:

* a folder of one-file-per-session logs (``claude-code``, ``codex``,
  ``jsonl``) has each changed ``*.jsonl`` file imported on its own, so a
  growing session costs one file's read, not the folder's;
* any other format (a Slack export, a notes folder, a git repository ...)
  is imported whole when any file under it changed.

A line still being written when a pass reads it is skipped by the reader
and read whole on the next pass, when the file has grown again.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

__all__ = ["PER_FILE_FORMATS", "Watcher", "WatchedPath"]

log = logging.getLogger("chronomem.watch")

#: formats whose inputs are one file per session, imported file by file
PER_FILE_FORMATS = frozenset({"claude-code", "codex", "jsonl"})
_SKIP_DIRS = {".git", "__pycache__", "node_modules"}

Stat = tuple[int, int]


def _stat(path: Path) -> Stat | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _walk(root: Path, suffix: str | None) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if suffix is None or name.endswith(suffix):
                yield Path(folder) / name


@dataclass
class WatchedPath:
    """One PATH argument: its format (learnt on the first import when
    ``auto``) and the size and mtime of its files at the last pass."""

    root: Path
    format: str
    seen: dict[Path, Stat] = field(default_factory=dict)
    imported: bool = False

    def changes(self) -> list[Path]:
        """Files new or changed since the last pass (and remembered now)."""
        suffix = ".jsonl" if self.format in PER_FILE_FORMATS and self.root.is_dir() else None
        changed: list[Path] = []
        now: dict[Path, Stat] = {}
        for file in _walk(self.root, suffix):
            st = _stat(file)
            if st is None:
                continue
            now[file] = st
            if self.seen.get(file) != st:
                changed.append(file)
        self.seen = now
        return changed


class Watcher:
    """Polls ``paths`` and imports what changed into a memory; ``report``
    gets each import's summary dict (the file imported added as ``path``).
    Bad paths or format are refused here, before any memory is opened."""

    def __init__(self, paths: Sequence[str | Path], fmt: str = "auto", *,
                 report: Callable[[dict[str, Any]], None] | None = None, keep_secrets: bool = False) -> None:
        from chronomem.errors import InvalidInputError
        from chronomem.io import IMPORT_FORMATS

        if fmt != "auto" and fmt not in IMPORT_FORMATS:
            raise InvalidInputError(f"format: unknown format {fmt!r}; known: auto, {', '.join(IMPORT_FORMATS)}")
        self.keep_secrets = keep_secrets
        self.report = report
        self.watched: list[WatchedPath] = []
        for p in paths:
            root = Path(p).expanduser()
            if not root.exists():
                raise InvalidInputError(f"path: {str(root)!r} does not exist")
            self.watched.append(WatchedPath(root.resolve(), fmt))

    def _import(self, mem: Any, watched: WatchedPath, path: Path) -> None:
        from chronomem.errors import ChronomemError
        from chronomem.io import import_source

        try:
            summary = import_source(mem, path, watched.format, keep_secrets=self.keep_secrets)
        except ChronomemError as exc:  # one unreadable file must not stop the watch
            log.warning("cannot import %s: %s", path, exc)
            if self.report is not None:
                self.report({"path": str(path), "error": str(exc)})
            return
        if watched.format == "auto":
            watched.format = summary.format  # per-file imports from now on, when it is such a format
        data = {"path": str(path), **summary.to_dict()}
        if summary.added or summary.updated or summary.skipped:
            log.info("%s: %s", path, summary.line())
        else:
            log.debug("%s: nothing new", path)
        if self.report is not None:
            self.report(data)

    def poll(self, mem: Any) -> int:
        """One pass over every path, importing into ``mem``; the number of imports run."""
        runs = 0
        for watched in self.watched:
            changed = watched.changes()  # before the import: a file growing during it shows next pass
            if not watched.imported:
                watched.imported = True
                self._import(mem, watched, watched.root)
                runs += 1
                continue
            if not changed:
                continue
            if watched.format in PER_FILE_FORMATS and watched.root.is_dir():
                for file in changed:
                    self._import(mem, watched, file)
                    runs += 1
            else:
                self._import(mem, watched, watched.root)
                runs += 1
        return runs

    def run(self, mem: Any, interval: float, *, once: bool = False,
            sleep: Callable[[float], None] = time.sleep) -> None:
        """Poll every ``interval`` seconds until interrupted (``once``: one pass)."""
        while True:
            started = time.monotonic()
            self.poll(mem)
            if once:
                return
            sleep(max(0.0, interval - (time.monotonic() - started)))
