"""Who a request acts as, and what it may do: the policy behind
:class:`~chronomem.adapters.web.app.AccessGuard` (docs/web.md#tokens).

Three kinds of credential, checked in this order:

* the store's tokens (``chronomem token create``; ``mem.tokens``): once any
  is active (neither revoked nor expired), every request on every bind needs
  one; each names its namespaces and its scope (read < write < admin);
* the legacy ``--token`` / ``$CHRONOMEM_TOKEN`` of ``chronomem serve``: an
  admin principal named ``serve-token`` on the served namespace; alone it
  keeps its old reach (on loopback, API writes and ``/mcp``; elsewhere every
  route) and a wrong value is a 403 as before;
* none: on loopback with no active token, the single-user default (the served
  namespace, no auth).

The principal of an authenticated request is put in the ASGI scope under
:data:`PRINCIPAL` (``.name``, ``.namespaces``, ``.scopes``), for the routes,
the MCP tools and any middleware (access logs, rate limits) to read.
"""

from __future__ import annotations

import hmac

from ...errors import AuthenticationError, ForbiddenError
from ...memory import Memory
from ...tokens import PREFIX, SCOPES, Principal

__all__ = ["LEGACY_NAME", "NAMESPACE", "PRINCIPAL", "Access", "is_mcp", "is_page", "is_token_api", "needed_scope"]

#: the ASGI scope key holding the request's :class:`~chronomem.tokens.Principal` (or None)
PRINCIPAL = "chronomem.principal"
#: the ASGI scope key holding the namespace the request is served from
NAMESPACE = "chronomem.namespace"
#: the principal name of the legacy ``--token``
LEGACY_NAME = "serve-token"


def is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


def is_token_api(path: str) -> bool:
    return path == "/api/tokens" or path.startswith("/api/tokens/")


def is_page(path: str) -> bool:
    """A web page or its ``.json`` twin: anything but the API and MCP."""
    return not (path == "/api" or path.startswith("/api/") or is_mcp(path))


def needed_scope(path: str, method: str) -> str:
    """The scope a request needs, by route and method: token management is
    ``admin``; a GET (HEAD, OPTIONS) or anything under ``/mcp`` ``read`` (each
    MCP tool checks its own: writes need ``write``); any other method
    ``write``. A new route is covered by its method, never left open."""
    if is_token_api(path):
        return "admin"
    if method in ("GET", "HEAD", "OPTIONS") or is_mcp(path):
        return "read"
    return "write"


class Access:
    """The credentials a server accepts: the store's tokens (read through
    ``mem.tokens`` at every request: no cache, so a revoke or an expiry takes
    effect on the next one) and the optional legacy token."""

    def __init__(self, mem: Memory, legacy: str | None = None, *, protect_all: bool = False) -> None:
        self.mem = mem
        self.legacy = legacy
        self.protect_all = protect_all
        self.served = mem.namespace

    def tokens_active(self) -> bool:
        return self.mem.tokens.any_active()

    def needs_token(self, path: str, method: str) -> bool:
        """Whether this request must carry a credential."""
        if self.protect_all or self.tokens_active():
            return True
        if self.legacy is None:
            return False
        return is_mcp(path) or (path.startswith("/api/") and method not in ("GET", "HEAD", "OPTIONS"))

    def principal(self, secret: str) -> Principal:
        """The principal of a presented credential. Unknown, revoked or
        expired store tokens are :class:`AuthenticationError` (401); a wrong
        value where only the legacy token could match is a
        :class:`ForbiddenError` (403), as it always was."""
        secret = secret.strip()
        if self.legacy is not None and hmac.compare_digest(secret.encode("utf-8"), self.legacy.encode("utf-8")):
            return Principal(LEGACY_NAME, (self.served,), SCOPES)
        if self.legacy is not None and not secret.startswith(PREFIX) and not self.tokens_active():
            raise ForbiddenError("the bearer token is wrong")
        return self.mem.tokens.authenticate(secret)

    def namespace(self, principal: Principal | None, asked: str | None) -> str:
        """The namespace a request is served from: ``asked`` (a ``/ns/NAME``
        route, the ``X-Chronomem-Namespace`` header or the page cookie) if the
        principal may use it; else the served namespace if it may, else its
        first. Without a principal only the served namespace is open."""
        if principal is None:
            if asked is not None and asked != self.served:
                raise ForbiddenError(f"without a token this server serves only namespace {self.served!r}, "
                                     f"not {asked!r}")
            return self.served
        if asked is not None:
            principal.require_namespace(asked)
            return asked
        if principal.allows(self.served):
            return self.served
        first = next((ns for ns in principal.namespaces if ns != "*"), None)
        if first is None:  # pragma: no cover - "*" allows the served namespace
            raise ForbiddenError(f"the token {principal.name!r} names no namespace")
        return first


def bearer(header: str) -> str:
    """The token of an ``Authorization`` header; :class:`ForbiddenError` for another scheme."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ForbiddenError("the Authorization header must be 'Bearer <token>'")
    return given.strip()


def refuse_unauthenticated() -> AuthenticationError:
    return AuthenticationError("this server needs a bearer token: send 'Authorization: Bearer <token>'")
