"""Error responses for the web view and the API: every error is one JSON
object ``{"error": {"type": ..., "message": ...}}`` (or a small HTML page on
HTML routes) with the status its kind calls for.

:class:`ErrorGuard` wraps every route: it gives every request an id, caps
the request body (413) and turns anything that escapes the app into a JSON
500 ``{"error": {"type": "InternalError", "message": ..., "request_id": ...}}``
whose traceback goes to the ``chronomem.web`` log under that id, never into
the body."""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...core.limits import MAX_JSON_DEPTH
from ...errors import (
    AuthenticationError,
    BodyTooLargeError,
    ChronomemError,
    ConfirmationRequiredError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
    RateLimitedError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)

__all__ = ["MAX_BODY_BYTES", "AuthenticationError", "BodyTooLargeError", "ErrorGuard", "ForbiddenError",
           "RateLimitedError", "error_response", "parse_json_body", "status_for", "wants_json"]

log = logging.getLogger("chronomem.web")

#: the largest request body the server reads (bytes); a larger one is a 413
MAX_BODY_BYTES = 8 * 1024 * 1024
#: where :class:`ErrorGuard` keeps the request id in the ASGI scope
REQUEST_ID = "chronomem.request_id"


#: The status of each kind of error; the first kind that matches wins.
_STATUSES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    (AuthenticationError, 401),
    (ForbiddenError, 403),
    (NotFoundError, 404),
    (BodyTooLargeError, 413),
    (RateLimitedError, 429),
    ((InvalidInputError, ConfirmationRequiredError), 400),
    (ConflictError, 409),
    ((StoreLockedError, StoreUnavailableError), 503),
    (StoreError, 500),
    (ChronomemError, 400),
)


def status_for(exc: BaseException) -> int:
    for kinds, status in _STATUSES:
        if isinstance(exc, kinds):
            return status
    if isinstance(exc, HTTPException):
        return exc.status_code
    return 500


_HTTP_TYPES = {404: "NotFound", 405: "MethodNotAllowed", 400: "BadRequest"}


def error_body(exc: BaseException, request_id: str | None = None) -> dict[str, Any]:
    if isinstance(exc, ChronomemError):
        kind, message = type(exc).__name__, str(exc)
    elif isinstance(exc, HTTPException):
        kind = _HTTP_TYPES.get(exc.status_code, "HTTPError")
        message = str(exc.detail) if exc.detail else kind
        if exc.status_code == 404:
            message = "no such route"
    else:
        where = f" (request id {request_id})" if request_id else ""
        kind, message = "InternalError", f"the server failed to handle this request; see its log{where}"
    out: dict[str, Any] = {"type": kind, "message": message}
    if kind == "InternalError" and request_id:
        out["request_id"] = request_id
    return {"error": out}


def wants_json(path: str) -> bool:
    return path.startswith("/api") or path.endswith(".json") or path.startswith("/mcp")


class SafeJSONResponse(JSONResponse):
    """A JSON response that survives lone surrogates in its content (they
    are sent as ``\\udXXX`` escapes, which JSON readers read back)."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)
        return text.encode("utf-8", "backslashreplace")


def _request_id(scope: Scope | None) -> str | None:
    return scope.get(REQUEST_ID) if scope is not None else None


def error_response(exc: BaseException, path: str, headers: dict[str, str] | None = None,
                   scope: Scope | None = None) -> Response:
    status = status_for(exc)
    rid = _request_id(scope)
    if status >= 500 and not isinstance(exc, ChronomemError):
        log.error("unhandled error on %s (request id %s)", path.encode("utf-8", "backslashreplace").decode(),
                  rid, exc_info=exc)
    elif isinstance(exc, StoreError):
        log.warning("store error on %s (request id %s): %s", path, rid, exc)
    body = error_body(exc, rid)
    hdrs = dict(headers or {})
    if status == 401:
        hdrs.setdefault("WWW-Authenticate", 'Bearer realm="chronomem"')
    if isinstance(exc, RateLimitedError):  # whole seconds until the principal's bucket has a token again
        hdrs.setdefault("Retry-After", str(exc.retry_after))
    if status == 503:  # a lock or the database: the same request may succeed later
        wait = exc.retry_after if isinstance(exc, StoreUnavailableError) else 1
        if wait is not None:
            hdrs.setdefault("Retry-After", str(max(1, math.ceil(wait))))
    if wants_json(path):
        return SafeJSONResponse(body, status_code=status, headers=hdrs)
    from .pages import error_page

    page = error_page(status, body["error"]["type"], body["error"]["message"])
    return HTMLResponse(page.encode("utf-8", "backslashreplace"), status_code=status, headers=hdrs)


def parse_json_body(raw: bytes) -> Any:
    """A request body's JSON value; malformed, non-standard (``NaN``,
    ``Infinity``) or too deeply nested JSON is an :class:`InvalidInputError`."""

    def no_constant(name: str) -> Any:
        raise InvalidInputError(f"the request body is not valid JSON: {name} is not a JSON value")

    try:
        return json.loads(raw, parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:  # nested far past the documented depth: json gives up first
        raise LimitExceededError("the request body", MAX_JSON_DEPTH, unit="levels of nesting") from None


class ErrorGuard:
    """ASGI middleware (the app's outermost, inside Starlette's last-resort
    handler): a request id per request, the body cap and a JSON 500 for any
    exception a route lets escape (answered here, not re-raised, so the
    server sees a finished request)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[REQUEST_ID] = rid = uuid.uuid4().hex[:16]
        path = scope.get("path", "")
        started = False
        too_large = BodyTooLargeError(self.max_body)

        async def answer(exc: BaseException) -> None:
            await error_response(exc, path, scope=scope)(scope, receive, send)

        length = Request(scope).headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await answer(BodyTooLargeError(self.max_body, int(length)))
            return
        seen = 0

        async def capped_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise too_large
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, capped_receive, tracked_send)
        except Exception as exc:
            if started:
                log.debug("error after the response started (request id %s)", rid, exc_info=exc)
                return
            await answer(exc)


def json_dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")
