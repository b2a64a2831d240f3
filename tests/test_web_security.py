"""Web auth details: same-origin redirects only, a strict Host check, the
token moved out of the URL on every bind, the cookie's scope and the index
naming only the served namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from chronomem import Memory
from chronomem.adapters.web import create_app
from chronomem.adapters.web.net import parse_authority, same_origin_path
from chronomem.adapters.web.server import build_app
from test_web_support import Client, err, story

BASE = "http://127.0.0.1:8765"
AUTH = {"Authorization": "Bearer tok"}
COOKIE = {"Cookie": "chronomem_token=tok"}


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = story(tmp_path / "w.db")
    yield m
    m.close()


@pytest.fixture
def far(mem: Memory) -> Client:
    """Bound to every interface: every route needs the token."""
    return Client(build_app(mem, host="0.0.0.0", token="tok", mcp=False))


# -- redirects ------------------------------------------------------------
@pytest.mark.parametrize("path, location", [
    ("//evil.example/", "/evil.example/"),
    ("///evil.example/", "/evil.example/"),
    ("/%2F%2Fevil.example/", "/evil.example/"),
    ("/%5Cevil.example/", "/%5Cevil.example/"),
    ("/%5C%5Cevil.example", "/%5C%5Cevil.example"),
    ("/%09/evil.example", "/%09/evil.example"),
    ("/%0D%0ALocation:%20http://evil.example", "/%0D%0ALocation:%20http://evil.example"),
    ("/http://evil.example", "/http://evil.example"),
    ("/entity/A%3Fb", "/entity/A%3Fb"),
])
def test_login_redirect_stays_on_this_origin(far: Client, path: str, location: str) -> None:
    r = far.get(f"{BASE}{path}?token=tok")
    assert r.status_code == 303, r.text
    assert r.headers["location"] == location
    assert r.headers["location"].startswith("/") and not r.headers["location"].startswith("//")
    assert "\\" not in r.headers["location"] and "\r" not in r.headers["location"]
    assert "chronomem_token=tok" in r.headers["set-cookie"]


def test_same_origin_path_never_leaves_the_origin() -> None:
    for raw in ("//a", "\\\\a", "/\\a", "/\t/a", "http://a", "\u2215\u2215a", "/ /a", "", "a"):
        target = same_origin_path(raw)
        assert target.startswith("/") and not target.startswith("//"), raw
        assert all(c.isascii() and c.isprintable() and c not in "\\ " for c in target), target
    assert same_origin_path("/entity/Acme", "as_of=2019") == "/entity/Acme?as_of=2019"


def test_login_keeps_the_other_parameters(far: Client) -> None:
    r = far.get("/entity/Acme?as_of=2019&token=tok&page=")
    assert r.status_code == 303 and r.headers["location"] == "/entity/Acme?as_of=2019&page="
    assert far.get("/?token=tok&token=tok").status_code == 403  # one token, not a list
    err(far.get("/index.json?token=bad"), 403, "ForbiddenError")


# -- the token leaves the URL on every bind -----------------------------------
def test_loopback_moves_the_token_out_of_the_url(mem: Memory) -> None:
    c = Client(create_app(mem, token="tok"))
    r = c.get("/?token=tok")
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = r.headers["set-cookie"]
    assert "chronomem_token=tok" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    r = c.get("/entity/Acme?token=tok&as_of=2019")
    assert r.status_code == 303 and r.headers["location"] == "/entity/Acme?as_of=2019"
    err(c.get("/index.json?token=wrong"), 403, "ForbiddenError")
    assert c.get("/").status_code == 200  # loopback pages stay open without it
    # without a token configured the parameter is dropped from the URL, no cookie
    open_ = Client(create_app(mem))
    r = open_.get("/entity/Acme?token=whatever")
    assert r.status_code == 303 and r.headers["location"] == "/entity/Acme"
    assert "set-cookie" not in r.headers
    # the API never takes ?token= (no redirect: a client would follow it without the header)
    assert c.get("/api/facts?token=tok").status_code == 200
    err(c.post("/api/facts?token=tok", json={"subject": "A", "predicate": "p", "object": "B"}), 401)


# -- cookie scope ----------------------------------------------------------
def test_cookie_authorizes_pages_only(far: Client) -> None:
    for url in ("/", "/index.json", "/entity/Acme", "/entity/Acme.json", "/conflicts.json", "/search?q=x"):
        assert far.get(url, headers=COOKIE).status_code == 200, url
    for url in ("/api/facts", "/api/openapi.json", "/api/entities/Acme", "/api/search?q=x"):
        err(far.get(url, headers=COOKIE), 401, "AuthenticationError")
        assert far.get(url, headers=AUTH).status_code == 200, url
    err(far.post("/api/facts", json={"subject": "A", "predicate": "p", "object": "B"}, headers=COOKIE), 401)
    err(far.get("/mcp", headers=COOKIE), 401)
    err(far.get("/index.json", headers={"Cookie": "chronomem_token=bad"}), 403, "ForbiddenError")


# -- Host ------------------------------------------------------------------
@pytest.mark.parametrize("host", [
    "evil.com@127.0.0.1:8765", "127.0.0.1:8765@evil.com", "user:pw@localhost:8765", "evil.example:8765",
    "127.0.0.1:8766", "localhost", "127.0.0.1:8765/x", "127.0.0.1:8765 ", "127.0.0.1:", "127.0.0.1:abc",
    "[::1", "[evil]:8765", "127.0.0.1:99999", "127.0.0.1.evil.example:8765", "localhost.:8765",
])
def test_loopback_host_check_is_strict(mem: Memory, host: str) -> None:
    c = Client(create_app(mem))
    for url in ("/", "/api/facts"):
        r = c.get(url, headers={"Host": host})
        assert r.status_code in (400, 403), (host, url, r.status_code)


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765",
                                  "127.0.0.2:8765"])
def test_loopback_host_check_accepts_this_server(mem: Memory, host: str) -> None:
    c = Client(create_app(mem))
    assert c.get("/api/facts", headers={"Host": host}).status_code == 200


def test_far_bind_refuses_malformed_hosts(far: Client) -> None:
    err(far.get("/api/facts", headers={**AUTH, "Host": "evil.com@memory.example:8765"}), 400)
    assert far.get("/api/facts", headers={**AUTH, "Host": "memory.example:8765"}).status_code == 200


def test_parse_authority() -> None:
    assert parse_authority("LocalHost:8765") == ("localhost", 8765)
    assert parse_authority("[::1]:80") == ("[::1]", 80)
    assert parse_authority("example.org") == ("example.org", 80)
    assert parse_authority("example.org", "https") == ("example.org", 443)
    for bad in ("a@b", "a:b", "a:0", "", ":80", "a b", "[zz]:1", "a:1:2", "a/b", "a?b", "a#b"):
        with pytest.raises(ValueError):
            parse_authority(bad)


# -- the index names only the served namespace -----------------------------------
def test_index_shows_only_the_served_namespace(tmp_path: Path) -> None:
    import chronomem

    db = tmp_path / "ns.db"
    with chronomem.open(str(db), namespace="secret-project") as other:
        other.add_fact("X", "p", "Y")
    mem = story(db)  # the default namespace of the same file
    try:
        assert "secret-project" in mem.stats().namespaces  # the library still knows them all
        c = Client(create_app(mem))
        body = c.get("/index.json").json()
        assert body["stats"]["namespaces"] == [mem.namespace]
        assert "secret-project" not in c.get("/index.json").text
        assert "secret-project" not in c.get("/").text
    finally:
        mem.close()
