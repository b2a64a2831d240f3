"""The evidence part of the web view and the API: ``/search``,
``/episode/{id}`` (with their ``.json`` twins), evidence links on entity
pages, ``GET /api/search``, ``POST /api/episodes`` and
``GET /api/episodes/{id}``. Real SQLite files and the bundled embedder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from chronomem import Memory
from chronomem.adapters.web import create_app
from chronomem.service.evidence import MAX_EPISODE_CHARS
from test_web_support import Client, err, story


@dataclass
class Ids:
    job_old: str
    job_new: str
    meet_old: str
    meet_new: str
    xss: str


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Memory, Ids]]:
    """The story memory plus evidence: a job change (the old episode's fact
    is superseded) and a meeting that moved (the old episode is superseded)."""
    mem = story(tmp_path / "ev.db")
    mem.define_predicate("employer", "one")
    e1 = mem.add_episode("I just started a new job at Acme as a welder.", occurred_at="2020-03-01",
                         speaker="Sam", session="chat-1", source="chat log", metadata={"channel": "sms"})
    mem.add_fact("Sam", "employer", "Acme", valid_from="2020-03", episode_id=e1.id)
    e2 = mem.add_episode("I left Acme and joined Beta Corp this week.", occurred_at="2023-06-01", speaker="Sam",
                         session="chat-2")
    mem.add_fact("Sam", "employer", "Beta Corp", valid_from="2023-06", episode_id=e2.id)
    m1 = mem.add_episode("The design review meeting is on the 10th.", occurred_at="2024-10-01T09:00:00Z",
                         recorded_at="2024-10-01T09:00:00Z", speaker="Dana", session="planning")
    m2 = mem.add_episode("Update: the design review meeting moved to the 12th.", occurred_at="2024-10-05T09:00:00Z",
                         recorded_at="2024-10-05T09:00:00Z", speaker="Dana", session="planning")
    mem.supersede_episode(m1.id, m2.id)
    x = mem.add_episode('<script>alert("pwn")</script> & the <b>bold</b> plan', speaker="<img src=x>")
    yield mem, Ids(e1.id, e2.id, m1.id, m2.id, x.id)
    mem.close()


@pytest.fixture
def client(world: tuple[Memory, Ids]) -> Client:
    return Client(create_app(world[0]))


def hit_ids(data: dict[str, Any]) -> list[str]:
    return [h["episode"]["id"] for h in data["hits"]]


# -- /search ---------------------------------------------------------------
def test_search_form_without_query(client: Client) -> None:
    r = client.get("/search")
    assert r.status_code == 200 and 'id="search-form"' in r.text
    assert 'href="/search"' in r.text  # the header links to it
    data = client.get("/search.json").json()
    assert data["hits"] is None and data["query"] is None
    assert data["basis"]["view"] == "as_world" and data["basis"]["at"] is None and data["basis"]["k"] == 10
    assert data["basis"]["now"].startswith("2025-01-01")


def test_search_as_world_hides_superseded_evidence(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    data = client.get("/search.json", params={"q": "design review meeting"}).json()
    assert data["query"] == "design review meeting" and data["count"] == len(data["hits"])
    assert ids.meet_new in hit_ids(data) and ids.meet_old not in hit_ids(data)
    top = data["hits"][0]
    assert top["rank"] == 1 and top["episode"]["id"] == ids.meet_new
    parts = top["parts"]
    assert parts["fused"] > 0 and 0 < top["score"] < 1  # the learned ranker's probability (docs/evidence.md)
    assert parts["bm25_rank"] == 1 and parts["dense_rank"] is not None and parts["bm25"] is not None
    assert top["superseded"] is None and top["facts"] == [] and top["history"] is False
    html = client.get("/search", params={"q": "design review meeting"}).text
    assert f'href="/episode/{ids.meet_new}"' in html and ids.meet_old not in html
    assert "lexical rank" in html and "dense rank" in html and "fused" in html
    assert "view <b>as_world</b>" in html  # the basis used
    assert 'href="/search.json?q=design+review+meeting&amp;view=as_world&amp;k=10"' in html


def test_search_views_and_at(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    q = {"q": "design review meeting"}
    raw = client.get("/search.json", params={**q, "view": "raw"}).json()
    assert {ids.meet_old, ids.meet_new} <= set(hit_ids(raw))
    old = next(h for h in raw["hits"] if h["episode"]["id"] == ids.meet_old)
    assert old["superseded"]["by"] == ids.meet_new and old["superseded"]["at"].startswith("2024-10-05")
    html = client.get("/search", params={**q, "view": "raw"}).text
    assert "superseded</span> by" in html and f'href="/episode/{ids.meet_new}"' in html
    assert '<option selected>raw</option>' in html
    # before the update was said, the world view still holds the old plan (the
    # view is on the valid axis: what had been said by `at`, as known now)
    before = client.get("/search.json", params={**q, "view": "as_world", "at": "2024-10-03"}).json()
    assert before["basis"]["at"].startswith("2024-10-03") and before["basis"]["known_at"] is None
    assert ids.meet_old in hit_ids(before) and ids.meet_new not in hit_ids(before)
    # after it was said, as known once it was recorded: only the new plan; as
    # known before the supersession was recorded (2025-01-01): the old one still
    after = client.get("/search.json", params={**q, "view": "as_world", "at": "2024-10-07"}).json()
    assert ids.meet_new in hit_ids(after) and ids.meet_old not in hit_ids(after)
    unaware = client.get("/search.json", params={**q, "view": "as_world", "at": "2024-10-07",
                                                 "known_at": "2024-12-31"}).json()
    assert unaware["basis"]["known_at"].startswith("2024-12-31")
    assert {ids.meet_old, ids.meet_new} <= set(hit_ids(unaware))
    assert 'name="known_at" value="2024-12-31' in client.get(
        "/search", params={**q, "view": "as_world", "at": "2024-10-07", "known_at": "2024-12-31"}).text
    recorded = client.get("/search.json", params={**q, "view": "as_recorded", "at": "2024-10-07"}).json()
    assert set(hit_ids(recorded)) == {ids.meet_old, ids.meet_new}
    nothing = client.get("/search.json", params={**q, "view": "as_recorded", "at": "2019"}).json()
    assert nothing["hits"] == [] and nothing["count"] == 0
    assert 'id="no-hits"' in client.get("/search", params={**q, "view": "as_recorded", "at": "2019"}).text
    assert len(client.get("/search.json", params={**q, "view": "raw", "k": "1"}).json()["hits"]) == 1


def test_search_hits_list_current_and_history_facts(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    params = {"q": "Sam job at Acme welder", "view": "raw"}
    data = client.get("/search.json", params=params).json()
    by_id = {h["episode"]["id"]: h for h in data["hits"]}
    old, new = by_id[ids.job_old], by_id[ids.job_new]
    assert old["history"] is True and len(old["facts"]) == 1
    note = old["facts"][0]
    assert note["current"] is False and note["fact"]["object"] == "Acme" and note["ended_at"] == "2023-06"
    assert note["superseded_by"]["object"] == "Beta Corp" and "HISTORY" in note["line"]
    assert new["history"] is False and new["facts"][0]["current"] is True
    html = client.get("/search", params=params).text
    assert '<span class="tag">history</span>' in html and '<span class="tag current">current</span>' in html
    assert "superseded by" in html and 'href="/entity/Beta%20Corp"' in html
    # as_world now: the old job's evidence only supports ended facts, so it drops out
    world_now = client.get("/search.json", params={"q": "Sam job at Acme welder"}).json()
    assert ids.job_old not in hit_ids(world_now) and ids.job_new in hit_ids(world_now)


def test_search_escapes_episode_text(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    html = client.get("/search", params={"q": "bold plan script", "view": "raw"}).text
    assert ids.xss in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;pwn&quot;)&lt;/script&gt;" in html
    assert "<img src=x>" not in html and "&lt;img src=x&gt;" in html
    html = client.get("/search", params={"q": '"><script>x</script>'}).text
    assert "<script>x</script>" not in html


@pytest.mark.parametrize("params, kind, needle", [
    ({"q": "x", "k": "0"}, "InvalidInputError", "k must be"),
    ({"q": "x", "k": "many"}, "InvalidInputError", "k must be"),
    ({"q": "x", "k": "101"}, "LimitExceededError", "k must be at most 100"),
    ({"q": "x", "view": "sideways"}, "InvalidInputError", "view must be"),
    ({"q": "x", "at": "not a time"}, "InvalidTimeError", "at"),
])
def test_search_bad_input(client: Client, params: dict[str, str], kind: str, needle: str) -> None:
    for path in ("/search.json", "/api/search"):
        assert needle in err(client.get(path, params=params), 400, kind)["message"]
    r = client.get("/search", params=params)
    assert r.status_code == 400 and 'id="error"' in r.text


# -- /episode/{id} -----------------------------------------------------------
def test_episode_page_and_twin(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    data = client.get(f"/episode/{ids.job_old}.json").json()
    ep = data["episode"]
    assert ep["id"] == ids.job_old and ep["text"] == "I just started a new job at Acme as a welder."
    assert ep["occurred_at"].startswith("2020-03-01") and ep["recorded_at"].startswith("2025-01-01")
    assert (ep["speaker"], ep["session"], ep["source"]) == ("Sam", "chat-1", "chat log")
    assert ep["metadata"] == {"channel": "sms"}
    assert [f["fact"]["object"] for f in data["facts"]] == ["Acme"]
    assert data["facts"][0]["current"] is False and data["facts"][0]["fact"]["episode_id"] == ids.job_old
    assert data["facts"][0]["ended_at"] == "2023-06" and data["facts"][0]["superseded_by"]["object"] == "Beta Corp"
    assert data["superseded_by"] is None
    html = client.get(f"/episode/{ids.job_old}").text
    assert "I just started a new job at Acme as a welder." in html
    assert "speaker <b>Sam</b>" in html and "session <b>chat-1</b>" in html and "source <b>chat log</b>" in html
    assert "occurred 2020-03-01" in html and "channel" in html
    assert '<span class="tag">history</span>' in html and 'href="/entity/Sam"' in html
    assert "ended 2023-06" in html and "superseded by" in html and 'href="/entity/Beta%20Corp"' in html
    assert f'href="/episode/{ids.job_old}.json"' in html
    new = client.get(f"/episode/{ids.job_new}.json").json()
    assert new["facts"][0]["current"] is True and new["facts"][0]["superseded_by"] is None
    assert 'class="tag current"' in client.get(f"/episode/{ids.job_new}").text


def test_episode_mentions_and_superseded_link(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    data = client.get(f"/episode/{ids.meet_old}.json").json()
    assert [(m["phrase"], m["start"][:10]) for m in data["episode"]["mentions"]] == [("the 10th", "2024-10-10")]
    assert data["superseded_by"]["id"] == ids.meet_new and "12th" in data["superseded_by"]["text"]
    assert data["episode"]["superseded_at"].startswith("2024-10-05")
    html = client.get(f"/episode/{ids.meet_old}").text
    assert 'id="superseded"' in html and f'href="/episode/{ids.meet_new}"' in html
    assert 'id="mentions"' in html and "the 10th" in html and "2024-10-10" in html
    assert 'id="superseded"' not in client.get(f"/episode/{ids.meet_new}").text


def test_episode_escapes_and_unknown_ids(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    html = client.get(f"/episode/{ids.xss}").text
    assert "<script>alert" not in html and "&lt;script&gt;" in html and "<img src=x>" not in html
    err(client.get("/episode/nope.json"), 404, "EpisodeNotFoundError")
    r = client.get("/episode/%3Cscript%3Enope")
    assert r.status_code == 404 and "<script>nope" not in r.text and "&lt;script&gt;nope" in r.text


def test_entity_page_links_facts_to_their_evidence(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    html = client.get("/entity/Sam").text
    assert f'href="/episode/{ids.job_new}">evidence</a>' in html  # current fact
    assert f'href="/episode/{ids.job_old}">evidence</a>' in html  # history row
    assert 'class="evidence"' not in client.get("/entity/Bob").text  # facts without episodes: no link


# -- API ---------------------------------------------------------------------
def test_api_search_and_get_episode(client: Client, world: tuple[Memory, Ids]) -> None:
    _, ids = world
    data = client.get("/api/search", params={"q": "design review meeting", "view": "raw", "k": "5"}).json()
    assert data["basis"]["view"] == "raw" and data["basis"]["k"] == 5
    assert {ids.meet_old, ids.meet_new} <= set(hit_ids(data))
    # the API answer is the page's twin plus the echo of the times it resolved (none given here)
    assert data.pop("times") == {}
    assert data == client.get("/search.json", params={"q": "design review meeting", "view": "raw", "k": "5"}).json()
    assert "q" in err(client.get("/api/search"), 400, "InvalidInputError")["message"]
    err(client.get("/api/search", params={"q": "   "}), 400, "InvalidInputError")
    got = client.get(f"/api/episodes/{ids.meet_old}").json()
    assert got["episode"]["id"] == ids.meet_old and got["superseded_by"]["id"] == ids.meet_new
    assert got == client.get(f"/episode/{ids.meet_old}.json").json()
    err(client.get("/api/episodes/does-not-exist"), 404, "EpisodeNotFoundError")


def test_api_post_episode(client: Client, world: tuple[Memory, Ids]) -> None:
    mem, _ = world
    body = {"text": "We decided to ship the glider prototype on Friday.", "occurred_at": "2024-11-04T10:00:00Z",
            "speaker": "Kai", "session": "standup", "source": "notes", "metadata": {"room": "B"}}
    r = client.post("/api/episodes", json=body)
    assert r.status_code == 201, r.text
    ep = r.json()["episode"]
    assert ep["text"] == body["text"] and ep["speaker"] == "Kai" and ep["metadata"] == {"room": "B"}
    assert ep["occurred_at"].startswith("2024-11-04") and [m["phrase"] for m in ep["mentions"]] == ["on Friday"]
    assert mem.episode(ep["id"]).text == body["text"]
    hits = client.get("/api/search", params={"q": "glider prototype"}).json()["hits"]
    assert hits[0]["episode"]["id"] == ep["id"]
    minimal = client.post("/api/episodes", json={"text": "just a note"})
    assert minimal.status_code == 201 and minimal.json()["episode"]["occurred_at"] is None


@pytest.mark.parametrize("body, kind, needle", [
    ({"text": ""}, "InvalidInputError", "non-empty"),
    ({"text": "   "}, "InvalidInputError", "non-empty"),
    ({"text": 42}, "InvalidInputError", "non-empty"),
    ({"speaker": "Kai"}, "InvalidInputError", "text"),
    ({"text": "x" * (MAX_EPISODE_CHARS + 1)}, "LimitExceededError", "limit"),
    ({"text": "ok", "occurred_at": "yesterday-ish"}, "InvalidTimeError", "occurred_at"),
    ({"text": "ok", "recorded_at": "2024-13-45"}, "InvalidTimeError", "recorded_at"),
    ({"text": "ok", "occurred_at": 2024}, "InvalidTimeError", "occurred_at"),
    ({"text": "ok", "metadata": [1, 2]}, "InvalidInputError", "metadata"),
    ({"text": "ok", "speaker": ["a"]}, "InvalidInputError", "speaker"),
    ({"text": "ok", "mood": "happy"}, "InvalidInputError", "mood"),
])
def test_api_post_episode_bad_input(client: Client, world: tuple[Memory, Ids], body: dict[str, Any], kind: str,
                                    needle: str) -> None:
    mem, _ = world
    before = len(mem.episodes(limit=1000))
    assert needle in err(client.post("/api/episodes", json=body), 400, kind)["message"]
    assert len(mem.episodes(limit=1000)) == before  # nothing written


def test_api_post_episode_malformed_bodies(client: Client) -> None:
    err(client.post("/api/episodes", content=b"{not json", headers={"content-type": "application/json"}), 400)
    err(client.post("/api/episodes", json=["text"]), 400, "InvalidInputError")
    err(client.post("/api/episodes"), 400, "InvalidInputError")
    err(client.request("DELETE", "/api/episodes/x"), 405)


def test_api_post_episode_needs_the_token(world: tuple[Memory, Ids]) -> None:
    mem, ids = world
    c = Client(create_app(mem, token="s3cret"))
    body = {"text": "a guarded note"}
    err(c.post("/api/episodes", json=body), 401, "AuthenticationError")
    err(c.post("/api/episodes", json=body, headers={"Authorization": "Bearer nope"}), 403, "ForbiddenError")
    err(c.post("/api/episodes", json=body, headers={"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}),
        403, "ForbiddenError")
    assert c.post("/api/episodes", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 201
    # reads stay open on loopback
    assert c.get(f"/api/episodes/{ids.job_old}").status_code == 200
    assert c.get("/api/search", params={"q": "guarded note"}).status_code == 200
    # on a non-loopback bind every route needs it, pages included
    guarded = Client(create_app(mem, token="s3cret", protect_all=True))
    for url in ("/search?q=note", f"/episode/{ids.job_old}.json", "/api/search?q=note"):
        assert guarded.get(url).status_code == 401, url
        assert guarded.get(url, headers={"Authorization": "Bearer s3cret"}).status_code == 200, url


def test_openapi_documents_the_evidence_routes(client: Client) -> None:
    doc = client.get("/api/openapi.json").json()
    assert set(doc["paths"]["/api/search"]) == {"get"}
    assert set(doc["paths"]["/api/episodes"]) == {"post"}
    assert doc["paths"]["/api/episodes"]["post"]["security"] == [{"bearer": []}]
    assert set(doc["paths"]["/api/episodes/{episode_id}"]) == {"get"}
    new = doc["components"]["schemas"]["NewEpisode"]
    assert new["required"] == ["text"] and new["properties"]["text"]["maxLength"] == MAX_EPISODE_CHARS
