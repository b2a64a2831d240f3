"""The chronomem MCP server (official ``mcp`` SDK, ``MCPServer``).

:func:`build_server` binds the tools and resources to one :class:`Memory`;
:func:`run_stdio` serves it over stdin/stdout (``chronomem mcp``);
:func:`build_http_app` returns a streamable-HTTP ASGI app for ``chronomem
serve`` to mount at ``/mcp``.
"""

from __future__ import annotations

import contextlib
import logging
import urllib.parse
from typing import Any, AsyncIterator, Callable, Sequence

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from ... import __version__
from ...core.paging import RESOURCE_LINES
from ...errors import ChronomemError, ForbiddenError
from ...memory import Memory
from . import evidence_tools, fact_tools
from .process import warm_in_background
from .results import error_result, error_text, safe_text, unexpected_text
from .schema import json_type, schema_error, validator
from .wire import wire_error

__all__ = ["INSTRUCTIONS", "PRINCIPAL", "READ_TOOLS", "TOOL_GROUPS", "McpHttpApp", "build_http_app", "build_server",
           "run_stdio", "serve_stdio", "tool_extras", "tool_wraps"]

log = logging.getLogger("chronomem.mcp")

INSTRUCTIONS = """\
chronomem is your long-term, time-aware memory: facts (subject -predicate-> object, each with the interval it was \
true in the world) and the evidence they came from (episodes: conversation turns, notes, decisions, verbatim). \
Protocol:
1. Before answering anything about past decisions, people or project state, call `recall` with the question \
(use `at` for "at that time", e.g. at="last March") and base the answer on what it returns. Use `facts` for an \
exact listing and `search` to dig for specific evidence.
2. When you learn a stable fact (a role, an owner, a decision, a preference, a location), record it with \
`fact_add`, with `valid_from` when you know when it became true ("2024-03", "yesterday"); or call `remember` to \
store the evidence text together with the facts it states (each fact then cites the episode).
3. When something changes, `fact_add` the new value or `fact_invalidate` the old one. Single-valued predicates \
(declare them once with `predicate_define`, cardinality "one") close the old value automatically. If a record was \
wrong, `fact_correct` it; if it was never true, `fact_retract` it.
4. Cite facts and evidence by id (the [bracketed] value at the end of each line), e.g. "Bob leads platform \
[01JD...]".
Arguments: every time argument (valid_from, valid_to, ended, as_of, at, known_at, t1, t2, start, end, since, \
until, occurred_at) takes an ISO-8601 date or datetime ("2024", "2024-03", "2024-03-05", \
"2024-03-05T10:30:00Z") or a phrase resolved against the server clock ("now", "today", "yesterday", \
"3 days ago", "last week", "last March", "March 2024"); the resolved value is echoed back. Intervals are \
half-open [from, to): an end is exclusive. as_of and at pin the valid time (what was true then); known_at pins \
the system time (what the memory believed then; default now). Entities are named by name or alias. Lists are \
paged: `limit` items from `offset`; an answer with more to come gives `next`, the offset to pass next."""

ToolGroup = Callable[[MCPServer[Any], Memory], None]

#: Tool groups registered by :func:`build_server`, in order: the fact tools,
#: then the evidence tools (``remember``, ``recall``, ``search``).
TOOL_GROUPS: list[ToolGroup] = [fact_tools.register, evidence_tools.register]


#: The tools a token with only the ``read`` scope may call over HTTP; every
#: other tool (a new one included) needs ``write`` (``tests/test_serve_tokens.py``
#: checks each listed tool against the method it wraps).
READ_TOOLS = frozenset({"facts", "timeline", "diff", "conflicts", "stats", "recall", "search"})

#: where ``chronomem serve`` puts the request's principal in the ASGI scope
#: (the same key as ``chronomem.adapters.web.auth.PRINCIPAL``)
PRINCIPAL = "chronomem.principal"


def _principal(context: Context[Any, Any] | None) -> Any:
    """The principal of the HTTP request that carried this call (None over
    stdio, or on a server without tokens)."""
    request = context.request_context.request if context is not None else None
    scope = getattr(request, "scope", None)
    return scope.get(PRINCIPAL) if isinstance(scope, dict) else None


def tool_wraps() -> dict[str, tuple[str, frozenset[str]]]:
    """Every tool -> (the ``Memory`` method it wraps, method params it omits)."""
    return {**fact_tools.WRAPS, **evidence_tools.WRAPS}


def tool_extras() -> dict[str, frozenset[str]]:
    """Tool -> its parameters that the wrapped ``Memory`` method does not have
    (``remember``'s ``facts`` go to ``add_facts``)."""
    return {**fact_tools.EXTRAS, **evidence_tools.EXTRAS}


def _loc_name(loc: Sequence[Any]) -> str:
    """``("facts", 0, "object", "str")`` -> ``facts[0].object`` (the pydantic
    union-branch tags such as ``str`` are dropped)."""
    if not loc:
        return "arguments"
    out = str(loc[0]).removeprefix("field_")
    for part in loc[1:]:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part) in _TYPE_TAGS or "[" in str(part):
            break
        else:
            out += f".{part}"
    return out


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "literal"})


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _describe_validation(tool: str, exc: ValidationError) -> str:
    by_arg: dict[str, list[dict[str, Any]]] = {}
    for err in exc.errors():
        arg = _loc_name(err.get("loc", ()))
        by_arg.setdefault(arg, []).append(dict(err))
    parts = []
    for arg, errs in by_arg.items():
        first = errs[0]
        got = _short_repr(first.get("input"))
        if first.get("type") == "missing":
            parts.append(f"missing required argument {arg!r}")
        elif first.get("type") == "extra_forbidden":
            parts.append(f"unknown argument {arg!r}")
        elif len(errs) > 1:
            parts.append(f"argument {arg!r} has a type the schema does not allow (got {got})")
        else:
            parts.append(f"argument {arg!r}: {first.get('msg', 'invalid value')} (got {got})")
    return f"{tool} failed: {'; '.join(parts)}; fix the arguments to match the tool's input schema and call again."


def _schema_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a parameter schema allows (empty: not stated, no check)."""
    types = schema.get("type")
    out = set(types if isinstance(types, list) else [types] if types else [])
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        if not isinstance(branch, dict) or not branch.get("type"):
            return set()  # a $ref or an untyped branch: leave it to pydantic
        out |= _schema_types(branch)
    return out


def _strict_types(tool: str, properties: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first argument whose JSON type the schema does not allow. pydantic
    would coerce it ("no" -> false, "0.5" -> 0.5, 1 -> true); chronomem's
    booleans and numbers are strict on every surface."""
    for arg, value in arguments.items():
        allowed = _schema_types(properties.get(arg, {}))
        got = json_type(value)
        if not allowed or got in allowed or (got == "integer" and "number" in allowed):
            continue
        if got == "number" and "integer" in allowed and float(value).is_integer():
            continue  # JSON Schema counts 5.0 as an integer, and so does pydantic
        want = " or ".join(sorted(allowed - {"null"})) + (" or null" if "null" in allowed else "")
        return (f"{tool} failed: argument {arg!r} must be a JSON {want}, not {got} {_short_repr(value)}; "
                f"fix the arguments to match the tool's input schema and call again.")
    return None


class ChronomemMCP(MCPServer[Any]):
    """``MCPServer`` with chronomem's argument checking: an unknown tool is
    the -32602 protocol error the specification asks for; unknown argument
    names, arguments of a JSON type the schema does not allow (no coercion)
    and any other break of the listed input schema (checked with
    ``jsonschema``, nested values included) become one-sentence tool errors,
    so a call succeeds exactly when its arguments fit the schema."""

    def __init__(self, *args: Any, memory: Memory | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._checkers: dict[str, Any] = {}
        self._memory = memory

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = ", ".join(t.name for t in self._tool_manager.list_tools())
            raise MCPError(INVALID_PARAMS, safe_text(f"Unknown tool: {name!r}; the tools are: {known}."),
                           data={"tool": safe_text(name)})
        principal = _principal(context)
        if principal is not None and name not in READ_TOOLS and not principal.has("write"):
            # refused before its arguments are even read
            refusal = ForbiddenError(f"the tool {name} writes; the token {principal.name!r} has only "
                                     f"{', '.join(principal.scopes)} scope")
            return error_result(error_text(name, refusal))
        known_args = set(tool.parameters.get("properties", {}))
        unknown = sorted(set(arguments) - known_args)
        if unknown:
            valid = ", ".join(sorted(known_args)) or "none"
            return error_result(safe_text(
                f"{name} failed: unknown argument(s) {', '.join(map(repr, unknown))}; valid arguments are: "
                f"{valid}."
            ))
        wrong = _strict_types(name, tool.parameters.get("properties", {}), arguments)
        if wrong is None:
            checker = self._checkers.get(name)
            if checker is None:
                checker = self._checkers[name] = validator(tool.parameters)
            why = schema_error(checker, arguments)
            if why is not None:
                wrong = f"{name} failed: {why}; fix the arguments to match the tool's input schema and call again."
        if wrong is not None:
            return error_result(safe_text(wrong))
        if principal is None or self._memory is None:
            return await self._call(name, arguments, context)
        with self._memory.acting_as(principal.name):  # the tool's write is recorded as the token's name
            return await self._call(name, arguments, context)

    async def _call(self, name: str, arguments: dict[str, Any],
                    context: Context[Any, Any] | None) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return error_result(safe_text(_describe_validation(name, exc.__cause__)))
            # e.g. a RecursionError while the SDK validates over-deep arguments
            log.warning("tool %s failed before it ran: %r", name, exc.__cause__ or exc, exc_info=exc)
            return error_result(unexpected_text(name, exc.__cause__ or exc))


def build_server(mem: Memory, *, name: str = "chronomem") -> ChronomemMCP:
    """An MCP server exposing ``mem`` (tools, resources, protocol instructions)."""
    server = ChronomemMCP(
        name, title="chronomem memory", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING",
        memory=mem,
        subscriptions=False,  # no change notifications are sent: do not advertise subscribe / listChanged
    )
    # no prompts: drop the SDK's prompt handlers so the capability is not advertised
    # (the low-level server derives its capabilities from the handlers it has; it has no public remover)
    for method in ("prompts/list", "prompts/get"):
        server._lowlevel_server._request_handlers.pop(method, None)
    for group in TOOL_GROUPS:
        group(server, mem)

    @server.resource("chronomem://stats", name="stats", title="Memory statistics", mime_type="text/plain")
    def stats_resource() -> str:
        """Counts of entities, facts and versions in this memory."""
        s = mem.stats()
        return (f"namespace {s.namespace}: {s.entities} entities, {s.facts} facts ({s.current} current, "
                f"{s.ended} ended, {s.retracted} retracted), {s.versions} versions, {s.predicates} predicates")

    @server.resource("chronomem://entity/{name}", name="entity", title="Entity timeline", mime_type="text/plain")
    def entity_resource(name: str) -> str:
        """The timeline of one entity (URL-encode names with spaces): its first
        events; the `timeline` tool pages through the rest."""
        from .results import event_line

        entity = urllib.parse.unquote(name)
        try:
            events = mem.timeline(entity, limit=RESOURCE_LINES + 1)
        except ChronomemError as exc:  # a missing entity is a -32602 protocol error, not content
            uri = safe_text(f"chronomem://entity/{urllib.parse.quote(entity, safe='')}")
            raise MCPError(INVALID_PARAMS, error_text(uri, exc), data={"uri": uri}) from None
        lines = [event_line(e, mem.tz) for e in events[:RESOURCE_LINES]]
        if len(events) > RESOURCE_LINES:
            lines.append(f"(first {RESOURCE_LINES} events; call the timeline tool with offset={RESOURCE_LINES} "
                         "for more)")
        return "\n".join(lines) if lines else f"no events for {entity}"

    return server


def run_stdio(mem: Memory) -> None:
    """Serve ``mem`` over stdio until stdin closes. Writes nothing but
    JSON-RPC to stdout (logs go to stderr)."""
    warm_in_background(mem)
    anyio.run(serve_stdio, build_server(mem))


async def serve_stdio(server: ChronomemMCP, stdin: anyio.AsyncFile[str] | None = None,
                      stdout: anyio.AsyncFile[str] | None = None) -> None:
    """``MCPServer.run_stdio_async`` that answers every line: the SDK's stdio
    transport turns a line it cannot read (malformed JSON, a lone surrogate
    escape, nesting past its parser's depth, a non-message) into an exception
    that its dispatcher drops at debug level, so the client waits forever.
    Here each such line gets a JSON-RPC error (id recovered when possible)
    and a warning on stderr. ``stdin``/``stdout`` default to the process's."""
    low = server._lowlevel_server  # the SDK keeps its transport loop on the low-level server
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        inbox, outbox = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answer_unreadable, read_stream, inbox, write_stream)
            await low.run(outbox, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()


async def _answer_unreadable(source: Any, sink: MemoryObjectSendStream[SessionMessage | Exception],
                             reply: Any) -> None:
    async with sink:
        async for item in source:
            try:
                if isinstance(item, Exception):
                    error = wire_error(item)
                    log.warning("unreadable JSON-RPC message (answered with error %d): %s",
                                error.error.code, error.error.message)
                    await reply.send(SessionMessage(error))
                else:
                    await sink.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


class McpHttpApp:
    """The streamable-HTTP MCP endpoint as a plain ASGI app.

    It answers every HTTP request it receives (whatever the path), so mount it
    either as a route or a mount::

        mcp_app = build_http_app(mem)
        routes = [Route("/mcp", endpoint=mcp_app, methods=["GET", "POST", "DELETE"]),
                  Mount("/mcp", app=mcp_app)]

        @contextlib.asynccontextmanager
        async def lifespan(app):
            async with mcp_app.lifespan():   # REQUIRED: runs the SDK session manager
                yield

    Mounted apps do not get Starlette lifespan events, so the parent app MUST
    enter :meth:`lifespan` in its own lifespan (once; the session manager
    cannot be restarted). Served alone (``uvicorn.run(mcp_app)``) it handles
    the ASGI lifespan protocol itself.
    """

    def __init__(self, server: ChronomemMCP, session_manager: StreamableHTTPSessionManager) -> None:
        self.server = server
        self.session_manager = session_manager
        self._asgi = StreamableHTTPASGIApp(session_manager)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        await self._asgi(scope, receive, send)

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                message = await receive()
                assert message["type"] == "lifespan.shutdown"
        except Exception as exc:  # pragma: no cover - startup failure
            log.exception("MCP HTTP lifespan failed")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


def build_http_app(
    mem: Memory,
    *,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    json_response: bool = False,
) -> McpHttpApp:
    """A streamable-HTTP MCP app serving ``mem`` (mount it at ``/mcp``).

    Lifespan: the returned :class:`McpHttpApp` needs its SDK session manager
    running; a parent Starlette app must do ``async with app.lifespan(): ...``
    inside its own lifespan (see :class:`McpHttpApp`). DNS-rebinding
    protection allows ``127.0.0.1``, ``localhost`` and ``[::1]`` on any port
    by default; pass ``allowed_hosts`` (``"host:port"`` patterns, ``*`` for any
    port) when serving on another interface. Clients must send a Host header
    with a port, e.g. ``http://127.0.0.1:8765/mcp``. Authentication is the
    parent app's job.
    """
    hosts = list(allowed_hosts) if allowed_hosts is not None else list(LOCAL_HOSTS)
    origins = list(allowed_origins) if allowed_origins is not None else [f"http://{h}" for h in hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins,
    )
    server = build_server(mem)
    # public SDK API: this builds (and we discard) a Starlette wrapper, and
    # creates the session manager that we serve directly on any path
    server.streamable_http_app(json_response=json_response, transport_security=security)
    return McpHttpApp(server, server.session_manager)
