"""``recorded_by`` on every surface: the CLI (a real subprocess: ``facts`` /
``history --recorded-by``, the history table's "by" column, ``--json``),
MCP tool results, the web view's history table and its .json twin, the
index's recent changes, and ``GET /api/facts?recorded_by=``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.adapters.web import create_app
from test_web_support import Client


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = chronomem.open(tmp_path / "m.db", clock=FakeClock("2026-01-01T00:00:00Z", tick=1.0), embedder=None)
    with m.acting_as("tok-a"):
        m.add_fact("Ada", "born_in", "Lodnon", valid_from="1815")
    with m.acting_as("tok-b"):
        m.correct(m.facts("Ada")[0].id, object="London", reason="typo")
        m.add_fact("Ada", "knows", "Babbage", valid_from="1833")
    yield m
    m.close()


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-m", "chronomem", "--db", str(db), *args], capture_output=True,
                         text=True, env=env, timeout=60)
    return out


def test_cli_filters_and_shows_who_recorded(mem: Memory) -> None:
    db = Path(mem.store.url.removeprefix("sqlite:///").removeprefix("sqlite://"))
    assert db.exists(), mem.store.url
    got = cli(db, "facts", "--recorded-by", "tok-b", "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert sorted((f["object"], f["recorded_by"]) for f in data) == [("Babbage", "tok-b"), ("London", "tok-b")]
    got = cli(db, "history", "Ada", "--recorded-by", "tok-a", "--json")
    assert got.returncode == 0, got.stderr
    assert [(f["object"], f["version"], f["recorded_by"]) for f in json.loads(got.stdout)] == [("Lodnon", 1, "tok-a")]
    table = cli(db, "history", "Ada")
    assert table.returncode == 0, table.stderr
    lines = [ln.split() for ln in table.stdout.splitlines() if ln.strip()]
    assert lines[0][:4] == ["fact", "valid", "recorded", "by"]
    assert [(ln[2], ln[6]) for ln in lines[2:]] == [("Lodnon", "tok-a"), ("London", "tok-b"), ("Babbage", "tok-b")]
    timeline = cli(db, "timeline", "Ada", "--json")
    events = json.loads(timeline.stdout)
    assert {e["recorded_by"] for e in events if e["kind"] == "corrected"} == {"tok-b"}
    assert {e["recorded_by"] for e in events if e["kind"] == "recorded"} == {"tok-a", "tok-b"}
    bad = cli(db, "facts", "--recorded-by", "x" * 201)
    assert bad.returncode == 1 and "recorded_by" in bad.stderr and bad.stdout == ""


def test_mcp_results_carry_recorded_by(mem: Memory) -> None:
    pytest.importorskip("mcp")
    from mcp import Client as McpClient

    from chronomem.adapters.mcp import build_server

    async def main() -> Any:
        async with McpClient(build_server(mem), mode="legacy") as client:
            facts = await client.call_tool("facts", {"subject": "Ada"})
            timeline = await client.call_tool("timeline", {"entity": "Ada"})
            return facts, timeline

    facts, timeline = anyio.run(main)
    got = facts.structured_content["facts"]
    assert sorted((f["object"], f["recorded_by"]) for f in got) == [("Babbage", "tok-b"), ("London", "tok-b")]
    events = timeline.structured_content["events"]
    assert any(e.get("recorded_by") == "tok-a" for e in events)


def test_web_history_recent_and_api_filter(mem: Memory) -> None:
    client = Client(create_app(mem))
    page = client.get("/entity/Ada")
    assert page.status_code == 200, page.text
    assert "<th>by</th>" in page.text and "tok-a" in page.text and "tok-b" in page.text
    twin = client.get("/entity/Ada.json").json()
    assert sorted((f["object"], f["version"], f["recorded_by"]) for f in twin["history"]) == [
        ("Babbage", 1, "tok-b"), ("Lodnon", 1, "tok-a"), ("London", 2, "tok-b")]
    index = client.get("/index.json").json()
    assert {e["recorded_by"] for e in index["recent"] if e["kind"] == "recorded"} == {"tok-a", "tok-b"}
    assert "<th>by</th>" in client.get("/").text
    api = client.get("/api/facts", params={"recorded_by": "tok-a"}).json()
    assert api["facts"] == []  # tok-a's only version is no longer believed
    api = client.get("/api/facts", params={"recorded_by": "tok-b", "subject": "Ada"}).json()
    assert sorted(f["object"] for f in api["facts"]) == ["Babbage", "London"]
    bad = client.get("/api/facts", params={"recorded_by": "x" * 201})
    assert bad.status_code == 400 and "recorded_by" in bad.text
