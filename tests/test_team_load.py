"""A bounded load test of a team on one database (≤ 60 s, loopback only):
16 agents over MCP streamable HTTP, in two namespaces, against real
``chronomem serve`` processes on PostgreSQL, mixing writes (notes, and a
single-valued ``status`` that agents of one namespace fight over) and reads.
Afterwards: nothing acknowledged is lost, no read or stored fact crosses
namespaces, no single-valued (subject, predicate) has overlapping believed
intervals. The harness is ``bench/team_load.py`` (its figures: docs/team.md).
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

import chronomem
from conftest import pg_schema_url

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")
pytest.importorskip("psycopg")

_REPO = Path(__file__).resolve().parents[1]


def harness() -> ModuleType:
    if str(_REPO) not in sys.path:  # bench is not an installed package
        sys.path.insert(0, str(_REPO))
    return importlib.import_module("bench.team_load")


def test_sixteen_agents_two_namespaces_nothing_lost_nothing_crossed(request: pytest.FixtureRequest,
                                                                     tmp_path: Path) -> None:
    load = harness()
    db = pg_schema_url(request)
    started = time.monotonic()
    out = load.run(db, agents=16, seconds=8.0, pool_size=10, log_dir=tmp_path)
    took = time.monotonic() - started
    print(f"\nteam load: {out['calls']} calls in {out['seconds']} s = {out['throughput_per_s']}/s, "
          f"p50 {out['p50_ms']} ms, p99 {out['p99_ms']} ms, errors {out['error_count']} {out['errors']}")
    assert took < 60, f"the load test took {took:.0f} s"
    assert out["error_count"] == 0, out["errors"]
    assert out["lost"] == [] and out["cross_namespace"] == [] and out["cardinality_overlaps"] == []
    assert out["acknowledged_writes"] >= 50, out  # enough happened for the checks to mean something
    assert out["access_log_lines"] >= out["calls"]  # every tool call is a logged POST /mcp
    # the checks were not vacuous: both namespaces wrote the same project subjects
    with chronomem.open(db, namespace=load.NAMESPACES[0]) as mem:
        for ns in load.NAMESPACES:
            view = mem.view(ns)
            shared = [p for p in load.PROJECTS if view.facts(p, "status", limit=1)]
            assert len(shared) >= 2, (ns, shared)
            agents = {f.subject.split("-item-")[0] for f in view.facts(predicate="note", limit=100_000)}
            assert len(agents) == 8, (ns, agents)  # eight agents in each namespace wrote


def test_the_checks_see_what_they_look_for(request: pytest.FixtureRequest) -> None:
    load = harness()
    db = pg_schema_url(request)
    load.prepare(db)
    with chronomem.open(db, namespace="team-a") as mem:
        ok = mem.add_fact("project-0", "status", "team-a:s1", valid_from="2024-01-01")
        stray = mem.add_fact("project-1", "status", "team-b:s2")  # a team-b value stored in team-a
    tally = load.Tally()
    tally.acks = [load.Ack("team-a", ok.id, "project-0", "status", "team-a:s1"),
                  load.Ack("team-b", ok.id, "project-0", "status", "team-a:s1"),  # not in team-b: lost
                  load.Ack("team-a", stray.id, "project-1", "status", "team-a:s9")]  # stored otherwise
    tally.cross = ["agent-01 in team-b read project-0 team-a:s1"]
    out = load.verify(db, tally)
    assert len(out["lost"]) == 2 and any(ok.id in x for x in out["lost"])
    assert out["cross_namespace"][0].startswith("agent-01") and any("team-b:s2" in x for x in out["cross_namespace"])
    assert out["cardinality_overlaps"] == []


def test_overlap_check() -> None:
    load = harness()
    assert load.overlapping([("a", 1, 3), ("b", 3, 5), ("c", 5, None)]) == []
    assert len(load.overlapping([("a", 1, 4), ("b", 3, 5)])) == 1
    assert len(load.overlapping([("a", None, None), ("b", 3, 5)])) == 1  # an open end overlaps all later
    assert len(load.overlapping([("a", 1, 9), ("b", 2, 3), ("c", 4, 5)])) == 2  # nested, not only neighbours
