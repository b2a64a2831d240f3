"""Every route of the web app with malformed parameters: wrong types, huge
integers, bad and out-of-range times, percent-encoded lone surrogates and
invalid UTF-8, NUL, newlines, and malformed, non-standard, over-deep or
oversized JSON bodies. Each answer is non-500 (a typed 4xx, or a 2xx where
the value is a documented acceptance), JSON on the API and the ``.json``
twins, and never a traceback."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from starlette.routing import Route

import chronomem
from chronomem import Memory
from chronomem.adapters.web import create_app
from chronomem.adapters.web.errors import MAX_BODY_BYTES, wants_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_web_support import story  # noqa: E402

#: every query parameter some route reads (pages, .json twins, API)
PARAMS = ("as_of", "known_at", "at", "t1", "t2", "start", "end", "axis", "direction", "hops", "k", "limit",
          "page", "page_size", "view", "q", "subject", "predicate", "object")

#: raw (already percent-encoded) values
BAD = (
    "", "%20", "abc", "-1", "0", "1.5", "9" * 40, "-" + "9" * 40, "1e309", "nan", "inf", "true", "[]", "%7B%7D",
    "%00", "a%00b", "%ED%A0%80", "%FF%FE", "%0A", "2024-13-45", "10000-01-01", "0000-01-01",
    "9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00%2B01:00", "yesterday", "x" * 5000,
)

#: raw path segments for ``{name}``, ``{fact_id}``, ``{episode_id}``
SEGMENTS = ("x", "%00", "a%00b", "%ED%A0%80", "%FF", "9" * 40, "A" * 5000, "..%2F..", "%0A", "%20", "%25")


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


#: raw bodies for the write routes
BODIES = (
    b"{", b"[]", b"5", b'"x"', b"null", b"\xff\xfe", b'{"subject": NaN}', b'{"a": Infinity}',
    b'{"subject": "\\ud800", "predicate": "p", "object": "x"}',
    b'{"subject": "A\\u0000", "predicate": "p", "object": "x"}',
    b'{"subject": 5, "predicate": "p", "object": "x"}',
    b'{"subject": "A", "predicate": "p", "object": "x", "properties": ' + nested(600) + b"}",
    b'{"subject": "A", "predicate": "p", "object": "x", "properties": ' + nested(100_000) + b"}",
    b'{"subject": "A", "predicate": "p", "object": "x", "confidence": 1e999}',
    b'{"subject": "A", "predicate": "p", "object": "x", "valid_from": 99999999999999999999999}',
    b'{"reason": {"a": 1}}', b'{"reason": 5}', b'{"ended": [1]}', b'{"text": 5}', b'{"text": "x", "metadata": 5}',
    b'{"valid_from": {"a": 1}}', b'{"unknown": 1}', b'{"text": "' + b"x" * 200_000 + b'"}',
)


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    m = story(tmp_path_factory.mktemp("walk") / "walk.db")
    m.add_episode("Acme hired Bob in 2020.", occurred_at="2020-06-01", session="s1")
    yield m
    m.close()


def routes(mem: Memory) -> list[tuple[str, set[str]]]:
    app = create_app(mem)
    inner = app.app  # type: ignore[attr-defined]
    return [(r.path, set(r.methods or ()) - {"HEAD"}) for r in inner.routes if isinstance(r, Route)]


def fill(template: str, segment: str, good: dict[str, str]) -> str:
    """``template`` with its ``{param}`` replaced by ``segment`` (one at a time) or a good value."""
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: segment if segment else good[m.group(1)], template)


def walk(mem: Memory) -> list[tuple[str, str, int, str, str]]:
    """(method, url, status, content type, body start) of every probe."""
    fact_id = next(f.id for f in mem.facts("Acme"))
    episode_id = mem.episodes()[0].id
    good = {"name": "Acme", "fact_id": fact_id, "episode_id": episode_id}
    requests: list[tuple[str, str, bytes | None]] = []
    for template, methods in routes(mem):
        if "GET" in methods:
            base = fill(template, "", good)
            requests += [("GET", f"{base}?{p}={v}", None) for p in PARAMS for v in BAD]
            if "{" in template:
                requests += [("GET", fill(template, s, good), None) for s in SEGMENTS]
        if "POST" in methods:
            url = fill(template, "", good)
            requests += [("POST", url, body) for body in BODIES]
            requests.append(("POST", url, b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}"))
            if "{" in template:
                requests += [("POST", fill(template, s, good), b"{}") for s in SEGMENTS]

    async def go() -> list[tuple[str, str, int, str, str]]:
        transport = httpx.ASGITransport(app=create_app(mem))
        out = []
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            for method, url, body in requests:
                r = await client.request(method, url, content=body,
                                         headers={"content-type": "application/json"} if body else {})
                out.append((method, url[:120], r.status_code, r.headers.get("content-type", ""), r.text[:300]))
        return out

    return asyncio.run(go())


def test_every_route_answers_malformed_parameters_without_a_500(mem: Memory) -> None:
    probes = walk(mem)
    assert len(probes) > 5000
    bad = []
    for method, url, status, ctype, text in probes:
        path = url.split("?")[0]
        if status >= 500 or "Traceback" in text:
            bad.append((method, url, status, text[:120]))
        elif wants_json(path) and not ctype.startswith("application/json"):
            bad.append((method, url, status, f"not JSON: {ctype}"))
        elif status >= 400 and wants_json(path) and '"error"' not in text:
            bad.append((method, url, status, text[:120]))
    assert not bad, f"{len(bad)} of {len(probes)} probes failed, e.g.:\n" + "\n".join(map(str, bad[:20]))
    assert sum(1 for p in probes if 400 <= p[2] < 500) > 1000  # most are refused, not silently taken


def test_a_crash_in_a_route_is_a_json_500_with_a_request_id(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """Anything that escapes a route: a JSON 500 naming a request id that the
    log line (with the traceback) carries too, and no traceback in the body."""
    mem = chronomem.open(str(tmp_path / "crash.db"))
    mem.add_fact("Acme", "p", "B")

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug")

    mem.facts = boom  # type: ignore[method-assign]
    try:
        async def go() -> tuple[httpx.Response, httpx.Response]:
            transport = httpx.ASGITransport(app=create_app(mem))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
                return await client.get("/api/facts"), await client.get("/entity/Acme")

        with caplog.at_level("ERROR", logger="chronomem.web"):
            api, page = asyncio.run(go())
    finally:
        mem.close()
    assert api.status_code == 500
    body = api.json()["error"]
    assert body["type"] == "InternalError" and set(body) == {"type", "message", "request_id"}
    assert "ZeroDivisionError" not in api.text and "Traceback" not in api.text
    record = next(r for r in caplog.records if body["request_id"] in r.getMessage())
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert "ZeroDivisionError" not in page.text


def test_an_oversized_body_is_a_413_without_reading_it_all(tmp_path: Path) -> None:
    mem = chronomem.open(str(tmp_path / "big.db"))
    chunks = 0

    async def body() -> Any:
        nonlocal chunks
        for _ in range(MAX_BODY_BYTES // 65536 + 50):
            chunks += 1
            yield b" " * 65536

    try:
        async def go() -> tuple[httpx.Response, httpx.Response]:
            transport = httpx.ASGITransport(app=create_app(mem))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
                declared = await client.post("/api/facts", content=b"{}",
                                             headers={"content-length": str(MAX_BODY_BYTES + 1)})
                streamed = await client.post("/api/facts", content=body())
                return declared, streamed

        declared, streamed = asyncio.run(go())
    finally:
        mem.close()
    for r in (declared, streamed):
        assert r.status_code == 413, r.text
        assert r.json()["error"]["type"] == "BodyTooLargeError"
    assert chunks <= MAX_BODY_BYTES // 65536 + 2
