"""The SVG drawing module: lane packing, ticks, bars, escaping, graph layout."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from chronomem.adapters.web.svg import Bar, GraphEdge, GraphNode, graph_svg, pack_lanes, time_ticks, timeline_svg
from chronomem.core.time import parse_time

SVG = "{http://www.w3.org/2000/svg}"


def us(text: str) -> int:
    return parse_time(text).us


def bars_of(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [e for e in root.iter(SVG + "rect") if "bar" in (e.get("class") or "").split()]


def test_pack_lanes_shares_lanes_between_disjoint_intervals() -> None:
    a = Bar("a", "ceo", "Alice", us("2015"), us("2020"))
    b = Bar("b", "ceo", "Bob", us("2020"), None)  # touches a: half-open, same lane
    c = Bar("c", "ceo", "Carol", us("2018"), us("2019"))  # overlaps a, fits after d
    d = Bar("d", "ceo", "Dan", None, us("2016"))  # unknown start: first
    lanes = pack_lanes([a, b, c, d])
    assert [[x.fact_id for x in lane] for lane in lanes] == [["d", "c", "b"], ["a"]]
    for lane in lanes:
        for x, y in zip(lane, lane[1:], strict=False):
            assert x.end_us is not None and y.start_us is not None and x.end_us <= y.start_us


def test_time_ticks_pick_calendar_units() -> None:
    years = time_ticks(us("2001-06"), us("2024-06"))
    assert years and all(re.fullmatch(r"\d{4}", label) for _, label in years) and len(years) <= 12
    months = time_ticks(us("2024-01-15"), us("2024-09-15"))
    assert months and all(re.fullmatch(r"\d{4}-\d{2}", label) for _, label in months)
    days = time_ticks(us("2024-03-01"), us("2024-03-12"))
    assert days and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", label) for _, label in days)
    assert [t for t, _ in days] == sorted(t for t, _ in days)


def test_timeline_draws_one_bar_per_fact_with_open_ends_and_markers() -> None:
    bars = [
        Bar("f1", "ceo", "Alice", us("2015"), us("2020"), status="superseded", ended_by="superseded"),
        Bar("f2", "ceo", "Bob", us("2020"), None, status="valid"),
        Bar("f3", "ceo", "Carol", us("2021"), None, status="retracted"),
        Bar("f4", "located in", "Paris", None, None, status="valid", corrected=True),
    ]
    svg = timeline_svg(bars, us("2022"))
    ET.fromstring(svg)  # well-formed
    drawn = bars_of(svg)
    assert [e.get("data-fact-id") for e in drawn] == ["f1", "f2", "f3", "f4"]
    assert svg.count('class="arrow"') == 3  # f2, f3, f4 still open
    assert svg.count('class="endcap"') == 1  # f1 visibly ended
    assert svg.count('class="strike"') == 1  # f3 retracted
    assert svg.count('class="corr"') == 1
    assert 'mask="url(#m-open-both)"' in svg and 'mask="url(#m-open-end)"' in svg
    assert svg.count('class="cursor"') == 1
    x_cursor = float(re.search(r'class="cursor" x1="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    x_bob = float(drawn[1].get("x") or 0)
    assert x_cursor > x_bob  # the cursor (2022) is right of Bob's start (2020)


def test_timeline_escapes_text() -> None:
    evil = '<script>alert("x")</script>&'
    svg = timeline_svg([Bar("id\"<", evil, evil, us("2020"), us("2021"), title=evil)], None)
    assert "<script>" not in svg
    ET.fromstring(svg)


def test_timeline_with_no_bars_is_still_valid() -> None:
    root = ET.fromstring(timeline_svg([], None))
    assert root.get("id") == "timeline"


def test_graph_layout_edges_and_aggregate_node() -> None:
    nodes = [GraphNode("Bob", 1), GraphNode("Paris", 1), GraphNode("Berlin", 2, parent="Bob"),
             GraphNode("+5 more (2 hops)", 2, more=5)]
    edges = [GraphEdge("e1", "Acme", "Bob", "ceo"), GraphEdge("e2", "Acme", "Paris", "located <in>"),
             GraphEdge("e3", "Bob", "Berlin", "lives in"), GraphEdge("e4", "Bob", "Nowhere", "dropped")]
    svg = graph_svg("Acme", nodes, edges, link=lambda n: f"/entity/{n}/graph")
    root = ET.fromstring(svg)
    groups = [g for g in root.iter(SVG + "g") if (g.get("class") or "").startswith("node")]
    assert len(groups) == 5
    assert len([e for e in root.iter(SVG + "line") if e.get("class") == "edge"]) == 3  # e4 has no node
    assert "located &lt;in&gt;" in svg
    assert '+5 more' in svg
    # 1-hop nodes are nearer to the centre than 2-hop ones
    def pos(name: str) -> tuple[float, float]:
        g = next(g for g in groups if g.get("data-name") == name)
        c = g.find(SVG + "circle")
        assert c is not None
        return float(c.get("cx") or 0), float(c.get("cy") or 0)
    cx, cy = pos("Acme")
    d = {n: ((pos(n)[0] - cx) ** 2 + (pos(n)[1] - cy) ** 2) ** 0.5 for n in ("Bob", "Berlin")}
    assert d["Bob"] < d["Berlin"]


def test_graph_merges_parallel_edges() -> None:
    edges = [GraphEdge("e1", "Acme", "Bob", "ceo"), GraphEdge("e2", "Bob", "Acme", "advisor to")]
    root = ET.fromstring(graph_svg("Acme", [GraphNode("Bob", 1)], edges))
    lines = [e for e in root.iter(SVG + "line") if e.get("class") == "edge"]
    assert len(lines) == 1
    labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "elabel"]
    assert labels == ["ceo, advisor to"]
