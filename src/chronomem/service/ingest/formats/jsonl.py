"""Generic JSON-lines turns: one object per line with ``text`` (or
``content``), and optionally ``speaker`` (or ``role``), ``occurred_at`` (or
``timestamp`` / ``time``), ``session``, ``source``, ``metadata`` and ``id``.
The key is the line's ``id`` when it has one, else ``<file name>:<line>``
(so a file that is only appended to imports incrementally)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, SourceMessage, iter_lines

__all__ = ["READER"]


class JsonlReader(Reader):
    name = "jsonl"
    description = "JSON lines of turns: text, speaker, occurred_at/timestamp, session, id"

    def detect(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson")

    def files(self, opts: ReadOptions) -> list[Path]:
        root = opts.root
        if root.is_dir():
            found = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (".jsonl", ".ndjson"))
            if not found:
                raise InvalidInputError(f"path: no .jsonl files under {str(root)!r}")
            return found
        return [root]

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        for number, line in iter_lines(file):
            where = f"{file.name}:{number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Skip(where, f"invalid: not JSON ({exc.msg})")
                continue
            if not isinstance(item, dict):
                yield Skip(where, "invalid: not a JSON object")
                continue
            text = item.get("text", item.get("content"))
            if not isinstance(text, str) or not text.strip():
                yield Skip(where, "empty")
                continue
            when = item.get("occurred_at", item.get("timestamp", item.get("time")))
            context: dict[str, Any] = dict(item["metadata"]) if isinstance(item.get("metadata"), dict) else {}
            if isinstance(item.get("source"), str):
                context.setdefault("origin", item["source"])
            key = item.get("id", item.get("key"))
            yield SourceMessage(
                key=str(key) if isinstance(key, (str, int)) and str(key) else where,
                text=text, occurred_at=when if isinstance(when, str) else None,
                speaker=_opt(item.get("speaker", item.get("role"))), session=_opt(item.get("session")),
                context=context,
            )


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


READER = JsonlReader()
