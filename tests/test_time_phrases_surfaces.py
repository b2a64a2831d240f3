"""One table of read-basis time phrases through all four surfaces: the Python
API, the CLI (click's CliRunner, in process, every row), the HTTP API
(httpx over ASGI) and MCP (the SDK's client over memory streams). Every
surface must resolve each phrase to the same instant and precision, read the
same facts as the ISO value it resolves to, and echo the resolution; a bad
phrase is a typed error naming the parameter everywhere; written times stay
strict ISO except in MCP's write tools.

The store clock is pinned at a Sunday 22:30:15 UTC in an Asia/Tokyo memory,
where it is already Monday 07:30:15, so calendar phrases show the memory's
zone at work ("today" is the 30th, not the UTC 29th)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import anyio
import httpx
import pytest
from click.testing import CliRunner, Result

import chronomem
from chronomem import FakeClock, InvalidTimeError, Memory
from chronomem.adapters.cli import main
from chronomem.adapters.web import create_app

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

from chronomem.adapters.mcp import build_server  # noqa: E402

NOW = "2026-11-29T22:30:15Z"  # Sunday in UTC; Monday 2026-11-30 07:30:15 in Tokyo
TZ = "Asia/Tokyo"
SEEDED_AT = "2026-11-01T00:00:00Z"  # every fact was recorded then (system time)

#: (phrase, resolved value as rendered in the memory's zone, precision)
TABLE: list[tuple[str, str, str]] = [
    ("now", "2026-11-30T07:30:15+09:00", "second"),
    ("today", "2026-11-30", "day"),
    ("yesterday", "2026-11-29", "day"),
    ("Tomorrow", "2026-12-01", "day"),
    ("3 days ago", "2026-11-27", "day"),
    ("two weeks ago", "2026-11-16", "day"),
    ("in 3 days", "2026-12-03", "day"),
    ("6 months ago", "2026-05-30", "day"),
    ("a year ago", "2025-11-30", "day"),
    ("2 hours ago", "2026-11-30T05:30+09:00", "minute"),
    ("in 45 minutes", "2026-11-30T08:15+09:00", "minute"),
    ("last week", "2026-11-23", "day"),
    ("next week", "2026-12-07", "day"),
    ("last month", "2026-10", "month"),
    ("this month", "2026-11", "month"),
    ("next year", "2027", "year"),
    ("last year", "2025", "year"),
    ("this year", "2026", "year"),
    ("last March", "2026-03", "month"),
    ("next March", "2027-03", "month"),
    ("last Monday", "2026-11-23", "day"),
    ("next Friday", "2026-12-04", "day"),
    ("last quarter", "2026-07", "month"),
    ("April 2022", "2022-04", "month"),
    ("Apr 2022", "2022-04", "month"),
    ("Q3 2024", "2024-07", "month"),
    ("2024 Q3", "2024-07", "month"),
    ("2024-Q3", "2024-07", "month"),
    ("2024", "2024", "year"),
    ("2024-03-05", "2024-03-05", "day"),
    ("2024-03-05T10:30:00Z", "2024-03-05T19:30:00+09:00", "second"),
    ("2024-03-05T10:30", "2024-03-05T10:30+09:00", "minute"),
]
BAD = ["the day after never", "2025-13-45", "this Monday", "Q5 2024", "in 9000 years"]


def ceo(resolved: str) -> str:
    """The CEO whose term starts exactly at ``resolved``."""
    return f"ceo {resolved}"


def open_memory(path: Path, clock: FakeClock) -> Memory:
    return chronomem.open(path, timezone=TZ, clock=clock, embedder=None)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Tokyo memory where a new CEO of Acme starts at every instant the
    table resolves to, so each row reads exactly one, different, CEO."""
    path = tmp_path_factory.mktemp("phrases") / "m.db"
    mem = open_memory(path, FakeClock(SEEDED_AT, tick=0.001))
    mem.define_predicate("ceo", "one")
    starts = sorted({expected for _, expected, _ in TABLE}, key=lambda t: mem.parse_time(t).us)
    for start in starts:  # in time order: each supersedes the one before at its start
        mem.add_fact("Acme", "ceo", ceo(start), valid_from=start)
    mem.add_episode("Acme named a new chief executive today", occurred_at="2026-11-28T10:00:00+09:00")
    mem.close()
    return path


@pytest.fixture(scope="module")
def mem(db: Path) -> Iterator[Memory]:
    m = open_memory(db, FakeClock(NOW, tick=0))
    yield m
    m.close()


@pytest.fixture()
def fresh(tmp_path: Path) -> Iterator[Memory]:
    m = open_memory(tmp_path / "fresh.db", FakeClock(NOW, tick=0.001))
    yield m
    m.close()


def test_the_table_is_large_and_each_row_reads_a_different_start(mem: Memory) -> None:
    assert len(TABLE) >= 20
    starts = {expected for _, expected, _ in TABLE}
    assert len(starts) >= 25
    assert len({mem.parse_time(s).us for s in starts}) == len(starts)  # no two rows share an instant
    assert len(mem.facts("Acme", "ceo")) == len(starts)


# -- Python -----------------------------------------------------------------
@pytest.mark.parametrize(("phrase", "expected", "precision"), TABLE)
def test_python(mem: Memory, phrase: str, expected: str, precision: str) -> None:
    rt = mem.resolve_time(phrase, "as_of")
    assert (rt.render(mem.tz), rt.point.precision.label) == (expected, precision)
    assert rt.point == mem.parse_time(expected)
    try:
        mem.parse_time(phrase)  # the strict reader of written times
    except InvalidTimeError:
        assert rt.relative  # a phrase: worth echoing
    else:
        assert not rt.relative
    got = mem.facts("Acme", "ceo", as_of=phrase)
    assert [f.object for f in got] == [ceo(expected)]
    assert [f.id for f in got] == [f.id for f in mem.facts("Acme", "ceo", as_of=expected)]


def test_python_other_read_bases(mem: Memory) -> None:
    assert mem.facts(known_at="a year ago") == []  # everything was recorded on 2026-11-01
    assert [f.id for f in mem.facts(known_at="yesterday")] == [f.id for f in mem.facts()]
    assert mem.diff("Q3 2024", "now").to_dict() == mem.diff("2024-07", "2026-11-30T07:30:15+09:00").to_dict()
    assert mem.timeline("Acme", "April 2022", "next year") == mem.timeline("Acme", "2022-04", "2027")
    assert [f.id for f in mem.between("last March", "next month", subject="Acme")] == \
        [f.id for f in mem.between("2026-03", "2026-12", subject="Acme")]
    hits = mem.search("chief executive", at="now", since="last week", until="tomorrow")
    assert [h.episode.text for h in hits] == ["Acme named a new chief executive today"]
    assert mem.search("chief executive", at="now", since="today") == []
    assert mem.recall("who is the chief executive of Acme?", at="now").to_dict() == \
        mem.recall("who is the chief executive of Acme?", at="2026-11-30T07:30:15+09:00").to_dict()


@pytest.mark.parametrize("bad", BAD)
def test_python_bad_phrase(mem: Memory, bad: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        mem.facts(as_of=bad)
    assert info.value.field == "as_of" and "as_of" in str(info.value)


# -- CLI --------------------------------------------------------------------
@pytest.fixture()
def cli(db: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``chronomem --db DB --timezone Asia/Tokyo ARGS`` in process, its store
    clock pinned at NOW like the other surfaces'."""
    real_open = chronomem.open

    def pinned_open(*args: Any, **kwargs: Any) -> Memory:
        return real_open(*args, **{**kwargs, "clock": FakeClock(NOW, tick=0)})

    monkeypatch.setattr(chronomem, "open", pinned_open)

    def run(*args: str, path: Path = db) -> Result:
        runner = CliRunner(env={"COLUMNS": "200"})
        return runner.invoke(main, ["--db", str(path), "--timezone", TZ, "--embedder", "none", *args],
                             catch_exceptions=False)

    return run


def cli_json(result: Result) -> tuple[Any, dict[str, str]]:
    """The JSON on stdout and the resolved ``times`` (inside an object, or on
    stderr for a list output)."""
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    if isinstance(data, dict):
        return data, data.get("times", {})
    echoed = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    return data, echoed[0]["times"] if echoed else {}


def test_cli_every_row(cli: Callable[..., Result]) -> None:
    for phrase, expected, _ in TABLE:  # every row: CliRunner runs in process, ~10 ms a command
        facts, times = cli_json(cli("facts", "-s", "Acme", "-p", "ceo", "--as-of", phrase, "--json"))
        assert [f["object"] for f in facts] == [ceo(expected)], phrase
        assert times == {"as_of": expected}, phrase


def test_cli_says_the_resolution_once(cli: Callable[..., Result]) -> None:
    text = cli("facts", "-s", "Acme", "-p", "ceo", "--as-of", "last March")
    assert text.exit_code == 0, text.output
    assert text.stderr.splitlines() == ["(resolved as_of='last March' -> 2026-03)"]
    assert ceo("2026-03") in text.stdout
    iso = cli("facts", "-s", "Acme", "-p", "ceo", "--as-of", "2026-03")
    assert iso.exit_code == 0 and iso.stderr == ""  # nothing to say about an ISO value


def test_cli_other_read_bases(cli: Callable[..., Result]) -> None:
    diff, times = cli_json(cli("diff", "Q3 2024", "now", "--json"))
    assert times == {"t1": "2024-07", "t2": "2026-11-30T07:30:15+09:00"}
    assert [(c["old"]["object"], c["new"]["object"]) for c in diff["changed"]] == \
        [(ceo("2024-07"), ceo("2026-11-30T07:30:15+09:00"))]
    events, times = cli_json(cli("timeline", "Acme", "--start", "last month", "--end", "tomorrow", "--json"))
    assert times == {"start": "2026-10", "end": "2026-12-01"} and events
    facts, times = cli_json(cli("facts", "--known-at", "a year ago", "--json"))
    assert facts == [] and times == {"known_at": "2025-11-30"}
    hits, times = cli_json(cli("search", "chief executive", "--at", "now", "--since", "last week", "--json"))
    assert [h["episode"]["text"] for h in hits] == ["Acme named a new chief executive today"]
    assert times == {"at": "2026-11-30T07:30:15+09:00", "since": "2026-11-23"}
    recall, times = cli_json(cli("recall", "who is the chief executive of Acme?", "--at", "yesterday", "--json"))
    assert times == {"at": "2026-11-29"} and ceo("2026-11-29") in json.dumps(recall)


@pytest.mark.parametrize("bad", BAD)
def test_cli_bad_phrase(cli: Callable[..., Result], bad: str) -> None:
    result = cli("facts", "--as-of", bad, "--json")
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: invalid time for as_of: ")


# -- HTTP API -----------------------------------------------------------------
def http(mem: Memory, requests: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    """Send ``(method, url, kwargs)`` requests over one in-process client."""
    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=create_app(mem))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            return [await client.request(method, url, **kw) for method, url, kw in requests]

    return asyncio.run(go())


def test_http_every_row(mem: Memory) -> None:
    answers = http(mem, [("GET", "/api/facts", {"params": {"subject": "Acme", "predicate": "ceo", "as_of": p}})
                         for p, _, _ in TABLE])
    for (phrase, expected, _), r in zip(TABLE, answers, strict=True):
        assert r.status_code == 200, (phrase, r.text)
        body = r.json()
        assert [f["object"] for f in body["facts"]] == [ceo(expected)], phrase
        assert body["times"] == {"as_of": expected}, phrase


def test_http_other_read_bases(mem: Memory) -> None:
    diff, timeline, known, search, entity = http(mem, [
        ("GET", "/api/diff", {"params": {"t1": "Q3 2024", "t2": "now"}}),
        ("GET", "/api/timeline/Acme", {"params": {"start": "last month", "end": "tomorrow"}}),
        ("GET", "/api/facts", {"params": {"known_at": "a year ago"}}),
        ("GET", "/api/search", {"params": {"q": "chief executive", "at": "now", "known_at": "yesterday"}}),
        ("GET", "/api/entities/Acme", {"params": {"as_of": "April 2022"}}),
    ])
    assert diff.json()["times"] == {"t1": "2024-07", "t2": "2026-11-30T07:30:15+09:00"}
    assert [(c["old"]["object"], c["new"]["object"]) for c in diff.json()["changed"]] == \
        [(ceo("2024-07"), ceo("2026-11-30T07:30:15+09:00"))]
    assert timeline.json()["times"] == {"start": "2026-10", "end": "2026-12-01"} and timeline.json()["events"]
    assert known.json()["facts"] == [] and known.json()["times"] == {"known_at": "2025-11-30"}
    assert search.json()["times"] == {"at": "2026-11-30T07:30:15+09:00", "known_at": "2026-11-29"}
    assert [h["episode"]["text"] for h in search.json()["hits"]] == ["Acme named a new chief executive today"]
    assert [f["object"] for f in entity.json()["facts"]] == [ceo("2022-04")]


def test_http_bad_phrase_is_a_400_naming_the_parameter(mem: Memory) -> None:
    requests = [("GET", "/api/facts", {"params": {"as_of": bad}}) for bad in BAD]
    requests += [("GET", "/api/diff", {"params": {"t1": "2020", "t2": "someday"}}),
                 ("GET", "/api/search", {"params": {"q": "x", "at": "the day after never"}})]
    fields = ["as_of"] * len(BAD) + ["t2", "at"]
    for field, r in zip(fields, http(mem, requests), strict=True):
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["type"] == "InvalidTimeError" and f"invalid time for {field}: " in error["message"]


# -- MCP ----------------------------------------------------------------------
def mcp(mem: Memory, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    """Call the tools over one in-process MCP session."""
    async def main() -> list[CallToolResult]:
        async with Client(build_server(mem), mode="legacy") as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def ok(r: CallToolResult) -> dict[str, Any]:
    assert not r.is_error, r.content
    assert r.structured_content is not None
    return r.structured_content


def error_text(r: CallToolResult) -> str:
    assert r.is_error
    return "\n".join(getattr(b, "text", "") for b in r.content)


def test_mcp_every_row(mem: Memory) -> None:
    answers = mcp(mem, [("facts", {"subject": "Acme", "predicate": "ceo", "as_of": p}) for p, _, _ in TABLE])
    for (phrase, expected, _), r in zip(TABLE, answers, strict=True):
        data = ok(r)
        assert [f["object"] for f in data["facts"]] == [ceo(expected)], phrase
        assert data["times"] == {"as_of": expected}, phrase


def test_mcp_other_read_bases(mem: Memory) -> None:
    diff, timeline, known, search, recall = (ok(r) for r in mcp(mem, [
        ("diff", {"t1": "Q3 2024", "t2": "now"}),
        ("timeline", {"entity": "Acme", "start": "last month", "end": "tomorrow"}),
        ("facts", {"known_at": "a year ago"}),
        ("search", {"query": "chief executive", "at": "now", "since": "last week"}),
        ("recall", {"question": "who is the chief executive of Acme?", "at": "yesterday"}),
    ]))
    assert diff["times"] == {"t1": "2024-07", "t2": "2026-11-30T07:30:15+09:00"}
    assert timeline["times"] == {"start": "2026-10", "end": "2026-12-01"} and timeline["events"]
    assert known["facts"] == [] and known["times"] == {"known_at": "2025-11-30"}
    assert search["times"] == {"at": "2026-11-30T07:30:15+09:00", "since": "2026-11-23"} and search["hits"]
    assert recall["times"] == {"at": "2026-11-29"}


def test_mcp_bad_phrase(mem: Memory) -> None:
    for bad, r in zip(BAD, mcp(mem, [("facts", {"as_of": bad}) for bad in BAD]), strict=True):
        text = error_text(r)
        assert text.startswith("facts failed: invalid time for as_of: "), (bad, text)


# -- written times stay strict, except in MCP's write tools --------------------
def test_writes_refuse_phrases_on_python_cli_and_http(fresh: Memory, cli: Callable[..., Result],
                                                      tmp_path: Path) -> None:
    with pytest.raises(InvalidTimeError) as info:
        fresh.add_fact("Ana", "works_at", "Nimbus", valid_from="yesterday")
    assert info.value.field == "valid_from"
    with pytest.raises(InvalidTimeError):
        fresh.add_episode("hello", occurred_at="yesterday")
    added = cli("add", "Ana", "works_at", "Nimbus", "--from", "yesterday", path=tmp_path / "fresh.db")
    assert added.exit_code == 1 and "invalid time for valid_from: 'yesterday'" in added.stderr
    fact, episode = http(fresh, [
        ("POST", "/api/facts", {"json": {"subject": "Ana", "predicate": "works_at", "object": "Nimbus",
                                         "valid_from": "yesterday"}}),
        ("POST", "/api/episodes", {"json": {"text": "hello", "occurred_at": "yesterday"}}),
    ])
    assert fact.status_code == 400 and fact.json()["error"]["type"] == "InvalidTimeError"
    assert episode.status_code == 400 and episode.json()["error"]["type"] == "InvalidTimeError"
    assert fresh.facts() == [] and fresh.episodes() == []


def test_mcp_write_tools_resolve_phrases_and_echo_them(fresh: Memory) -> None:
    (r,) = mcp(fresh, [("fact_add", {"subject": "Ana", "predicate": "works_at", "object": "Nimbus",
                                     "valid_from": "yesterday"})])
    data = ok(r)
    assert data["times"] == {"valid_from": "2026-11-29"} and data["fact"]["valid_from"] == "2026-11-29"
