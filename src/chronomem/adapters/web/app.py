"""The ASGI app: the read-only web view (``/``, ``/entity/...``, ``/diff``,
``/conflicts``, ``/search``, ``/episode/...``, each with a ``.json`` twin), the JSON API under ``/api`` and,
optionally, extra mounted apps (MCP at ``/mcp``), behind bearer-token auth
(:class:`AccessGuard`, the policy in :mod:`.auth`); one such app per
namespace a token may use."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, AsyncIterator, Callable, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
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
from ...tokens import Principal
from . import data, evidence, evidence_pages, pages
from .api import api_routes
from .auth import NAMESPACE, PRINCIPAL, Access, bearer, is_page, needed_scope, refuse_unauthenticated
from .errors import ErrorGuard, ForbiddenError, error_response
from .net import is_loopback, parse_authority, same_origin_path
from .ops import Ops

__all__ = ["AccessGuard", "create_app"]

log = logging.getLogger("chronomem.web")

_COOKIE = "chronomem_token"
_NS_COOKIE = "chronomem_namespace"


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
    """Access checks in front of the whole app (credentials, scopes,
    namespaces, Host, Origin); the policy is :class:`~.auth.Access`.

    Credentials: ``Authorization: Bearer <token>`` (the store's tokens, or
    the legacy ``--token``). A browser can authenticate its page GETs once with
    ``?token=...``: the token moves into an HttpOnly cookie and the URL is
    cleaned by a 303 to the same path. The cookie authorizes pages (and their
    ``.json`` twins) only, never ``/api`` or ``/mcp``. Missing or unknown
    token: 401; a scope or namespace the token lacks: 403 (typed JSON errors).

    Namespaces: one app per namespace, built on first use from ``mem.view``
    (MCP included). A request is served from ``/ns/NAME/...`` (the rest of the
    path), the ``X-Chronomem-Namespace`` header, or for pages the cookie a
    visit to ``/ns/NAME/`` sets; each checked against the token, never trusted
    alone. The request runs ``mem.acting_as(token name)``, and the principal is
    in the ASGI scope under ``"chronomem.principal"``.

    The ``Host`` header is parsed strictly (no userinfo); on a loopback bind it
    must name a loopback host and the port this server listens on (defeats DNS
    rebinding), and API writes carrying an ``Origin`` must come from this server
    (defeats cross-site form posts to an unauthenticated local server).
    """

    def __init__(self, app: ASGIApp, access: Access,
                 build: Callable[[str], tuple[ASGIApp, Sequence[Any]]] | None = None) -> None:
        self.app = app
        self.access = access
        self.protect_all = access.protect_all
        self._build = build
        self._apps: dict[str, ASGIApp] = {access.served: app}
        self._lock: anyio.Lock | None = None
        self._tg: Any = None  # the task group the lazily built namespaces' MCP session managers run in

    @property
    def token(self) -> str | None:
        return self.access.legacy

    @contextlib.asynccontextmanager
    async def runner(self) -> AsyncIterator[None]:
        """Entered in the app's lifespan: where namespaces built later start
        their mounted apps' lifespans (MCP's session manager)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def _app_for(self, namespace: str) -> ASGIApp:
        app = self._apps.get(namespace)
        if app is not None:
            return app
        if self._build is None:
            raise ForbiddenError(f"this app serves only namespace {self.access.served!r}")
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if namespace not in self._apps:
                made, lifespans = await run_in_threadpool(self._build, namespace)
                for cm in lifespans:
                    if self._tg is not None:
                        await self._tg.start(_hold, cm)
                self._apps[namespace] = made
        return self._apps[namespace]

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
        if "/api/" in path and method not in ("GET", "HEAD", "OPTIONS"):
            origin = request.headers.get("origin")
            if origin is not None and (not host or urlsplit(origin).netloc != host):
                return ForbiddenError(f"cross-origin writes are refused (Origin {origin!r})")
        return None

    def _login(self, scope: Scope, request: Request, path: str) -> Response:
        """``?token=`` on a page: move it into the cookie and redirect to the same
        path without it (a path on this origin only); with no credential
        needed or given, just drop it from the URL."""
        given = request.query_params.getlist("token")
        if len(given) != 1:
            raise ForbiddenError("give ?token= once")
        secret = given[0].strip()
        keep = bool(secret) and (self.access.legacy is not None or self.access.tokens_active())
        if keep:
            self.access.principal(secret)  # raises on a wrong one
        query = scope.get("query_string", b"").decode("latin-1")
        rest = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"]
        resp = RedirectResponse(same_origin_path(path, urlencode(rest)), status_code=303)
        if keep:
            resp.set_cookie(_COOKIE, secret, httponly=True, samesite="strict")
        return resp

    def _credential(self, request: Request, path: str, method: str) -> str | None:
        header = request.headers.get("authorization", "")
        if header:
            return bearer(header)
        if method in ("GET", "HEAD") and is_page(path) and _COOKIE in request.cookies:
            return request.cookies[_COOKIE]
        return None

    def _authenticate(self, request: Request, path: str, method: str) -> Principal | None:
        """The request's principal: None when it needs none and brings none."""
        secret = self._credential(request, path, method)
        if secret is None:
            if self.access.needs_token(path, method):
                raise refuse_unauthenticated()
            return None
        return self.access.principal(secret)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        full = path = scope.get("path", "")
        method = scope.get("method", "GET")
        request = Request(scope)
        try:
            exc = self._browser_guard(scope, request, full, method)
            if exc is not None:
                raise exc
            asked, path = _split_namespace(full)
            page = method in ("GET", "HEAD") and is_page(path)
            if page and "token" in request.query_params:
                login = await run_in_threadpool(self._login, scope, request, full)
                await login(scope, receive, send)
                return
            principal = await run_in_threadpool(self._authenticate, request, path, method)
            # known from here on: a scope or namespace refusal is logged with the token's name
            scope[PRINCIPAL] = principal
            if principal is not None:
                principal.require(needed_scope(path, method), f"{method} {path}")
            if asked is None:
                asked = request.headers.get("x-chronomem-namespace") or None
            if asked is None and page and _NS_COOKIE in request.cookies:
                asked = request.cookies[_NS_COOKIE] or None
            namespace = self.access.namespace(principal, asked)
            if page and full != path:  # /ns/NAME/page: the page links are absolute, so a cookie keeps NAME
                resp = RedirectResponse(same_origin_path(path, scope.get("query_string", b"").decode("latin-1")),
                                        status_code=303)
                resp.set_cookie(_NS_COOKIE, namespace, httponly=True, samesite="strict")
                await resp(scope, receive, send)
                return
            app = await self._app_for(namespace)
        except ChronomemError as exc:
            log.info("refused %s %s: %s", method, full, exc)
            await error_response(exc, path)(scope, receive, send)  # JSON or a page as the route (not /ns/NAME) says
            return
        # on the caller's scope itself, so a middleware around this guard (access logs, rate
        # limits) reads them too once the request is through
        scope[NAMESPACE] = namespace
        if full != path:
            scope = {**scope, "path": path, "raw_path": path.encode("utf-8")}
        if principal is None:
            await app(scope, receive, send)
            return
        with self.access.mem.acting_as(principal.name):
            await app(scope, receive, send)


async def _hold(cm: Callable[[], contextlib.AbstractAsyncContextManager[Any]], *,
                task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """Run ``cm`` until cancelled (a lazily built namespace's MCP session manager)."""
    async with cm():
        task_status.started()
        await anyio.sleep_forever()


_NS_ROUTE = re.compile(r"/ns/([^/]+)(/.*)?")


def _split_namespace(path: str) -> tuple[str | None, str]:
    """``/ns/NAME/rest`` -> ``(NAME, /rest)``; any other path -> ``(None, path)``."""
    m = _NS_ROUTE.fullmatch(path)
    if m is None:
        return None, path
    return m.group(1), m.group(2) or "/"


Lifespan = Callable[[], contextlib.AbstractAsyncContextManager[Any]]
#: what ``create_app`` mounts in the app of a namespace built on first use: (mounts, their lifespans)
NamespaceMounts = Callable[[Memory], tuple[Mapping[str, ASGIApp], Sequence[Lifespan]]]


def _starlette(mem: Memory, mounts: Mapping[str, ASGIApp], lifespans: Sequence[Lifespan]) -> Starlette:
    """The routes of one namespace: the API, ``mounts`` (MCP) and the pages."""

    async def on_error(request: Request, exc: Exception) -> Response:
        return error_response(exc, request.url.path, scope=request.scope)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for cm in lifespans:
                await stack.enter_async_context(cm())
            yield

    routes: list[BaseRoute] = list(api_routes(mem))
    for prefix, sub in mounts.items():
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
    return app


def create_app(mem: Memory, *, token: str | None = None, protect_all: bool = False,
               mounts: Mapping[str, ASGIApp] | None = None, lifespans: Sequence[Lifespan] = (),
               namespace_mounts: NamespaceMounts | None = None, ops: Ops | None = None) -> ASGIApp:
    """The whole ASGI app, serving ``mem``'s namespace and, for tokens that
    name others, each other namespace through ``mem.view`` (built on first
    use). ``mounts`` maps a path prefix (e.g. ``/mcp``) to another ASGI app;
    ``lifespans`` are entered for the app's life (mounted apps do not get
    lifespan events of their own); ``namespace_mounts(view)`` gives another
    namespace's mounts and their lifespans. ``token`` is the legacy shared
    token (see :mod:`.auth`). ``ops`` adds the health routes and the access
    log around the guard and rate limits inside it, where the principal is
    known (see :mod:`.ops`)."""
    if token is not None and not token.strip():
        raise InvalidInputError("the bearer token must not be empty")
    access = Access(mem, token.strip() if token else None, protect_all=protect_all)

    def build(namespace: str) -> tuple[ASGIApp, Sequence[Lifespan]]:
        view = mem.view(namespace)
        subs, subs_lifespans = namespace_mounts(view) if namespace_mounts is not None else ({}, ())
        routes = _starlette(view, subs, ())
        return (ops.inner(routes) if ops is not None else routes), subs_lifespans

    guard = AccessGuard(None, access, build)  # type: ignore[arg-type]  # the app needs the guard's runner first
    routes = _starlette(mem, mounts or {}, [*lifespans, guard.runner])
    app = ops.inner(routes) if ops is not None else routes
    guard.app = app
    guard._apps[access.served] = app
    return ops.outer(guard, mem) if ops is not None else guard
