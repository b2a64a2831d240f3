"""Running ``chronomem serve`` for a team: health routes, the access log and
per-principal rate limits, as ASGI middleware around the app (docs/team.md).

The layers, outermost first (:func:`wrap`)::

    AccessLog -> Health -> AccessGuard (auth) -> RateLimit -> the app

* :class:`AccessLog` writes one line per request to the ``chronomem.access``
  logger, after the response: it sees every status, refusals included, and
  the principal the auth layer put in the scope.
* :class:`Health` answers ``/healthz`` and ``/readyz`` before auth: a load
  balancer has no token, and the answers say nothing but up / ready.
* :class:`RateLimit` runs after auth, so its key is the authenticated
  principal (a forged token cannot drain someone else's bucket).

The auth layer puts the principal (an object with ``.name``, ``.namespaces``,
``.scopes``) in the ASGI scope under :data:`PRINCIPAL`; without one (the
single-user loopback mode, or one shared ``--token``) the log says
``anonymous`` and rate limits key on the client address.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import math
import re
import sys
import threading
import time
from collections import OrderedDict
from typing import Any, AsyncIterator, Callable

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import ChronomemError, InvalidInputError, RateLimitedError, StoreUnavailableError
from ...memory import Memory
from .auth import NAMESPACE, PRINCIPAL
from .errors import REQUEST_ID, SafeJSONResponse, error_response

__all__ = ["ACCESS_LOGGER", "Ops", "DEFAULT_BUCKETS", "GRACEFUL_SHUTDOWN_S", "HEALTH_PATHS", "PRINCIPAL",
           "READY_TIMEOUT_S", "AccessLog", "Health", "RateLimit", "RateLimiter", "configure_access_log",
           "parse_rate", "principal_name", "thread_limit"]

#: the logger of the access log (one line per request, at INFO)
ACCESS_LOGGER = "chronomem.access"
HEALTH_PATHS = ("/healthz", "/readyz")
#: how long ``/readyz`` waits for the store's trivial read
READY_TIMEOUT_S = 2.0
#: how long a stopping server lets requests in flight finish (uvicorn's
#: ``timeout_graceful_shutdown``); then they are cancelled and the store closed
GRACEFUL_SHUTDOWN_S = 10
#: the most rate-limit buckets kept (least recently used dropped first)
DEFAULT_BUCKETS = 10_000

access_log = logging.getLogger(ACCESS_LOGGER)
log = logging.getLogger("chronomem.web")


def principal_name(scope: Scope) -> str | None:
    """The authenticated principal's name, or None (anonymous)."""
    principal = scope.get(PRINCIPAL)
    name = getattr(principal, "name", None) if principal is not None else None
    return str(name) if name else None


def _namespaces(scope: Scope, default: str) -> str:
    """The namespace the request was served from (the guard sets it), else,
    for a request refused before one was chosen, the principal's."""
    served = scope.get(NAMESPACE)
    if served:
        return str(served)
    principal = scope.get(PRINCIPAL)
    names = getattr(principal, "namespaces", None) if principal is not None else None
    if names:
        return ",".join(sorted(str(n) for n in names))
    return default


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "-"


# -- health -----------------------------------------------------------------

class Health:
    """``GET /healthz``: 200 ``{"status": "ok"}`` while the process serves,
    touching nothing. ``GET /readyz``: 200 ``{"status": "ready"}`` when the
    store answers a trivial read within ``timeout`` seconds, else 503 with a
    typed JSON error and ``Retry-After``. Neither needs a token; neither names
    the database, a namespace or a count."""

    def __init__(self, app: ASGIApp, mem: Memory, *, timeout: float = READY_TIMEOUT_S) -> None:
        self.app = app
        self.mem = mem
        self.timeout = timeout
        # probes run on threads of their own (not the request threads, which
        # may all be busy under load): at most two at once, a third is "not ready"
        self._probes = anyio.CapacityLimiter(2)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path not in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            exc = InvalidInputError(f"{path} answers GET and HEAD only")
            await error_response(exc, "/api" + path, headers={"Allow": "GET, HEAD"}, scope=scope)(
                scope, receive, send)
            return
        if path == "/healthz":
            await _no_store(SafeJSONResponse({"status": "ok"}))(scope, receive, send)
            return
        problem = await self._probe()
        if problem is None:
            await _no_store(SafeJSONResponse({"status": "ready"}))(scope, receive, send)
            return
        await _no_store(error_response(problem, "/api" + path, scope=scope))(scope, receive, send)

    async def _probe(self) -> ChronomemError | None:
        """None when the store answered in time, else the error to answer
        (a fixed message: the driver's may name hosts and users)."""
        if self._probes.available_tokens < 1:
            return StoreUnavailableError("the store is not answering; earlier probes are still waiting",
                                         retry_after=self.timeout)
        store = self.mem.store
        try:
            with anyio.fail_after(self.timeout):
                await anyio.to_thread.run_sync(store.schema_version, limiter=self._probes,
                                               abandon_on_cancel=True)
        except TimeoutError:
            log.warning("readyz: the store did not answer within %g s", self.timeout)
            return StoreUnavailableError(f"the store did not answer within {self.timeout:g} s",
                                         retry_after=self.timeout)
        except Exception as exc:  # noqa: BLE001 - whatever the store raised, it is not ready
            # (a closed SQLite store raises the driver's own error here)
            log.warning("readyz: the store is not ready: %s", exc)
            wait = exc.retry_after if isinstance(exc, StoreUnavailableError) and exc.retry_after else 1.0
            return StoreUnavailableError("the store is not answering; retry later", retry_after=wait)
        return None


def _no_store(resp: Any) -> Any:
    resp.headers["Cache-Control"] = "no-store"
    return resp


# -- access log ---------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_.:/@+,*-]+")


def _logfmt_value(value: object) -> str:
    text = str(value)
    return text if _BARE.fullmatch(text) else json.dumps(text, ensure_ascii=True)


class AccessLog:
    """One line per HTTP request on the ``chronomem.access`` logger (INFO;
    health probes at DEBUG): ``time``, ``method``, ``path`` (never the query
    string, which may carry ``?token=`` or a search), ``status``, ``ms``,
    ``bytes`` (the response body), ``principal`` (the token's name, never the
    token), ``ns`` (the principal's namespaces, else the server's),
    ``client`` and ``rid`` (the request id a 500 names). ``fmt``: ``"text"``
    (key=value, values with spaces or quotes JSON-quoted) or ``"json"`` (one
    object per line)."""

    def __init__(self, app: ASGIApp, *, namespace: str, fmt: str = "text",
                 logger: logging.Logger = access_log) -> None:
        if fmt not in ("text", "json"):
            raise InvalidInputError(f"log format must be 'text' or 'json', not {fmt!r}")
        self.app = app
        self.namespace = namespace
        self.fmt = fmt
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0
        sent = 0

        async def counting_send(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            # status 0: the client went away (or the server cancelled the
            # request at shutdown) before a response started
            self._write(scope, status, sent, (time.perf_counter() - started) * 1000.0)

    def _write(self, scope: Scope, status: int, sent: int, ms: float) -> None:
        path = scope.get("path", "")
        level = logging.DEBUG if path in HEALTH_PATHS else logging.INFO
        if not self.logger.isEnabledFor(level):
            return
        fields: dict[str, Any] = {
            "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "method": scope.get("method", ""),
            "path": path,
            "status": status,
            "ms": round(ms, 1),
            "bytes": sent,
            "principal": principal_name(scope) or "anonymous",
            "ns": _namespaces(scope, self.namespace),
            "client": _client(scope),
            "rid": scope.get(REQUEST_ID) or "-",
        }
        if self.fmt == "json":
            line = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
        else:
            line = " ".join(f"{k}={_logfmt_value(v)}" for k, v in fields.items())
        self.logger.log(level, line)


class _LineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The access log's handler: the bare line, to whatever ``sys.stderr``
    is at the time of the record."""

    def emit(self, record: logging.LogRecord) -> None:
        self.setStream(sys.stderr)
        super().emit(record)


def configure_access_log(enabled: bool = True) -> None:
    """Send ``chronomem.access`` lines, bare, to stderr at INFO (or turn them
    off); they do not also go through the ``chronomem`` logger's
    ``LEVEL name:`` format."""
    logger = logging.getLogger(ACCESS_LOGGER)
    logger.propagate = False
    for handler in list(logger.handlers):
        if isinstance(handler, _LineHandler):
            logger.removeHandler(handler)
    if enabled:
        handler = _LineHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
    else:
        logger.setLevel(logging.CRITICAL + 1)


# -- rate limits --------------------------------------------------------------

_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*")
_PER = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0, "h": 3600.0,
        "hour": 3600.0}


def parse_rate(text: str, field: str = "rate_limit") -> float:
    """Requests per second from ``"20/s"``, ``"600/min"`` or ``"5000/h"``."""
    m = _RATE.fullmatch(text or "")
    if not m or float(m.group(1)) <= 0:
        raise InvalidInputError(f"{field} must look like 20/s, 600/min or 5000/h (a number above 0), "
                                f"not {text!r}")
    return float(m.group(1)) / _PER[m.group(2)]


class RateLimiter:
    """Token buckets, one per key: ``rate`` tokens a second up to ``burst``.
    Thread-safe (one lock); at most ``max_buckets`` kept, the least recently
    used dropped first (a dropped bucket comes back full)."""

    def __init__(self, rate: float, burst: int, *, max_buckets: int = DEFAULT_BUCKETS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise InvalidInputError(f"rate_limit must be above 0 requests a second, not {rate!r}")
        if burst < 1:
            raise InvalidInputError(f"burst must be at least 1 request, not {burst!r}")
        if max_buckets < 1:
            raise InvalidInputError(f"max_buckets must be at least 1, not {max_buckets!r}")
        self.rate = float(rate)
        self.burst = int(burst)
        self.max_buckets = max_buckets
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when it had one, else the seconds
        until it will."""
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens, now)  # most recently used last
            while len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
            return wait

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)

    def describe(self) -> str:
        per = f"{self.rate:g}/s" if self.rate >= 1 else f"{self.rate * 60:g}/min"
        return f"{per}, burst {self.burst}"


class RateLimit:
    """429 + ``Retry-After`` (whole seconds, at least 1) + a typed
    ``RateLimitedError`` body for a principal over its rate. The key is the
    principal's name, else ``addr:<client address>``. Every HTTP request
    counts, MCP's included (a tool call is one POST)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = principal_name(scope)
        wait = self.limiter.take(name if name is not None else "addr:" + _client(scope))
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        who = repr(name) if name is not None else "this client"
        exc = RateLimitedError(f"too many requests for {who}: the limit is {self.limiter.describe()}; "
                               f"retry after the Retry-After seconds", retry_after=math.ceil(wait))
        await error_response(exc, scope.get("path", ""), scope=scope)(scope, receive, send)


# -- assembly -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Ops:
    """What :func:`chronomem.adapters.web.create_app` wraps around the app:
    health routes (always), the access log (``log_format``; the
    ``chronomem.access`` logger's level decides what is written) and, with a
    ``limiter``, rate limits."""

    log_format: str = "text"
    limiter: RateLimiter | None = None
    ready_timeout: float = READY_TIMEOUT_S

    def inner(self, app: ASGIApp) -> ASGIApp:
        """The layers inside auth (they need the principal)."""
        return RateLimit(app, self.limiter) if self.limiter is not None else app

    def outer(self, guard: ASGIApp, mem: Memory) -> ASGIApp:
        """The layers outside auth (they answer or watch every request)."""
        return AccessLog(Health(guard, mem, timeout=self.ready_timeout), namespace=mem.namespace,
                         fmt=self.log_format)


# -- threads ------------------------------------------------------------------

def thread_limit(threads: int) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """A lifespan that sets how many worker threads serve requests at once
    (starlette's ``run_in_threadpool`` and MCP's tools share anyio's default
    limiter, 40 unless set). ``chronomem serve`` on PostgreSQL sets it to the
    pool size, so a worker never waits for a connection; requests beyond it
    wait in the event loop."""
    if threads < 1:
        raise InvalidInputError(f"threads must be at least 1, not {threads}")

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        limiter = anyio.to_thread.current_default_thread_limiter()
        before = limiter.total_tokens
        limiter.total_tokens = threads
        try:
            yield
        finally:
            limiter.total_tokens = before

    return lifespan
