"""The format readers, by CLI name, loaded on first use (a hook that reads
one Claude Code log imports one module). ``auto`` tries them in
:data:`DETECT_ORDER`: the specific shapes before the generic JSONL turns."""

from __future__ import annotations

import importlib
from pathlib import Path

from ....errors import InvalidInputError
from ..source import Reader

__all__ = ["DETECT_ORDER", "FORMATS", "detect", "reader"]

#: CLI name -> module in this package; each module defines ``READER``
FORMATS: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "chatgpt": "chatgpt",
    "claude-ai": "claude_ai",
    "slack": "slack",
    "markdown": "markdown",
    "git": "git",
    "locomo": "locomo",
    "longmemeval": "longmemeval",
    "jsonl": "jsonl",
}
DETECT_ORDER = ("git", "slack", "markdown", "claude-code", "codex", "chatgpt", "claude-ai",
                "locomo", "longmemeval", "jsonl")

_loaded: dict[str, Reader] = {}


def reader(name: str) -> Reader:
    """The reader for a format name; :class:`InvalidInputError` naming the
    known ones otherwise."""
    module = FORMATS.get(name)
    if module is None:
        raise InvalidInputError(f"format: unknown format {name!r}; known: auto, {', '.join(FORMATS)}")
    if name not in _loaded:
        found = importlib.import_module(f"{__name__}.{module}").READER
        assert isinstance(found, Reader)
        _loaded[name] = found
    return _loaded[name]


def detect(path: Path) -> str:
    """The first format in :data:`DETECT_ORDER` whose reader claims ``path``."""
    for name in DETECT_ORDER:
        if reader(name).detect(path):
            return name
    raise InvalidInputError(
        f"path: cannot tell the format of {str(path)!r}; give it: chronomem ingest FORMAT PATH "
        f"(one of {', '.join(FORMATS)})")
