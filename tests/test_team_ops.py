"""Serving a team (docs/team.md): /healthz and /readyz, the access log,
per-principal rate limits, the PostgreSQL pool size, and graceful shutdown of
a real ``chronomem serve`` process on SIGTERM."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import chronomem
from chronomem import InvalidInputError, Memory, StoreError
from chronomem.adapters.web.ops import (
    ACCESS_LOGGER,
    AccessLog,
    Ops,
    RateLimiter,
    parse_rate,
)
from chronomem.adapters.web.server import build_app
from chronomem.errors import RateLimitedError
from chronomem.store import SERVE_POOL_SIZE, server_pool
from conftest import pg_schema_url
from test_web_support import Client, err

_SCRIPT = Path(sys.executable).with_name("chronomem")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


@dataclasses.dataclass(frozen=True)
class Principal:
    """What the auth layer leaves in the scope (name, namespaces, scopes)."""

    name: str
    namespaces: tuple[str, ...]
    scopes: tuple[str, ...] = ("read", "write")


class Authed(Client):
    """A client sending one token's headers on every request."""

    def __init__(self, app: Any, headers: dict[str, str]) -> None:
        super().__init__(app)
        self.headers = headers

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return super().request(method, url, headers=headers, **kwargs)


def bearer(mem: Memory, name: str, namespace: str, scope: str = "write") -> dict[str, str]:
    """A real store token for ``name`` on ``namespace``, as request headers."""
    return {"Authorization": f"Bearer {mem.tokens.create(name, namespace, scope).token}"}


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = chronomem.open(str(tmp_path / "team.db"), namespace="secret-team")
    m.add_fact("Acme", "ceo", "Alice")
    yield m
    m.close()


# -- health ---------------------------------------------------------------
def test_health_routes_answer_without_a_token_and_reveal_nothing(mem: Memory) -> None:
    c = Client(build_app(mem, host="0.0.0.0", token="s3cret"), base_url="http://10.0.0.5:8765")
    err(c.get("/api/facts"), 401, "AuthenticationError")  # every other route needs the token
    health = c.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    ready = c.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert ready.headers["cache-control"] == "no-store"
    for r in (health, ready):
        assert "secret-team" not in r.text and "team.db" not in r.text
    assert c.request("HEAD", "/readyz").status_code == 200
    err(c.post("/readyz"), 400, "InvalidInputError")


def test_readyz_is_503_with_retry_after_when_the_store_is_gone(tmp_path: Path) -> None:
    m = chronomem.open(str(tmp_path / "gone.db"))
    c = Client(build_app(m))
    assert c.get("/readyz").status_code == 200
    m.close()  # the store refuses every read now
    body = err(c.get("/readyz"), 503, "StoreUnavailableError")
    assert "gone.db" not in body["message"]
    r = c.get("/readyz")
    assert int(r.headers["retry-after"]) >= 1
    assert c.get("/healthz").status_code == 200  # alive, not ready


def test_readyz_times_out_when_every_connection_is_taken(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("psycopg")
    url = pg_schema_url(request) + "&pool_size=1"
    m = chronomem.open(url)
    try:
        pool = m.store._pool  # type: ignore[attr-defined]
        assert pool.max_size == 1
        c = Client(build_app(m, ops=Ops(ready_timeout=0.5)))
        assert c.get("/readyz").status_code == 200
        held = pool.getconn()  # the one connection, busy elsewhere
        try:
            started = time.monotonic()
            body = err(c.get("/readyz"), 503, "StoreUnavailableError")
            assert time.monotonic() - started < 3.0, "readyz waited for the pool, not its own timeout"
            assert "0.5 s" in body["message"]
        finally:
            pool.putconn(held)
        deadline = time.monotonic() + 5
        while c.get("/readyz").status_code != 200:  # the abandoned probe gives its slot back
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        m.close()


# -- access log -----------------------------------------------------------
def test_access_log_names_the_principal_never_the_token(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    headers = bearer(mem, "alice", "team-a")  # a store token: the guard puts its principal in the scope
    secret = headers["Authorization"].split()[1]
    app = build_app(mem, ops=Ops(log_format="json"))
    c = Client(app)
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    r = c.post(f"/api/facts?token={secret}", json={"subject": "Acme", "predicate": "cto", "object": "Bob"},
               headers=headers)
    assert r.status_code == 201, r.text
    c.get("/api/facts", params={"subject": "Acme", "q": secret}, headers=headers)
    c.get("/healthz")  # probes log at DEBUG only
    lines = [rec.getMessage() for rec in caplog.records if rec.name == ACCESS_LOGGER]
    assert len(lines) == 2, lines
    assert all(secret not in line and "Bearer" not in line for line in lines)
    assert [f.recorded_by for f in mem.view("team-a").facts("Acme")] == ["alice"]  # written as the token's name
    first = json.loads(lines[0])
    assert set(first) == {"time", "method", "path", "status", "ms", "bytes", "principal", "ns", "client", "rid"}
    assert (first["method"], first["path"], first["status"], first["principal"], first["ns"]) == (
        "POST", "/api/facts", 201, "alice", "team-a")
    assert first["bytes"] == len(r.content) and first["ms"] >= 0 and first["time"].endswith("Z")


def test_access_log_text_format_and_anonymous(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    c = Client(build_app(mem, token="tok"))
    err(c.post("/api/facts", json={}), 401, "AuthenticationError")  # refusals are logged too
    c.get("/entity/Acme Corp")
    lines = [rec.getMessage() for rec in caplog.records if rec.name == ACCESS_LOGGER]
    assert lines[0].startswith("time=") and " method=POST path=/api/facts status=401 " in lines[0]
    assert "principal=anonymous ns=secret-team client=127.0.0.1" in lines[0]
    assert ' path="/entity/Acme Corp" status=404 ' in lines[1]  # a value with a space is JSON-quoted


def test_access_log_names_the_token_of_a_refused_request(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    """A token refused for its scope or namespace (403) is still named: who
    tried is what the operator needs to know."""
    reader = bearer(mem, "rita", "team-a", "read")
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    c = Client(build_app(mem))
    err(c.post("/api/facts", json={"subject": "A", "predicate": "b", "object": "C"}, headers=reader), 403,
        "ForbiddenError")
    err(c.get("/ns/secret-team/api/facts", headers=reader), 403, "ForbiddenError")
    err(c.get("/api/facts", headers={"Authorization": "Bearer cm_" + "Z" * 43}), 401, "AuthenticationError")
    lines = [rec.getMessage() for rec in caplog.records if rec.name == ACCESS_LOGGER]
    assert [line.split(" principal=")[1].split(" client=")[0] for line in lines] == [
        "rita ns=team-a", "rita ns=team-a", "anonymous ns=secret-team"], lines
    assert mem.view("team-a").facts() == []


def test_access_log_names_the_namespace_the_request_was_served_from(mem: Memory,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    both = {"Authorization": f"Bearer {mem.tokens.create('olga', ['team-a', 'team-b'], 'read').token}"}
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    c = Client(build_app(mem))
    assert c.get("/ns/team-b/api/facts", headers=both).status_code == 200
    assert c.get("/api/facts", headers={**both, "X-Chronomem-Namespace": "team-a"}).status_code == 200
    lines = [rec.getMessage() for rec in caplog.records if rec.name == ACCESS_LOGGER]
    assert [line.split(" ns=")[1].split(" ")[0] for line in lines] == ["team-b", "team-a"], lines


def test_access_log_rejects_an_unknown_format(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="log format"):
        AccessLog(build_app(mem), namespace="x", fmt="xml")


# -- rate limits ----------------------------------------------------------
class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_refills_at_its_rate_and_caps_its_buckets() -> None:
    t = Ticks()
    rl = RateLimiter(2.0, 3, max_buckets=2, clock=t)
    assert [rl.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rl.take("a") == pytest.approx(0.5)  # 1 token at 2/s
    t.now += 0.5
    assert rl.take("a") == 0.0 and rl.take("a") > 0
    assert rl.take("b") == 0.0  # another principal has its own bucket
    rl.take("c")
    assert len(rl) == 2  # "a" (least recently used) was dropped: it comes back full
    assert [rl.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert parse_rate("20/s") == 20 and parse_rate("600/min") == 10 and parse_rate(" 7200 / h ") == 2
    for bad in ("20", "0/s", "-1/s", "fast", "20/d"):
        with pytest.raises(InvalidInputError, match="--rate-limit"):
            parse_rate(bad, "--rate-limit")
    with pytest.raises(InvalidInputError, match="burst"):
        RateLimiter(1.0, 0)


def test_token_bucket_is_thread_safe() -> None:
    rl = RateLimiter(0.001, 50)  # no refill to speak of during the test
    granted = []
    lock = threading.Lock()

    def worker() -> None:
        mine = sum(1 for _ in range(40) if rl.take("shared") == 0.0)
        with lock:
            granted.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sum(granted) == 50  # exactly the burst, never more


def test_rate_limit_is_per_principal_with_429_and_retry_after(mem: Memory) -> None:
    a, b = bearer(mem, "alice", "default", "read"), bearer(mem, "bob", "default", "read")
    app = build_app(mem, ops=Ops(limiter=RateLimiter(0.5, 2)))
    alice, bob = Authed(app, a), Authed(app, b)
    assert [alice.get("/api/facts").status_code for _ in range(2)] == [200, 200]
    r = alice.get("/api/facts")
    body = err(r, 429, "RateLimitedError")
    assert "'alice'" in body["message"] and "30/min, burst 2" in body["message"]
    assert r.headers["retry-after"].isdigit() and int(r.headers["retry-after"]) == 2  # 1 token at 0.5/s
    assert bob.get("/api/facts").status_code == 200  # bob's bucket is his own
    # MCP over HTTP is refused at the HTTP layer, the same way
    mcp = alice.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     headers={"Accept": "application/json, text/event-stream"})
    err(mcp, 429, "RateLimitedError")
    assert all(alice.get("/healthz").status_code == 200 for _ in range(3))  # probes are never limited
    assert RateLimitedError("x", retry_after=0.2).retry_after == 1


def test_rate_limit_without_a_principal_keys_on_the_client_address(mem: Memory) -> None:
    c = Client(build_app(mem, ops=Ops(limiter=RateLimiter(0.1, 1))))
    assert c.get("/api/facts").status_code == 200
    r = c.get("/api/facts")
    assert "this client" in err(r, 429, "RateLimitedError")["message"] and int(r.headers["retry-after"]) == 10


# -- pool size ------------------------------------------------------------
def test_server_pool_sets_the_postgres_pool_size(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("psycopg")
    assert server_pool(str(tmp_path / "a.db"), None) == (str(tmp_path / "a.db"), None)
    with pytest.raises(InvalidInputError, match="pool_size"):
        server_pool(str(tmp_path / "a.db"), 4)
    base = pg_schema_url(request)
    url, n = server_pool(base, None)
    assert n == SERVE_POOL_SIZE and url.endswith(f"&pool_size={SERVE_POOL_SIZE}")
    assert server_pool(base + "&pool_size=3", None)[1] == 3  # the URL's own
    url, n = server_pool(base + "&pool_size=3", 6)  # the option wins
    assert n == 6 and url.count("pool_size") == 1
    assert "options=-c%20synchronous_commit%3Doff" in url  # libpq's parameters untouched
    with pytest.raises(InvalidInputError, match="pool_size"):
        server_pool(base, 0)
    m = chronomem.open(url)
    try:
        assert m.store._pool.max_size == 6  # type: ignore[attr-defined]
        m.add_fact("Acme", "ceo", "Alice")
    finally:
        m.close()
    for bad in ("0", "x", "1001"):
        with pytest.raises(StoreError, match="pool_size"):
            chronomem.open(base + "&pool_size=" + bad)


def test_serve_refuses_bad_ops_options(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    for args, says in ((["--pool-size", "3"], "pool_size"), (["--rate-limit", "fast"], "--rate-limit"),
                       (["--burst", "3"], "--burst needs --rate-limit")):
        done = subprocess.run([*CLI, "--db", db, "serve", "--port", "0", *args], capture_output=True, text=True,
                              timeout=60, env=_env())
        assert done.returncode != 0 and says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


# -- graceful shutdown ----------------------------------------------------
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CHRONOMEM_DB", None)
    env.pop("CHRONOMEM_NAMESPACE", None)
    env.pop("CHRONOMEM_TOKEN", None)
    return env


@contextlib.contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``chronomem serve --port 0 --json``: the process and its base URL."""
    proc = subprocess.Popen([*CLI, *args, "serve", "--port", "0", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        url = json.loads(line)["url"].rstrip("/")
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.05)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(tmp_path: Path) -> None:
    db = tmp_path / "shutdown.db"
    with serving("--db", str(db)) as (proc, url):
        httpx.get(url + "/api/facts", timeout=5)  # one line in the access log
        body = json.dumps({"subject": "Acme", "predicate": "ceo", "object": "Alice"}).encode()
        first_sent = threading.Event()
        result: dict[str, Any] = {}

        def slow_body() -> Iterator[bytes]:
            yield body[:10]
            first_sent.set()
            time.sleep(1.5)  # SIGTERM arrives while the server waits for the rest
            yield body[10:]

        def post() -> None:
            try:
                r = httpx.post(url + "/api/facts", content=slow_body(), timeout=20,
                               headers={"Content-Type": "application/json", "Content-Length": str(len(body))})
                result["status"], result["json"] = r.status_code, r.json()
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                result["error"] = repr(exc)

        th = threading.Thread(target=post)
        th.start()
        assert first_sent.wait(10)
        time.sleep(0.3)  # the server has the request's head and first bytes
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            pass  # no new connections once stopping
        th.join(20)
        assert result.get("status") == 201, result
        assert proc.wait(20) == 0
        stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr
    assert "method=GET path=/api/facts status=200" in stderr  # the access log is on by default
    assert "method=POST path=/api/facts status=201" in stderr  # the drained request is logged too
    with chronomem.open(str(db)) as m:  # the write is there, and the file was closed cleanly
        assert [f.object for f in m.facts("Acme")] == ["Alice"]


_CLUSTER = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{root}'
max_connections = 20
shared_buffers = 16MB
fsync = off
autovacuum = off
"""


def test_readyz_follows_a_postgres_server_down_and_back() -> None:
    pytest.importorskip("psycopg")
    from pg_cluster import throwaway

    gen = throwaway(_CLUSTER, "the readiness test cannot stop a server of its own")
    cluster = next(gen)
    try:
        m = chronomem.open(cluster.url)
        try:
            c = Client(build_app(m))
            assert c.get("/readyz").status_code == 200
            cluster._run("pg_ctl", "-D", str(cluster.data), "-m", "fast", "-w", "stop")
            started = time.monotonic()
            r = c.get("/readyz")
            body = err(r, 503, "StoreUnavailableError")
            assert time.monotonic() - started < 3.0 and int(r.headers["retry-after"]) >= 1
            assert str(cluster.port) not in body["message"] and "127.0.0.1" not in body["message"]
            assert c.get("/healthz").status_code == 200
            cluster.start()
            assert c.get("/readyz").status_code == 200  # the first probe after the restart
        finally:
            m.close()
    finally:
        gen.close()
