"""Tool results: compact structured content plus readable text, and error results.

Every tool answers with a :class:`CallToolResult` whose text block is meant
for the model (one line per fact: ``subject -predicate-> object [from, to)
(current) [id]``) and whose ``structuredContent`` is a compact JSON object for
programs. Errors are ``isError`` results with one sentence saying what was
wrong and how to fix the call; never a traceback.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Any, Iterable, Mapping, Sequence

from mcp.types import CallToolResult, TextContent

from ...core.models import Conflict, Diff, Event, Fact, Predicate
from ...core.paging import CONFLICT_FACTS, DEFAULT_PAGE_SIZE
from ...core.phrases import ResolvedTime
from ...core.time import format_us, to_us
from ...errors import (
    AliasConflictError,
    ChronomemError,
    ConfirmationRequiredError,
    EntityNotFoundError,
    FactNotFoundError,
    ForbiddenError,
    InvalidIntervalError,
    InvalidNameError,
    InvalidTimeError,
    MissingExtraError,
    PredicateNotFoundError,
    StoreLockedError,
    StoreUnavailableError,
    WriteOutcomeUnknownError,
)

__all__ = [
    "compact_fact",
    "error_result",
    "error_text",
    "fact_lines",
    "ok_result",
]

log = logging.getLogger("chronomem.mcp")


def _iso(dt: _dt.datetime | None) -> str | None:
    if dt is None:
        return None
    return dt.isoformat().replace("+00:00", "Z")


def compact_fact(f: Fact) -> dict[str, Any]:
    """The fields an agent needs; optional ones only when set."""
    out: dict[str, Any] = {
        "id": f.id,
        "subject": f.subject,
        "predicate": f.predicate,
        "object": f.object,
        "valid_from": f.valid_from_text,
        "valid_to": f.valid_to_text,
        "current": f.current,
    }
    if f.literal:
        out["literal"] = True
    if f.confidence != 1.0:
        out["confidence"] = f.confidence
    if f.source:
        out["source"] = f.source
    if f.episode_id:
        out["episode_id"] = f.episode_id
    if f.properties:
        out["properties"] = dict(f.properties)
    if f.ended_by is not None:  # what ended it, then the fact or reason that did
        out["ended_by"] = f.ended_by.value
    if f.ended_reason:
        out["ended_reason"] = f.ended_reason
    if f.invalidated_by:
        out["invalidated_by"] = f.invalidated_by
    out["recorded_at"] = _iso(f.system_from)
    if f.recorded_by:  # who wrote this version (absent: not recorded)
        out["recorded_by"] = f.recorded_by
    if f.system_to is not None:
        out["superseded_at"] = _iso(f.system_to)
    if f.version != 1:
        out["version"] = f.version
    return out


def fact_lines(facts: Iterable[Fact]) -> list[str]:
    return [f.line() for f in facts]


def times_block(times: Mapping[str, ResolvedTime], tz: _dt.tzinfo) -> tuple[dict[str, str], list[str]]:
    """Structured ``{param: resolved}`` for every time argument given, and one
    text line for those given as relative phrases (so the model sees what
    "yesterday" meant)."""
    data = {name: rt.render(tz) for name, rt in times.items()}
    rel = [f"{name}={rt.text!r} -> {data[name]}" for name, rt in times.items() if rt.relative]
    lines = [f"(resolved {', '.join(rel)})"] if rel else []
    return data, lines


def ok_result(lines: Sequence[str], data: dict[str, Any]) -> CallToolResult:
    text = "\n".join(lines) if lines else "(nothing)"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


_HINTS: tuple[tuple[type[BaseException], str], ...] = (
    (InvalidTimeError, ""),
    (InvalidIntervalError, "make valid_to later than valid_from (intervals are half-open [from, to))"),
    (InvalidNameError, "pass a non-empty name"),
    (FactNotFoundError, "call `facts` with the subject to see what is recorded and the exact fact ids"),
    (EntityNotFoundError, "check the spelling, or call `facts` to see which entities exist"),
    (PredicateNotFoundError, "call `facts` for the subject to see its predicates, or `predicate_define` it first"),
    (AliasConflictError, "pick another alias, or merge the two entities with the `chronomem merge` CLI command"),
    (StoreLockedError, "another process holds the write lock: retry the call in a moment"),
    (WriteOutcomeUnknownError, "read the named facts back (`facts` or `history`) before writing again"),
    (StoreUnavailableError, "the database is unavailable: retry the call in a few seconds"),
    (ConfirmationRequiredError, "this operation is not available over MCP"),
    (MissingExtraError, "install the extra named above"),
    (ForbiddenError, "this token cannot make this call; use the read tools, or a token with the write scope"),
)


def error_text(tool: str, exc: ChronomemError) -> str:
    """One sentence: what was wrong (naming the error class) and how to fix the call."""
    msg = one_line(str(exc)).rstrip(".") or type(exc).__name__
    hint = next((h for cls, h in _HINTS if isinstance(exc, cls)), "fix that argument and call the tool again")
    text = f"{tool} failed: {msg} ({type(exc).__name__})" + (f"; {hint}." if hint else ".")
    return safe_text(text)


def unexpected_text(tool: str, exc: BaseException) -> str:
    """One sentence for a failure that is not a :class:`ChronomemError` (a bug,
    or a bad value nothing refused earlier): its class and message, no traceback."""
    msg = one_line(str(exc))[:300] or "no message"
    return safe_text(f"{tool} failed: internal error ({type(exc).__name__}: {msg}); the server log has the "
                     f"traceback; check the arguments or report the bug.")


def one_line(text: str) -> str:
    """``text`` with its line breaks (and the spaces around them) as one space."""
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def safe_text(text: str) -> str:
    """``text`` with lone surrogates as ``\\udXXX`` escapes: the SDK cannot
    serialize them, and a result it cannot send leaves the client waiting."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def event_line(e: Event, tz: _dt.tzinfo) -> str:
    prec = e.precision
    when = format_us(to_us(e.at), prec, tz) if prec is not None else _iso(e.at)
    axis = "valid" if e.axis == "valid" else "recorded"
    return f"{when} ({axis}) {e.text} [{e.fact_id}]"


def event_dict(e: Event, tz: _dt.tzinfo) -> dict[str, Any]:
    prec = e.precision
    return {
        "at": format_us(to_us(e.at), prec, tz) if prec is not None else _iso(e.at),
        "kind": e.kind,
        "axis": e.axis,
        "fact_id": e.fact_id,
        "text": e.text,
        **({"recorded_by": e.recorded_by} if e.recorded_by else {}),
    }


def continuation(next_offset: int | None) -> list[str]:
    """The text line saying a page is not the last (empty on the last page)."""
    return [] if next_offset is None else [f"(more: call again with offset={next_offset})"]


def diff_render(d: Diff, limit: int = DEFAULT_PAGE_SIZE, offset: int = 0) -> tuple[list[str], dict[str, Any]]:
    """One page of each of the diff's lists (``limit`` items from ``offset``;
    ``d`` is that page: ``Memory.diff(..., limit=limit, offset=offset)``)."""
    added, removed, changed = d.added[:limit], d.removed[:limit], d.changed[:limit]
    totals = {"added": d.added_total, "removed": d.removed_total, "changed": d.changed_total}
    more = any(t > offset + limit for t in totals.values())
    nxt = offset + limit if more else None
    lines = [f"diff on the {d.axis} axis from {_iso(d.t1)} to {_iso(d.t2)}: {d.added_total} added, "
             f"{d.removed_total} removed, {d.changed_total} changed"]
    for f in added:
        lines.append(f"+ {f.line()}")
    for f in removed:
        lines.append(f"- {f.line()}")
    for c in changed:
        lines.append(f"~ {c.old.line()}  =>  {c.new.line()}")
    if d.empty:
        lines.append("no changes")
    lines += continuation(nxt)
    data = {
        "axis": d.axis,
        "t1": _iso(d.t1),
        "t2": _iso(d.t2),
        "added": [compact_fact(f) for f in added],
        "removed": [compact_fact(f) for f in removed],
        "changed": [{"old": compact_fact(c.old), "new": compact_fact(c.new)} for c in changed],
        "totals": totals,
        "unchanged_count": d.unchanged_total,
        "offset": offset, "limit": limit, "next": nxt,
    }
    return lines, data


def conflict_render(items: Sequence[Conflict], offset: int = 0,
                    next_offset: int | None = None) -> tuple[list[str], dict[str, Any]]:
    """A page of conflicts, each with its first :data:`CONFLICT_FACTS` facts
    (``facts_total`` counts them all)."""
    lines: list[str] = []
    out: list[dict[str, Any]] = []
    for c in items:
        shown = c.facts[:CONFLICT_FACTS]
        lines.append(
            f"{c.kind}: {c.subject} -{c.predicate}-> has {c.facts_total} values at once "
            f"from {_iso(c.overlap_from) or '…'} to {_iso(c.overlap_to) or '…'}"
        )
        lines.extend(f"    {f.line()}" for f in shown)
        if c.facts_total > len(shown):
            lines.append(f"    … and {c.facts_total - len(shown)} more (call `facts` with the subject and predicate)")
        out.append({
            "subject": c.subject, "predicate": c.predicate, "kind": c.kind,
            "overlap_from": _iso(c.overlap_from), "overlap_to": _iso(c.overlap_to),
            "facts": [compact_fact(f) for f in shown], "facts_total": c.facts_total,
        })
    if not items:
        lines.append("no conflicts" + (f" past offset {offset}" if offset else ""))
    lines += continuation(next_offset)
    return lines, {"conflicts": out, "count": len(out), "offset": offset, "next": next_offset}


def predicate_dict(p: Predicate) -> dict[str, Any]:
    return {
        "name": p.name, "cardinality": p.cardinality, "inverse": p.inverse, "aliases": list(p.aliases),
        "description": p.description, "declared": p.declared,
    }
