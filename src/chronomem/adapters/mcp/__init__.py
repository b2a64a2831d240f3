"""MCP server for chronomem: tools, resources and transports.

Needs the ``mcp`` extra (``pip install 'chronomem[mcp]'``).

- :func:`build_server` -- an ``MCPServer`` bound to one :class:`~chronomem.Memory`: the fact tools
  (:mod:`.fact_tools`) and the evidence tools ``remember``, ``recall``, ``search`` (:mod:`.evidence_tools`)
- :func:`run_stdio` -- serve over stdio (``chronomem mcp``)
- :func:`build_http_app` -- streamable-HTTP ASGI app for ``chronomem serve`` (mount at ``/mcp``)
- :func:`resolve_time` -- ISO dates and relative phrases ("yesterday", "last March")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ...core.phrases import ResolvedTime, resolve_time
from ...errors import MissingExtraError

if TYPE_CHECKING:
    from ...memory import Memory
    from .server import ChronomemMCP, McpHttpApp

__all__ = ["INSTRUCTIONS", "ResolvedTime", "build_http_app", "build_server", "resolve_time", "run_stdio"]


def _server_module() -> Any:
    try:
        from . import server
    except ImportError as exc:  # pragma: no cover - depends on the environment
        if exc.name and exc.name.split(".")[0] in ("mcp", "starlette", "anyio", "pydantic"):
            raise MissingExtraError("mcp", "mcp") from None
        raise
    return server


def build_server(mem: "Memory") -> "ChronomemMCP":
    """An MCP server exposing ``mem``; see :mod:`chronomem.adapters.mcp.server`."""
    server: ChronomemMCP = _server_module().build_server(mem)
    return server


def build_http_app(mem: "Memory", *, allowed_hosts: "Sequence[str] | None" = None,
                   allowed_origins: "Sequence[str] | None" = None) -> "McpHttpApp":
    """Streamable-HTTP ASGI app serving ``mem``. Mount it at ``/mcp`` and run
    ``async with app.lifespan(): ...`` in the parent's lifespan (the SDK's
    session manager must be running); see :class:`chronomem.adapters.mcp.server.McpHttpApp`.

    DNS-rebinding protection accepts Host ``127.0.0.1:*``, ``localhost:*`` and
    ``[::1]:*`` unless ``allowed_hosts`` (``"host:port"``, ``*`` = any port) is
    given, e.g. ``[f"{host}:*"]`` when binding another interface."""
    app: McpHttpApp = _server_module().build_http_app(mem, allowed_hosts=allowed_hosts,
                                                      allowed_origins=allowed_origins)
    return app


def run_stdio(mem: "Memory") -> None:
    """Serve ``mem`` over stdio until stdin closes (stdout carries only JSON-RPC)."""
    _server_module().run_stdio(mem)


def __getattr__(name: str) -> Any:
    if name == "INSTRUCTIONS":
        return _server_module().INSTRUCTIONS
    raise AttributeError(name)
