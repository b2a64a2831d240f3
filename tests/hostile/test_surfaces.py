"""The hostile-input corpus (``corpus.py``) through the CLI (click's runner,
in process), the HTTP API (httpx over ASGI, in process) and MCP (the SDK's
client, in process), on SQLite.

Each case runs on a fresh copy of one prepared store. It must end in its
typed error -- the CLI: exit 1 (or 2 for a usage error) and one ``error:``
line; HTTP: a 4xx JSON error whose ``type`` is that class or a subclass;
MCP: an ``isError`` result naming that class (or refused by the tool's
input schema) -- or be accepted, and after an error the store is unchanged.
A case a surface cannot express (a value its wire cannot carry, an argument
or operation it lacks) is left out of that surface's loop and counted.

``python tests/hostile/test_surfaces.py`` prints the counts per surface
(typed / accepted / other, and the cases that missed their expectation).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio
import pydantic_core
import pytest

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:  # run as a script
    sys.path.insert(0, str(_TESTS))

import chronomem  # noqa: E402
from chronomem import Memory, errors  # noqa: E402
from chronomem.io import export_jsonl  # noqa: E402
from contract._helpers import snapshot  # noqa: E402
from hash_embedder import HashEmbedder  # noqa: E402
from hostile.corpus import CASES, Case, setup  # noqa: E402

CLOCK = "2025-06-01T00:00:00Z"


# -- shared ---------------------------------------------------------------
@dataclass
class Tally:
    """One surface's outcomes: typed / accepted / other, the cases that
    missed their expectation and the cases left out (by reason)."""

    surface: str
    outcomes: Counter[str] = field(default_factory=Counter)
    missed: list[tuple[str, str, str]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        o = self.outcomes
        return (f"{self.surface}: {sum(o.values())} run, typed {o['typed']}, accepted {o['accepted']}, "
                f"other {o['other']}; missed expectation {len(self.missed)}, store changed on error "
                f"{len(self.changed)}; left out {sum(self.skipped.values())} {dict(self.skipped)}")


def kind_of(got: str) -> str:
    if got == "accept":
        return "accepted"
    return "other" if got.startswith("other:") else "typed"


def matches(got: str, expect: str) -> bool:
    """``got`` ("accept", an error class name, "usage", "schema" or
    "other:...") is what ``expect`` promises."""
    if expect == "accept" or got == "accept" or got.startswith("other:"):
        return got == expect
    want = getattr(errors, expect, None)
    if got in ("usage", "schema"):  # refused at the surface's own door: an input error
        return want is not None and issubclass(want, errors.InvalidInputError)
    have = getattr(errors, got, None)
    return have is not None and want is not None and issubclass(have, want)


@dataclass(frozen=True)
class Target:
    """Where a case runs: a store (a SQLite file, or a PostgreSQL schema) and a namespace."""

    url: str
    namespace: str = "default"


def state(db: Target) -> tuple[str, dict[str, Any], list[Any]]:
    """Everything stored in ``db``'s namespace, for "unchanged" checks."""
    mem = chronomem.open(db.url, db.namespace)
    try:
        buf = io.StringIO()
        export_jsonl(mem, buf)
        episodes = sorted((e.id, e.text, e.session, e.speaker, e.source) for e in mem.episodes())
        body = buf.getvalue().split("\n", 1)[1]  # after the header line and its exported_at
        return body, snapshot(mem), episodes
    finally:
        mem.close()


def prepare(directory: Path) -> Path:
    """The prepared store every case starts from (copied per case)."""
    path = directory / "template.db"
    mem = chronomem.open(str(path), clock=chronomem.FakeClock("2025-01-01T00:00:00Z"))
    mem.use_embedder(HashEmbedder())
    setup(mem)
    mem.close()
    return path


Runner = Callable[[Target, Any], str]


Matcher = Callable[[Case, str], bool]


def run_corpus(surface: str, template: Path, work: Path, cases: list[Case] = CASES) -> Tally:
    """Every case on its own copy of the prepared SQLite file."""

    def fresh(n: int) -> Target:
        db = work / f"{surface}-{n}.db"
        shutil.copyfile(template, db)
        return Target(str(db))

    return _run(surface, cases, fresh, lambda t: Path(t.url).unlink())


def run_corpus_on(surface: str, url: str, cases: list[Case]) -> Tally:
    """Every case in a namespace of its own of one store (PostgreSQL: a
    schema), prepared as :func:`prepare` prepares the SQLite file."""

    def fresh(n: int) -> Target:
        target = Target(url, f"{surface}_{n}")
        mem = chronomem.open(url, target.namespace, clock=chronomem.FakeClock("2025-01-01T00:00:00Z"))
        mem.use_embedder(HashEmbedder())
        setup(mem)
        mem.close()
        return target

    return _run(surface, cases, fresh, lambda t: None)


def _run(surface: str, cases: list[Case], fresh: Callable[[int], Target],
         done: Callable[[Target], None]) -> Tally:
    express, perform, match = SURFACES[surface]
    tally = Tally(surface)
    for n, case in enumerate(cases):
        call = Skip("python_only") if case.python_only else express(case)
        if isinstance(call, Skip):
            tally.skipped[call.why] += 1
            continue
        db = fresh(n)
        before = state(db)
        got = perform(db, call)
        tally.outcomes[kind_of(got)] += 1
        if not match(case, got):
            tally.missed.append((case.id, case.expect, got))
        if got != "accept" and state(db) != before:
            tally.changed.append(case.id)
        done(db)
    return tally


@dataclass(frozen=True)
class Skip:
    why: str


def dumps(value: Any) -> str:
    """JSON text of ``value``, also for objects nested deeper than
    :func:`json.dumps` recurses (a chain of one-key objects)."""
    try:
        return json.dumps(value, ensure_ascii=True, allow_nan=False)
    except RecursionError:
        if isinstance(value, dict) and len(value) != 1:
            return "{" + ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in value.items()) + "}"
        keys = []
        while isinstance(value, dict) and len(value) == 1:
            (key, value), = value.items()
            keys.append(json.dumps(key))
        return "".join("{" + k + ":" for k in keys) + json.dumps(value) + "}" * len(keys)


def is_text(value: Any) -> bool:
    return isinstance(value, str)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- CLI ------------------------------------------------------------------
#: op -> (command, positional parameters, {parameter: option}); ``None``: the CLI lacks the parameter
CLI: dict[str, tuple[str, tuple[str, ...], dict[str, str | None]]] = {
    "add_fact": ("add", ("subject", "predicate", "object"), {
        "valid_from": "--from", "valid_to": "--to", "confidence": "--confidence", "source": "--source",
        "episode_id": "--episode", "properties": "--properties"}),
    "add_episode": ("remember", ("text",), {"occurred_at": "--at", "source": "--source", "session": "--session",
                                            "speaker": "--speaker", "recorded_at": None, "metadata": None}),
    "facts": ("facts", (), {"subject": "--subject", "predicate": "--predicate", "object": "--object",
                            "as_of": "--as-of", "known_at": "--known-at", "direction": "--direction",
                            "limit": "--limit"}),
    "search": ("search", ("query",), {"k": "-k", "view": "--view", "at": "--at", "known_at": "--known-at",
                                      "session": "--session", "since": "--since", "until": "--until"}),
    "recall": ("recall", ("question",), {"at": "--at", "known_at": "--known-at", "budget_tokens": "--budget"}),
    "invalidate": ("invalidate", ("subject", "predicate", "object"), {"ended": "--ended", "reason": "--reason"}),
    "timeline": ("timeline", ("entity",), {"start": "--start", "end": "--end"}),
    "entity": ("entity", ("name",), {}),
}
_CLI_NUMBERS = {"confidence", "limit", "k", "budget_tokens"}


def cli_express(case: Case) -> list[str] | Skip:
    command, positional, options = CLI[case.op]
    args = dict(case.args)
    argv = [command]
    literal = args.pop("literal", False)
    obj = args.get("object")
    if literal is True:
        if is_text(obj):
            argv.append("--literal")
        elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and case.op == "add_fact":
            argv.append(f"--type={'int' if isinstance(obj, int) else 'float'}")
            args["object"] = str(obj)
        else:
            return Skip("value type")
    elif literal is not False:
        return Skip("bool flag")  # a flag is present or not: "no", 1, [] cannot be said
    supersede = args.pop("supersede", None)
    if supersede is True or supersede is False:
        argv.append("--supersede" if supersede else "--no-supersede")
    elif supersede is not None:
        return Skip("bool flag")
    for name, value in args.items():
        if name in positional or value is None:
            continue
        opt = options.get(name)
        if opt is None:
            return Skip("parameter")
        if name == "properties":
            if is_text(value):
                return Skip("value type")  # the option *is* JSON text
            text = dumps(value)
        elif name in _CLI_NUMBERS:
            if not is_number(value):
                return Skip("value type")
            text = str(value)
        elif is_text(value):
            text = value
        else:
            return Skip("value type")
        argv += [opt, text] if not opt.startswith("--") else [f"{opt}={text}"]
    tail = []
    for name in positional:
        value = args.get(name)
        if not is_text(value):
            return Skip("value type")
        tail.append(value)
    return [*argv, "--", *tail]


def cli_perform(db: Target, argv: list[str]) -> str:
    from click.testing import CliRunner

    from chronomem.adapters.cli import main

    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["--db", db.url, "--namespace", db.namespace, "--embedder", "none", *argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"other:{type(result.exception).__name__}"
    if result.exit_code == 0:
        return "accept"
    lines = result.stderr.strip().splitlines()
    if "Traceback" in result.output or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"other:exit {result.exit_code}, {len(lines)} stderr lines"
    if "internal error" in lines[0]:
        return "other:internal error"
    if result.exit_code == 2:
        return "usage"
    return "typed" if result.exit_code == 1 else f"other:exit {result.exit_code}"


def cli_matches(case: Case, got: str) -> bool:
    """The CLI does not print the class: a typed error is any clean refusal."""
    if case.expect == "accept" or got == "accept" or got.startswith("other:"):
        return got == case.expect
    return True


# -- HTTP -----------------------------------------------------------------
def _utf8(value: str) -> bool:
    """A URL is UTF-8: a lone surrogate cannot be sent (the server would read U+FFFD)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path_name(value: Any) -> str | Skip:
    if not is_text(value):
        return Skip("value type")  # a path segment is always text
    if value == "" or "/" in value:
        return Skip("path segment")
    if not _utf8(value):
        return Skip("lone surrogate in a URL")
    if len(value) > _URL_CHARS:
        return Skip("URL length")
    if "\n" in value:
        return Skip("newline in a path")  # Starlette's {name:path} does not match it: a JSON 404
    return urllib.parse.quote(value, safe="")


_URL_CHARS = 8000  # what HTTP clients and servers commonly carry in a URL


def _query(args: dict[str, Any], names: dict[str, str]) -> dict[str, str] | Skip:
    out: dict[str, str] = {}
    for name, value in args.items():
        if value is None:
            continue
        if name not in names:
            return Skip("parameter")
        if name in ("limit", "k"):
            if not is_number(value):
                return Skip("value type")  # "10" and 10 are the same query string
            out[names[name]] = str(value)
        elif not is_text(value):
            return Skip("value type")  # a query value is always text
        elif not _utf8(value):
            return Skip("lone surrogate in a URL")
        elif value == "":
            return Skip("empty query value")  # documented: an empty parameter is an absent one
        elif len(value) > _URL_CHARS:
            return Skip("URL length")
        else:
            out[names[name]] = value
    return out


_FACT_ID = "fact id of Acme -works_with-> Globex"


def _past_page(case: Case) -> bool:
    """An accepted count past what a paged surface returns at once (its own documented maximum)."""
    return case.expect == "accept" and any(f".{n}." in case.id for n in ("limit", "k", "budget_tokens")) \
        and (".ok_max" in case.id or case.id.endswith(".zero"))


def http_express(case: Case) -> tuple[str, str, dict[str, str] | None, str | None] | Skip:
    a = dict(case.args)
    if _past_page(case):
        return Skip("surface page size")
    if case.op in ("add_fact", "add_episode"):
        return ("POST", "/api/facts" if case.op == "add_fact" else "/api/episodes", None, dumps(a))
    if case.op == "facts":
        if "literal" in a:
            return Skip("parameter")
        q = _query(a, {n: n for n in ("subject", "predicate", "object", "as_of", "known_at", "direction", "limit")})
        return q if isinstance(q, Skip) else ("GET", "/api/facts", q, None)
    if case.op == "search":
        q = _query({("q" if k == "query" else k): v for k, v in a.items()},
                   {n: n for n in ("q", "k", "view", "at", "known_at")})
        return q if isinstance(q, Skip) else ("GET", "/api/search", q, None)
    if case.op in ("timeline", "entity"):
        name = _path_name(a.pop("entity" if case.op == "timeline" else "name"))
        if isinstance(name, Skip):
            return name
        q = _query(a, {"start": "start", "end": "end"})
        route = "/api/timeline/" if case.op == "timeline" else "/api/entities/"
        return q if isinstance(q, Skip) else ("GET", route + name, q, None)
    if case.op == "invalidate":
        # the API ends a fact by id: only cases on the prepared fact can be said
        if (a.pop("subject"), a.pop("predicate"), a.pop("object")) != ("Acme", "works_with", "Globex") \
                or a.pop("literal", False) is not False:
            return Skip("fact by triple")
        return ("POST", "/api/facts/{id}/invalidate", None, dumps(a))
    return Skip("operation")


def _fact_id(mem: Memory) -> str:
    return next(f.id for f in mem.facts("Acme", "works_with"))


def http_matches(case: Case, got: str) -> bool:
    """By id the API knows the fact, so "no such fact valid then" is an
    :class:`InvalidIntervalError` (the end is not after its start)."""
    if case.op == "invalidate" and case.expect == "FactNotFoundError" and got == "InvalidIntervalError":
        return True
    return matches(got, case.expect)


def http_perform(db: Target, request: tuple[str, str, dict[str, str] | None, str | None]) -> str:
    import httpx

    from chronomem.adapters.web import create_app

    method, path, params, body = request
    mem = chronomem.open(db.url, db.namespace, clock=chronomem.FakeClock(CLOCK, tick=0.001))
    mem.use_embedder(HashEmbedder())
    try:
        path = path.replace("{id}", _fact_id(mem))

        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=create_app(mem))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
                return await client.request(method, path, params=params, content=body,
                                            headers={"content-type": "application/json"} if body else {})

        try:
            r = anyio.run(go)
        except Exception as exc:  # noqa: BLE001 - an escaping exception is what this hunts
            return f"other:raised {type(exc).__name__}"
    finally:
        mem.close()
    if 200 <= r.status_code < 300:
        return "accept"
    try:
        err = r.json()["error"]
    except (ValueError, KeyError, TypeError):
        return f"other:{r.status_code} without a JSON error"
    if r.status_code >= 500:
        return f"other:{r.status_code} {err.get('type')}"
    if err.get("type") == "BodyTooLargeError":  # the web layer's own LimitExceededError (413)
        return "LimitExceededError" if hasattr(errors, "LimitExceededError") else "InvalidInputError"
    return str(err.get("type")) if hasattr(errors, str(err.get("type"))) else f"other:{r.status_code} {err}"


# -- MCP ------------------------------------------------------------------
MCP_TOOLS = {"add_fact": "fact_add", "add_episode": "remember", "facts": "facts", "search": "search",
             "recall": "recall", "invalidate": "fact_invalidate", "timeline": "timeline"}
_CLASS = re.compile(r"\((\w+Error)\)")


def mcp_express(case: Case) -> tuple[str, dict[str, Any]] | Skip:
    tool = MCP_TOOLS.get(case.op)
    if tool is None:
        return Skip("operation")
    if _past_page(case):
        return Skip("surface page size")
    if case.op == "add_episode" and "recorded_at" in case.args:
        return Skip("parameter")
    args = {k: v for k, v in case.args.items() if v is not None}
    try:  # what the SDK client does to every request before it sends it
        pydantic_core.to_jsonable_python(args)
    except (ValueError, UnicodeEncodeError):
        return Skip("the SDK client cannot send it")  # the raw wire: test_mcp_wire.py
    return tool, args


def mcp_matches(case: Case, got: str) -> bool:
    """MCP tools read write times as phrases too ("yesterday"): documented there."""
    if case.id.endswith(".phrase") and got == "accept":
        return True
    return matches(got, case.expect)


def mcp_perform(db: Target, call: tuple[str, dict[str, Any]]) -> str:
    from mcp import Client

    from chronomem.adapters.mcp import build_server

    tool, args = call
    mem = chronomem.open(db.url, db.namespace, clock=chronomem.FakeClock(CLOCK, tick=0.001))
    mem.use_embedder(HashEmbedder())

    async def go() -> Any:
        with anyio.fail_after(30):
            async with Client(build_server(mem), mode="legacy") as client:
                return await client.call_tool(tool, args)

    try:
        r = anyio.run(go)
    except Exception as exc:  # noqa: BLE001 - no answer (or a crash) is what this hunts
        return f"other:raised {type(exc).__name__}"
    finally:
        mem.close()
    if not r.is_error:
        return "accept"
    text = "\n".join(getattr(b, "text", "") for b in r.content)
    if "\n" in text or "Traceback" in text:
        return "other:multi-line error"
    found = _CLASS.findall(text)
    if found and hasattr(errors, found[-1]):
        return found[-1]
    if "input schema" in text:
        return "schema"
    if text.startswith(f"{tool} failed: ") and "internal error" not in text and "Error executing" not in text:
        return "unnamed"  # a clean refusal that does not say its class (counted typed, never a match)
    return f"other:{text[:80]}"


# -- the tests --------------------------------------------------------------
SURFACES: dict[str, tuple[Callable[[Case], Any], Runner, Matcher]] = {
    "cli": (cli_express, cli_perform, cli_matches),
    "http": (http_express, http_perform, http_matches),
    "mcp": (mcp_express, mcp_perform, mcp_matches),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare(tmp_path_factory.mktemp("hostile-template"))


def check(tally: Tally, expressible_at_least: int) -> None:
    assert sum(tally.outcomes.values()) >= expressible_at_least, tally.line()
    assert tally.changed == [], f"store changed on error: {tally.changed}"
    assert tally.outcomes["other"] == 0 and not tally.missed, tally.line() + "\n" + "\n".join(
        f"  {cid}: expected {want}, got {got}" for cid, want, got in tally.missed)


def test_cli(template: Path, tmp_path: Path) -> None:
    check(run_corpus("cli", template, tmp_path), 400)


def test_http(template: Path, tmp_path: Path) -> None:
    check(run_corpus("http", template, tmp_path), 300)


def test_mcp(template: Path, tmp_path: Path) -> None:
    check(run_corpus("mcp", template, tmp_path), 400)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_surfaces_on_postgres(surface: str, request: pytest.FixtureRequest) -> None:
    """The same runners on PostgreSQL, on every fourth case (sized for 2
    cores; the Python corpus runs whole on both backends)."""
    from conftest import pg_schema_url

    sample = CASES[::4]
    tally = run_corpus_on(surface, pg_schema_url(request), sample)
    check(tally, {"cli": 100, "http": 75, "mcp": 100}[surface])


def test_runners_express_what_they_claim() -> None:
    """The mappings themselves: a few cases by hand, so a runner that
    silently skipped everything (or mangled arguments) fails here."""
    by_id = {c.id: c for c in CASES}
    assert cli_express(by_id["add_fact.subject.nul"]) == ["add", "--", "Ac\x00me", "partners_with", "Initech"]
    argv = cli_express(by_id["facts.limit.int_10_30"])
    assert argv == ["facts", "--subject=Acme", f"--limit={10**30}", "--"]
    assert isinstance(cli_express(by_id["add_fact.literal.str_no"]), Skip)
    method, path, params, body = http_express(by_id["add_fact.properties.depth_100000"])  # type: ignore[misc]
    assert (method, path) == ("POST", "/api/facts") and body is not None and body.count("{") == 100_001
    assert http_express(by_id["entity.name.nul"]) == ("GET", "/api/entities/Ac%00me", {}, None)
    assert isinstance(http_express(by_id["entity.name.surrogate"]), Skip)
    assert mcp_express(by_id["facts.limit.int_10_30"]) == ("facts", {"subject": "Acme", "limit": 10**30})
    assert isinstance(mcp_express(by_id["entity.name.nul"]), Skip)


if __name__ == "__main__":  # the figures: typed / accepted / other per surface
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        tpl = prepare(work)
        for name in sys.argv[1:] or list(SURFACES):
            t = run_corpus(name, tpl, work)
            print(t.line())
            for cid, want, got in t.missed:
                print(f"  {cid}: expected {want}, got {got}")
