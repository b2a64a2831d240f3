"""The ASGI app: the read-only web view (``/``, ``/entity/...``, ``/diff``,
``/conflicts``, ``/search``, ``/episode/...``, each with a ``.json`` twin), the JSON API under ``/api`` and,
optionally, extra mounted apps (MCP at ``/mcp``), behind bearer-token auth."""

from __future__ import annotations

import contextlib
import hmac
import logging
from typing import Any, AsyncIterator, Callable, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import ChronomemError, InvalidInputError
from ...memory import Memory
from . import data, evidence, evidence_pages, pages
from .api import api_routes
from .errors import AuthenticationError, ErrorGuard, ForbiddenError, error_response
from .net import is_loopback, parse_authority, same_origin_path
from .ops import Ops

__all__ = ["AccessGuard", "create_app"]

log = logging.getLogger("chronomem.web")

_COOKIE = "chronomem_token"


def _page_routes(mem: Memory) -> list[BaseRoute]:
    def basis(request: Request) -> data.Basis:
        q = request.query_params
        return data.parse_basis(mem, q.get("as_of"), q.get("known_at"))

    def pair(path: str, build: Callable[[Request], Mapping[str, Any]],
             render: Callable[[Mapping[str, Any]], str], twins: Sequence[str] = ()) -> list[BaseRoute]:
        async def as_json(request: Request) -> Response:
            return JSONResponse(await run_in_threadpool(build, request))

        async def as_html(request: Request) -> Response:
            return HTMLResponse(render(await run_in_threadpool(build, request)))

        json_paths = list(twins) or [path + ".json"]
        out: list[BaseRoute] = [Route(p, as_json, methods=["GET"]) for p in json_paths]
        return out + [Route(path, as_html, methods=["GET"])]

    def index(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return data.index_view(mem, basis(request), q.get("q"), page=q.get("page"), page_size=q.get("page_size"))

    def entity(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return data.entity_view(mem, request.path_params["name"], basis(request), q.get("page"), q.get("page_size"))

    def graph(request: Request) -> Mapping[str, Any]:
        return data.graph_view(mem, request.path_params["name"], basis(request), request.query_params.get("hops"))

    def diff(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return data.diff_view(mem, basis(request), q.get("t1"), q.get("t2"), q.get("axis"), q.get("subject"),
                              q.get("predicate"), q.get("page"), q.get("page_size"))

    def conflicts(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return data.conflicts_view(mem, basis(request), q.get("page"), q.get("page_size"))

    async def diff_html(request: Request) -> Response:
        q = request.query_params
        if not q.get("t1") and not q.get("t2"):
            b = await run_in_threadpool(basis, request)
            return HTMLResponse(pages.diff_form_page(b.to_dict()))
        try:
            return HTMLResponse(pages.diff_page(await run_in_threadpool(diff, request)))
        except InvalidInputError as exc:
            b = await run_in_threadpool(basis, request)
            return HTMLResponse(pages.diff_form_page(b.to_dict(), str(exc)), status_code=400)

    routes: list[BaseRoute] = []
    routes += pair("/", index, pages.index_page, twins=("/index.json", "/.json"))
    routes += pair("/entity/{name:path}/graph", graph, pages.graph_page)
    routes += pair("/entity/{name:path}", entity, pages.entity_page)
    routes += [r for r in pair("/diff", diff, pages.diff_page) if getattr(r, "path", "") == "/diff.json"]
    routes.append(Route("/diff", diff_html, methods=["GET"]))
    routes += pair("/conflicts", conflicts, pages.conflicts_page)

    def search(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return evidence.search_view(mem, q.get("q"), q.get("view"), q.get("at"), q.get("k"),
                                    known_at=q.get("known_at"))

    def episode(request: Request) -> Mapping[str, Any]:
        q = request.query_params
        return evidence.episode_view(mem, request.path_params["episode_id"], q.get("page"), q.get("page_size"))

    routes += pair("/search", search, evidence_pages.search_page)
    routes += pair("/episode/{episode_id}", episode, evidence_pages.episode_page)
    return routes


class AccessGuard:
    """Access checks in front of the whole app (bearer token, Host, Origin).

    With a token: writes under ``/api`` and everything under ``/mcp`` need
    ``Authorization: Bearer <token>``; with ``protect_all`` (non-loopback bind)
    every route does. A browser can authenticate its page GETs once with
    ``?token=...``: on every bind the token moves into an HttpOnly cookie and
    the URL is cleaned by a 303 to the same path. The cookie authorizes pages
    (and their ``.json`` twins) only, never ``/api`` or ``/mcp``. Missing
    token: 401; wrong token: 403.

    The ``Host`` header is parsed strictly (no userinfo); on a loopback bind it
    must name a loopback host and the port this server listens on (defeats DNS
    rebinding), and API writes carrying an ``Origin`` must come from this server
    (defeats cross-site form posts to an unauthenticated local server).
    """

    def __init__(self, app: ASGIApp, token: str | None, protect_all: bool = False) -> None:
        self.app = app
        self.token = token
        self.protect_all = protect_all

    def _needs(self, path: str, method: str) -> bool:
        if self.protect_all or _is_mcp(path):
            return True
        return path.startswith("/api/") and method not in ("GET", "HEAD", "OPTIONS")

    def _ok(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))

    def _browser_guard(self, scope: Scope, request: Request, path: str, method: str) -> ChronomemError | None:
        """Refuse what only a hostile web page would send: a malformed Host; on
        a loopback bind, a Host that is not this loopback server (DNS
        rebinding); for API writes, an Origin other than this server."""
        host = request.headers.get("host")
        if host:
            try:
                name, port = parse_authority(host, scope.get("scheme", "http"))
            except ValueError:
                return InvalidInputError(f"the Host header is malformed: {host!r}")
            server = scope.get("server")
            wrong_port = server is not None and server[1] is not None and port != server[1]
            if not self.protect_all and (not is_loopback(name) or wrong_port):
                return ForbiddenError(f"this server only answers requests addressed to a loopback name "
                                      f"and its own port, not {host!r}")
        if path.startswith("/api/") and method not in ("GET", "HEAD", "OPTIONS"):
            origin = request.headers.get("origin")
            if origin is not None and (not host or urlsplit(origin).netloc != host):
                return ForbiddenError(f"cross-origin writes are refused (Origin {origin!r})")
        return None

    def _login(self, scope: Scope, request: Request, path: str) -> Response | ChronomemError:
        """``?token=`` on a page: move it into the cookie and redirect to the same
        path without it (a path on this origin only); with no token configured,
        just drop it from the URL."""
        given = request.query_params.getlist("token")
        if self.token is not None and not (len(given) == 1 and self._ok(given[0])):
            return ForbiddenError("the token is wrong")
        query = scope.get("query_string", b"").decode("latin-1")
        rest = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"]
        resp = RedirectResponse(same_origin_path(path, urlencode(rest)), status_code=303)
        if self.token is not None:
            resp.set_cookie(_COOKIE, given[0], httponly=True, samesite="strict")
        return resp

    def _check_token(self, request: Request, path: str, method: str) -> ChronomemError | None:
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not self._ok(given.strip()):
                return ForbiddenError("the bearer token is wrong")
            return None
        if method in ("GET", "HEAD") and _is_page(path) and _COOKIE in request.cookies:
            if not self._ok(request.cookies[_COOKIE]):
                return ForbiddenError("the token cookie is wrong; open any page with ?token=... again")
            return None
        return AuthenticationError("this server needs a bearer token: send 'Authorization: Bearer <token>'")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        method = scope.get("method", "GET")
        request = Request(scope)
        exc = self._browser_guard(scope, request, path, method)
        if exc is None and method in ("GET", "HEAD") and _is_page(path) and "token" in request.query_params:
            login = self._login(scope, request, path)
            if isinstance(login, Response):
                await login(scope, receive, send)
                return
            exc = login
        if exc is None and self.token is not None and self._needs(path, method):
            exc = self._check_token(request, path, method)
        if exc is not None:
            log.info("refused %s %s: %s", method, path, exc)
            await error_response(exc, path)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


def _is_page(path: str) -> bool:
    """A web page or its ``.json`` twin: anything but the API and MCP."""
    return not (path == "/api" or path.startswith("/api/") or _is_mcp(path))


def create_app(mem: Memory, *, token: str | None = None, protect_all: bool = False,
               mounts: Mapping[str, ASGIApp] | None = None,
               lifespans: Sequence[Callable[[], contextlib.AbstractAsyncContextManager[Any]]] = (),
               ops: Ops | None = None) -> ASGIApp:
    """The whole ASGI app for ``mem``. ``mounts`` maps a path prefix (e.g.
    ``/mcp``) to another ASGI app; ``lifespans`` are entered for the app's life
    (mounted apps do not get lifespan events of their own). ``ops`` adds the
    health routes, the access log and rate limits around it (see :mod:`.ops`)."""
    if token is not None and not token.strip():
        raise InvalidInputError("the bearer token must not be empty")

    async def on_error(request: Request, exc: Exception) -> Response:
        return error_response(exc, request.url.path, scope=request.scope)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for cm in lifespans:
                await stack.enter_async_context(cm())
            yield

    routes: list[BaseRoute] = list(api_routes(mem))
    for prefix, sub in (mounts or {}).items():
        # the exact path and everything under it (no redirect from /mcp to /mcp/)
        routes.append(Route(prefix, endpoint=sub, methods=["GET", "POST", "DELETE"]))
        routes.append(Mount(prefix, app=sub))
    routes += _page_routes(mem)
    app = Starlette(
        routes=routes,
        exception_handlers={ChronomemError: on_error, HTTPException: on_error, Exception: on_error},
        # request ids, the body cap and a JSON 500 for whatever escapes a route
        middleware=[Middleware(ErrorGuard)],
        lifespan=lifespan,
    )
    app.state.memory = mem
    if ops is None:
        return AccessGuard(app, token.strip() if token else None, protect_all)
    return ops.outer(AccessGuard(ops.inner(app), token.strip() if token else None, protect_all), mem)
