"""What the coding-agent log readers (Claude Code, Codex CLI) share: finding
their JSONL logs, decoding them one line at a time, and the project a
working directory names."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator, Mapping

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, iter_lines
from .inputs import claims, lone_file

__all__ = ["LogReader", "LogSession", "decode_lines", "first_files", "head_objects", "project_of"]

#: tool call ids remembered to name their results by: a bound on memory
_MAX_TOOL_NAMES = 512


class LogReader(Reader):
    """A reader of ``.jsonl`` logs: one log, or every ``{prefix}*.jsonl``
    under a folder. Subclasses set ``what`` (one log, as an error message
    names it), ``prefix`` and ``depth`` (how deep ``detect()`` looks in a
    folder), and say what a log's head looks like."""

    what = ""
    prefix = ""
    depth = 2

    @abstractmethod
    def looks_like(self, path: Path) -> bool:
        """Is the ``.jsonl`` file at ``path`` one of this tool's logs, by
        its head? Never raises."""

    def detect(self, path: Path) -> bool:
        return claims(path, lambda f: f.suffix == ".jsonl" and self.looks_like(f),
                      lambda d: any(self.looks_like(f) for f in first_files(d, ".jsonl", self.depth, self.prefix)))

    def files(self, opts: ReadOptions) -> list[Path]:
        root = opts.root
        # an empty log is one the tool has only just created: accepted
        if lone_file(root, lambda f: f.suffix == ".jsonl" and (not f.stat().st_size or self.looks_like(f)),
                     f"{self.what} (.jsonl)"):
            return [root]
        found = sorted(p for p in root.rglob(f"{self.prefix}*.jsonl") if p.is_file())
        if not found:
            raise InvalidInputError(f"path: no {self.what}s ({self.prefix}*.jsonl) under {str(root)!r}")
        if opts.since is not None:
            # a log not written to since `since` holds no message after it
            since = opts.since.timestamp()
            found = [p for p in found if p.stat().st_mtime >= since]
        return found


class LogSession(ABC):
    """One log being read, line by line: the lines that are not JSON objects
    are skips, the others go to :meth:`entry`; the names of the tool calls
    seen last are kept to name their results by."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.tool_names: OrderedDict[str, str] = OrderedDict()  # call id -> tool name, bounded

    def read(self) -> Iterator[Item]:
        for rec in decode_lines(self.file):
            if isinstance(rec, Skip):
                yield rec
            else:
                yield from self.entry(*rec)
        yield from self.end()

    @abstractmethod
    def entry(self, number: int, entry: dict[str, Any]) -> Iterator[Item]:
        """The messages of the object on line ``number``."""

    def end(self) -> Iterator[Item]:
        """What is still held back once the last line is read."""
        return iter(())

    def remember(self, call_id: str, name: str) -> None:
        self.tool_names[call_id] = name
        if len(self.tool_names) > _MAX_TOOL_NAMES:
            self.tool_names.popitem(last=False)


def project_of(cwd: Any) -> str | None:
    """The project name for a working directory: its last path component
    (POSIX or Windows separators)."""
    if not isinstance(cwd, str) or not cwd.strip():
        return None
    name = cwd.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name or None


def decode_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]] | Skip]:
    """Each line of a JSONL file as ``(line_number, object)``, streamed; a
    line that is not a JSON object (bad JSON, a last line cut off while the
    tool was still writing it, a bare value) becomes a :class:`Skip`."""
    for number, line in iter_lines(path):
        where = f"{path.name}:{number}"
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            yield Skip(where, "invalid JSON (a truncated or corrupt line)")
            continue
        if not isinstance(value, dict):
            yield Skip(where, "not a JSON object")
            continue
        yield number, value


def head_objects(head: bytes, count: int = 5) -> list[Mapping[str, Any]]:
    """The JSON objects among the first ``count`` complete lines of ``head``
    (the last line, maybe cut off, is left out)."""
    lines = head.split(b"\n")[:-1]
    found: list[Mapping[str, Any]] = []
    for raw in lines[:count]:
        try:
            value = json.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def first_files(folder: Path, suffix: str, depth: int, prefix: str = "", limit: int = 3) -> list[Path]:
    """Up to ``limit`` non-empty files named ``prefix…suffix`` at most
    ``depth`` folders below ``folder``, by a bounded walk (for ``detect()``)."""
    found: list[Path] = []

    def walk(here: Path, left: int) -> None:
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if len(found) >= limit:
                return
            try:
                if entry.is_file() and entry.name.endswith(suffix) and entry.name.startswith(prefix) \
                        and entry.stat().st_size > 0:
                    found.append(Path(entry.path))
                elif left > 0 and entry.is_dir() and not entry.name.startswith("."):
                    walk(Path(entry.path), left - 1)
            except OSError:
                continue

    walk(folder, depth)
    return found
