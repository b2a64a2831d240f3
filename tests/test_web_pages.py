"""The web view: every page and its .json twin, time bases, bad input, scale."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterator

import pytest

from chronomem import Memory
from chronomem.adapters.web import create_app
from chronomem.adapters.web.data import PAGE_BARS
from test_web_support import ACME_BARS, Client, story


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = story(tmp_path / "web.db")
    yield m
    m.close()


@pytest.fixture
def client(mem: Memory) -> Client:
    return Client(create_app(mem))


def bars(html: str) -> list[str]:
    start = html.index('<svg xmlns="http://www.w3.org/2000/svg" class="tl"')
    svg = html[start: html.index("</svg>", start) + 6]
    root = ET.fromstring(svg)
    return [e.get("data-fact-id") or "" for e in root.iter("{http://www.w3.org/2000/svg}rect")
            if "bar" in (e.get("class") or "").split()]


def twin(client: Client, url: str) -> tuple[str, dict[str, Any]]:
    """The page's HTML and its .json twin (same query)."""
    path, _, query = url.partition("?")
    jpath = "/index.json" if path == "/" else path + ".json"
    html = client.get(url)
    data = client.get(jpath + ("?" + query if query else ""))
    assert html.status_code == 200, html.text
    assert data.status_code == 200, data.text
    assert html.headers["content-type"].startswith("text/html")
    assert data.headers["content-type"].startswith("application/json")
    return html.text, data.json()


def test_index_stats_recent_and_search(client: Client) -> None:
    html, data = twin(client, "/")
    assert data["stats"]["entities"] >= 8 and data["recent"]
    assert len(data["recent"]) <= 20
    assert data["recent"][0]["at"] >= data["recent"][-1]["at"]  # newest first
    kinds = {e["kind"] for e in data["recent"]}
    assert "retracted" in kinds or "invalidated" in kinds or "corrected" in kinds
    assert 'id="recent"' in html and 'id="stats"' in html and 'id="search"' in html
    assert client.get("/.json").json()["stats"] == data["stats"]
    html, data = twin(client, "/?q=glob")
    assert [f["object"] for f in data["results"]] == ["Globex"]
    assert "Globex" in html and "1 fact(s) match" in html


def test_entity_page_and_twin(client: Client) -> None:
    html, data = twin(client, "/entity/Acme")
    assert data["entity"]["type"] == "company" and data["entity"]["aliases"] == ["ACME Corp"]
    assert data["timeline"]["total"] == ACME_BARS == len(data["timeline"]["bars"])
    assert sorted(bars(html)) == sorted(b["fact_id"] for b in data["timeline"]["bars"])
    status = {b["label"]: b["status"] for b in data["timeline"]["bars"]}
    assert status == {"Alice": "superseded", "Bob": "valid", "Carol": "retracted", "Paris": "valid",
                      "Globex": "ended", "Dave": "valid", "Erin": "valid"}
    corrected = {b["label"] for b in data["timeline"]["bars"] if b["corrected"]}
    assert corrected == {"Globex"}
    alice = next(b for b in data["timeline"]["bars"] if b["label"] == "Alice")
    assert alice["ended_by"] == "superseded" and alice["end_us"] is not None
    assert {f["object"] for f in data["valid_at_basis"]} == {"Bob", "Paris", "Dave", "Erin"}
    assert data["history"] and data["history"][0]["system_from"] >= data["history"][-1]["system_from"]
    assert "founded" in html and "ACME Corp" in html and 'class="cursor"' in html
    # bars link to the fact's other entity; a literal would have no link
    assert {b["label"]: b["target"] for b in data["timeline"]["bars"]}["Paris"] == "Paris"
    assert '<a href="/entity/Alice"><g class="fact"' in html
    # an alias resolves to the same entity
    assert client.get("/entity/ACME%20Corp.json").json()["entity"]["name"] == "Acme"


def test_entity_as_of_and_known_at(client: Client, mem: Memory) -> None:
    html, data = twin(client, "/entity/Acme?as_of=2019")
    assert data["basis"]["as_of"] == "2019"
    assert {f["object"] for f in data["valid_at_basis"]} == {"Alice", "Paris", "Globex", "Dave"}
    status = {b["label"]: b["status"] for b in data["timeline"]["bars"]}
    assert status["Alice"] == "valid" and status["Bob"] == "not_yet" and status["Erin"] == "not_yet"
    assert "as of <b>2019</b>" in html
    # statuses speak of the basis: "valid at 2019", never "valid now" (Fact.current keeps meaning "true now")
    assert {f["status_at_basis"] for f in data["valid_at_basis"]} == {"valid"}
    assert {f["object"]: f["current"] for f in data["valid_at_basis"]}["Alice"] is False
    assert "<h2>Facts valid at 2019 (4)</h2>" in html and '<span class="tag valid">valid at 2019</span>' in html
    assert "valid now" not in html
    # before Carol was retracted, she was believed CEO from 2021 and there was no advisor yet
    carol = next(f for f in mem.history("Acme") if f.object == "Carol")
    known = carol.system_from.isoformat()
    data = client.get("/entity/Acme.json", params={"known_at": known, "as_of": "2021-06"}).json()
    assert data["basis"]["known_at"] is not None
    assert {f["object"] for f in data["valid_at_basis"]} >= {"Carol"}
    # retracted later, but believed at known_at: labelled as it was then
    carol_then = next(f for f in data["valid_at_basis"] if f["object"] == "Carol")
    assert carol_then["believed_at_basis"] is True and carol_then["status_at_basis"] == "valid"
    labels = {b["label"]: b["status"] for b in data["timeline"]["bars"]}
    assert labels["Carol"] == "valid" and "Dave" not in labels


def test_entity_incoming_facts_are_grouped(client: Client) -> None:
    _html, data = twin(client, "/entity/Bob")
    groups = {b["group"]: b["label"] for b in data["timeline"]["bars"]}
    assert groups == {"lives in": "Berlin", "← ceo": "Acme"}
    berlin = next(b for b in data["timeline"]["bars"] if b["label"] == "Berlin")
    assert berlin["status"] == "invalidated" and berlin["ended_by"] == "invalidated"


def test_entity_errors(client: Client) -> None:
    for url in ("/entity/Nobody", "/entity/Nobody.json", "/entity/Nobody/graph", "/entity/Nobody/graph.json"):
        r = client.get(url)
        assert r.status_code == 404, url
        if url.endswith(".json"):
            assert r.json()["error"]["type"] == "EntityNotFoundError"
        else:
            assert "EntityNotFoundError" in r.text
    r = client.get("/entity/Acme.json?as_of=yesterday-ish")
    assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidTimeError"
    assert "as_of" in r.json()["error"]["message"]
    r = client.get("/entity/Acme?known_at=13-13")
    assert r.status_code == 400 and "InvalidTimeError" in r.text
    for bad in ("0", "x", "-1", "1.5"):
        r = client.get(f"/entity/Acme.json?page={bad}")
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInputError"
    # a page past the last is an empty page (it was a 400): a client paging on stops there
    past = client.get("/entity/Acme.json?page=99").json()
    assert past["valid_at_basis"] == past["history"] == past["timeline"]["bars"] == [] and past["next"] is None


def test_graph_changes_with_as_of(client: Client) -> None:
    html, data = twin(client, "/entity/Acme/graph?as_of=2019&hops=2")
    names = {n["name"] for n in data["nodes"]}
    assert {"Alice", "Globex", "Paris", "Dave"} <= names and "Bob" not in names
    assert {e["label"] for e in data["edges"]} >= {"ceo", "partner", "located in"}
    assert 'id="slider"' in html and 'class="graph"' in html and ">ceo<" in html
    _html, later = twin(client, "/entity/Acme/graph?as_of=2022-06&hops=2")
    names = {n["name"] for n in later["nodes"]}
    assert "Bob" in names and "Alice" not in names and "Globex" not in names
    assert "Berlin" in names and next(n for n in later["nodes"] if n["name"] == "Berlin")["hops"] == 2
    _html, one = twin(client, "/entity/Acme/graph?as_of=2022-06&hops=1")
    assert "Berlin" not in {n["name"] for n in one["nodes"]}
    for bad in ("3", "zero"):
        r = client.get(f"/entity/Acme/graph.json?hops={bad}")
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInputError"


def test_diff_page(client: Client) -> None:
    html, data = twin(client, "/diff?t1=2016&t2=2021&axis=valid")
    assert [(c["old"]["object"], c["new"]["object"]) for c in data["changed"]] == [("Alice", "Bob")]
    assert {f["object"] for f in data["added"]} >= {"Globex", "Dave", "Erin", "Berlin"}
    assert "Changed (1)" in html and "Alice" in html
    _html, sys_diff = twin(client, "/diff?t1=2025-01-01T00:00:05Z&t2=2025-06-01&axis=system&subject=Acme")
    assert sys_diff["axis"] == "system" and sys_diff["subject"] == "Acme"
    assert all(f["subject"] == "Acme" for f in sys_diff["added"])
    form = client.get("/diff")
    assert form.status_code == 200 and 'id="diff-form"' in form.text
    r = client.get("/diff.json?t1=2016")
    assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInputError"
    r = client.get("/diff.json?t1=2016&t2=2020&axis=sideways")
    assert r.status_code == 400 and "axis" in r.json()["error"]["message"]
    r = client.get("/diff?t1=2016&t2=never")
    assert r.status_code == 400 and 'class="err"' in r.text and 'id="diff-form"' in r.text


def test_conflicts_page(client: Client) -> None:
    html, data = twin(client, "/conflicts")
    assert data["count"] == 1
    c = data["conflicts"][0]
    assert (c["subject"], c["predicate"], c["kind"]) == ("Acme", "advisor", "review")
    assert 'href="/entity/Acme"' in html and "review" in html
    _html, early = twin(client, "/conflicts?as_of=2019-06")
    assert early["count"] == 0 and early["basis"]["as_of"] == "2019-06"
    assert client.get("/conflicts.json?as_of=nope").status_code == 400


def test_unknown_page_is_404(client: Client) -> None:
    r = client.get("/no/such/page")
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    r = client.post("/entity/Acme")
    assert r.status_code == 405


def test_text_is_escaped(tmp_path: Path) -> None:
    mem = story(tmp_path / "esc.db")
    evil = '<img src=x onerror="alert(1)">'
    mem.add_fact(evil, "says", "<script>bad()</script>", valid_from="2020")
    client = Client(create_app(mem))
    for url in ("/entity/" + evil.replace('"', "%22").replace(" ", "%20"), "/?q=img", "/diff?t1=2019&t2=2021"):
        r = client.get(url)
        assert r.status_code == 200, url
        assert "<script>bad()" not in r.text and "<img src=x" not in r.text
    mem.close()


def test_500_facts_stay_readable(tmp_path: Path) -> None:
    mem = story(tmp_path / "big.db")
    items = [{"subject": "Hub", "predicate": f"p{i % 7}", "object": f"Thing {i}", "valid_from": f"{1990 + i % 30}",
              "valid_to": f"{1991 + i % 30 + i % 3}"} for i in range(500)]
    mem.add_facts(items)
    client = Client(create_app(mem))
    html, data = twin(client, "/entity/Hub")
    assert data["timeline"]["total"] == 500 and data["pages"] == 4
    assert len(bars(html)) == PAGE_BARS == len(data["timeline"]["bars"])
    assert len(html) < 400_000 and "page <b>1</b>" in html
    _html, last = twin(client, "/entity/Hub?page=4")
    assert len(last["timeline"]["bars"]) == 500 - 3 * PAGE_BARS
    seen = set()
    for p in range(1, 5):
        seen |= {b["fact_id"] for b in client.get(f"/entity/Hub.json?page={p}").json()["timeline"]["bars"]}
    assert len(seen) == 500
    graph = client.get("/entity/Hub/graph.json?as_of=2005-06").json()
    assert graph["neighbors_total"] > 30  # more than one ring holds: the rest is one aggregate node
    assert len(graph["nodes"]) == 31 and graph["nodes"][-1]["more"] == graph["neighbors_total"] - 30
    mem.close()
