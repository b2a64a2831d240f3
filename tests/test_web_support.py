"""Helpers for the web tests (no tests here): the story memory and an
in-process HTTP client over ``httpx.ASGITransport``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

import chronomem
from chronomem import FakeClock, Memory

#: facts (bars) the story draws on Acme's timeline
ACME_BARS = 7


def err(r: httpx.Response, status: int, kind: str | None = None) -> dict[str, Any]:
    """The typed error body of ``r``, after checking its status (and kind)."""
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert set(body) == {"type", "message"} and body["message"]
    if kind is not None:
        assert body["type"] == kind, body
    return dict(body)


def story(path: Path) -> Memory:
    """A small memory with supersession, an unknown start, a correction, a
    retraction, an invalidation and a review conflict."""
    mem = chronomem.open(str(path), clock=FakeClock("2025-01-01T00:00:00Z"))
    mem.define_predicate("ceo", "one")
    mem.define_predicate("lives in", "one")
    mem.set_entity("Acme", type="company", properties={"founded": 1990})
    mem.alias("Acme", "ACME Corp")
    mem.add_fact("Acme", "ceo", "Alice", valid_from="2015-03", source="report 2015")
    mem.add_fact("Acme", "ceo", "Bob", valid_from="2020-06")
    mem.add_fact("Acme", "located in", "Paris")
    partner = mem.add_fact("Acme", "partner", "Globex", valid_from="2018", valid_to="2022")
    mem.add_fact("Bob", "lives in", "Berlin", valid_from="2019")
    carol = mem.add_fact("Acme", "ceo", "Carol", valid_from="2021")
    mem.retract(carol.id, "wrong article")
    mem.correct(partner.id, valid_from="2017")
    mem.add_fact("Acme", "advisor", "Dave", valid_from="2019")
    mem.add_fact("Acme", "advisor", "Erin", valid_from="2020")
    mem.invalidate("Bob", "lives in", "Berlin", "2023-05")
    return mem


class Client:
    """A synchronous facade over an async httpx client bound to an ASGI app."""

    def __init__(self, app: Any, base_url: str = "http://127.0.0.1:8765") -> None:
        self.app = app
        self.base_url = base_url

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url=self.base_url) as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(go())

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)
