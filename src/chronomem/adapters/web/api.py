"""The JSON API under ``/api``: reads (facts, entities, timelines, diffs,
conflicts, evidence search, episodes), the four fact writes and adding an
episode. Every handler runs the blocking memory
call in a worker thread and answers JSON; errors go through
:func:`chronomem.adapters.web.errors.error_response`.

A read's time parameters (``as_of``, ``known_at``, ``at``, ``start``,
``end``, ``t1``, ``t2``) take ISO or a time phrase and are echoed resolved in
the answer's ``times``; the times a write's body carries stay strict ISO."""

from __future__ import annotations

import datetime as _dt
import inspect
from typing import Any, Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...core.paging import DEFAULT_PAGE_SIZE, MAX_MULTI_PAGE_SIZE, MAX_PAGE_SIZE, Page, parse_page
from ...core.phrases import ResolvedTime
from ...core.time import TimePoint
from ...errors import InvalidInputError, InvalidTimeError
from ...memory import Memory
from ..mcp.process import process_memory
from . import data, evidence
from .errors import parse_json_body
from .openapi import openapi_document
from .token_api import token_routes

__all__ = ["api_routes"]

#: default and maximum ``limit`` (the page size) of ``GET /api/facts``; every list route pages alike
DEFAULT_LIMIT = DEFAULT_PAGE_SIZE
MAX_LIMIT = MAX_PAGE_SIZE

_EPISODE_FIELDS = frozenset({"text", "occurred_at", "recorded_at", "source", "session", "speaker", "metadata"})
#: the body of ``POST /api/facts``: exactly ``Memory.add_fact``'s parameters
_ADD_FIELDS = frozenset(inspect.signature(Memory.add_fact).parameters) - {"self"}


def _page(request: Request, max_size: int = MAX_PAGE_SIZE) -> Page:
    """``page`` and ``page_size`` (``limit`` is another name for ``page_size``)."""
    q = request.query_params
    if q.get("limit") and q.get("page_size"):
        raise InvalidInputError("pass page_size or limit, not both (they are the same)")
    size_field = "limit" if q.get("limit") else "page_size"
    return parse_page(q.get("page"), q.get(size_field), max_size=max_size, size_field=size_field)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    value = parse_json_body(raw)
    if not isinstance(value, dict):
        raise InvalidInputError("the request body must be a JSON object")
    return value


def _only(body: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise InvalidInputError(f"{what} does not take field(s): {', '.join(sorted(unknown))}")


Handler = Callable[[Request], Awaitable[Response]]


class _Times:
    """One request's read-basis query parameters (``as_of``, ``known_at``,
    ``at``, ``start``, ``t1``, ...): each read by :meth:`Memory.resolve_time`
    (ISO or a time phrase such as ``yesterday`` or ``April 2022``) against one
    store-clock "now", and echoed as ``"times"`` (``{"as_of": "2022-04"}``).
    A bad value is an ``InvalidTimeError`` naming the parameter (a 400)."""

    def __init__(self, mem: Memory, request: Request) -> None:
        self._mem = mem
        self._query = request.query_params
        self._now: _dt.datetime | None = None
        self.resolved: dict[str, ResolvedTime] = {}

    def get(self, name: str) -> TimePoint | None:
        value = self._query.get(name)
        if value is None or not value.strip():
            return None
        if self._now is None:
            self._now = self._mem.now()
        rt = self._mem.resolve_time(value, name, now=self._now)
        self.resolved[name] = rt
        return rt.point

    def basis(self) -> data.Basis:
        return data.parse_basis(self._mem, self.get("as_of"), self.get("known_at"))

    def echo(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the ``times`` the request's read bases resolved to."""
        out["times"] = {name: rt.render(self._mem.tz) for name, rt in self.resolved.items()}
        return out


def api_routes(mem: Memory) -> list[Route]:
    """The ``/api`` routes bound to ``mem``."""

    async def get_facts(request: Request) -> Response:
        q = request.query_params

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            b = t.basis()
            pg = _page(request)
            facts, nxt = pg.after(mem.facts(
                q.get("subject") or None, q.get("predicate") or None, q.get("object") or None, as_of=b.as_of,
                known_at=b.known_at, direction=q.get("direction") or "out", limit=pg.size + 1, offset=pg.offset,
                recorded_by=q.get("recorded_by") or None))
            return t.echo({"basis": b.to_dict(), "count": len(facts), "limit": pg.size,
                           "facts": [b.fact(f) for f in facts], **pg.echo(nxt)})

        return JSONResponse(await run_in_threadpool(run))

    async def get_entity(request: Request) -> Response:
        name = request.path_params["name"]

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            b = t.basis()
            pg = _page(request)
            ent = mem.entity(name)
            at = b.as_of if b.as_of is not None else b.now
            facts, nxt = pg.after(mem.facts(ent.name, as_of=at, known_at=b.known_at, direction="both",
                                            limit=pg.size + 1, offset=pg.offset))
            return t.echo({"basis": b.to_dict(), "entity": ent.to_dict(), "facts": [b.fact(f) for f in facts],
                           "count": len(facts), **pg.echo(nxt)})

        return JSONResponse(await run_in_threadpool(run))

    async def get_timeline(request: Request) -> Response:
        name = request.path_params["name"]

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            start, end = t.get("start"), t.get("end")
            pg = _page(request)
            ent = mem.entity(name)
            events, nxt = pg.after(mem.timeline(ent.name, start, end, limit=pg.size + 1, offset=pg.offset))
            return t.echo({"entity": ent.to_dict(), "count": len(events), "events": [e.to_dict() for e in events],
                           **pg.echo(nxt)})

        return JSONResponse(await run_in_threadpool(run))

    async def get_diff(request: Request) -> Response:
        q = request.query_params

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            pg = _page(request, MAX_MULTI_PAGE_SIZE)
            return t.echo(data.diff_view(mem, t.basis(), t.get("t1"), t.get("t2"), q.get("axis"),
                                         q.get("subject"), q.get("predicate"), str(pg.number), str(pg.size)))

        return JSONResponse(await run_in_threadpool(run))

    async def get_conflicts(request: Request) -> Response:
        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            pg = _page(request)
            return t.echo(data.conflicts_view(mem, t.basis(), str(pg.number), str(pg.size)))

        return JSONResponse(await run_in_threadpool(run))

    async def post_fact(request: Request) -> Response:
        body = await _body(request)
        _only(body, set(_ADD_FIELDS), "POST /api/facts")
        for required in ("subject", "predicate", "object"):
            if body.get(required) is None:
                raise InvalidInputError(f"a fact needs {required!r}")
        fact = await run_in_threadpool(lambda: mem.add_fact(**body))
        return JSONResponse({"fact": fact.to_dict()}, status_code=201)

    async def post_invalidate(request: Request) -> Response:
        fact_id = request.path_params["fact_id"]
        body = await _body(request)
        _only(body, {"ended", "reason"}, "invalidate")
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InvalidInputError("reason must be a string")
        # one write transaction finds the believed version and ends it
        fact = await run_in_threadpool(lambda: mem.invalidate_fact(fact_id, body.get("ended"), reason=reason))
        return JSONResponse({"fact": fact.to_dict()})

    async def post_correct(request: Request) -> Response:
        fact_id = request.path_params["fact_id"]
        body = await _body(request)
        if "fact_id" in body:
            raise InvalidInputError("correct takes the fact id from the URL, not the body")
        fact = await run_in_threadpool(lambda: mem.correct(fact_id, **body))
        return JSONResponse({"fact": fact.to_dict()})

    async def post_retract(request: Request) -> Response:
        fact_id = request.path_params["fact_id"]
        body = await _body(request)
        _only(body, {"reason"}, "retract")
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InvalidInputError("reason must be a string")
        fact = await run_in_threadpool(lambda: mem.retract(fact_id, reason))
        return JSONResponse({"fact": fact.to_dict()})

    async def get_search(request: Request) -> Response:
        q = request.query_params

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            return t.echo(evidence.search_view(mem, q.get("q"), q.get("view"), t.get("at"), q.get("k"),
                                               known_at=t.get("known_at"), require_query=True))

        return JSONResponse(await run_in_threadpool(run))

    async def get_recall(request: Request) -> Response:
        q = request.query_params

        def run() -> dict[str, Any]:
            t = _Times(mem, request)
            return t.echo(evidence.recall_view(mem, q.get("q"), q.get("budget_tokens"), t.get("at"),
                                               known_at=t.get("known_at")))

        return JSONResponse(await run_in_threadpool(run))

    async def get_episode(request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        q = request.query_params
        return JSONResponse(await run_in_threadpool(
            lambda: evidence.episode_view(mem, episode_id, q.get("page"), q.get("page_size"))))

    async def post_episode(request: Request) -> Response:
        body = await _body(request)
        _only(body, set(_EPISODE_FIELDS), "POST /api/episodes")
        if "text" not in body:
            raise InvalidInputError("an episode needs 'text'")
        for name in ("occurred_at", "recorded_at"):
            if body.get(name) is not None and not isinstance(body[name], str):
                why = f"expected an ISO 8601 string, not {type(body[name]).__name__}"
                raise InvalidTimeError(body[name], name, why)
        text = body.pop("text")
        episode = await run_in_threadpool(lambda: mem.add_episode(text, **body))
        return JSONResponse({"episode": episode.to_dict()}, status_code=201)

    async def get_openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def get_stats(request: Request) -> Response:
        def run() -> dict[str, Any]:
            # only the served namespace (as the web view's stats): never the file's other ones
            stats = {**mem.stats().to_dict(), "namespaces": [mem.namespace]}
            return {"stats": stats, "evidence": mem.evidence_stats(), "process": process_memory()}

        return JSONResponse(await run_in_threadpool(run))

    return [
        Route("/api/openapi.json", get_openapi, methods=["GET"]),
        Route("/api/stats", get_stats, methods=["GET"]),
        Route("/api/facts", get_facts, methods=["GET"]),
        Route("/api/facts", post_fact, methods=["POST"]),
        Route("/api/facts/{fact_id}/invalidate", post_invalidate, methods=["POST"]),
        Route("/api/facts/{fact_id}/correct", post_correct, methods=["POST"]),
        Route("/api/facts/{fact_id}/retract", post_retract, methods=["POST"]),
        Route("/api/entities/{name:path}", get_entity, methods=["GET"]),
        Route("/api/timeline/{name:path}", get_timeline, methods=["GET"]),
        Route("/api/diff", get_diff, methods=["GET"]),
        Route("/api/conflicts", get_conflicts, methods=["GET"]),
        Route("/api/search", get_search, methods=["GET"]),
        Route("/api/recall", get_recall, methods=["GET"]),
        Route("/api/episodes", post_episode, methods=["POST"]),
        Route("/api/episodes/{episode_id}", get_episode, methods=["GET"]),
        *token_routes(mem),
    ]
