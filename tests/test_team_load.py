"""A bounded load test of a team on one server (≤ 60 s, loopback only): 16
agents over MCP streamable HTTP, each with its own token made by the real
CLI (``chronomem token create ... --json``), 8 per namespace (one of them
with a read-only token), against ONE real ``chronomem serve`` process on
PostgreSQL (a fresh schema), mixing writes (notes, and a single-valued
``status`` that agents of one namespace fight over) and reads. Afterwards:
nothing acknowledged is lost and each acknowledged version is recorded as
its agent's token name, no read or stored fact crosses namespaces, no
single-valued (subject, predicate) has overlapping believed intervals, the
read-only agents' write calls were all refused and nothing is recorded as
theirs. The harness is ``bench/team_load.py`` (its figures: docs/team.md).
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


def test_sixteen_agents_with_their_own_tokens_on_one_server(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    load = harness()
    db = pg_schema_url(request)
    started = time.monotonic()
    out = load.run(db, agents=16, readers=1, seconds=8.0, pool_size=10, log_dir=tmp_path)
    took = time.monotonic() - started
    print(f"\nteam load: {out['ok_calls']} calls in {out['seconds']} s = {out['throughput_per_s']}/s "
          f"(setup {out['setup_s']} s, all {took:.1f} s); write p50 {out['write_p50_ms']} p99 "
          f"{out['write_p99_ms']} ms, read p50 {out['read_p50_ms']} p99 {out['read_p99_ms']} ms; "
          f"refused as expected {out['refused_expected']}, unexpected errors {out['error_count']} {out['errors']}")
    assert took < 60, f"the load test took {took:.0f} s"
    assert out["error_count"] == 0, out["errors"]
    for check in load.CHECKS:
        assert out[check] == [], (check, out[check][:5])
    assert out["ok"]
    assert out["acknowledged_writes"] >= 50, out  # enough happened for the checks to mean something
    assert out["reads_ok"] >= 50, out
    # the read-only agents tried to write (35 % + 20 % of their calls) and each try was refused
    assert out["read_only_agents"] == 2
    assert out["refused_expected"] >= 5 and set(out["refusals"]) == {"fact_add:ForbiddenError"}, out["refusals"]
    assert out["access_log_lines"] >= out["calls"]  # every tool call is a logged POST /mcp with its principal
    with chronomem.open(db, namespace=load.NAMESPACES[0]) as mem:
        # the sixteen tokens the CLI made, each used (last_used_at is stamped on first use)
        tokens = {t.name: t for t in mem.tokens.list()}
        assert len(tokens) == 16 and all(t.last_used_at is not None for t in tokens.values()), tokens
        assert sorted(n for n, t in tokens.items() if t.scopes == ("read",)) == ["reader-14", "reader-15"]
        for ns in load.NAMESPACES:
            view = mem.view(ns)
            mine = {n for n, t in tokens.items() if t.namespaces == (ns,)}
            writers = {n for n in mine if tokens[n].scopes[-1] == "write"}
            assert len(mine) == 8 and len(writers) == 7, (ns, mine)
            # the checks were not vacuous: the namespace's agents shared project subjects
            shared = [p for p in load.PROJECTS if view.facts(p, "status", limit=1)]
            assert len(shared) >= 2, (ns, shared)
            notes = view.facts(predicate="note", limit=100_000)
            assert {f.subject.split("-item-")[0] for f in notes} == writers, ns  # each writer wrote
            assert {f.recorded_by for f in notes} == writers  # and is recorded as itself
            for name in writers:
                assert all(f.subject.startswith(name) for f in view.facts(predicate="note", recorded_by=name,
                                                                         limit=100_000))
            for name in mine - writers:
                assert view.facts(recorded_by=name, limit=1) == []


def test_the_checks_see_what_they_look_for(request: pytest.FixtureRequest) -> None:
    load = harness()
    db = pg_schema_url(request)
    load.prepare(db)
    team = [load.Agent("agent-00", "team-a", "write", "t0"), load.Agent("agent-01", "team-b", "write", "t1"),
            load.Agent("reader-02", "team-a", "read", "t2")]
    with chronomem.open(db, namespace="team-a") as mem:
        with mem.acting_as("agent-00"):
            ok = mem.add_fact("project-0", "status", "team-a:s1", valid_from="2024-01-01")
            stray = mem.add_fact("project-1", "status", "team-b:s2")  # a team-b value stored in team-a
        with mem.acting_as("agent-01"):  # team-b's agent, recorded in team-a
            other = mem.add_fact("agent-00-item-1", "note", "team-a:n1")
        with mem.acting_as("reader-02"):  # a read-only agent's write
            mem.add_fact("reader-02-item-3", "note", "team-a:r")
    tally = load.Tally()
    tally.acks = [load.Ack("agent-00", "team-a", ok.id, "project-0", "status", "team-a:s1"),
                  load.Ack("agent-01", "team-b", ok.id, "project-0", "status", "team-a:s1"),  # not in team-b: lost
                  load.Ack("agent-00", "team-a", stray.id, "project-1", "status", "team-a:s9"),  # stored otherwise
                  load.Ack("agent-00", "team-a", other.id, "agent-00-item-1", "note", "team-a:n1")]  # by another
    tally.cross = ["agent-01 in team-b read project-0 team-a:s1 by agent-00"]
    out = load.verify(db, tally, team)
    assert len(out["lost"]) == 2 and any(ok.id in x for x in out["lost"])
    assert any(f"{stray.id}: stored as" in x for x in out["lost"])
    assert out["misattributed"] == [f"{other.id} v1 written by agent-00, recorded by agent-01"]
    leaks = out["cross_namespace"]
    assert leaks[0].startswith("agent-01 in team-b")
    assert any("team-b:s2" in x for x in leaks)
    assert any("agent-01 of team-b recorded a fact in team-a" in x for x in leaks)
    assert any("stored in team-a by agent-01" in x for x in leaks)
    assert len(out["reader_writes"]) == 1 and "reader-02" in out["reader_writes"][0]
    assert out["cardinality_overlaps"] == []


def test_access_log_check() -> None:
    load = harness()
    team = [load.Agent("agent-00", "team-a", "write", "t0"), load.Agent("agent-01", "team-b", "write", "t1")]
    line = "time=2026-12-02T05:57:40.700Z method=POST path=/mcp status=200 ms=6.6 bytes=539 principal={} ns={} " \
           "client=127.0.0.1 rid=1"
    text = "\n".join([line.format("agent-00", "team-a"), line.format("agent-01", "team-b"),
                      line.format("agent-01", "team-a"), line.format("anonymous", "default"),
                      line.replace("path=/mcp", "path=/healthz").format("x", "y"), "INFO: started"])
    out = load.access_log(text, team)
    assert out["access_log_lines"] == 4
    wrong = [x.split("principal=")[1].split(" client=")[0] for x in out["access_log_wrong"]]
    assert wrong == ["agent-01 ns=team-a", "anonymous ns=default"]


def test_agents_plan() -> None:
    load = harness()
    plan = load.plan(16, readers=1)
    assert len(plan) == 16 and len({name for name, _, _ in plan}) == 16
    for ns in load.NAMESPACES:
        scopes = sorted(scope for _, n, scope in plan if n == ns)
        assert scopes == ["read"] + ["write"] * 7, (ns, scopes)


def test_overlap_check() -> None:
    load = harness()
    assert load.overlapping([("a", 1, 3), ("b", 3, 5), ("c", 5, None)]) == []
    assert len(load.overlapping([("a", 1, 4), ("b", 3, 5)])) == 1
    assert len(load.overlapping([("a", None, None), ("b", 3, 5)])) == 1  # an open end overlaps all later
    assert len(load.overlapping([("a", 1, 9), ("b", 2, 3), ("c", 4, 5)])) == 2  # nested, not only neighbours
