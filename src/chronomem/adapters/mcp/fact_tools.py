"""The fact tools: a thin layer over :class:`~chronomem.memory.Memory`.

Each tool parses its arguments (times may be relative phrases, see
:mod:`chronomem.core.phrases`), calls one ``Memory`` method and renders the
result. :data:`WRAPS` maps every tool to the ``Memory`` method it wraps and the
method parameters it deliberately leaves out, so a test can check the two
signatures agree. Other tool groups (evidence memory: ``remember``,
``recall``, ``search``) register the same way from their own module; see
:data:`chronomem.adapters.mcp.server.TOOL_GROUPS`.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Annotated, Any, Callable, Literal, Protocol, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ...core.paging import CONFLICT_FACTS, DEFAULT_PAGE_SIZE, MAX_MULTI_PAGE_SIZE, MAX_OFFSET, MAX_PAGE_SIZE
from ...core.phrases import ResolvedTime, resolve_time
from ...core.time import TimePoint
from ...errors import ChronomemError, InvalidInputError
from ...memory import Memory
from .process import process_memory
from .results import (
    compact_fact,
    conflict_render,
    continuation,
    diff_render,
    error_result,
    error_text,
    event_dict,
    event_line,
    fact_lines,
    ok_result,
    predicate_dict,
    times_block,
    unexpected_text,
)
from .schema import compact

__all__ = ["EXTRAS", "WRAPS", "make_tool", "register"]

log = logging.getLogger("chronomem.mcp")

#: tool name -> (Memory method, method parameters the tool does not expose).
#: ``fact_correct`` wraps ``correct(fact_id, **changes)``: its keyword
#: parameters are the correctable fields.
WRAPS: dict[str, tuple[str, frozenset[str]]] = {
    "fact_add": ("add_fact", frozenset()),
    "fact_invalidate": ("invalidate", frozenset()),
    "fact_correct": ("correct", frozenset()),
    "fact_retract": ("retract", frozenset()),
    # recorded_by: results carry it; the filter is left out to keep tools/list within its budget
    "facts": ("facts", frozenset({"recorded_by"})),
    "timeline": ("timeline", frozenset()),
    "diff": ("diff", frozenset({"known_at", "as_of"})),
    # each conflict lists its first CONFLICT_FACTS facts (facts_total: all)
    "conflicts": ("conflicts", frozenset({"known_at", "facts_per_conflict"})),
    "predicate_define": ("define_predicate", frozenset()),
    "entity_alias": ("alias", frozenset()),
    "stats": ("stats", frozenset()),
}

#: tool name -> tool parameters the wrapped method does not have
EXTRAS: dict[str, frozenset[str]] = {}

# -- parameter types (their descriptions land in the JSON schema) -------------
# Kept short, and left out where the name says it: the whole tools/list must
# fit a context window. What every time argument accepts, how entities are
# named and how paging works, the server instructions say once.
Subject = str
Predicate = Annotated[str, Field(description="Relation, e.g. 'ceo', 'works_at'.")]
ObjectValue = Annotated[str | int | float | bool, Field(
    description="Entity name, or a literal: number, boolean, string with literal=true.")]
OptSubject = str | None
OptPredicate = str | None
OptObject = str | int | float | bool | None
FactId = str
ValidFrom = str | None
ValidTo = str | None
Ended = Annotated[str | None, Field(description="Default now.")]
AsOf = Annotated[str | None, Field(description="Only facts true then.")]
KnownAt = str | None
Start = str | None
End = str | None
T1 = str
T2 = str
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
Source = str | None
EpisodeId = Annotated[str | None, Field(description="Id of the episode it came from.")]
Properties = dict[str, Any] | None
Supersede = Annotated[bool | None, Field(
    description="End other values of (subject, predicate); default: per cardinality.")]
Literal_ = bool
Reason = str | None
Limit = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


F = TypeVar("F", bound=Callable[..., CallToolResult])


class _Call:
    """Per-call helper: resolves time arguments and remembers them for the echo."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        self.times: dict[str, ResolvedTime] = {}
        self._now = mem.now()

    def time(self, field: str, value: str | None) -> TimePoint | None:
        if value is None:
            return None
        rt = resolve_time(value, field, self._now, self.mem.tz)
        self.times[field] = rt
        return rt.point

    def required(self, field: str, value: str) -> TimePoint:
        rt = resolve_time(value, field, self._now, self.mem.tz)
        self.times[field] = rt
        return rt.point

    def result(self, lines: list[str], data: dict[str, Any]) -> CallToolResult:
        if self.times:
            resolved, extra = times_block(self.times, self.mem.tz)
            data["times"] = resolved
            lines = extra + lines
        return ok_result(lines, data)


def _guarded(name: str, fn: F) -> F:
    """Turn every :class:`ChronomemError` into a one-sentence tool error, and
    anything else into one naming the failure (its traceback goes to the log
    on stderr) instead of the SDK's bare "Error executing tool"."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except ChronomemError as exc:
            log.info("tool %s rejected: %s", name, exc)
            return error_result(error_text(name, exc))
        except Exception as exc:
            log.exception("tool %s failed unexpectedly", name)
            return error_result(unexpected_text(name, exc))

    return wrapper  # type: ignore[return-value]


def _one_paragraph(doc: str | None) -> str:
    """A docstring as listed: dedented, its lines joined (no source indentation)."""
    return " ".join(inspect.cleandoc(doc or "").split())


class _ToolDeco(Protocol):
    def __call__(self, name: str, title: str, *, read_only: bool, idempotent: bool = False,
                 destructive: bool = False) -> Callable[[F], F]: ...


def make_tool(server: MCPServer[Any]) -> _ToolDeco:
    """A decorator registering a tool function on ``server`` with its
    annotations, its docstring as description and :class:`ChronomemError`
    turned into one-sentence tool errors. Shared by every tool group."""

    def tool(name: str, title: str, *, read_only: bool, idempotent: bool = False,
             destructive: bool = False) -> Callable[[F], F]:
        def deco(fn: F) -> F:
            server.add_tool(
                _guarded(name, fn), name=name, title=title, description=_one_paragraph(fn.__doc__),
                annotations=ToolAnnotations(  # the title is the tool's own, not repeated here
                    read_only_hint=read_only, idempotent_hint=idempotent,
                    destructive_hint=destructive, open_world_hint=False,
                ),
            )
            registered = server._tool_manager.get_tool(name)  # the SDK has no public hook for the schema
            assert registered is not None
            registered.parameters = compact(registered.parameters)
            return fn

        return deco

    return tool


def register(server: MCPServer[Any], mem: Memory) -> None:
    """Register the fact tools on ``server``, bound to ``mem``."""
    tool = make_tool(server)

    @tool("fact_add", "Record a fact", read_only=False, idempotent=True)
    def fact_add(
        subject: Subject,
        predicate: Predicate,
        object: ObjectValue,
        valid_from: ValidFrom = None,
        valid_to: ValidTo = None,
        confidence: Confidence = 1.0,
        source: Source = None,
        episode_id: EpisodeId = None,
        properties: Properties = None,
        supersede: Supersede = None,
        literal: Literal_ = False,
    ) -> CallToolResult:
        """Record `subject -predicate-> object`, true in [valid_from, valid_to). Re-adding never
        duplicates; on a single-valued predicate the new value ends the old."""
        call = _Call(mem)
        f = mem.add_fact(
            subject, predicate, object, call.time("valid_from", valid_from), call.time("valid_to", valid_to),
            confidence=confidence, source=source, episode_id=episode_id, properties=properties,
            supersede=supersede, literal=literal,
        )
        return call.result([f"recorded: {f.line()}"], {"fact": compact_fact(f)})

    @tool("fact_invalidate", "End a fact", read_only=False)
    def fact_invalidate(
        subject: Subject,
        predicate: Predicate,
        object: ObjectValue,
        ended: Ended = None,
        reason: Reason = None,
        literal: Literal_ = False,
    ) -> CallToolResult:
        """The fact stopped being true at `ended` (history keeps it). Never true? Use fact_retract."""
        call = _Call(mem)
        f = mem.invalidate(subject, predicate, object, call.time("ended", ended), reason=reason, literal=literal)
        return call.result([f"ended: {f.line()}"], {"fact": compact_fact(f)})

    @tool("fact_correct", "Correct a fact", read_only=False)
    def fact_correct(
        fact_id: FactId,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | int | float | bool | None = None,
        valid_from: Annotated[str | None, Field(description="New start time; 'unknown' clears it.")] = None,
        valid_to: Annotated[str | None, Field(description="New end time; 'open' clears it.")] = None,
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        source: str | None = None,
        episode_id: str | None = None,
        properties: dict[str, Any] | None = None,
        literal: bool | None = None,
        reason: Reason = None,
    ) -> CallToolResult:
        """The record was wrong (a typo, a date): correct fact `fact_id`, passing only the fields to
        change; known_at still sees the old version."""
        call = _Call(mem)
        changes: dict[str, Any] = {
            k: v for k, v in {
                "subject": subject, "predicate": predicate, "object": object, "confidence": confidence,
                "source": source, "episode_id": episode_id, "properties": properties, "literal": literal,
            }.items() if v is not None
        }
        if valid_from is not None:
            changes["valid_from"] = None if valid_from.strip().lower() in ("", "unknown") else \
                call.time("valid_from", valid_from)
        if valid_to is not None:
            changes["valid_to"] = None if valid_to.strip().lower() in ("", "open") else call.time("valid_to", valid_to)
        if not changes:
            raise InvalidInputError("nothing to change: pass at least one field besides fact_id")
        f = mem.correct(fact_id, reason=reason, **changes)
        return call.result([f"corrected: {f.line()}"], {"fact": compact_fact(f)})

    @tool("fact_retract", "Retract a fact", read_only=False, destructive=True)
    def fact_retract(fact_id: FactId, reason: Reason = None) -> CallToolResult:
        """The fact was never true: stop believing it (known_at still sees it); what it had
        superseded is current again."""
        f = mem.retract(fact_id, reason)
        return _Call(mem).result([f"retracted: {f.line()}"], {"fact": compact_fact(f)})

    @tool("facts", "Query facts", read_only=True, idempotent=True)
    def facts(
        subject: OptSubject = None,
        predicate: OptPredicate = None,
        object: OptObject = None,
        as_of: AsOf = None,
        known_at: KnownAt = None,
        direction: Annotated[Literal["out", "in", "both"], Field(
            description="in: facts whose object is `subject`.")] = "out",
        limit: Limit = DEFAULT_PAGE_SIZE,
        literal: Annotated[bool, Field(description="Match `object` as a literal value.")] = False,
        decay_half_life: Annotated[float | None, Field(
            description="Days: halve shown confidence per this much age.",
            gt=0)] = None,
        offset: Offset = 0,
    ) -> CallToolResult:
        """Facts matching the filters. as_of: true at a time; known_at: believed at a time.
        Without as_of: all of history, current ones marked."""
        call = _Call(mem)
        got = mem.facts(
            subject, predicate, object, as_of=call.time("as_of", as_of), known_at=call.time("known_at", known_at),
            direction=direction, limit=limit + 1, literal=literal, decay_half_life=decay_half_life, offset=offset,
        )
        got, nxt = got[:limit], (offset + limit if len(got) > limit else None)
        lines = fact_lines(got) or ["no facts match" + (f" past offset {offset}" if offset else "")]
        lines += continuation(nxt)
        return call.result(lines, {"facts": [compact_fact(f) for f in got], "count": len(got), "offset": offset,
                                   "limit": limit, "next": nxt})

    @tool("timeline", "Entity timeline", read_only=True, idempotent=True)
    def timeline(
        entity: Subject,
        start: Start = None,
        end: End = None,
        limit: Limit = DEFAULT_PAGE_SIZE,
        offset: Offset = 0,
    ) -> CallToolResult:
        """An entity's events in order: facts starting and ending, recorded, corrected, retracted."""
        call = _Call(mem)
        events = mem.timeline(entity, call.time("start", start), call.time("end", end), limit=limit + 1,
                              offset=offset)
        events, nxt = events[:limit], (offset + limit if len(events) > limit else None)
        tz = mem.tz
        lines = [event_line(e, tz) for e in events] or [f"no events for {entity}" + (
            f" past offset {offset}" if offset else "")]
        lines += continuation(nxt)
        return call.result(lines, {"entity": entity, "events": [event_dict(e, tz) for e in events],
                                   "count": len(events), "offset": offset, "limit": limit, "next": nxt})

    @tool("diff", "What changed", read_only=True, idempotent=True)
    def diff(
        t1: T1,
        t2: T2,
        subject: OptSubject = None,
        predicate: OptPredicate = None,
        axis: Annotated[Literal["valid", "system"], Field(
            description="system: what the memory learned.")] = "valid",
        limit: Annotated[int, Field(description="Page size of each list.", ge=1,
                                    le=MAX_MULTI_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
        offset: Offset = 0,
    ) -> CallToolResult:
        """Facts added (+), removed (-) and changed (~) between t1 and t2."""
        call = _Call(mem)
        d = mem.diff(call.required("t1", t1), call.required("t2", t2), subject, predicate, axis, limit=limit,
                     offset=offset)
        lines, data = diff_render(d, limit, offset)
        return call.result(lines, data)

    @tool("conflicts", "Find conflicts", read_only=True, idempotent=True)
    def conflicts(as_of: AsOf = None, limit: Limit = DEFAULT_PAGE_SIZE, offset: Offset = 0) -> CallToolResult:
        """(subject, predicate) pairs with several values at once: 'cardinality' ones break a
        single-valued predicate (fix them); 'review' ones may be fine."""
        call = _Call(mem)
        found = mem.conflicts(call.time("as_of", as_of), limit=limit + 1, offset=offset,
                              facts_per_conflict=CONFLICT_FACTS)
        lines, data = conflict_render(found[:limit], offset, offset + limit if len(found) > limit else None)
        return call.result(lines, data)

    @tool("predicate_define", "Declare a predicate", read_only=False, idempotent=True)
    def predicate_define(
        name: str,
        cardinality: Annotated[Literal["one", "many"], Field(
            description="one: a new value supersedes the old.")] = "many",
        inverse: str | None = None,
        aliases: list[str] = [],  # noqa: B006
        description: str | None = None,
    ) -> CallToolResult:
        """Declare a predicate; declare single-valued ones ('ceo', 'status') before recording
        them so new values supersede old ones."""
        p = mem.define_predicate(name, cardinality, inverse, list(aliases), description)
        line = f"predicate {p.name}: cardinality={p.cardinality}"
        if p.inverse:
            line += f", inverse={p.inverse}"
        if p.aliases:
            line += f", aliases={', '.join(p.aliases)}"
        return _Call(mem).result([line], {"predicate": predicate_dict(p)})

    @tool("entity_alias", "Add an entity alias", read_only=False, idempotent=True)
    def entity_alias(
        name: str,
        alias: str,
    ) -> CallToolResult:
        """Make `alias` another name for entity `name`."""
        e = mem.alias(name, alias)
        return _Call(mem).result(
            [f"{e.name} is also known as: {', '.join(e.aliases) or alias}"],
            {"entity": {"name": e.name, "aliases": list(e.aliases), "type": e.type}},
        )

    @tool("stats", "Memory statistics", read_only=True, idempotent=True)
    def stats() -> CallToolResult:
        """Counts of entities, facts, versions and predicates, and this server
        process's resident memory (``process``: current and peak RSS in bytes)."""
        s = mem.stats()
        data = {**s.to_dict(), "process": process_memory()}
        line = (f"namespace {s.namespace}: {s.entities} entities, {s.facts} facts ({s.current} current, "
                f"{s.ended} ended, {s.retracted} retracted), {s.versions} versions, {s.predicates} predicates")
        return _Call(mem).result([line], data)
