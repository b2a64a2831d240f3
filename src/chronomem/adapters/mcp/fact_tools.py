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
    "facts": ("facts", frozenset()),
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

_TIME_HELP = (
    "ISO-8601 date or datetime ('2024', '2024-03', '2024-03-05', '2024-03-05T10:30:00Z') or a relative "
    "phrase resolved against the server clock ('now', 'today', 'yesterday', '3 days ago', 'last week', "
    "'last March', 'March 2024'); the resolved value is echoed back."
)

# -- parameter types (descriptions and examples land in the JSON schema) ------
Subject = Annotated[str, Field(description="The entity the fact is about (a name or an alias).",
                               examples=["Acme", "Alice"])]
Predicate = Annotated[str, Field(description="The relation, e.g. 'ceo', 'works_at', 'lives_in', 'status'.",
                                 examples=["ceo", "works_at"])]
ObjectValue = Annotated[
    str | int | float | bool,
    Field(description="The value: a string names an entity (created if new) unless literal=true; numbers and "
                      "booleans are stored as literal values.", examples=["Alice", 42, "blue"]),
]
OptSubject = Annotated[str | None, Field(description="Only facts about this entity (name or alias).",
                                         examples=["Acme"])]
OptPredicate = Annotated[str | None, Field(description="Only facts with this predicate.", examples=["ceo"])]
OptObject = Annotated[
    str | int | float | bool | None,
    Field(description="Only facts with this object (entity name or literal value).", examples=["Alice"]),
]
FactId = Annotated[str, Field(description="The fact id, as shown in brackets at the end of each fact line.",
                              examples=["01JD3Q9W8ZP6M2X4T7R5V0K1N8"])]


def _th(desc: str) -> str:
    return f"{desc} {_TIME_HELP}"


ValidFrom = Annotated[str | None, Field(
    description=_th("When the fact started being true in the world (omit if unknown)."), examples=["2024-03"])]
ValidTo = Annotated[str | None, Field(
    description=_th("When it stopped being true; exclusive end (omit while still true)."), examples=["2025-01-15"])]
Ended = Annotated[str | None, Field(
    description=_th("When the fact stopped being true (default: now)."), examples=["yesterday"])]
AsOf = Annotated[str | None, Field(
    description=_th("Valid-time point: only facts true at this time (omit for all of history, each flagged "
                    "current)."), examples=["last March"])]
KnownAt = Annotated[str | None, Field(
    description=_th("System-time point: what the memory believed at this time (omit for what it believes now)."),
    examples=["2025-06-01"])]
Start = Annotated[str | None, Field(description=_th("Only events at or after this time."), examples=["2024"])]
End = Annotated[str | None, Field(description=_th("Only events before this time."), examples=["today"])]
T1 = Annotated[str, Field(description=f"The earlier time. {_TIME_HELP}", examples=["last month"])]
T2 = Annotated[str, Field(description=f"The later time. {_TIME_HELP}", examples=["today"])]
Confidence = Annotated[float, Field(description="How sure the source is, 0..1.", ge=0.0, le=1.0, examples=[0.8])]
Source = Annotated[str | None, Field(description="Where this came from (a URL, a file, 'user said'), kept as "
                                                 "evidence.", examples=["meeting notes 2024-03-05"])]
EpisodeId = Annotated[str | None, Field(description="Id of the conversation or evidence episode this fact was "
                                                    "extracted from, to cite it later.", examples=["ep-42"])]
Properties = Annotated[dict[str, Any] | None, Field(description="Extra key/value data stored with the fact.",
                                                    examples=[{"team": "platform"}])]
Supersede = Annotated[bool | None, Field(
    description="true: this new value closes any other value of (subject, predicate) where it starts; "
                "false: keep both; omit to follow the predicate's cardinality ('one' supersedes).",
    examples=[True])]
Literal_ = Annotated[bool, Field(description="Store a string object as a literal value instead of an entity name.",
                                 examples=[False])]
Reason = Annotated[str | None, Field(description="Why, kept in the history.", examples=["left the company"])]
Limit = Annotated[int, Field(
    description=f"At most this many items (a page; 1 to {MAX_PAGE_SIZE}). When more follow, the answer's `next` "
                "is the offset to pass for the next page.", ge=1, le=MAX_PAGE_SIZE, examples=[20])]
Offset = Annotated[int, Field(description="Skip this many items first (the previous answer's `next`).", ge=0,
                              le=MAX_OFFSET, examples=[0])]


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
                _guarded(name, fn), name=name, title=title, description=fn.__doc__,
                annotations=ToolAnnotations(
                    title=title, read_only_hint=read_only, idempotent_hint=idempotent,
                    destructive_hint=destructive, open_world_hint=False,
                ),
            )
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
        """Record that `subject -predicate-> object` is true during [valid_from, valid_to).

        Use it for durable facts (who holds a role, where something lives, a decision and its status).
        Re-adding a known fact never duplicates it. For a single-valued predicate (see predicate_define) the
        new value closes the old one where it starts, so 'Acme ceo Bob from 2025' ends 'Acme ceo Alice'.
        Returns the stored fact line: subject -predicate-> object [from, to) (current) [fact id]."""
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
        """The world changed: `subject -predicate-> object` stopped being true at `ended` (default now).

        The fact stays in history with its end date. It is an error if no such fact is valid at `ended`:
        call `facts` first to see what is recorded. If it was never true (a mistake), use fact_retract."""
        call = _Call(mem)
        f = mem.invalidate(subject, predicate, object, call.time("ended", ended), reason=reason, literal=literal)
        return call.result([f"ended: {f.line()}"], {"fact": compact_fact(f)})

    @tool("fact_correct", "Correct a fact record", read_only=False)
    def fact_correct(
        fact_id: FactId,
        subject: Annotated[str | None, Field(description="New subject.", examples=["Acme Corp"])] = None,
        predicate: Annotated[str | None, Field(description="New predicate.", examples=["cto"])] = None,
        object: Annotated[str | int | float | bool | None,
                          Field(description="New object.", examples=["Alice"])] = None,
        valid_from: Annotated[str | None, Field(
            description=f"New start; 'unknown' clears it. {_TIME_HELP}", examples=["2024-02"])] = None,
        valid_to: Annotated[str | None, Field(
            description=f"New exclusive end; 'open' clears it (still true). {_TIME_HELP}",
            examples=["open"])] = None,
        confidence: Annotated[float | None, Field(description="New confidence, 0..1.", ge=0.0, le=1.0,
                                                  examples=[0.9])] = None,
        source: Annotated[str | None, Field(description="New source.", examples=["board minutes"])] = None,
        episode_id: Annotated[str | None, Field(description="New episode id.", examples=["ep-43"])] = None,
        properties: Annotated[dict[str, Any] | None, Field(description="New properties (replace the old).",
                                                            examples=[{"team": "infra"}])] = None,
        literal: Annotated[bool | None, Field(description="Whether the object is a literal value.",
                                               examples=[True])] = None,
        reason: Reason = None,
    ) -> CallToolResult:
        """The record was wrong (a typo, a wrong date): write a corrected version of fact `fact_id`.

        Pass only the fields to change. The old version stays visible with known_at (audit trail).
        If the world changed instead, use fact_add / fact_invalidate; if it was never true, fact_retract."""
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
        """It was never true: stop believing fact `fact_id` (history keeps it, known_at still sees it).

        Values it had superseded become current again."""
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
            description="'out': facts whose subject is `subject`; 'in': facts whose object is `subject`; "
                        "'both'.", examples=["both"])] = "out",
        limit: Limit = DEFAULT_PAGE_SIZE,
        literal: Literal_ = False,
        decay_half_life: Annotated[float | None, Field(
            description="Days: lower each fact's confidence by half per this many days of age (read time only).",
            gt=0, examples=[90])] = None,
        offset: Offset = 0,
    ) -> CallToolResult:
        """Look up what the memory knows: facts matching the filters, one line each.

        Call this before answering about past decisions, people or project state. as_of pins the valid time
        ('who was CEO last March?'); known_at pins the system time ('what did we believe on June 1?').
        Without as_of you get all of history, current facts marked (current)."""
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
        entity: Annotated[str, Field(description="The entity (name or alias).", examples=["Acme"])],
        start: Start = None,
        end: End = None,
        limit: Limit = DEFAULT_PAGE_SIZE,
        offset: Offset = 0,
    ) -> CallToolResult:
        """Chronological story of an entity: when each fact started and ended in the world, and when it was
        recorded, corrected or retracted. Paged: `limit` events from `offset`; `next` continues."""
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
            description="'valid': what changed in the world; 'system': what the memory learned.",
            examples=["valid"])] = "valid",
        limit: Annotated[int, Field(
            description=f"At most this many items in each of the three lists (1 to {MAX_MULTI_PAGE_SIZE}). When "
                        "more follow, the answer's `next` is the offset to pass for the next page.", ge=1,
            le=MAX_MULTI_PAGE_SIZE, examples=[20])] = DEFAULT_PAGE_SIZE,
        offset: Offset = 0,
    ) -> CallToolResult:
        """What changed between t1 and t2: facts added (+), removed (-) and changed values (~). Each of the three
        lists is paged alike (`limit` items from `offset`); `next` continues."""
        call = _Call(mem)
        d = mem.diff(call.required("t1", t1), call.required("t2", t2), subject, predicate, axis, limit=limit,
                     offset=offset)
        lines, data = diff_render(d, limit, offset)
        return call.result(lines, data)

    @tool("conflicts", "Find conflicts", read_only=True, idempotent=True)
    def conflicts(as_of: AsOf = None, limit: Limit = DEFAULT_PAGE_SIZE, offset: Offset = 0) -> CallToolResult:
        """Facts of one (subject, predicate) valid at the same time: 'cardinality' conflicts break a
        single-valued predicate and need fixing (fact_correct / fact_invalidate); 'review' ones may be fine.
        Paged: `limit` conflicts from `offset` (`next` continues), each listing its first facts."""
        call = _Call(mem)
        found = mem.conflicts(call.time("as_of", as_of), limit=limit + 1, offset=offset,
                              facts_per_conflict=CONFLICT_FACTS)
        lines, data = conflict_render(found[:limit], offset, offset + limit if len(found) > limit else None)
        return call.result(lines, data)

    @tool("predicate_define", "Declare a predicate", read_only=False, idempotent=True)
    def predicate_define(
        name: Annotated[str, Field(description="The predicate name.", examples=["ceo"])],
        cardinality: Annotated[Literal["one", "many"], Field(
            description="'one': single-valued, a new value supersedes the old (ceo, lives_in, status); "
                        "'many': several values at once (works_with, likes).", examples=["one"])] = "many",
        inverse: Annotated[str | None, Field(description="Name of the inverse relation.",
                                             examples=["ceo_of"])] = None,
        aliases: Annotated[list[str], Field(description="Other names that mean the same predicate.",
                                            examples=[["chief_executive"]])] = [],  # noqa: B006
        description: Annotated[str | None, Field(description="What the predicate means.",
                                                 examples=["Chief executive officer"])] = None,
    ) -> CallToolResult:
        """Declare a predicate's cardinality, inverse and aliases (do it before recording single-valued facts
        such as 'ceo' or 'status' so new values supersede old ones automatically)."""
        p = mem.define_predicate(name, cardinality, inverse, list(aliases), description)
        line = f"predicate {p.name}: cardinality={p.cardinality}"
        if p.inverse:
            line += f", inverse={p.inverse}"
        if p.aliases:
            line += f", aliases={', '.join(p.aliases)}"
        return _Call(mem).result([line], {"predicate": predicate_dict(p)})

    @tool("entity_alias", "Add an entity alias", read_only=False, idempotent=True)
    def entity_alias(
        name: Annotated[str, Field(description="The entity (created if missing).", examples=["Acme Corporation"])],
        alias: Annotated[str, Field(description="Another name that should resolve to it.", examples=["Acme"])],
    ) -> CallToolResult:
        """Make `alias` another name for entity `name`, so facts recorded under either name are found by both."""
        e = mem.alias(name, alias)
        return _Call(mem).result(
            [f"{e.name} is also known as: {', '.join(e.aliases) or alias}"],
            {"entity": {"name": e.name, "aliases": list(e.aliases), "type": e.type}},
        )

    @tool("stats", "Memory statistics", read_only=True, idempotent=True)
    def stats() -> CallToolResult:
        """Counts for this memory: entities, facts (current, ended, retracted), versions and predicates."""
        s = mem.stats()
        data = s.to_dict()
        line = (f"namespace {s.namespace}: {s.entities} entities, {s.facts} facts ({s.current} current, "
                f"{s.ended} ended, {s.retracted} retracted), {s.versions} versions, {s.predicates} predicates")
        return _Call(mem).result([line], data)
