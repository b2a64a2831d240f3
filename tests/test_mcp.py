"""The MCP server in process: the SDK's own client over memory streams
(JSON-RPC framing, the legacy initialize handshake), every tool with good and
bad arguments, resources, and a schema/signature check of every tool."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.types import INVALID_PARAMS, CallToolResult  # noqa: E402

import chronomem  # noqa: E402
from chronomem import FakeClock, Memory  # noqa: E402
from chronomem.adapters.mcp import INSTRUCTIONS, build_server  # noqa: E402
from chronomem.adapters.mcp.server import tool_extras, tool_wraps  # noqa: E402

NOW = "2026-11-29T12:00:00Z"


@pytest.fixture()
def mem(tmp_path: Path) -> Memory:
    m = chronomem.open(tmp_path / "mem.db", clock=FakeClock(NOW, tick=0.001))
    yield m
    m.close()


def run(mem: Memory, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(build_server(mem), mode="legacy") as client:
            return await body(client)

    return anyio.run(main)


def call(mem: Memory, name: str, args: dict[str, Any]) -> CallToolResult:
    return run(mem, lambda c: c.call_tool(name, args))  # type: ignore[no-any-return]


def text(r: CallToolResult) -> str:
    return "\n".join(getattr(b, "text", "") for b in r.content)


def ok(r: CallToolResult) -> dict[str, Any]:
    assert not r.is_error, text(r)
    assert r.structured_content is not None
    return r.structured_content


def err(r: CallToolResult) -> str:
    assert r.is_error, f"expected an error, got: {text(r)}"
    msg = text(r)
    assert "Traceback" not in msg and "\n" not in msg
    return msg


# -- the handshake ------------------------------------------------------------
def test_handshake_instructions_tools_and_resources(mem: Memory) -> None:
    async def body(c: Client) -> tuple[Any, ...]:
        return c.instructions, await c.list_tools(), await c.list_resources(), await c.list_resource_templates()

    instructions, tools, resources, templates = run(mem, body)
    assert instructions == INSTRUCTIONS
    for needle in ("call `recall`", "`fact_add`", "`remember`", "`fact_invalidate`",
                   "Cite facts and evidence by id", "Single-valued"):
        assert needle in instructions
    names = [t.name for t in tools.tools]
    assert names == ["fact_add", "fact_invalidate", "fact_correct", "fact_retract", "facts", "timeline", "diff",
                     "conflicts", "predicate_define", "entity_alias", "stats", "remember", "recall", "search"]
    assert [str(r.uri) for r in resources.resources] == ["chronomem://stats"]
    assert [t.uri_template for t in templates.resource_templates] == ["chronomem://entity/{name}"]
    read_only = {t.name for t in tools.tools if t.annotations and t.annotations.read_only_hint}
    assert read_only == {"facts", "timeline", "diff", "conflicts", "stats", "recall", "search"}


# -- every tool's schema matches the Memory method it wraps ------------------
def test_tool_schemas_match_memory_signatures(mem: Memory) -> None:
    from chronomem.service.facts import _CORRECTABLE

    tools = run(mem, lambda c: c.list_tools()).tools
    wraps = tool_wraps()
    extras = tool_extras()
    assert {t.name for t in tools} == set(wraps), "every tool must declare the Memory method it wraps"
    assert {"remember", "recall", "search"} <= set(wraps)
    for tool in tools:
        method_name, omitted = wraps[tool.name]
        sig = inspect.signature(getattr(Memory, method_name))
        params = {n: p for n, p in sig.parameters.items()
                  if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        schema = tool.input_schema
        props = set(schema.get("properties", {}))
        required = set(schema.get("required", []))
        for name in omitted:
            assert name in params, f"{tool.name}: omits {name!r}, which {method_name}() does not have"
        expected = (set(params) - omitted) | extras.get(tool.name, frozenset())
        if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            expected |= set(_CORRECTABLE)  # correct(fact_id, **changes)
        assert props == expected, f"{tool.name}: {sorted(props ^ expected)}"
        method_required = {n for n, p in params.items() if p.default is p.empty} - omitted
        assert required == method_required, f"{tool.name}: required {required} != {method_required}"
        # descriptions are optional per parameter (the listing must stay small), types are not
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("type"), f"{tool.name}.{name} has no type"
            assert "title" not in prop, f"{tool.name}.{name} repeats its name as a title"
        assert schema.get("additionalProperties") is False, tool.name
        assert tool.description and len(tool.description) > 40
        assert "\n" not in tool.description and "  " not in tool.description, "source indentation leaked"


# -- writes --------------------------------------------------------------------
def test_fact_add_structured_and_text(mem: Memory) -> None:
    data = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice",
                                     "valid_from": "2020", "source": "annual report"}))
    fact = data["fact"]
    assert fact["subject"] == "Acme" and fact["object"] == "Alice" and fact["valid_from"] == "2020"
    assert fact["current"] is True and fact["source"] == "annual report"
    assert data["times"] == {"valid_from": "2020"}
    stored = mem.fact(fact["id"])
    assert stored.object == "Alice" and stored.source == "annual report"
    r = call(mem, "fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020"})
    assert ok(r)["fact"]["id"] == fact["id"]  # a re-add never duplicates
    assert text(r) == f"recorded: Acme -ceo-> Alice [2020, …) (current) [{fact['id']}]"


def test_fact_add_relative_time_is_resolved_and_echoed(mem: Memory) -> None:
    r = call(mem, "fact_add", {"subject": "Bob", "predicate": "lives_in", "object": "Paris",
                               "valid_from": "last March", "valid_to": "yesterday"})
    data = ok(r)
    assert data["times"] == {"valid_from": "2026-03", "valid_to": "2026-11-28"}
    assert data["fact"]["valid_from"] == "2026-03" and data["fact"]["valid_to"] == "2026-11-28"
    assert "valid_from='last March' -> 2026-03" in text(r)
    assert "valid_to='yesterday' -> 2026-11-28" in text(r)


def test_fact_add_literal_values(mem: Memory) -> None:
    data = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "headcount", "object": 42}))
    assert data["fact"]["object"] == 42 and data["fact"]["literal"] is True
    data = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "motto", "object": "move fast",
                                     "literal": True}))
    assert data["fact"]["literal"] is True
    assert mem.facts("Acme", "motto")[0].literal


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"subject": "Acme", "predicate": "ceo"}, "missing required argument 'object'"),
        ({"subject": "Acme", "predicate": "ceo", "object": "A", "valid_form": "2020"},
         "unknown argument(s) 'valid_form'"),
        ({"subject": "Acme", "predicate": "ceo", "object": "A", "valid_from": "someday"},
         "invalid time for valid_from"),
        ({"subject": "Acme", "predicate": "ceo", "object": "A", "valid_from": "2024", "valid_to": "2023"},
         "valid_to"),
        ({"subject": "   ", "predicate": "ceo", "object": "A"}, "empty"),
        ({"subject": "Acme", "predicate": "ceo", "object": "A", "confidence": 3}, "confidence"),
        ({"subject": "Acme", "predicate": "ceo", "object": [1, 2]}, "argument 'object'"),
    ],
)
def test_fact_add_bad_arguments(mem: Memory, args: dict[str, Any], needle: str) -> None:
    msg = err(call(mem, "fact_add", args))
    assert msg.startswith("fact_add failed: ") and needle in msg
    assert mem.stats().facts == 0  # nothing was written


def test_single_valued_predicate_supersedes(mem: Memory) -> None:
    ok(call(mem, "predicate_define", {"name": "ceo", "cardinality": "one", "aliases": ["chief_executive"]}))
    first = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020"}))
    ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "chief_executive", "object": "Bob",
                              "valid_from": "2024"}))
    now = ok(call(mem, "facts", {"subject": "Acme", "predicate": "ceo", "as_of": "now"}))
    assert [f["object"] for f in now["facts"]] == ["Bob"]
    then = ok(call(mem, "facts", {"subject": "Acme", "predicate": "ceo", "as_of": "2021-06"}))
    assert [f["id"] for f in then["facts"]] == [first["fact"]["id"]]
    assert then["facts"][0]["valid_to"] == "2024"


def test_fact_invalidate(mem: Memory) -> None:
    ok(call(mem, "fact_add", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "valid_from": "2020"}))
    r = call(mem, "fact_invalidate", {"subject": "Alice", "predicate": "works_at", "object": "Acme",
                                      "ended": "3 days ago", "reason": "resigned"})
    data = ok(r)
    assert data["fact"]["valid_to"] == "2026-11-26" and data["fact"]["current"] is False
    assert data["times"] == {"ended": "2026-11-26"}
    assert text(r).splitlines()[-1].startswith("ended: Alice -works_at-> Acme [2020, 2026-11-26)")
    # invalidating it again (nothing valid now) is an error, never a silent success
    msg = err(call(mem, "fact_invalidate", {"subject": "Alice", "predicate": "works_at", "object": "Acme"}))
    assert "no fact Alice -works_at-> Acme is valid" in msg and "call `facts`" in msg


def test_fact_invalidate_of_nothing_is_an_error(mem: Memory) -> None:
    msg = err(call(mem, "fact_invalidate", {"subject": "Nobody", "predicate": "ceo", "object": "X"}))
    assert msg.startswith("fact_invalidate failed: no fact Nobody -ceo-> X")
    msg = err(call(mem, "fact_invalidate", {"subject": "Nobody", "predicate": "ceo"}))
    assert "missing required argument 'object'" in msg


def test_fact_correct(mem: Memory) -> None:
    fid = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "hq", "object": "Pariss", "valid_from": "2019",
                                    "valid_to": "2021"}))["fact"]["id"]
    data = ok(call(mem, "fact_correct", {"fact_id": fid, "object": "Paris", "valid_to": "open"}))
    assert data["fact"]["object"] == "Paris" and data["fact"]["valid_to"] is None
    assert data["fact"]["id"] == fid and data["fact"]["version"] == 2
    data = ok(call(mem, "fact_correct", {"fact_id": fid, "valid_from": "unknown", "confidence": 0.5}))
    assert data["fact"]["valid_from"] is None and data["fact"]["confidence"] == 0.5
    assert [v.object for v in mem.versions(fid)] == ["Pariss", "Paris", "Paris"]
    assert "nothing to change" in err(call(mem, "fact_correct", {"fact_id": fid}))
    assert "no fact with id 'nope'" in err(call(mem, "fact_correct", {"fact_id": "nope", "object": "X"}))
    assert "missing required argument 'fact_id'" in err(call(mem, "fact_correct", {"object": "X"}))


def test_fact_retract(mem: Memory) -> None:
    fid = ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "rival", "object": "Initech"}))["fact"]["id"]
    data = ok(call(mem, "fact_retract", {"fact_id": fid, "reason": "never true"}))
    assert data["fact"]["id"] == fid
    assert mem.facts("Acme", "rival") == []
    assert "no longer believed" in err(call(mem, "fact_retract", {"fact_id": fid}))
    assert "no fact with id" in err(call(mem, "fact_retract", {"fact_id": "missing"}))


# -- reads -----------------------------------------------------------------------
def test_facts_filters_directions_limit_and_known_at(mem: Memory) -> None:
    for who in ("Alice", "Bob", "Carol"):
        ok(call(mem, "fact_add", {"subject": who, "predicate": "works_at", "object": "Acme", "valid_from": "2022"}))
    out = ok(call(mem, "facts", {"subject": "Acme", "direction": "in"}))
    assert sorted(f["subject"] for f in out["facts"]) == ["Alice", "Bob", "Carol"] and out["count"] == 3
    r = call(mem, "facts", {"subject": "Acme", "direction": "in", "limit": 2})
    assert ok(r)["count"] == 2 and ok(r)["next"] == 2 and text(r).endswith("(more: call again with offset=2)")
    rest = ok(call(mem, "facts", {"subject": "Acme", "direction": "in", "limit": 2, "offset": 2}))
    assert rest["count"] == 1 and rest["next"] is None
    assert {f["subject"] for f in ok(r)["facts"] + rest["facts"]} == {"Alice", "Bob", "Carol"}
    assert "argument 'limit'" in err(call(mem, "facts", {"limit": 0}))  # was: "no facts match"
    assert ok(call(mem, "facts", {"object": "Acme", "predicate": "works_at"}))["count"] == 3
    lines = text(call(mem, "facts", {"subject": "Alice"})).splitlines()
    assert len(lines) == 1 and lines[0].startswith("Alice -works_at-> Acme [2022, …) (current) [")
    # known_at before anything was recorded: nothing believed then
    assert ok(call(mem, "facts", {"subject": "Alice", "known_at": "2020"}))["count"] == 0
    assert text(call(mem, "facts", {"subject": "Nobody"})) == "no facts match"
    assert "direction" in err(call(mem, "facts", {"subject": "Acme", "direction": "sideways"}))
    assert "argument 'limit'" in err(call(mem, "facts", {"limit": -1}))
    assert "invalid time for known_at" in err(call(mem, "facts", {"known_at": "the day before"}))
    decayed = ok(call(mem, "facts", {"subject": "Alice", "decay_half_life": 1}))
    assert decayed["facts"][0]["confidence"] < 1.0


def test_timeline_and_entity_resource(mem: Memory) -> None:
    ok(call(mem, "fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020-01"}))
    r = call(mem, "timeline", {"entity": "Acme"})
    data = ok(r)
    kinds = [e["kind"] for e in data["events"]]
    assert kinds == ["started", "recorded"]
    assert data["events"][0]["at"] == "2020-01"
    assert text(r).splitlines()[0].startswith("2020-01 (valid) started: Acme -ceo-> Alice [")
    assert ok(call(mem, "timeline", {"entity": "Acme", "start": "2021", "end": "today"}))["events"] == []
    assert "no entity named 'Nobody'" in err(call(mem, "timeline", {"entity": "Nobody"}))

    async def body(c: Client) -> tuple[str, str, MCPError]:
        a = await c.read_resource("chronomem://entity/Acme")
        b = await c.read_resource("chronomem://stats")
        with pytest.raises(MCPError) as missing:
            await c.read_resource("chronomem://entity/Nobody%20Here")
        return a.contents[0].text, b.contents[0].text, missing.value  # type: ignore[union-attr]

    entity, stats, missing = run(mem, body)
    assert "started: Acme -ceo-> Alice" in entity
    assert stats.startswith("namespace default: 2 entities, 1 facts (1 current")
    # a missing resource is the protocol error -32602 (invalid params), not successful content
    assert missing.code == INVALID_PARAMS and "no entity named 'Nobody Here'" in missing.message
    assert missing.data == {"uri": "chronomem://entity/Nobody%20Here"}


def test_diff_on_both_axes(mem: Memory) -> None:
    ok(call(mem, "predicate_define", {"name": "status", "cardinality": "one"}))
    ok(call(mem, "fact_add", {"subject": "ProjectX", "predicate": "status", "object": "planned", "valid_from": "2024"}))
    ok(call(mem, "fact_add", {"subject": "ProjectX", "predicate": "status", "object": "shipped",
                              "valid_from": "2025-06"}))
    r = call(mem, "diff", {"t1": "2024-06", "t2": "today", "subject": "ProjectX"})
    data = ok(r)
    assert [(c["old"]["object"], c["new"]["object"]) for c in data["changed"]] == [("planned", "shipped")]
    assert data["times"] == {"t1": "2024-06", "t2": "2026-11-29"}
    assert "~ ProjectX -status-> planned" in text(r)
    sys_diff = ok(call(mem, "diff", {"t1": "2020", "t2": "now", "axis": "system"}))
    assert len(sys_diff["added"]) == 2
    assert "missing required argument 't2'" in err(call(mem, "diff", {"t1": "2020"}))
    assert "argument 'axis'" in err(call(mem, "diff", {"t1": "2020", "t2": "2021", "axis": "diagonal"}))


def test_conflicts(mem: Memory) -> None:
    assert text(call(mem, "conflicts", {})) == "no conflicts"
    ok(call(mem, "fact_add", {"subject": "Alice", "predicate": "lives_in", "object": "Paris", "valid_from": "2020"}))
    ok(call(mem, "fact_add", {"subject": "Alice", "predicate": "lives_in", "object": "Rome", "valid_from": "2021"}))
    data = ok(call(mem, "conflicts", {"as_of": "2022"}))
    assert data["count"] == 1 and data["conflicts"][0]["kind"] == "review"
    assert {f["object"] for f in data["conflicts"][0]["facts"]} == {"Paris", "Rome"}
    assert "invalid time for as_of" in err(call(mem, "conflicts", {"as_of": "whenever"}))


def test_predicate_define_and_entity_alias(mem: Memory) -> None:
    data = ok(call(mem, "predicate_define", {"name": "ceo", "cardinality": "one", "inverse": "ceo_of",
                                             "description": "chief executive"}))
    assert data["predicate"]["cardinality"] == "one" and data["predicate"]["inverse"] == "ceo_of"
    assert "argument 'cardinality'" in err(call(mem, "predicate_define", {"name": "x", "cardinality": "few"}))
    assert "missing required argument 'name'" in err(call(mem, "predicate_define", {}))
    ok(call(mem, "fact_add", {"subject": "Acme Corporation", "predicate": "ceo", "object": "Alice"}))
    data = ok(call(mem, "entity_alias", {"name": "Acme Corporation", "alias": "Acme"}))
    assert data["entity"]["name"] == "Acme Corporation" and "Acme" in data["entity"]["aliases"]
    assert ok(call(mem, "facts", {"subject": "Acme"}))["count"] == 1
    ok(call(mem, "fact_add", {"subject": "Initech", "predicate": "ceo", "object": "Bill"}))
    msg = err(call(mem, "entity_alias", {"name": "Acme Corporation", "alias": "Initech"}))
    assert "already names another entity" in msg and "pick another alias" in msg


def test_stats(mem: Memory) -> None:
    ok(call(mem, "fact_add", {"subject": "A", "predicate": "p", "object": "B"}))
    r = call(mem, "stats", {})
    data = ok(r)
    assert data["facts"] == 1 and data["entities"] == 2 and data["namespace"] == "default"
    assert text(r) == ("namespace default: 2 entities, 1 facts (1 current, 0 ended, 0 retracted), 1 versions, "
                       "1 predicates")
    assert "unknown argument(s) 'verbose'" in err(call(mem, "stats", {"verbose": True}))


def test_unknown_tool_is_a_protocol_error(mem: Memory) -> None:
    """The specification answers an unknown tool with JSON-RPC -32602, not an isError result."""
    async def body(c: Client) -> pytest.ExceptionInfo[MCPError]:
        with pytest.raises(MCPError) as exc:
            await c.call_tool("forget_everything", {})
        return exc

    exc = run(mem, body)
    assert exc.value.code == INVALID_PARAMS
    assert "forget_everything" in exc.value.message and "fact_add" in exc.value.message
