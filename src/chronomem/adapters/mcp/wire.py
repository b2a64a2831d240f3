"""The JSON-RPC error for a line the MCP transport could not read.

The SDK reads each stdio line with pydantic; a failure reaches the server as
a bare exception and is dropped. :func:`wire_error` turns it into the error
JSON-RPC 2.0 asks for: ``-32700`` (parse error) when the line is not JSON the
SDK reads, ``-32600`` (invalid request) when it is JSON but not a message,
with the request's ``id`` when it can be recovered (else ``null``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

__all__ = ["wire_error"]

#: a top-level ``"id"`` member, for lines Python's json cannot read either
_ID = re.compile(r'^\s*\{(?:[^{}\[\]]*?,)?\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,19})\s*[,}]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _raw_line(exc: Exception) -> tuple[str | None, dict[str, Any] | None]:
    """The line as text (JSON parse failures carry it) or the decoded message
    (schema failures carry it as the input of some error)."""
    if isinstance(exc, ValidationError):
        for err in exc.errors():
            value = err.get("input")
            if err.get("type") == "json_invalid" and isinstance(value, (str, bytes)):
                return value if isinstance(value, str) else value.decode("utf-8", "replace"), None
            if isinstance(value, dict) and "jsonrpc" in value:
                return None, value
    return None, None


def _valid_id(value: Any) -> str | int | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return value


def _id_of(line: str | None, message: dict[str, Any] | None) -> str | int | None:
    if message is not None:
        return _valid_id(message.get("id"))
    if not line:
        return None
    try:
        decoded = json.loads(line)
    except (ValueError, RecursionError):
        match = _ID.match(line)
        return _valid_id(json.loads(match.group(1))) if match else None
    return _valid_id(decoded.get("id")) if isinstance(decoded, dict) else None


def _why(exc: Exception, line: str | None) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        if err.get("type") == "json_invalid":
            why = str((err.get("ctx") or {}).get("error") or err.get("msg"))
            if "recursion limit" in why:
                why += " (the message is nested deeper than the JSON reader allows)"
            elif line is not None and _SURROGATE_ESCAPE.search(line):
                why += " (a lone UTF-16 surrogate escape such as \\ud800 is not valid text)"
            return why
        return "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in exc.errors()[:3])
    return f"{type(exc).__name__}: {exc}"


def wire_error(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error answering the unreadable line behind ``exc``."""
    line, message = _raw_line(exc)
    parse = isinstance(exc, ValidationError) and any(e.get("type") == "json_invalid" for e in exc.errors())
    code = PARSE_ERROR if parse or message is None and line is None and not isinstance(exc, ValidationError) \
        else INVALID_REQUEST
    label = "Parse error" if code == PARSE_ERROR else "Invalid request"
    why = " ".join(_why(exc, line).split())[:500].encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONRPCError(jsonrpc="2.0", id=_id_of(line, message), error=ErrorData(code=code, message=f"{label}: {why}"))
