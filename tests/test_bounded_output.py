"""Bounded output: on one entity with 50,000 facts every web page, ``.json``
twin, ``/api`` route and MCP tool or resource that lists facts, events or
conflicts answers under 1 MB, pages on (page 2 differs from page 1, ``next``
continues) and answers a page past the end with an empty page, not an error.

Time (the goal, 200 ms, is asserted when run by ``bench/bounded_bench.py``;
in the suite the bound is 1,000 ms, a guard against unbounded work: the
slowest route takes ~480 ms alone and over 600 ms beside the parallel suite): the best
of 3 in-process handler times must be under it where the
library read is bounded by the page (a deep offset walks the rows before it
on a narrow read, then reads only the page's in full), for a default page of the timeline (ordered on a
narrow read of every version; only the page's facts are built), for the
graph, and for conflicts and diffs (found on a narrow read of every fact;
only the page's conflicts, their first facts, and the page's diff entries
are built). The entity page (ordered on a narrow read too, but near the
bound: about 0.18 s measured, more at a deep page whose facts valid now sit
at a deep offset) and a 1,000-event timeline page are only checked for size
here (see docs/web.md, "Paging"); their times are printed with ``-s``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import anyio
import pytest

pytest.importorskip("starlette")
pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import chronomem  # noqa: E402
from chronomem import Memory  # noqa: E402
from chronomem.adapters.mcp import build_server  # noqa: E402
from chronomem.adapters.web.app import create_app  # noqa: E402
from chronomem.core.paging import (  # noqa: E402
    DEFAULT_PAGE_SIZE,
    HIT_FACTS,
    MAX_MULTI_PAGE_SIZE,
    MAX_OFFSET,
    MAX_PAGE_SIZE,
    RESOURCE_LINES,
)

MB = 1_000_000
#: the goal per route, measured alone by ``bench/bounded_bench.py`` (which sets
#: CHRONOMEM_TIMED=1). In the suite, beside the other tests on a 2-core
#: machine, the bound is a guard against unbounded work (an unpaged read of
#: this entity took 1-8 s), not the goal; it is counted in this process's CPU
#: time (the in-process server's threads included), so other processes
#: loading the machine do not move it.
FAST_MS = 200.0 if os.environ.get("CHRONOMEM_TIMED") == "1" else 1000.0
N_FACTS = 50_000


def _items(episode_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    # 40 undeclared predicates x 1,000 overlapping literal values: 40 review conflicts, valid now
    for p in range(40):
        items += [{"subject": "Big", "predicate": f"p{p}", "object": f"v{i}", "literal": True,
                   "valid_from": f"{2000 + i % 20}-01-01"} for i in range(1000)]
    # 9,000 ended facts: what a diff from 1995 removes, the timeline's 'ended' events
    items += [{"subject": "Big", "predicate": "q", "object": f"w{i}", "literal": True,
               "valid_from": f"{1990 + i % 10}-01-01", "valid_to": f"{2000 + i % 10}-06-01"} for i in range(9000)]
    # 1,000 edges to other entities: neighbours, and incoming facts of theirs
    # ... each citing one episode: the episode page lists 1,000 facts
    items += [{"subject": "Big", "predicate": "knows", "object": f"N{i}", "valid_from": "2010-01-01",
               "episode_id": episode_id} for i in range(1000)]
    assert len(items) == N_FACTS
    return items


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path: Path = tmp_path_factory.mktemp("bounded") / "big.db"
    mem = chronomem.open(path)
    ep = mem.add_episode("Big knows a thousand people, N0 to N999.", occurred_at="2010-01-01")
    items = _items(ep.id)
    t0 = time.perf_counter()
    mem.add_facts(items)
    built = time.perf_counter() - t0
    assert built < 15, f"building the 50k-fact entity took {built:.1f} s"
    assert mem.stats().facts == N_FACTS
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def episode(big: Memory) -> str:
    """The id of the episode the 1,000 ``knows`` facts cite."""
    return big.episodes(limit=1)[0].id


@pytest.fixture(scope="module")
def client(big: Memory) -> TestClient:
    return TestClient(create_app(big), base_url="http://127.0.0.1:8765")


def _best_of_3(fn: Callable[[], Any]) -> tuple[Any, float]:
    """The result and the least CPU ms of three calls (wall time when timed
    alone, CHRONOMEM_TIMED=1, as the bench reports it)."""
    clock = time.perf_counter if os.environ.get("CHRONOMEM_TIMED") == "1" else time.process_time
    best, out = float("inf"), None
    for _ in range(3):
        t0 = clock()
        out = fn()
        best = min(best, (clock() - t0) * 1000)
    return out, best


def _report(route: str, size: int, ms: float) -> None:
    print(f"{route:60s} {size / 1000:9.1f} kB {ms:8.1f} ms")


# -- HTTP: pages, .json twins and /api routes -------------------------------------
T = "t1=1995&t2=2024"
#: routes whose read is bounded by the page: size and time are asserted
FAST_ROUTES = [
    "/api/facts?subject=Big",
    f"/api/facts?subject=Big&limit={MAX_PAGE_SIZE}",
    "/api/facts?predicate=p3",
    "/api/facts?subject=Big&page=900",  # a deep offset: walked on narrow rows, only the page read in full
    "/api/entities/Big",
    f"/api/entities/Big?page_size={MAX_PAGE_SIZE}",
    "/",
    "/index.json",
    "/?q=Big",
    "/index.json?q=Big",
    "/api/search?q=v1",
    "/search.json?q=v1",
    "/search?q=thousand%20people&k=100",
    "/api/search?q=thousand%20people&k=100",
    "/api/timeline/Big",
    "/entity/Big/graph",  # edges read without the literal-valued facts, the time span from a narrow read
    "/entity/Big/graph.json",
    # conflicts and diffs: found on narrow rows, only the page built
    f"/diff?{T}",
    f"/diff.json?{T}",
    f"/api/diff?{T}",
    f"/api/diff?{T}&page_size={MAX_MULTI_PAGE_SIZE}",
    "/conflicts",
    "/conflicts.json",
    "/api/conflicts",
    f"/api/conflicts?page_size={MAX_PAGE_SIZE}",
]
#: routes whose analysis reads every version of the entity: size asserted, time reported
SLOW_ROUTES = [
    "/entity/Big",
    "/entity/Big.json",
    "/entity/Big?page=334",
    "/entity/Big.json?page=334",
    f"/api/timeline/Big?page_size={MAX_PAGE_SIZE}",  # 1,000 events: their facts and sentences built
    f"/entity/Big.json?page_size={MAX_MULTI_PAGE_SIZE}",
    f"/entity/Big?page_size={MAX_MULTI_PAGE_SIZE}",
]


def _get(client: TestClient, route: str) -> tuple[int, float]:
    r, ms = _best_of_3(lambda: client.get(route))
    assert r.status_code == 200, (route, r.status_code, r.text[:300])
    return len(r.content), ms


@pytest.mark.parametrize("route", FAST_ROUTES + ["/episode/{ep}", "/episode/{ep}.json", "/api/episodes/{ep}",
                                                 f"/api/episodes/{{ep}}?page_size={MAX_PAGE_SIZE}"])
def test_bounded_route_is_small_and_fast(client: TestClient, episode: str, route: str) -> None:
    route = route.replace("{ep}", episode)
    size, ms = _get(client, route)
    _report(route, size, ms)
    assert size < MB, f"{route}: {size} bytes"
    assert ms < FAST_MS, f"{route}: {ms:.0f} ms"


@pytest.mark.parametrize("route", SLOW_ROUTES)
def test_analysis_route_is_small(client: TestClient, route: str) -> None:
    size, ms = _get(client, route)
    _report(route, size, ms)
    assert size < MB, f"{route}: {size} bytes"


# -- paging over HTTP ----------------------------------------------------------------
def _ids(items: list[dict[str, Any]], key: str = "id") -> list[Any]:
    return [i[key] for i in items]


def test_api_facts_pages(client: TestClient) -> None:
    one = client.get("/api/facts?subject=Big").json()
    assert one["count"] == DEFAULT_PAGE_SIZE and one["page"] == 1 and one["next"] == 2
    two = client.get(f"/api/facts?subject=Big&page={one['next']}").json()
    assert two["count"] == DEFAULT_PAGE_SIZE and not set(_ids(one["facts"])) & set(_ids(two["facts"]))
    # pages tile the order: page 2 of 50 is the second half of page 1 of 100
    both = client.get("/api/facts?subject=Big&page_size=100").json()
    assert _ids(both["facts"]) == _ids(one["facts"]) + _ids(two["facts"])
    last = client.get(f"/api/facts?subject=Big&page_size={MAX_PAGE_SIZE}&page={N_FACTS // MAX_PAGE_SIZE}").json()
    assert last["count"] == MAX_PAGE_SIZE and last["next"] is None
    past = client.get(f"/api/facts?subject=Big&page={N_FACTS // DEFAULT_PAGE_SIZE + 1}").json()
    assert past["facts"] == [] and past["next"] is None


def test_api_entity_and_timeline_page(client: TestClient) -> None:
    e1 = client.get("/api/entities/Big").json()
    e2 = client.get(f"/api/entities/Big?page={e1['next']}").json()
    assert e1["count"] == e2["count"] == DEFAULT_PAGE_SIZE
    assert not set(_ids(e1["facts"])) & set(_ids(e2["facts"]))
    assert client.get("/api/entities/Big?page=10000").json()["facts"] == []
    t1 = client.get("/api/timeline/Big").json()
    t2 = client.get(f"/api/timeline/Big?page={t1['next']}").json()
    assert t1["count"] == t2["count"] == DEFAULT_PAGE_SIZE and t1["events"] != t2["events"]
    assert t1["events"][-1]["at"] <= t2["events"][0]["at"]  # chronological across pages
    past = client.get("/api/timeline/Big?page=10000").json()
    assert past["events"] == [] and past["next"] is None


def test_entity_page_pages_every_list(client: TestClient) -> None:
    one = client.get("/entity/Big.json").json()
    size = one["page_size"]
    assert len(one["valid_at_basis"]) == len(one["timeline"]["bars"]) == len(one["history"]) == size
    assert one["timeline"]["total"] == one["history_total"] == N_FACTS and one["next"] == 2
    two = client.get("/entity/Big.json?page=2").json()
    assert not set(_ids(one["valid_at_basis"])) & set(_ids(two["valid_at_basis"]))
    assert _ids(one["history"]) != _ids(two["history"])
    assert one["timeline"]["bars"] != two["timeline"]["bars"]
    # was: the same 11.9 MB on every page, and an error past the last
    past = client.get("/entity/Big.json?page=5000").json()
    assert past["valid_at_basis"] == past["history"] == past["timeline"]["bars"] == [] and past["next"] is None
    html = client.get("/entity/Big?page=2").text
    assert 'rel="next" href="/entity/Big?page=3"' in html


def test_episode_page_pages_the_facts_citing_it(client: TestClient, episode: str) -> None:
    one = client.get(f"/api/episodes/{episode}").json()
    assert len(one["facts"]) == DEFAULT_PAGE_SIZE and one["facts_page"]["total"] == 1000
    two = client.get(f"/episode/{episode}.json?page={one['facts_page']['next']}").json()
    assert not {f["fact"]["id"] for f in one["facts"]} & {f["fact"]["id"] for f in two["facts"]}
    assert client.get(f"/api/episodes/{episode}?page=1000").json()["facts"] == []
    assert 'rel="next"' in client.get(f"/episode/{episode}").text


def test_a_hit_lists_its_first_facts(client: TestClient, big: Memory) -> None:
    hit = client.get("/api/search?q=thousand%20people").json()["hits"][0]
    assert hit["facts_total"] == 1000 and len(hit["facts"]) == HIT_FACTS
    assert hit["episode"]["fact_ids_total"] == 1000 and len(hit["episode"]["fact_ids"]) == HIT_FACTS

    async def body(c: Client) -> dict[str, Any]:
        r = await c.call_tool("search", {"query": "thousand people"})
        assert r.structured_content is not None and "more fact(s)" in str(r.content[0])
        return r.structured_content["hits"][0]  # type: ignore[no-any-return]

    mcp_hit = _mcp(big, body)
    assert mcp_hit["facts_total"] == 1000 and len(mcp_hit["facts"]) == len(mcp_hit["fact_ids"]) == HIT_FACTS


def test_conflicts_and_diff_page(client: TestClient) -> None:
    c1 = client.get("/conflicts.json?page_size=10").json()
    assert c1["count"] == 10 and c1["next"] == 2
    assert all(c["facts_total"] >= len(c["facts"]) for c in c1["conflicts"])
    assert max(c["facts_total"] for c in c1["conflicts"]) == 1000
    c2 = client.get("/api/conflicts?page_size=10&page=2").json()
    key = [(c["subject"], c["predicate"], c["overlap_from"]) for c in c1["conflicts"]]
    assert key != [(c["subject"], c["predicate"], c["overlap_from"]) for c in c2["conflicts"]]
    assert client.get("/api/conflicts?page=1000").json()["conflicts"] == []
    d1 = client.get(f"/diff.json?{T}").json()
    assert d1["totals"]["added"] > 40_000 and len(d1["added"]) == DEFAULT_PAGE_SIZE and d1["next"] == 2
    d2 = client.get(f"/api/diff?{T}&page=2").json()
    assert not set(_ids(d1["added"])) & set(_ids(d2["added"]))
    past = client.get(f"/api/diff?{T}&page=10000").json()
    assert past["added"] == past["removed"] == past["changed"] == [] and past["next"] is None


@pytest.mark.parametrize("query", ["page=0", "page=-1", "page=x", f"page_size={MAX_PAGE_SIZE + 1}", "page_size=0",
                                   "limit=0", "page=1e3", "page=99999999999999999999", "page_size=１０",
                                   "page=100000"])  # the last: a page starting past the deepest offset
def test_bad_paging_is_a_400(client: TestClient, query: str) -> None:
    for route in ("/api/facts?subject=Big&", "/api/timeline/Big?", "/entity/Big.json?", "/api/conflicts?"):
        if query.startswith("limit") and not route.startswith("/api/"):
            continue  # `limit` is the /api routes' other name for page_size
        r = client.get(route + query)
        assert r.status_code == 400, (route + query, r.status_code)
        # past a maximum: the limit error every count past its maximum gives
        past_max = query in (f"page_size={MAX_PAGE_SIZE + 1}", "page=99999999999999999999")
        assert r.json()["error"]["type"] == ("LimitExceededError" if past_max else "InvalidInputError"), query


# -- MCP tools and the entity resource -----------------------------------------------
def _mcp(mem: Memory, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(build_server(mem), mode="legacy") as c:
            return await body(c)

    return anyio.run(main)


MCP_CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("facts", {"subject": "Big"}, True),
    ("facts", {"subject": "Big", "limit": MAX_PAGE_SIZE}, True),
    ("facts", {"subject": "Big", "direction": "both", "as_of": "now", "limit": MAX_PAGE_SIZE}, True),
    ("facts", {"limit": MAX_PAGE_SIZE, "offset": 40_000}, True),
    ("search", {"query": "v1", "k": 1000}, True),
    ("search", {"query": "thousand people", "k": 1000}, True),
    ("recall", {"question": "What about Big?"}, False),
    ("timeline", {"entity": "Big"}, True),
    ("timeline", {"entity": "Big", "limit": MAX_PAGE_SIZE}, False),  # 1,000 events built: near the bound
    ("diff", {"t1": "1995", "t2": "2024"}, True),
    ("diff", {"t1": "1995", "t2": "2024", "limit": MAX_MULTI_PAGE_SIZE}, True),
    ("conflicts", {}, True),
    ("conflicts", {"limit": MAX_PAGE_SIZE}, True),
]


def _size(r: CallToolResult) -> int:
    return len(r.model_dump_json(by_alias=True, exclude_none=True))


def test_mcp_tools_are_small(big: Memory) -> None:
    async def body(c: Client) -> list[tuple[str, int, float, bool]]:
        out = []
        for name, args, fast in MCP_CALLS:
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                r = await c.call_tool(name, args)
                best = min(best, (time.perf_counter() - t0) * 1000)
            assert not r.is_error, (name, args, r.content)
            out.append((f"mcp {name} {json.dumps(args)}", _size(r), best, fast))
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            res = await c.read_resource("chronomem://entity/Big")
            best = min(best, (time.perf_counter() - t0) * 1000)
        text = res.contents[0].text  # type: ignore[union-attr]
        assert len(text.splitlines()) == RESOURCE_LINES + 1 and "offset=" in text.splitlines()[-1]
        out.append(("mcp resource chronomem://entity/Big", len(text.encode()), best, True))
        return out

    for label, size, ms, fast in _mcp(big, body):
        _report(label, size, ms)
        assert size < MB, f"{label}: {size} bytes"
        if fast:
            assert ms < FAST_MS, f"{label}: {ms:.0f} ms"


def test_mcp_paging_continues_and_ends_empty(big: Memory) -> None:
    async def body(c: Client) -> None:
        for name, args, key in (("facts", {"subject": "Big"}, "facts"), ("timeline", {"entity": "Big"}, "events"),
                                ("conflicts", {"limit": 10}, "conflicts"),
                                ("diff", {"t1": "1995", "t2": "2024"}, "added")):
            one = (await c.call_tool(name, args)).structured_content
            assert one is not None and one["next"] is not None, name
            two = (await c.call_tool(name, {**args, "offset": one["next"]})).structured_content
            assert two is not None and two[key] and two[key] != one[key], name
            past = await c.call_tool(name, {**args, "offset": MAX_OFFSET})
            assert not past.is_error and past.structured_content is not None, name
            assert past.structured_content[key] == [] and past.structured_content["next"] is None, name
        zero = await c.call_tool("facts", {"subject": "Big", "limit": 0})
        assert zero.is_error and "limit" in str(zero.content[0])
        assert "no facts match" not in str(zero.content[0])

    _mcp(big, body)


def test_library_pages_without_building_the_rest(big: Memory) -> None:
    page = big.facts("Big", direction="both", limit=50, offset=100)
    assert [f.id for f in page] == [f.id for f in big.facts("Big", direction="both", limit=150)][100:]
    assert big.facts("Big", limit=10, offset=N_FACTS) == []
    events = big.timeline("Big", limit=10, offset=20)
    assert events == big.timeline("Big")[20:30]
    assert big.conflicts(limit=3, offset=1) == big.conflicts()[1:4]
    cut = big.conflicts(limit=2, offset=5, facts_per_conflict=3)
    assert [(c.facts, c.facts_total) for c in cut] == [(c.facts[:3], 1000) for c in big.conflicts()[5:7]]
    d, page = big.diff("1995", "2024"), big.diff("1995", "2024", limit=40, offset=9000)
    assert (page.added, page.removed, page.added_total, page.unchanged_total) == (
        d.added[9000:9040], d.removed[9000:9040], len(d.added), len(d.unchanged))
    assert big.history("Big", limit=5, offset=5) == big.history("Big")[5:10]
    with pytest.raises(chronomem.InvalidInputError):
        big.facts("Big", offset=-1)
    with pytest.raises(chronomem.InvalidInputError):
        big.timeline("Big", limit=-1)
