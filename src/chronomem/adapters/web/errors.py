"""Error responses for the web view and the API: every error is one JSON
object ``{"error": {"type": ..., "message": ...}}`` (or a small HTML page on
HTML routes) with the status its kind calls for."""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, JSONResponse, Response

from ...errors import (
    AuthenticationError,
    ChronomemError,
    ConfirmationRequiredError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    StoreError,
    StoreLockedError,
)

__all__ = ["AuthenticationError", "ForbiddenError", "error_response", "status_for", "wants_json"]

log = logging.getLogger("chronomem.web")


#: The status of each kind of error; the first kind that matches wins.
_STATUSES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    (AuthenticationError, 401),
    (ForbiddenError, 403),
    (NotFoundError, 404),
    ((InvalidInputError, ConfirmationRequiredError), 400),
    (ConflictError, 409),
    (StoreLockedError, 503),
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


def error_body(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ChronomemError):
        kind, message = type(exc).__name__, str(exc)
    elif isinstance(exc, HTTPException):
        kind = _HTTP_TYPES.get(exc.status_code, "HTTPError")
        message = str(exc.detail) if exc.detail else kind
        if exc.status_code == 404:
            message = "no such route"
    else:
        kind, message = "InternalError", "the server failed to handle this request; see its log"
    return {"error": {"type": kind, "message": message}}


def wants_json(path: str) -> bool:
    return path.startswith("/api") or path.endswith(".json") or path.startswith("/mcp")


def error_response(exc: BaseException, path: str, headers: dict[str, str] | None = None) -> Response:
    status = status_for(exc)
    if status >= 500 and not isinstance(exc, ChronomemError):
        log.error("unhandled error on %s", path, exc_info=exc)
    body = error_body(exc)
    hdrs = dict(headers or {})
    if status == 401:
        hdrs.setdefault("WWW-Authenticate", 'Bearer realm="chronomem"')
    if wants_json(path):
        return JSONResponse(body, status_code=status, headers=hdrs)
    from .pages import error_page

    return HTMLResponse(error_page(status, body["error"]["type"], body["error"]["message"]), status_code=status,
                        headers=hdrs)


def json_dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
