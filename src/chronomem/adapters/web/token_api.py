"""``/api/tokens``: managing the store's access tokens over the API, for a
request whose token has the ``admin`` scope (the guard checks the scope; here
each token is checked against the namespaces the admin token may use: an
admin of namespace A neither sees nor makes nor revokes a token of B)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...errors import AuthenticationError, ForbiddenError, InvalidInputError
from ...memory import Memory
from ...tokens import Principal
from .auth import PRINCIPAL
from .errors import parse_json_body

__all__ = ["token_routes"]

_CREATE_FIELDS = frozenset({"name", "namespace", "namespaces", "scope", "expires"})


def _admin(request: Request) -> Principal:
    principal = request.scope.get(PRINCIPAL)
    if not isinstance(principal, Principal):
        raise AuthenticationError("managing tokens over the API needs a token with the admin scope "
                                  "(the first one: chronomem token create --scope admin)")
    principal.require("admin", f"{request.method} {request.url.path}")
    return principal


def _namespaces(body: dict[str, Any]) -> list[str]:
    if "namespace" in body and "namespaces" in body:
        raise InvalidInputError("pass namespace or namespaces, not both")
    value = body.get("namespaces", body.get("namespace"))
    if value is None:
        raise InvalidInputError("a token needs 'namespace' (or 'namespaces')")
    given = [value] if isinstance(value, str) else value
    if not isinstance(given, list) or not given or not all(isinstance(ns, str) for ns in given):
        raise InvalidInputError(f"namespaces must be a namespace name or a list of them, not {value!r}")
    return given


def token_routes(mem: Memory) -> list[Route]:
    """The ``/api/tokens`` routes (store-wide: ``mem.tokens``)."""

    async def list_tokens(request: Request) -> Response:
        admin = _admin(request)
        items = await run_in_threadpool(mem.tokens.list)
        return JSONResponse({"tokens": [t.to_dict() for t in items if admin.manages(t.namespaces)]})

    async def create_token(request: Request) -> Response:
        admin = _admin(request)
        raw = await request.body()
        body = parse_json_body(raw) if raw.strip() else {}
        if not isinstance(body, dict):
            raise InvalidInputError("the request body must be a JSON object")
        unknown = set(body) - _CREATE_FIELDS
        if unknown:
            raise InvalidInputError(f"POST /api/tokens does not take field(s): {', '.join(sorted(unknown))}")
        namespaces = _namespaces(body)
        if not admin.manages(namespaces):
            raise ForbiddenError(f"the token {admin.name!r} may not make a token for {', '.join(namespaces)} "
                                 f"(it manages: {', '.join(admin.namespaces)})")
        created = await run_in_threadpool(lambda: mem.tokens.create(
            body.get("name"), namespaces, body.get("scope", "read"), expires=body.get("expires")))  # type: ignore[arg-type]
        return JSONResponse(created.to_dict(), status_code=201)

    async def revoke_token(request: Request) -> Response:
        admin = _admin(request)
        name = request.path_params["name"]

        def run() -> dict[str, Any]:
            info = mem.tokens.get(name)
            if not admin.manages(info.namespaces):
                raise ForbiddenError(f"the token {admin.name!r} may not revoke {name!r}")
            return {"token": mem.tokens.revoke(name).to_dict()}

        return JSONResponse(await run_in_threadpool(run))

    return [
        Route("/api/tokens", list_tokens, methods=["GET"]),
        Route("/api/tokens", create_token, methods=["POST"]),
        Route("/api/tokens/{name}/revoke", revoke_token, methods=["POST"]),
    ]
