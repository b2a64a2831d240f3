"""The small value helpers every reader shares: a string field or ``None``,
text safe to store as UTF-8, timestamps as aware UTC datetimes, and a line
count."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

__all__ = ["clean", "count_lines", "epoch_time", "iso_time", "opt_str"]


def opt_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def clean(text: str) -> str:
    """Lone surrogates (a ``\\ud83d`` escape without its pair) cannot be
    stored as UTF-8: replace them as undecodable bytes are."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def iso_time(value: Any) -> _dt.datetime | None:
    """An ISO 8601 timestamp (``2025-07-03T13:42:09.815Z``,
    ``…+00:00``) as an aware UTC datetime; ``None`` for anything else
    (missing, empty, unreadable). One without an offset is taken as UTC:
    every tool read here writes UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed.astimezone(_dt.timezone.utc)


def epoch_time(value: Any) -> _dt.datetime | None:
    """Seconds since the epoch (``1704067200.123``) as an aware UTC
    datetime; ``None`` for anything else (a bool, NaN, out of range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    try:
        return _dt.datetime.fromtimestamp(value, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def count_lines(text: str) -> int:
    """How many lines ``text`` has, leading and trailing newlines aside."""
    stripped = text.strip("\n")
    return stripped.count("\n") + 1 if stripped else 0
