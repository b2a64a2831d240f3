"""``known_at`` on search and recall, and ``ingest --recorded-at``, through
the CLI and the MCP tools (the HTTP API's is in ``test_web_evidence.py``;
the views themselves in ``tests/contract/test_evidence_views.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

import chronomem
from chronomem import FakeClock, Memory
from chronomem.adapters.cli import main

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

from chronomem.adapters.mcp import build_server  # noqa: E402

TURNS = [
    {"text": "We chose Postgres for the billing service.", "speaker": "Ana", "timestamp": "2023-09-14T10:00:00Z"},
    {"text": "Postgres replication for billing is set up.", "speaker": "Ben", "timestamp": "2023-11-02T10:00:00Z"},
]


def _cli(db: Path, *args: str) -> Any:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--db", str(db), "--embedder", "none", *args, "--json"],
                                                      catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _texts(hits: list[dict[str, Any]]) -> list[str]:
    return sorted(h["episode"]["text"] for h in hits)


@pytest.mark.parametrize("recorded", ["now", "original"])
def test_cli_ingest_recorded_at_and_known_at(tmp_path: Path, recorded: str) -> None:
    db, path = tmp_path / "m.db", tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TURNS), encoding="utf-8")
    assert _cli(db, "ingest", str(path), "--recorded-at", recorded)["episodes"] == 2
    stored = [e.recorded_at.isoformat() for e in chronomem.open(db, embedder=None).episodes()]
    if recorded == "original":
        assert stored == ["2023-09-14T10:00:00+00:00", "2023-11-02T10:00:00+00:00"]
    else:
        assert all(s >= "2026" for s in stored)
    # said in 2023: as_world finds it there whatever the recording time
    assert len(_cli(db, "search", "Postgres billing", "--at", "2023-10")) == 1
    audit = _cli(db, "search", "Postgres billing", "--view", "as_recorded", "--at", "2023-10")
    known = _cli(db, "search", "Postgres billing", "--at", "2023-12", "--known-at", "2023-10")
    r = _cli(db, "recall", "what did we choose for billing?", "--at", "2023-12", "--known-at", "2023-10")
    if recorded == "original":
        assert _texts(audit) == _texts(known) == [TURNS[0]["text"]]
        assert [h["episode"]["text"] for h in r["hits"]] == [TURNS[0]["text"]]
    else:
        assert audit == known == [] and r["hits"] == []


def test_cli_ingest_original_refuses_a_future_time(tmp_path: Path) -> None:
    """An import skips and reports a record it cannot store, and stores the rest."""
    db, path = tmp_path / "m.db", tmp_path / "turns.jsonl"
    path.write_text(json.dumps({"text": "from the future", "timestamp": "2999-01-01"}) + "\n"
                    + json.dumps({"text": "from the past", "timestamp": "2001-01-01"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--db", str(db), "--embedder", "none", "ingest", str(path),
                                       "--recorded-at", "original", "--no-progress", "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    out = json.loads(result.stdout)
    assert (out["added"], out["skipped_by_reason"]) == (1, {"invalid": 1})
    assert "recorded_at" in out["skips"][0]["reason"] and "future" in out["skips"][0]["reason"]


def _call(mem: Memory, name: str, args: dict[str, Any]) -> CallToolResult:
    async def run() -> CallToolResult:
        async with Client(build_server(mem), mode="legacy") as client:
            return await client.call_tool(name, args)

    return anyio.run(run)


def test_mcp_search_and_recall_take_known_at(tmp_path: Path) -> None:
    clock = FakeClock("2024-03-01T09:00:00Z", tick=0.001)
    mem = chronomem.open(tmp_path / "m.db", clock=clock, embedder=None)
    first = mem.add_episode("The design review is on Tuesday.", occurred_at="2024-03-01T09:00:00Z")
    clock.set("2024-03-10T09:00:00Z")
    second = mem.add_episode("The design review moved to Thursday.", occurred_at="2024-03-04T09:00:00Z")
    mem.supersede_episode(first.id, second.id)
    clock.set("2024-03-20T09:00:00Z")
    try:
        def hits(name: str, args: dict[str, Any]) -> list[str]:
            r = _call(mem, name, args)
            assert not r.is_error, r.content
            data = r.structured_content
            assert data is not None
            return [h["id"] for h in data["hits"]]

        assert hits("search", {"query": "design review", "at": "2024-03-05"}) == [second.id]
        assert hits("search", {"query": "design review", "at": "2024-03-05", "known_at": "2024-03-06"}) == [first.id]
        assert hits("recall", {"question": "when is the design review?", "at": "2024-03-05",
                               "known_at": "2024-03-06"}) == [first.id]
        assert hits("recall", {"question": "when is the design review?", "at": "2024-03-05",
                               "known_at": "yesterday"}) == [second.id]
        bad = _call(mem, "search", {"query": "design review", "known_at": "the day after never"})
        assert bad.is_error and "known_at" in "".join(getattr(b, "text", "") for b in bad.content)
    finally:
        mem.close()
