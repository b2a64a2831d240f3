"""The MCP listing fits a context window and keeps the protocol's promises:
its size, tool annotations, the capabilities advertised, and input schemas
that say exactly what each tool accepts (checked with an independent
``jsonschema`` verdict for valid, wrong-typed and extra arguments)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest

pytest.importorskip("mcp")

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.types import METHOD_NOT_FOUND, CallToolResult  # noqa: E402

import chronomem  # noqa: E402
from chronomem import FakeClock, Memory  # noqa: E402
from chronomem.adapters.mcp import INSTRUCTIONS, build_server  # noqa: E402

NOW = "2026-11-29T12:00:00Z"
#: the whole tools/list (names, titles, descriptions, schemas, annotations)
MAX_LISTING_CHARS = 12_000


@pytest.fixture()
def mem(tmp_path: Path) -> Memory:
    m = chronomem.open(tmp_path / "mem.db", clock=FakeClock(NOW, tick=0.001))
    yield m
    m.close()


def run(mem: Memory, body: Callable[[Client], Awaitable[Any]], mode: str | None = "legacy") -> Any:
    async def main() -> Any:
        async with Client(build_server(mem), **({"mode": mode} if mode else {})) as client:
            return await body(client)

    return anyio.run(main)


def listing(mem: Memory) -> list[dict[str, Any]]:
    tools = run(mem, lambda c: c.list_tools()).tools
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def test_listing_fits_the_budget(mem: Memory) -> None:
    tools = listing(mem)
    assert len(tools) == 14
    size = len(json.dumps(tools))
    assert size <= MAX_LISTING_CHARS, f"tools/list is {size} characters (budget {MAX_LISTING_CHARS})"


def test_descriptions_are_dedented_and_time_help_is_said_once(mem: Memory) -> None:
    text = json.dumps(listing(mem))
    assert "\\n" not in text and "  " not in text  # no docstring line breaks or source indentation
    assert "ISO" not in text and "3 days ago" not in text  # the time forms live in the instructions
    for needle in ("ISO-8601", "3 days ago", "server clock", "echoed back", "half-open", "`next`"):
        assert needle in INSTRUCTIONS


def test_every_tool_has_its_hints(mem: Memory) -> None:
    hints = {t["name"]: t["annotations"] for t in listing(mem)}
    read_only = {"facts", "timeline", "diff", "conflicts", "stats", "recall", "search"}
    idempotent = read_only | {"fact_add", "predicate_define", "entity_alias"}
    for name, h in hints.items():
        assert {k: h.get(k) for k in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")} == {
            "readOnlyHint": name in read_only,
            "destructiveHint": name == "fact_retract",  # the only tool that withdraws a belief
            "idempotentHint": name in idempotent,
            "openWorldHint": False,
        }, name


@pytest.mark.parametrize("mode", ["legacy", None])
def test_advertises_only_what_is_implemented(mem: Memory, mode: str | None) -> None:
    """No prompts, no resource subscriptions, no list-changed notifications
    (none is ever sent), on the handshake protocol and on 2026-07-28."""

    async def body(c: Client) -> Any:
        caps = c.server_capabilities
        with pytest.raises(MCPError) as exc:
            await c.list_prompts()
        return caps, exc.value

    caps, prompts_error = run(mem, body, mode)
    assert caps.prompts is None
    assert caps.tools is not None and not caps.tools.list_changed
    assert caps.resources is not None and not caps.resources.subscribe and not caps.resources.list_changed
    assert prompts_error.code == METHOD_NOT_FOUND


# -- schema verdict == outcome --------------------------------------------------
def _seeded(mem: Memory) -> dict[str, dict[str, Any]]:
    """One valid call per tool (against a memory holding the facts they need)."""
    fid = mem.add_fact("Acme", "ceo", "Alice", "2020").id
    gone = mem.add_fact("Acme", "cto", "Carol", "2021").id
    return {
        "fact_add": {"subject": "Acme", "predicate": "cfo", "object": "Bob", "valid_from": "2024", "valid_to": "2025",
                     "confidence": 0.5, "source": "notes", "episode_id": "ep-1", "properties": {"team": "x"},
                     "supersede": True, "literal": False},
        "fact_invalidate": {"subject": "Acme", "predicate": "ceo", "object": "Alice", "ended": "2025",
                            "reason": "left", "literal": False},
        "fact_correct": {"fact_id": fid, "confidence": 0.9, "reason": "typo", "valid_from": "2019"},
        "fact_retract": {"fact_id": gone, "reason": "never true"},
        "facts": {"subject": "Acme", "as_of": "2022", "known_at": "now", "direction": "both", "limit": 5,
                  "offset": 0, "literal": False, "decay_half_life": 90},
        "timeline": {"entity": "Acme", "start": "2019", "end": "today", "limit": 5, "offset": 0},
        "diff": {"t1": "2019", "t2": "today", "subject": "Acme", "axis": "valid", "limit": 5, "offset": 0},
        "conflicts": {"as_of": "2022", "limit": 5, "offset": 0},
        "predicate_define": {"name": "status", "cardinality": "one", "inverse": "status_of", "aliases": ["state"],
                             "description": "where it stands"},
        "entity_alias": {"name": "Acme", "alias": "ACME Inc"},
        "stats": {},
        "remember": {"text": "Dana: the review moved to Friday.", "occurred_at": "yesterday", "source": "chat",
                     "session": "s1", "speaker": "Dana", "metadata": {"title": "review"},
                     "facts": [{"subject": "review", "predicate": "on", "object": "Friday", "literal": True,
                                "valid_from": "today", "confidence": 0.8, "supersede": False}]},
        "recall": {"question": "Who leads Acme?", "at": "now", "known_at": "now", "budget_tokens": 500},
        "search": {"query": "review", "k": 3, "view": "raw", "at": "now", "session": "s1", "since": "2020",
                   "until": "tomorrow"},
    }


#: values of every JSON type, and bounds-breaking numbers
CANDIDATES: list[Any] = ["5", 5, 5.0, 0.5, -1, 10**9, True, None, [], ["x"], {}, {"k": 1}]


def _argument_error(r: CallToolResult) -> bool:
    """A refusal of the arguments themselves (as opposed to a refusal of their meaning)."""
    msg = "\n".join(getattr(b, "text", "") for b in r.content)
    return r.is_error and ("input schema" in msg or "unknown argument" in msg)


def _variants(args: dict[str, Any], schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every argument (and every field of remember's first fact) swapped for
    each candidate, plus an extra argument at both levels."""
    out = [("extra", {**args, "bogus": 1})]
    for name in schema["properties"]:
        for value in CANDIDATES:
            out.append((f"{name}={value!r}", {**args, name: value}))
    if "facts" in args:
        for field in schema["$defs"]["RememberFact"]["properties"]:
            for value in CANDIDATES:
                changed = copy.deepcopy(args)
                changed["facts"][0][field] = value
                out.append((f"facts[0].{field}={value!r}", changed))
        changed = copy.deepcopy(args)
        changed["facts"][0]["bogus"] = 1
        out.append(("facts[0] extra", changed))
    return out


def test_every_schema_verdict_is_the_outcome(tmp_path: Path) -> None:
    checked = refused = 0
    for i, name in enumerate(_seeded(chronomem.open(tmp_path / "probe.db", clock=FakeClock(NOW)))):
        m = chronomem.open(tmp_path / f"{i}.db", clock=FakeClock(NOW, tick=0.001))
        try:
            valid = _seeded(m)[name]

            async def body(c: Client, name: str = name, valid: dict[str, Any] = valid) -> list[str]:
                tool = next(t for t in (await c.list_tools()).tools if t.name == name)
                checker = Draft202012Validator(tool.input_schema)
                assert checker.is_valid(valid), f"{name}: the seed call breaks the schema"
                first = await c.call_tool(name, valid)
                assert not first.is_error, f"{name} valid call failed: {first.content}"
                problems = []
                for label, args in _variants(valid, tool.input_schema):
                    allowed = checker.is_valid(args)
                    r = await c.call_tool(name, args)
                    if allowed == _argument_error(r):
                        problems.append(f"{name} {label}: schema says {'valid' if allowed else 'invalid'}, "
                                        f"got {r.content[0].text if r.content else r}")  # type: ignore[union-attr]
                    nonlocal checked, refused
                    checked += 1
                    refused += not allowed
                return problems

            problems = run(m, body)
        finally:
            m.close()
        assert not problems, "\n".join(problems[:10])
    assert checked > 1000 and 0 < refused < checked  # both verdicts were exercised
