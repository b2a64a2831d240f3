"""The one-line summaries that stand for what a reader does not paste: a
tool call, a tool's output (its size, never its content). Shared by the
agent logs (Claude Code, Codex) and the chat exports."""

from __future__ import annotations

import json
from typing import Any

from .text import count_lines

__all__ = ["MAX_SUMMARY", "clip", "compact", "line_count", "result_line", "tool_line"]

#: a summary line longer than this is cut, ending in "…"
MAX_SUMMARY = 200


def clip(text: str, limit: int = MAX_SUMMARY) -> str:
    """``text`` on one line (runs of whitespace become one space), cut at
    ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def compact(data: Any) -> str:
    """A value with no known main field (a tool's input), as compact JSON
    (the caller clips it)."""
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        return str(data)


def tool_line(name: str, detail: str) -> str:
    """``[tool NAME: detail]``, one line, the detail clipped."""
    name = clip(name or "?", 60)
    detail = clip(detail, MAX_SUMMARY - len(name) - 9)
    return f"[tool {name}: {detail}]" if detail else f"[tool {name}]"


def line_count(text: str) -> str:
    """How many lines a tool's output has: ``"12 lines"``, ``"1 line"``."""
    count = count_lines(text)
    return f"{count} line" if count == 1 else f"{count} lines"


def result_line(name: str, text: str, images: int = 0, exit_code: int | None = None, error: bool = False) -> str:
    """A tool's output as one line: ``[tool result Bash: 12 lines]``,
    ``[tool result shell: exit 1, 3 lines]``, or for a failed call its first
    line, ``[tool error Edit: File has been modified]``."""
    who = f" {name}" if name else ""
    if error:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "error")
        return clip(f"[tool error{who}: {first}") + "]"
    detail = line_count(text)
    if exit_code:
        detail = f"exit {exit_code}, {detail}"
    if images:
        detail += f", {images} image{'s' if images > 1 else ''}"
    return f"[tool result{who}: {detail}]"
