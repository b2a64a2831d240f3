"""``chronomem serve``: one ASGI app on one port — the read-only web view at
``/``, the JSON API at ``/api`` and (with the ``mcp`` extra) MCP over
streamable HTTP at ``/mcp``.

One process serves every namespace its tokens name (``chronomem token
create``; each request's namespace comes from its token, see
:mod:`.auth`). Binding anything but a loopback address requires a token (an
active one in the store, or ``--token``), and then every route checks it;
on loopback, once the store has an active token every request needs one,
and a legacy ``--token`` alone guards the API writes and ``/mcp``. See
``docs/web.md``.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import socket
import threading
from typing import Any, AsyncContextManager, Callable

from ...errors import ChronomemError, InvalidInputError, MissingExtraError, UnsafeBindError
from ...memory import Memory
from ..mcp.process import warm_in_background
from .net import is_loopback
from .ops import GRACEFUL_SHUTDOWN_S, Ops, thread_limit

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "UnsafeBindError", "build_app", "is_loopback", "bind", "mounted",
           "resolve_token", "routed_app", "run_app", "serve"]

log = logging.getLogger("chronomem.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "CHRONOMEM_TOKEN"


def resolve_token(token: str | None, host: str, env: dict[str, str] | None = None, *,
                  store_tokens: bool = False) -> str | None:
    """The legacy bearer token to enforce: ``token`` or ``$CHRONOMEM_TOKEN``.
    Raises :class:`UnsafeBindError` when ``host`` is not loopback and there is
    none, unless ``store_tokens`` (the store has an active token)."""
    value = token if token is not None else (env if env is not None else os.environ).get(TOKEN_ENV)
    if value is not None and not value.strip():
        value = None
    if value is None and not is_loopback(host) and not store_tokens:
        raise UnsafeBindError(
            f"binding {host} exposes the memory to the network; create a token first (chronomem token create) "
            f"or pass --token (or set {TOKEN_ENV}), so that every request must carry 'Authorization: Bearer <token>'"
        )
    return value.strip() if value is not None else None


def _is_store_token(mem: Memory, token: str) -> bool:
    """Whether ``token`` is a live token of the store."""
    try:
        mem.tokens.authenticate(token)
    except ChronomemError:
        return False
    return True


def _mcp_allowed_hosts(host: str) -> list[str]:
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    if is_loopback(host):
        return hosts
    if host in ("0.0.0.0", "::", ""):
        names = {socket.gethostname()}
        with contextlib.suppress(OSError):
            names |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
        extra = sorted(names)
    else:
        extra = [host]
    return hosts + [f"[{h}]:*" if ":" in h else f"{h}:*" for h in extra]


def _mcp_app(mem: Memory, host: str) -> Any | None:
    """The MCP streamable-HTTP app, or None when the mcp extra is missing."""
    try:
        module = importlib.import_module("chronomem.adapters.mcp.server")
    except ImportError as exc:
        log.info("no MCP endpoint: %s", exc)
        return None
    build = getattr(module, "build_http_app", None)
    if build is None:
        return None
    return build(mem, allowed_hosts=_mcp_allowed_hosts(host))


def build_app(mem: Memory, *, host: str = DEFAULT_HOST, token: str | None = None, mcp: bool = True,
              ops: Ops | None = None, threads: int | None = None) -> Any:
    """The ASGI app ``chronomem serve`` runs: ``mem``'s namespace, and every
    other namespace a token names (built on first use from ``mem.view``, MCP
    included). ``token`` (the legacy one) must already be resolved (see
    :func:`resolve_token`); a non-loopback ``host`` protects every route and
    needs it or an active token in the store. ``ops``: health routes, access
    log, rate limits (default :class:`~.ops.Ops`: health and the log, no rate
    limit); ``threads``: how many requests run on worker threads at once
    (default: anyio's 40; ``chronomem serve`` on PostgreSQL passes the pool
    size)."""
    if token is None and not is_loopback(host) and not mem.tokens.any_active():
        raise UnsafeBindError(f"binding {host} needs a bearer token: create one (chronomem token create) "
                              "or pass --token")
    if token is not None and _is_store_token(mem, token):
        # an agent's own token left in the server's environment would turn every
        # request carrying it into the legacy admin on the served namespace
        raise UnsafeBindError(f"the legacy --token / {TOKEN_ENV} value is one of the store's tokens: serve would "
                              "treat it as the shared admin token; unset it (agents keep theirs elsewhere)")
    try:
        from . import create_app
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] == "starlette":
            raise MissingExtraError("starlette", "web") from None
        raise

    def namespace_mounts(view: Memory) -> tuple[dict[str, Any], list[Callable[[], AsyncContextManager[Any]]]]:
        """One MCP server per namespace: its tools are bound to that view."""
        sub = _mcp_app(view, host) if mcp else None
        return ({"/mcp": sub}, [sub.lifespan]) if sub is not None else ({}, [])

    mounts, lifespans = namespace_mounts(mem)
    if threads is not None:
        lifespans.insert(0, thread_limit(threads))
    return create_app(mem, token=token, protect_all=not is_loopback(host), mounts=mounts, lifespans=lifespans,
                      namespace_mounts=namespace_mounts, ops=ops if ops is not None else Ops())


def routed_app(app: Any) -> Any:
    """The Starlette app (the one with the routes) of the served namespace
    inside the middleware layers of an app :func:`build_app` made (each layer
    keeps its inner app as ``.app``)."""
    for _ in range(16):
        if app is None or getattr(app, "routes", None) is not None:
            return app
        app = getattr(app, "app", None)
    return None


def mounted(app: Any, path: str) -> bool:
    """Whether the app :func:`build_app` made routes ``path`` (e.g. ``/mcp``)."""
    inner = routed_app(app)
    return inner is not None and any(getattr(r, "path", None) == path for r in inner.routes)


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port). Raises
    :class:`InvalidInputError` with one sentence when it cannot listen."""
    if not 0 <= port <= 65535:
        raise InvalidInputError(f"port must be between 0 and 65535, not {port}")
    try:
        family, kind, proto, _name, addr = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def run_app(app: Any, sock: socket.socket, *, log_level: str = "warning",
            graceful: int = GRACEFUL_SHUTDOWN_S) -> None:
    """Serve an ASGI app with uvicorn on a bound socket until SIGTERM or
    SIGINT (Ctrl-C), then shut down gracefully: stop accepting, let the
    requests in flight finish for up to ``graceful`` seconds (then cancel
    them), run the app's lifespan shutdown, and return normally (the caller
    then closes the store; the process exits 0). A second Ctrl-C forces it."""
    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "web") from None
    host, port = sock.getsockname()[:2]
    # access_log off: the app writes its own (chronomem.access, see .ops)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on", server_header=False,
                            access_log=False, timeout_graceful_shutdown=graceful)
    server = uvicorn.Server(config)

    def stop(_sig: int, _frame: Any) -> None:
        # before uvicorn's own handlers are in place, and after: uvicorn
        # re-raises the signal it handled once it is done, which must not
        # kill the process (-15) or raise KeyboardInterrupt past the cleanup
        server.should_exit = True

    handlers: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, stop)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        for sig, old in handlers.items():
            signal.signal(sig, old)


def serve(mem: Memory, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
          mcp: bool = True, log_level: str = "warning", ops: Ops | None = None) -> None:
    """Build the app for ``mem`` and run it until SIGTERM or Ctrl-C."""
    app = build_app(mem, host=host, token=resolve_token(token, host), mcp=mcp, ops=ops)
    warm_in_background(mem)
    run_app(app, bind(host, port), log_level=log_level)
