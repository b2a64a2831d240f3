"""``chronomem serve`` with the store's tokens: every HTTP API route, every
page and every MCP tool enforces the token's scope and namespace (the route
table and the tool list are walked, so a new route or tool cannot slip
through); a token for namespace A never sees namespace B; revoke and expiry
take effect on the next request; the principal is in the ASGI scope; the
legacy ``--token`` and the token-less loopback default still work; a
non-loopback bind refuses to start without a token."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from starlette.routing import Route

import chronomem
from chronomem import FakeClock
from chronomem.adapters.web import create_app
from chronomem.adapters.web.server import UnsafeBindError, build_app, routed_app
from chronomem.service.scope import ACTING_AS
from chronomem.tokens import Principal
from test_web_support import Client, err

_SCRIPT = Path(sys.executable).with_name("chronomem")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Team:
    """A store with three namespaces and a token of each kind."""

    def __init__(self, path: Path, clock: FakeClock | None = None) -> None:
        self.mem = chronomem.open(path, clock=clock)
        self.mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
        self.mem.view("team").add_fact("Orbit", "lead", "Tess", valid_from="2021")
        self.mem.view("other").add_fact("Secret", "code", "Otto", valid_from="2022")
        t = self.mem.tokens
        self.reader = t.create("reader", "default", "read").token
        self.writer = t.create("writer", "default", "write").token
        self.team = t.create("team-rw", "team", "write").token
        self.multi = t.create("multi", ["default", "team"], "read").token
        self.admin = t.create("admin", "default", "admin").token
        self.root = t.create("root", "*", "admin").token


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    t = Team(tmp_path / "t.db")
    yield t
    t.mem.close()


def refused(r: httpx.Response, status: int, kind: str) -> str:
    """The refusal's message: a typed JSON error, or (an HTML page route) the
    error page naming the type."""
    if r.headers.get("content-type", "").startswith("text/html"):
        assert r.status_code == status and f"{status} · {kind}" in r.text, (r.status_code, r.text[:300])
        return r.text
    return str(err(r, status, kind)["message"])


def subjects(r: httpx.Response) -> set[str]:
    assert r.status_code == 200, r.text
    return {f["subject"] for f in r.json()["facts"]}


# -- every route of the API and the pages ------------------------------------------
def _routes(app: Any) -> list[tuple[str, str]]:
    out = []
    for r in routed_app(app).routes:
        if isinstance(r, Route):
            for m in sorted((r.methods or set()) - {"HEAD"}):
                out.append((re.sub(r"\{(\w+)(:\w+)?\}", "x", r.path), m))
    return out


def test_every_route_checks_the_token_and_its_scope(team: Team) -> None:
    app = build_app(team.mem, host="127.0.0.1", mcp=False)
    c = Client(app)
    routes = _routes(app)
    assert ("/api/tokens", "POST") in routes and ("/api/facts", "POST") in routes and ("/", "GET") in routes
    for path, method in routes:
        where = f"{method} {path}"
        assert "Bearer" in refused(c.request(method, path), 401, "AuthenticationError"), where
        refused(c.request(method, path, headers=bearer("cm_" + "Z" * 43)), 401, "AuthenticationError")
        refused(c.request(method, path, headers={"Authorization": f"Basic {team.reader}"}), 403, "ForbiddenError")
        reading = method == "GET"
        tokens_api = path.startswith("/api/tokens")
        r = c.request(method, path, headers=bearer(team.reader))
        if reading and not tokens_api:
            assert r.status_code not in (401, 403), (where, r.text)
        else:
            message = refused(r, 403, "ForbiddenError")
            assert ("'admin' scope" if tokens_api else "'write' scope") in message, where
        r = c.request(method, path, headers=bearer(team.writer))
        if tokens_api:
            refused(r, 403, "ForbiddenError")
        else:
            assert r.status_code not in (401, 403), (where, r.text)
        r = c.request(method, path, headers=bearer(team.admin))
        assert r.status_code not in (401, 403), (where, r.text)


def test_a_token_sees_only_its_namespaces(team: Team) -> None:
    c = Client(build_app(team.mem, host="127.0.0.1", mcp=False))
    assert subjects(c.get("/api/facts", headers=bearer(team.team))) == {"Orbit"}
    assert subjects(c.get("/api/facts", headers=bearer(team.reader))) == {"Acme"}
    for asked in ({"X-Chronomem-Namespace": "default"}, {"X-Chronomem-Namespace": "other"}):
        e = err(c.get("/api/facts", headers={**bearer(team.team), **asked}), 403, "ForbiddenError")
        assert "may not use namespace" in e["message"]
    for path in ("/ns/default/api/facts", "/ns/other/api/facts", "/ns/other/", "/ns/other/entity/Secret"):
        refused(c.get(path, headers=bearer(team.team)), 403, "ForbiddenError")
    err(c.get("/api/entities/Secret", headers=bearer(team.team)), 404)  # not in its namespace: not found
    # a token with several: the served namespace by default, the others by route or header
    assert subjects(c.get("/api/facts", headers=bearer(team.multi))) == {"Acme"}
    assert subjects(c.get("/ns/team/api/facts", headers=bearer(team.multi))) == {"Orbit"}
    assert subjects(c.get("/api/facts", headers={**bearer(team.multi), "X-Chronomem-Namespace": "team"})) == {"Orbit"}
    err(c.get("/ns/other/api/facts", headers=bearer(team.multi)), 403, "ForbiddenError")
    # "*": every namespace
    assert subjects(c.get("/ns/other/api/facts", headers=bearer(team.root))) == {"Secret"}
    # a write lands in the token's namespace only
    r = c.post("/api/facts", json={"subject": "Orbit", "predicate": "budget", "object": "10k"},
               headers=bearer(team.team))
    assert r.status_code == 201, r.text
    assert [f.object for f in team.mem.view("team").facts("Orbit", "budget")] == ["10k"]
    assert team.mem.facts("Orbit") == [] and team.mem.view("other").facts("Orbit") == []
    stats = c.get("/api/stats", headers=bearer(team.team)).json()["stats"]
    assert stats["namespaces"] == ["team"] and stats["facts"] == 2


def test_pages_follow_the_cookie_and_the_namespace_route(team: Team) -> None:
    c = Client(build_app(team.mem, host="127.0.0.1", mcp=False))
    r = c.get("/?token=" + team.multi)
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert f"chronomem_token={team.multi}" in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    login = {"Cookie": f"chronomem_token={team.multi}"}
    assert c.get("/index.json", headers=login).json()["namespace"] == "default"
    r = c.get("/ns/team/entity/Orbit?as_of=2022", headers=login)
    assert r.status_code == 303 and r.headers["location"] == "/entity/Orbit?as_of=2022"
    assert "chronomem_namespace=team" in r.headers["set-cookie"]
    both = {"Cookie": f"chronomem_token={team.multi}; chronomem_namespace=team"}
    assert c.get("/index.json", headers=both).json()["namespace"] == "team"
    assert c.get("/entity/Orbit", headers=both).status_code == 200
    forged = {"Cookie": f"chronomem_token={team.multi}; chronomem_namespace=other"}
    err(c.get("/index.json", headers=forged), 403, "ForbiddenError")
    refused(c.get("/?token=cm_" + "Q" * 43), 401, "AuthenticationError")
    # the cookie never authorizes the API or MCP
    err(c.get("/api/facts", headers=login), 401, "AuthenticationError")


def test_revoke_takes_effect_on_the_next_request(team: Team) -> None:
    c = Client(build_app(team.mem, host="127.0.0.1", mcp=False))
    assert c.get("/api/facts", headers=bearer(team.writer)).status_code == 200
    team.mem.tokens.revoke("writer")
    e = err(c.get("/api/facts", headers=bearer(team.writer)), 401, "AuthenticationError")
    assert "revoked" in e["message"]
    # over the API too, by an admin of that namespace
    assert c.get("/api/facts", headers=bearer(team.reader)).status_code == 200
    r = c.post("/api/tokens/reader/revoke", headers=bearer(team.admin))
    assert r.status_code == 200 and r.json()["token"]["status"] == "revoked"
    err(c.get("/api/facts", headers=bearer(team.reader)), 401, "AuthenticationError")


def test_expiry_over_http(tmp_path: Path) -> None:
    clock = FakeClock("2025-01-01T12:00:00Z", tick=0)
    with chronomem.open(tmp_path / "e.db", clock=clock) as mem:
        token = mem.tokens.create("brief", "default", "read", expires="2025-01-01T13:00:00Z").token
        c = Client(build_app(mem, host="127.0.0.1", mcp=False))
        assert c.get("/api/facts", headers=bearer(token)).status_code == 200
        clock.advance(3600)
        e = err(c.get("/api/facts", headers=bearer(token)), 401, "AuthenticationError")
        assert "expired" in e["message"]
        # no active token is left: loopback is the single-user default again
        assert c.get("/api/facts").status_code == 200


def test_token_management_api(team: Team) -> None:
    c = Client(build_app(team.mem, host="127.0.0.1", mcp=False))
    mine = c.get("/api/tokens", headers=bearer(team.admin)).json()["tokens"]
    assert {t["name"] for t in mine} == {"reader", "writer", "admin"}  # only default's
    assert all("token" not in t for t in mine)
    everything = c.get("/api/tokens", headers=bearer(team.root)).json()["tokens"]
    assert {t["name"] for t in everything} == {"reader", "writer", "team-rw", "multi", "admin", "root"}
    r = c.post("/api/tokens", json={"name": "bot", "namespace": "default", "scope": "write",
                                    "expires": "in 30 days"}, headers=bearer(team.admin))
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["token"].startswith("cm_") and made["scopes"] == ["read", "write"] and made["expires_at"]
    assert subjects(c.get("/api/facts", headers=bearer(made["token"]))) == {"Acme"}
    err(c.post("/api/tokens", json={"name": "bot2", "namespace": "team"}, headers=bearer(team.admin)), 403,
        "ForbiddenError")
    err(c.post("/api/tokens", json={"name": "bot2", "namespace": "*", "scope": "admin"},
               headers=bearer(team.admin)), 403, "ForbiddenError")
    err(c.post("/api/tokens/team-rw/revoke", headers=bearer(team.admin)), 403, "ForbiddenError")
    err(c.post("/api/tokens", json={"name": "bot", "namespace": "default"}, headers=bearer(team.admin)), 409,
        "ConflictError")
    err(c.post("/api/tokens", json={"name": "x", "namespace": "default", "scope": "root"},
               headers=bearer(team.admin)), 400, "InvalidInputError")
    err(c.post("/api/tokens", json={"name": "x", "namespace": "default", "colour": 1},
               headers=bearer(team.admin)), 400, "InvalidInputError")
    err(c.post("/api/tokens", json={"name": "x"}, headers=bearer(team.admin)), 400, "InvalidInputError")
    err(c.post("/api/tokens/nobody/revoke", headers=bearer(team.admin)), 404)
    assert c.post("/api/tokens/team-rw/revoke", headers=bearer(team.root)).status_code == 200
    assert team.mem.tokens.get("team-rw").status == "revoked"


def test_principal_and_acting_as_reach_the_app(team: Team) -> None:
    seen: list[tuple[Any, Any, Any]] = []

    class Probe:  # an ASGI app (an instance, as MCP's), mounted as /mcp is
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            seen.append((scope.get("chronomem.principal"), scope.get("chronomem.namespace"), ACTING_AS.get()))
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    outer: list[Any] = []

    class Outside:  # a middleware around the whole app (access logs, rate limits) sees it too
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await self.app(scope, receive, send)
            outer.append(scope.get("chronomem.principal"))

    c = Client(Outside(create_app(team.mem, mounts={"/probe": Probe()})))
    assert c.get("/probe", headers=bearer(team.writer)).status_code == 204
    assert c.post("/ns/default/probe", headers=bearer(team.writer)).status_code == 204  # a POST: not a page
    assert [p.name for p in outer] == ["writer", "writer"]
    principal, namespace, acting = seen[-1]
    assert isinstance(principal, Principal) and namespace == "default" and acting == "writer"
    assert (principal.name, principal.namespaces, principal.scopes) == ("writer", ("default",), ("read", "write"))
    assert ACTING_AS.get() is None  # reset after the request


def test_loopback_without_tokens_is_the_single_user_default(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "o.db") as mem:
        mem.add_fact("Acme", "ceo", "Alice")
        mem.view("other").add_fact("Secret", "code", "Otto")
        c = Client(build_app(mem, host="127.0.0.1", mcp=False))
        assert subjects(c.get("/api/facts")) == {"Acme"}
        assert c.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B"}).status_code == 201
        for path in ("/ns/other/api/facts", "/ns/other/"):
            refused(c.get(path), 403, "ForbiddenError")
        err(c.get("/api/facts", headers={"X-Chronomem-Namespace": "other"}), 403, "ForbiddenError")
        err(c.get("/api/tokens"), 401, "AuthenticationError")  # managing tokens needs an admin token
        # a token created while the server runs: from the next request on, every request needs one
        token = mem.tokens.create("first", "default", "read").token
        err(c.get("/api/facts"), 401, "AuthenticationError")
        assert c.get("/api/facts", headers=bearer(token)).status_code == 200


def test_legacy_token_is_an_admin_of_the_served_namespace(team: Team) -> None:
    c = Client(build_app(team.mem, host="127.0.0.1", token="legacy-secret", mcp=False))
    assert subjects(c.get("/api/facts", headers=bearer("legacy-secret"))) == {"Acme"}
    names = {t["name"] for t in c.get("/api/tokens", headers=bearer("legacy-secret")).json()["tokens"]}
    assert names == {"reader", "writer", "admin"}
    err(c.get("/ns/team/api/facts", headers=bearer("legacy-secret")), 403, "ForbiddenError")
    # with store tokens active, everything needs a token, and a wrong one is a 401
    err(c.get("/api/facts"), 401, "AuthenticationError")
    err(c.get("/api/facts", headers=bearer("wrong")), 401, "AuthenticationError")


def test_a_store_token_refused_as_the_legacy_token(team: Team) -> None:
    # an agent's CHRONOMEM_TOKEN left in the server's shell would make it the shared admin
    with pytest.raises(UnsafeBindError, match="one of the store's tokens"):
        build_app(team.mem, host="127.0.0.1", token=team.reader, mcp=False)


def test_non_loopback_needs_a_token_to_start(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "n.db") as mem:
        with pytest.raises(UnsafeBindError, match="chronomem token create"):
            build_app(mem, host="0.0.0.0", mcp=False)
        made = mem.tokens.create("ops", "default", "read")
        c = Client(build_app(mem, host="0.0.0.0", mcp=False), base_url="http://memory.example:8765")
        refused(c.get("/"), 401, "AuthenticationError")
        assert c.get("/api/facts", headers=bearer(made.token)).status_code == 200
        mem.tokens.revoke("ops")  # no token left: still every request needs one on this bind
        err(c.get("/api/facts"), 401, "AuthenticationError")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_cli_refuses_a_network_bind_without_tokens_and_serves_with_one(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    done = subprocess.run([*CLI, "--db", str(db), "serve", "--host", "0.0.0.0", "--port", "0"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "chronomem token create" in done.stderr
    assert not db.exists()  # refused before anything was created
    with chronomem.open(db) as mem:
        mem.add_fact("Acme", "ceo", "Alice")
        token = mem.tokens.create("ops", "default", "read").token
    port = _free_port()
    proc = subprocess.Popen([*CLI, "--db", str(db), "serve", "--host", "0.0.0.0", "--port", str(port), "--no-mcp",
                             "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert info["auth"] == "every route (tokens)"
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/api/facts"
        assert httpx.get(url).status_code == 401
        assert subjects(httpx.get(url, headers=bearer(token))) == {"Acme"}
    finally:
        proc.terminate()
        proc.wait(10)


# -- MCP over HTTP ---------------------------------------------------------------
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _message(r: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a streamable-HTTP POST (JSON or one SSE event)."""
    assert r.status_code == 200, (r.status_code, r.text)
    if r.headers.get("content-type", "").startswith("application/json"):
        return dict(r.json())
    data = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


class Mcp:
    def __init__(self, c: httpx.AsyncClient, token: str, path: str = "/mcp") -> None:
        self.c, self.path, self.headers, self.ids = c, path, {**_HEADERS, **bearer(token)}, 1

    async def start(self) -> str:
        r = await self.c.post(self.path, json=_INIT, headers=self.headers)
        _message(r)
        self.headers["mcp-session-id"] = sid = r.headers["mcp-session-id"]
        await self.c.post(self.path, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                          headers=self.headers)
        return sid

    async def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        r = await self.c.post(self.path, json={"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params},
                              headers=self.headers)
        return _message(r)

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        res = (await self.rpc("tools/call", {"name": tool, "arguments": args}))["result"]
        return bool(res.get("isError")), " ".join(part.get("text", "") for part in res["content"])


def test_mcp_tools_enforce_scope_and_namespace(team: Team) -> None:
    pytest.importorskip("mcp")
    from chronomem.adapters.mcp.server import READ_TOOLS, tool_wraps

    app = build_app(team.mem, host="127.0.0.1", mcp=True)
    inner = routed_app(app)

    async def go() -> None:
        async with inner.router.lifespan_context(inner):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
                assert (await c.post("/mcp", json=_INIT, headers=_HEADERS)).status_code == 401
                reader = Mcp(c, team.reader)
                await reader.start()
                tools = {t["name"] for t in (await reader.rpc("tools/list", {}))["result"]["tools"]}
                assert READ_TOOLS < tools and set(tool_wraps()) <= tools
                for tool in sorted(tools):
                    is_error, text = await reader.call(tool, {})
                    if tool in READ_TOOLS:
                        assert "ForbiddenError" not in text, (tool, text)
                    else:
                        assert is_error and "ForbiddenError" in text and "reader" in text, (tool, text)
                _, text = await reader.call("facts", {"subject": "Acme"})
                assert "Alice" in text
                # a write token of another namespace writes there, and sees only there
                writer = Mcp(c, team.team)
                team_session = await writer.start()
                is_error, text = await writer.call("fact_add", {"subject": "Orbit", "predicate": "budget",
                                                                "object": "5k"})
                assert not is_error, text
                _, text = await writer.call("facts", {"subject": "Acme"})
                assert "Alice" not in text
                # a session of namespace team is not reachable with a token of default
                hijack = {**_HEADERS, **bearer(team.writer), "mcp-session-id": team_session}
                r = await c.post("/mcp", headers=hijack, json={"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                                               "params": {"name": "facts", "arguments": {}}})
                assert r.status_code in (400, 404), r.text
                # a token with several namespaces picks one by route
                multi = Mcp(c, team.multi, "/ns/team/mcp")
                await multi.start()
                _, text = await multi.call("facts", {"subject": "Orbit"})
                assert "Tess" in text and "5k" in text
                is_error, text = await multi.call("fact_add", {"subject": "Orbit", "predicate": "x", "object": "y"})
                assert is_error and "ForbiddenError" in text
                # revoked: the next call is refused at the door
                team.mem.tokens.revoke("team-rw")
                r = await c.post("/mcp", headers=writer.headers, json={
                    "jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}})
                assert r.status_code == 401 and r.json()["error"]["type"] == "AuthenticationError"

    asyncio.run(go())
    assert [f.object for f in team.mem.view("team").facts("Orbit", "budget")] == ["5k"]
    assert team.mem.facts("Orbit") == []


# -- who wrote what, end to end -------------------------------------------------
def _facts(r: httpx.Response) -> set[tuple[str, str, str, str]]:
    assert r.status_code == 200, r.text
    return {(f["subject"], f["predicate"], str(f["object"]), f["recorded_by"]) for f in r.json()["facts"]}


def test_two_tokens_write_over_api_and_mcp_and_read_their_versions_back(store_url: str) -> None:
    """Ann and Bob, two write tokens of namespace ``team``, write over the
    HTTP API and over MCP; Bob corrects one of Ann's facts on each surface.
    Every version is recorded as the token that wrote it (the old version by
    Ann, the new one by Bob), on every backend, and reads back so through
    ``facts(recorded_by=)`` / ``history`` in Python, ``GET
    /api/facts?recorded_by=`` (with ``known_at`` for the old versions) and
    the MCP ``facts`` tool; a token of another namespace sees none of it."""
    pytest.importorskip("mcp")
    mem = chronomem.open(store_url)  # serves "default"; the tokens choose "team"
    try:
        ann = mem.tokens.create("ann", "team", "write").token
        bob = mem.tokens.create("bob", "team", "write").token
        olaf = mem.tokens.create("olaf", "other", "read").token
        app = build_app(mem, host="127.0.0.1", mcp=True)
        inner = routed_app(app)
        seen: dict[str, Any] = {}

        async def tool(m: Mcp, name: str, args: dict[str, Any]) -> dict[str, Any]:
            res = (await m.rpc("tools/call", {"name": name, "arguments": args}))["result"]
            assert not res.get("isError"), res
            return dict(res["structuredContent"])

        async def go() -> None:
            async with inner.router.lifespan_context(inner):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
                    # over the API
                    r = await c.post("/api/facts", headers=bearer(ann), json={
                        "subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020"})
                    assert r.status_code == 201, r.text
                    seen["ann_api"] = a1 = r.json()["fact"]
                    assert (a1["recorded_by"], a1["namespace"], a1["version"]) == ("ann", "team", 1)
                    r = await c.post("/api/facts", headers=bearer(bob), json={
                        "subject": "Acme", "predicate": "cto", "object": "Bob"})
                    assert r.status_code == 201 and r.json()["fact"]["recorded_by"] == "bob", r.text
                    # over MCP, a session per token
                    am, bm = Mcp(c, ann), Mcp(c, bob)
                    await am.start()
                    await bm.start()
                    seen["ann_mcp"] = a2 = (await tool(am, "fact_add", {
                        "subject": "Orbit", "predicate": "lead", "object": "Tess", "valid_from": "2021"}))["fact"]
                    assert a2["recorded_by"] == "ann"
                    a3 = (await tool(am, "fact_add", {"subject": "Acme", "predicate": "hq", "object": "Berlin"}))
                    assert a3["fact"]["recorded_by"] == "ann"
                    b2 = (await tool(bm, "fact_add", {"subject": "Orbit", "predicate": "budget", "object": "5k"}))
                    assert b2["fact"]["recorded_by"] == "bob"
                    # Bob corrects Ann's facts: over the API, then over MCP
                    r = await c.post(f"/api/facts/{a1['id']}/correct", headers=bearer(bob), json={"object": "Alicia"})
                    assert r.status_code == 200, r.text
                    fixed = r.json()["fact"]
                    assert (fixed["id"], fixed["version"], fixed["recorded_by"]) == (a1["id"], 2, "bob")
                    fixed2 = (await tool(bm, "fact_correct", {"fact_id": a2["id"], "object": "Tessa"}))["fact"]
                    assert (fixed2["id"], fixed2.get("version"), fixed2["recorded_by"]) == (a2["id"], 2, "bob")

                    # read back over the API (any token of the namespace may ask about any writer)
                    assert _facts(await c.get("/api/facts", params={"recorded_by": "ann"}, headers=bearer(bob))) == {
                        ("Acme", "hq", "Berlin", "ann")}
                    assert _facts(await c.get("/api/facts", params={"recorded_by": "bob"}, headers=bearer(ann))) == {
                        ("Acme", "cto", "Bob", "bob"), ("Acme", "ceo", "Alicia", "bob"),
                        ("Orbit", "budget", "5k", "bob"), ("Orbit", "lead", "Tessa", "bob")}
                    # Ann's old versions, as believed before Bob's corrections
                    before = {"recorded_by": "ann", "known_at": a2["recorded_at"]}
                    assert _facts(await c.get("/api/facts", params=before, headers=bearer(ann))) == {
                        ("Acme", "ceo", "Alice", "ann"), ("Orbit", "lead", "Tess", "ann")}
                    assert _facts(await c.get("/api/facts", params={"subject": "Acme", "recorded_by": "bob",
                                                                    "known_at": a2["recorded_at"]},
                                              headers=bearer(ann))) == {("Acme", "cto", "Bob", "bob")}
                    # over MCP: every result names its writer, old versions too
                    now = await tool(am, "facts", {"subject": "Acme"})
                    assert {(f["predicate"], f["object"], f["recorded_by"]) for f in now["facts"]} == {
                        ("ceo", "Alicia", "bob"), ("cto", "Bob", "bob"), ("hq", "Berlin", "ann")}
                    old = await tool(bm, "facts", {"subject": "Orbit", "known_at": a2["recorded_at"]})
                    assert {(f["predicate"], f["object"], f["recorded_by"]) for f in old["facts"]} == {
                        ("lead", "Tess", "ann")}
                    # another namespace's token sees none of it, whoever it asks about
                    r = await c.get("/api/facts", params={"recorded_by": "ann"}, headers=bearer(olaf))
                    assert _facts(r) == set()
                    r = await c.get("/ns/team/api/facts", params={"recorded_by": "ann"}, headers=bearer(olaf))
                    assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenError"

        asyncio.run(go())
        # and in Python: facts(recorded_by=) and history(recorded_by=) on the stored versions
        team = mem.view("team")
        assert {(f.predicate, f.object) for f in team.facts(recorded_by="ann")} == {("hq", "Berlin")}
        assert {(f.subject, f.predicate, f.object) for f in team.facts(recorded_by="bob")} == {
            ("Acme", "cto", "Bob"), ("Acme", "ceo", "Alicia"), ("Orbit", "budget", "5k"), ("Orbit", "lead", "Tessa")}
        for subject, predicate, was, now in (("Acme", "ceo", "Alice", "Alicia"), ("Orbit", "lead", "Tess", "Tessa")):
            versions = team.history(subject, predicate)
            assert [(f.object, f.version, f.recorded_by) for f in versions] == [(was, 1, "ann"), (now, 2, "bob")]
            assert versions[0].system_to is not None and versions[1].system_to is None
        assert {(f.subject, f.object) for f in team.history("Acme", recorded_by="ann")} == {("Acme", "Alice"),
                                                                                          ("Acme", "Berlin")}
        assert [f.object for f in team.history("Orbit", recorded_by="ann")] == ["Tess"]
        assert {f.object for f in team.history("Orbit", recorded_by="bob")} == {"5k", "Tessa"}
        assert mem.facts() == [] and mem.view("other").facts() == []  # nothing landed elsewhere
        assert team.fact(seen["ann_api"]["id"]).recorded_by == "bob"  # the believed version is Bob's
    finally:
        mem.close()
