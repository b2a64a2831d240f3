"""The JSON API, its OpenAPI document, bearer-token auth and the serve command."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from click.testing import CliRunner
from starlette.routing import Route

from chronomem import InvalidInputError, Memory
from chronomem.adapters.web import create_app
from chronomem.adapters.web.server import UnsafeBindError, build_app, is_loopback, resolve_token, routed_app
from test_web_support import Client, err, story


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = story(tmp_path / "api.db")
    yield m
    m.close()


@pytest.fixture
def client(mem: Memory) -> Client:
    return Client(create_app(mem))


def fact_id(mem: Memory, subject: str, obj: str) -> str:
    return next(f.id for f in mem.facts(subject) if f.object == obj)


# -- reads ----------------------------------------------------------------
def test_get_facts_filters(client: Client, mem: Memory) -> None:
    r = client.get("/api/facts", params={"subject": "Acme", "predicate": "ceo"})
    assert r.status_code == 200
    data = r.json()
    assert sorted(f["object"] for f in data["facts"]) == ["Alice", "Bob"] and data["count"] == 2
    at = client.get("/api/facts", params={"subject": "Acme", "predicate": "ceo", "as_of": "2016"}).json()
    assert [f["object"] for f in at["facts"]] == ["Alice"] and at["basis"]["as_of"] == "2016"
    inc = client.get("/api/facts", params={"subject": "Acme", "direction": "in"}).json()
    assert inc["facts"] == []
    both = client.get("/api/facts", params={"subject": "Bob", "direction": "both"}).json()
    assert {f["predicate"] for f in both["facts"]} == {"ceo", "lives in"}
    assert client.get("/api/facts", params={"limit": "2"}).json()["count"] == 2
    assert client.get("/api/facts", params={"object": "Paris"}).json()["facts"][0]["subject"] == "Acme"
    assert client.get("/api/facts", params={"subject": "Nobody"}).json()["facts"] == []
    carol = next(f for f in mem.history("Acme") if f.object == "Carol")
    old = client.get("/api/facts", params={"subject": "Acme", "predicate": "ceo",
                                           "known_at": carol.system_from.isoformat()})
    assert "Carol" in {f["object"] for f in old.json()["facts"]}


def test_get_facts_bad_input(client: Client) -> None:
    err(client.get("/api/facts", params={"direction": "up"}), 400, "InvalidInputError")
    err(client.get("/api/facts", params={"limit": "-1"}), 400, "InvalidInputError")
    err(client.get("/api/facts", params={"limit": "many"}), 400, "InvalidInputError")
    err(client.get("/api/facts", params={"as_of": "2024-13"}), 400, "InvalidTimeError")
    err(client.get("/api/facts", params={"known_at": "soon"}), 400, "InvalidTimeError")


def test_get_entity(client: Client) -> None:
    data = client.get("/api/entities/ACME Corp").json()
    assert data["entity"]["name"] == "Acme" and data["entity"]["type"] == "company"
    assert {f["object"] for f in data["facts"]} == {"Bob", "Paris", "Dave", "Erin"}
    data = client.get("/api/entities/Acme", params={"as_of": "2016"}).json()
    assert {f["object"] for f in data["facts"]} == {"Alice", "Paris"}
    err(client.get("/api/entities/Nobody"), 404, "EntityNotFoundError")
    err(client.get("/api/entities/Acme", params={"as_of": "x"}), 400, "InvalidTimeError")


def test_get_timeline(client: Client) -> None:
    data = client.get("/api/timeline/Acme").json()
    kinds = {e["kind"] for e in data["events"]}
    assert {"recorded", "started", "ended", "retracted"} <= kinds and data["count"] == len(data["events"])
    part = client.get("/api/timeline/Acme", params={"start": "2019", "end": "2021"}).json()
    assert 0 < part["count"] < data["count"]
    err(client.get("/api/timeline/Nobody"), 404, "EntityNotFoundError")
    err(client.get("/api/timeline/Acme", params={"start": "then"}), 400, "InvalidTimeError")


def test_get_diff_and_conflicts(client: Client) -> None:
    d = client.get("/api/diff", params={"t1": "2016", "t2": "2021", "subject": "Acme", "predicate": "ceo"}).json()
    assert [(c["old"]["object"], c["new"]["object"]) for c in d["changed"]] == [("Alice", "Bob")]
    err(client.get("/api/diff", params={"t1": "2016"}), 400, "InvalidInputError")
    err(client.get("/api/diff", params={"t1": "2016", "t2": "2020", "axis": "z"}), 400, "InvalidInputError")
    err(client.get("/api/diff", params={"t1": "x", "t2": "2020"}), 400, "InvalidTimeError")
    c = client.get("/api/conflicts").json()
    assert c["count"] == 1 and c["conflicts"][0]["predicate"] == "advisor"
    err(client.get("/api/conflicts", params={"known_at": "x"}), 400, "InvalidTimeError")


# -- writes ---------------------------------------------------------------
def test_post_fact(client: Client, mem: Memory) -> None:
    r = client.post("/api/facts", json={"subject": "Acme", "predicate": "ceo", "object": "Zoe", "valid_from": "2024-02",
                                        "source": "press release", "confidence": 0.9})
    assert r.status_code == 201, r.text
    fact = r.json()["fact"]
    assert fact["object"] == "Zoe" and fact["valid_from"] == "2024-02" and fact["confidence"] == 0.9
    assert [f.object for f in mem.current("Acme", "ceo")] == ["Zoe"]
    lit = client.post("/api/facts", json={"subject": "Acme", "predicate": "employees", "object": 120}).json()
    assert lit["fact"]["object"] == 120 and lit["fact"]["literal"] is True
    err(client.post("/api/facts", json={"subject": "Acme", "predicate": "ceo"}), 400, "InvalidInputError")
    err(client.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B", "colour": "red"}), 400,
        "InvalidInputError")
    err(client.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B", "valid_from": "2020",
                                        "valid_to": "2019"}), 400, "InvalidIntervalError")
    err(client.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B", "valid_from": "May"}), 400,
        "InvalidTimeError")
    err(client.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B", "confidence": 7}), 400,
        "InvalidInputError")
    err(client.post("/api/facts", content=b"{not json"), 400, "InvalidInputError")
    err(client.post("/api/facts", json=["a", "b"]), 400, "InvalidInputError")
    err(client.post("/api/facts", json={"subject": "  ", "predicate": "p", "object": "B"}), 400, "InvalidNameError")


def test_post_invalidate(client: Client, mem: Memory) -> None:
    fid = fact_id(mem, "Acme", "Paris")
    r = client.post(f"/api/facts/{fid}/invalidate", json={"ended": "2024-07", "reason": "moved"})
    assert r.status_code == 200, r.text
    assert r.json()["fact"]["valid_to"] == "2024-07"
    assert mem.facts("Acme", "located in", as_of="2024-08") == []
    err(client.post("/api/facts/nope/invalidate", json={}), 404, "FactNotFoundError")
    dave = fact_id(mem, "Acme", "Dave")
    err(client.post(f"/api/facts/{dave}/invalidate", json={"ended": "2018"}), 400, "InvalidIntervalError")
    err(client.post(f"/api/facts/{dave}/invalidate", json={"when": "2020"}), 400, "InvalidInputError")
    err(client.post(f"/api/facts/{dave}/invalidate", json={"ended": "someday"}), 400, "InvalidTimeError")
    err(client.post(f"/api/facts/{dave}/invalidate", json={"reason": 5}), 400, "InvalidInputError")
    assert mem.fact(dave).valid_to is None
    old = next(f.id for f in mem.history("Acme") if f.object == "Carol")
    err(client.post(f"/api/facts/{old}/invalidate", json={}), 404, "FactNotFoundError")


def test_post_correct(client: Client, mem: Memory) -> None:
    fid = fact_id(mem, "Acme", "Dave")
    r = client.post(f"/api/facts/{fid}/correct", json={"object": "David", "valid_from": "2019-04"})
    assert r.status_code == 200, r.text
    assert r.json()["fact"]["object"] == "David" and r.json()["fact"]["version"] == 2
    first = mem.versions(fid)[0]
    assert mem.fact(fid, known_at=first.system_from).object == "Dave"  # the old record stays readable
    err(client.post(f"/api/facts/{fid}/correct", json={"colour": "red"}), 400, "InvalidInputError")
    err(client.post(f"/api/facts/{fid}/correct", json={}), 400, "InvalidInputError")
    err(client.post(f"/api/facts/{fid}/correct", json={"fact_id": "x"}), 400, "InvalidInputError")
    err(client.post("/api/facts/nope/correct", json={"object": "X"}), 404, "FactNotFoundError")


def test_post_retract(client: Client, mem: Memory) -> None:
    fid = fact_id(mem, "Acme", "Erin")
    r = client.post(f"/api/facts/{fid}/retract", json={"reason": "never hired"})
    assert r.status_code == 200 and r.json()["fact"]["id"] == fid
    assert "Erin" not in {f.object for f in mem.facts("Acme")}
    err(client.post(f"/api/facts/{fid}/retract"), 404, "FactNotFoundError")
    err(client.post("/api/facts/nope/retract"), 404, "FactNotFoundError")
    dave = fact_id(mem, "Acme", "Dave")
    err(client.post(f"/api/facts/{dave}/retract", json={"reason": 5}), 400, "InvalidInputError")


def test_unknown_routes_and_methods(client: Client) -> None:
    err(client.get("/api/nothing/here"), 404, "NotFound")
    err(client.request("DELETE", "/api/facts"), 405, "MethodNotAllowed")
    err(client.get("/api/facts/abc/retract"), 405, "MethodNotAllowed")


def _norm(path: str) -> str:
    return re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", path)


def test_openapi_matches_routes(mem: Memory) -> None:
    app = create_app(mem)
    doc = Client(app).get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    documented = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops}
    inner = app.app  # type: ignore[attr-defined]
    served = {(_norm(r.path), m) for r in inner.routes if isinstance(r, Route) and r.path.startswith("/api/")
              for m in (r.methods or set()) - {"HEAD"}}
    assert documented == served
    for path, ops in doc["paths"].items():
        for op in ops.values():
            params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert params == set(re.findall(r"\{(\w+)\}", path)), path


# -- auth -----------------------------------------------------------------
NEW = {"subject": "A", "predicate": "p", "object": "B"}


def test_token_guards_writes_on_loopback(mem: Memory) -> None:
    c = Client(create_app(mem, token="s3cret"))
    assert c.get("/api/facts").status_code == 200
    assert c.get("/entity/Acme").status_code == 200
    e = err(c.post("/api/facts", json=NEW), 401, "AuthenticationError")
    assert "Bearer" in e["message"]
    assert c.post("/api/facts", json=NEW).headers["www-authenticate"].startswith("Bearer")
    err(c.post("/api/facts", json=NEW, headers={"Authorization": "Bearer wrong"}), 403, "ForbiddenError")
    err(c.post("/api/facts", json=NEW, headers={"Authorization": "Basic s3cret"}), 403, "ForbiddenError")
    fid = fact_id(mem, "Acme", "Dave")
    err(c.post(f"/api/facts/{fid}/retract"), 401)
    assert c.post("/api/facts", json=NEW, headers={"Authorization": "Bearer s3cret"}).status_code == 201
    assert c.post(f"/api/facts/{fid}/retract", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    with pytest.raises(InvalidInputError):
        create_app(mem, token="  ")


def test_non_loopback_protects_every_route(mem: Memory) -> None:
    c = Client(build_app(mem, host="0.0.0.0", token="tok", mcp=False))
    for url in ("/", "/entity/Acme", "/api/facts", "/api/openapi.json", "/conflicts.json"):
        r = c.get(url)
        assert r.status_code == 401, url
        if url.startswith("/api") or url.endswith(".json"):
            err(r, 401, "AuthenticationError")
    auth = {"Authorization": "Bearer tok"}
    assert c.get("/api/facts", headers=auth).status_code == 200
    assert c.get("/entity/Acme", headers=auth).status_code == 200
    assert c.get("/", headers={"Authorization": "Bearer no"}).status_code == 403
    # a browser logs in once with ?token=: the token moves into a cookie
    r = c.get("/entity/Acme?as_of=2019&token=tok")
    assert r.status_code == 303 and r.headers["location"] == "/entity/Acme?as_of=2019"
    assert "chronomem_token=tok" in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    assert c.get("/entity/Acme", headers={"Cookie": "chronomem_token=tok"}).status_code == 200
    assert c.get("/entity/Acme", headers={"Cookie": "chronomem_token=bad"}).status_code == 403
    assert c.get("/?token=bad").status_code == 403
    # the cookie never authorizes writes
    assert c.post("/api/facts", json=NEW, headers={"Cookie": "chronomem_token=tok"}).status_code == 401
    with pytest.raises(UnsafeBindError):
        build_app(mem, host="0.0.0.0", token=None)


def test_mcp_is_mounted_and_guarded(mem: Memory) -> None:
    pytest.importorskip("mcp")
    app = build_app(mem, host="127.0.0.1", token="tok")
    inner = routed_app(app)
    assert any(getattr(r, "path", None) == "/mcp" for r in inner.routes)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def go() -> tuple[int, int, int, str]:
        async with inner.router.lifespan_context(inner):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
                no = await c.post("/mcp", json=init, headers=headers)
                bad = await c.post("/mcp", json=init, headers={**headers, "Authorization": "Bearer x"})
                ok = await c.post("/mcp", json=init, headers={**headers, "Authorization": "Bearer tok"})
                return no.status_code, bad.status_code, ok.status_code, ok.text

    no, bad, ok, text = asyncio.run(go())
    assert (no, bad, ok) == (401, 403, 200)
    assert '"serverInfo"' in text


def test_resolve_token_and_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("[::1]")
    assert is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    assert resolve_token(None, "127.0.0.1", env={}) is None
    assert resolve_token(None, "127.0.0.1", env={"CHRONOMEM_TOKEN": "e"}) == "e"
    assert resolve_token("t", "0.0.0.0", env={}) == "t"
    assert resolve_token(None, "0.0.0.0", env={"CHRONOMEM_TOKEN": "e"}) == "e"
    with pytest.raises(UnsafeBindError, match="--token"):
        resolve_token(None, "0.0.0.0", env={})
    with pytest.raises(UnsafeBindError):
        resolve_token("  ", "::", env={})


def test_serve_refuses_non_loopback_without_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.adapters.cli import main

    monkeypatch.delenv("CHRONOMEM_TOKEN", raising=False)
    db = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["--db", str(db), "serve", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 1
    assert "error: binding 0.0.0.0" in result.output and "--token" in result.output
    assert "Traceback" not in result.output
    assert not db.exists()  # refused before opening anything


def test_serve_reports_a_busy_port(tmp_path: Path) -> None:
    import socket

    from chronomem.adapters.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["--db", str(tmp_path / "p.db"), "serve", "--port", str(port), "--no-mcp"])
    assert result.exit_code == 1
    assert f"error: cannot listen on 127.0.0.1:{port}" in result.output and "Traceback" not in result.output


def test_loopback_server_refuses_rebinding_and_cross_site_writes(mem: Memory) -> None:
    c = Client(create_app(mem))  # loopback, no token
    r = c.get("/entity/Acme", headers={"Host": "evil.example:8765"})
    assert r.status_code == 403 and "loopback" in r.text
    err(c.get("/api/facts", headers={"Host": "evil.example"}), 403, "ForbiddenError")
    assert c.get("/api/facts", headers={"Host": "localhost:8765"}).status_code == 200
    e = err(c.post("/api/facts", json=NEW, headers={"Origin": "https://evil.example"}), 403, "ForbiddenError")
    assert "cross-origin" in e["message"]
    err(c.post("/api/facts", json=NEW, headers={"Origin": "null"}), 403, "ForbiddenError")
    assert c.post("/api/facts", json=NEW, headers={"Origin": "http://127.0.0.1:8765"}).status_code == 201
    assert c.post("/api/facts", json=NEW).status_code == 201  # non-browser clients send no Origin
    # bound elsewhere (token everywhere), any Host name is fine
    far = Client(build_app(mem, host="0.0.0.0", token="tok", mcp=False), base_url="http://memory.example:8765")
    assert far.get("/api/facts", headers={"Authorization": "Bearer tok"}).status_code == 200
