"""A team on one server: N simulated agents over MCP streamable HTTP, each
with its own token, in two namespaces, mixing writes and reads against ONE
real ``chronomem serve`` process on PostgreSQL (loopback only).

Every agent's token is made with the real CLI (``chronomem token create
--namespace NS --scope write|read --name NAME --json``, a subprocess each);
the server takes each request's namespace from its token, and records each
write as the token's name. One agent per namespace (``--readers``) holds a
``read`` token: it calls the write tools too, and each such call must be
refused. Afterwards it checks the store:

* nothing lost: every write the server acknowledged (a fact id) is there,
  with its subject, predicate and object, in its own namespace only, and its
  ``recorded_by`` is the writing agent's token name;
* no cross-namespace result: every fact a read returned (during the run) and
  every fact stored (after it) carries its own namespace's tag and was
  recorded by an agent of that namespace; no agent's name is the writer of
  anything in the other namespace;
* no cardinality overlap: on the single-valued ``status`` predicate, no
  (subject, predicate) has believed versions whose valid intervals overlap;
* read-only tokens never write: each of their write-tool calls was refused
  (``ForbiddenError``), and no version anywhere is recorded as theirs;
* the access log names each call's principal with its own namespace.

It prints the throughput (tool calls a second), p50 / p99 latency per call
(client side: send to parsed result), reads and writes apart, and the error
counts: refusals the read-only agents were meant to get, apart from
unexpected errors. ``tests/test_team_load.py`` runs it bounded (≤ 60 s) and
asserts the checks. Figures: docs/team.md.

    .venv/bin/python bench/team_load.py [--agents 16] [--readers 1] [--seconds 20] [--pool-size 10]
        [--db postgresql://postgres@127.0.0.1:5432/test] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import anyio

import chronomem
from chronomem.errors import FactNotFoundError

NAMESPACES = ("team-a", "team-b")
#: subjects both namespaces write: a read that leaked would show the other's
PROJECTS = tuple(f"project-{k}" for k in range(4))
#: how many notes' subjects each agent cycles through (``NAME-item-K``)
ITEMS = 40
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/test"
#: what :func:`run` checks; each an empty list when all is well
CHECKS = ("lost", "misattributed", "cross_namespace", "cardinality_overlaps", "reader_writes", "access_log_wrong")

_SCRIPT = Path(sys.executable).with_name("chronomem")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


@dataclasses.dataclass
class Agent:
    name: str  # its token's name: what its writes are recorded as
    namespace: str
    scope: str  # "write" or "read"
    token: str


@dataclasses.dataclass
class Ack:
    agent: str
    namespace: str
    fact_id: str
    subject: str
    predicate: str
    object: str
    version: int = 1  # the version the write made (a fact's first is 1)


@dataclasses.dataclass
class Tally:
    """What the agents saw, shared by their tasks (one event loop: no lock)."""

    latencies: dict[str, list[float]] = dataclasses.field(
        default_factory=lambda: {"write": [], "read": [], "refused": []})
    errors: Counter[str] = dataclasses.field(default_factory=Counter)  # unexpected
    refusals: Counter[str] = dataclasses.field(default_factory=Counter)  # a read token's write: expected
    acks: list[Ack] = dataclasses.field(default_factory=list)
    cross: list[str] = dataclasses.field(default_factory=list)
    reader_writes: list[str] = dataclasses.field(default_factory=list)
    elapsed: float = 0.0


def _env(pycache: Path | None = None) -> dict[str, str]:
    """The CLI's environment: no store, namespace or token of the caller's.
    ``pycache``: where the CLI processes share their bytecode when the
    caller's environment forbids writing it (PYTHONDONTWRITEBYTECODE): else
    each of the 17 processes compiles every module again (0.4 s each)."""
    env = dict(os.environ)
    for name in ("CHRONOMEM_DB", "CHRONOMEM_NAMESPACE", "CHRONOMEM_TOKEN"):
        env.pop(name, None)
    if pycache is not None and env.get("PYTHONDONTWRITEBYTECODE"):
        del env["PYTHONDONTWRITEBYTECODE"]
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def prepare(db: str) -> None:
    """``status`` is single-valued in both namespaces (the cardinality check)."""
    with chronomem.open(db, namespace=NAMESPACES[0]) as mem:
        for ns in NAMESPACES:
            mem.view(ns).define_predicate("status", "one")


def plan(n: int, readers: int = 1) -> list[tuple[str, str, str]]:
    """``(name, namespace, scope)`` of ``n`` agents, alternating namespaces;
    the last ``readers`` of each namespace get a read token."""
    out = []
    for i in range(n):
        ns = NAMESPACES[i % len(NAMESPACES)]
        reader = i >= n - readers * len(NAMESPACES)
        out.append((f"reader-{i:02d}" if reader else f"agent-{i:02d}", ns, "read" if reader else "write"))
    return out


def create_token(db: str, name: str, namespace: str, scope: str, env: dict[str, str] | None = None) -> Agent:
    """One agent's token, made the way an operator makes it: the CLI."""
    done = subprocess.run([*CLI, "--db", db, "token", "create", "--namespace", namespace, "--scope", scope,
                           "--name", name, "--json"], capture_output=True, text=True,
                          env=env if env is not None else _env(), timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"token create {name} failed ({done.returncode}): {done.stderr.strip()}")
    made = json.loads(done.stdout)
    assert made["name"] == name and made["namespaces"] == [namespace], made
    return Agent(name, namespace, scope, made["token"])


def make_agents(db: str, n: int, readers: int = 1, env: dict[str, str] | None = None) -> list[Agent]:
    """The agents with their tokens (four CLI processes at a time)."""
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda a: create_token(db, a[0], a[1], a[2], env), plan(n, readers)))


@contextlib.contextmanager
def server(db: str, *, pool_size: int, log_path: Path, env: dict[str, str] | None = None
           ) -> Iterator[Callable[[], str]]:
    """One ``chronomem serve`` for every namespace on loopback, started at
    once; yields a function that waits until it listens and returns its MCP
    URL. Its access log goes to ``log_path`` (a pipe nobody reads would fill
    and stall the server)."""
    with open(log_path, "w") as err:
        proc = subprocess.Popen([*CLI, "--db", db, "serve", "--host", "127.0.0.1", "--port", "0", "--json",
                                 "--pool-size", str(pool_size)],
                                stdout=subprocess.PIPE, stderr=err, text=True,
                                env=env if env is not None else _env())

    def ready() -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"serve did not start: {log_path.read_text()}")
        return str(json.loads(line)["mcp"])

    try:
        yield ready
    finally:
        if proc.poll() is None:
            proc.terminate()  # graceful: SIGTERM drains, then closes the pool
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def _text(result: Any) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)


async def run_agent(agent: Agent, url: str, index: int, deadline: float, max_calls: int, tally: Tally,
                    writers: dict[str, set[str]]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(index)
    ns = agent.namespace
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {agent.token}"},
                              timeout=httpx2.Timeout(30.0, read=60.0))
    try:
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for k in range(max_calls):
                if time.monotonic() >= deadline:
                    break
                roll = rng.random()
                args: dict[str, Any]
                if roll < 0.35:  # a note of its own (multi-valued)
                    kind = "write"
                    args = {"subject": f"{agent.name}-item-{k % ITEMS}", "predicate": "note",
                            "object": f"{ns}:{agent.name}-n{k}"}
                    tool = "fact_add"
                elif roll < 0.55:  # a shared project's single-valued status, at some day of 2024
                    kind = "write"
                    # a value of its own: never a duplicate of a believed one (which add_fact would
                    # answer with the existing fact, recorded by its first writer)
                    args = {"subject": rng.choice(PROJECTS), "predicate": "status",
                            "object": f"{ns}:{agent.name}-s{k}",
                            "valid_from": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"}
                    tool = "fact_add"
                else:  # read a shared project or one of its own items
                    kind = "read"
                    own = f"{agent.name}-item-{rng.randrange(ITEMS)}"
                    subject = rng.choice(PROJECTS) if rng.random() < 0.6 else own
                    args = {"subject": subject, "limit": 50}
                    tool = "facts"
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, args)
                except Exception as exc:  # noqa: BLE001 - counted, the agent goes on
                    tally.errors[f"{kind}:{type(exc).__name__}"] += 1
                    continue
                took = time.perf_counter() - started
                refusal = result.is_error and "(ForbiddenError)" in _text(result)
                if agent.scope == "read" and kind == "write":
                    if refusal:
                        tally.refusals[f"{tool}:ForbiddenError"] += 1
                        tally.latencies["refused"].append(took)
                    else:  # written, or failed for another reason: either is wrong
                        tally.reader_writes.append(f"{agent.name} {tool} {args} -> {_text(result)[:120]}")
                    if not result.is_error:
                        f = (result.structured_content or {}).get("fact", {})
                        tally.acks.append(Ack(agent.name, ns, f.get("id", "?"), args["subject"],
                                              args["predicate"], args["object"]))
                    continue
                if result.is_error:
                    tally.errors[f"{kind}:tool error: {_text(result)[:80]}"] += 1
                    continue
                tally.latencies[kind].append(took)
                data = result.structured_content or {}
                if tool == "fact_add":
                    f = data["fact"]
                    tally.acks.append(Ack(agent.name, ns, f["id"], args["subject"], args["predicate"],
                                          args["object"], int(f.get("version", 1))))
                    if f.get("recorded_by") != agent.name:  # the acknowledgement itself names the writer
                        tally.errors[f"write:acknowledged as recorded by {f.get('recorded_by')!r}"] += 1
                else:
                    for f in data.get("facts", []):
                        if not str(f["object"]).startswith(ns + ":") or f.get("recorded_by") not in writers[ns]:
                            tally.cross.append(f"{agent.name} in {ns} read {f['subject']} {f['object']} "
                                               f"by {f.get('recorded_by')}")
    except Exception as exc:  # noqa: BLE001 - a session that failed to open or broke
        tally.errors[f"session:{type(exc).__name__}: {exc}"[:120]] += 1


def writers_of(agents: Sequence[Agent]) -> dict[str, set[str]]:
    """Per namespace, the names that may appear as ``recorded_by`` there."""
    return {ns: {a.name for a in agents if a.namespace == ns and a.scope == "write"} for ns in NAMESPACES}


async def run_agents(agents: Sequence[Agent], url: str, seconds: float, max_calls: int = 10**9) -> Tally:
    tally = Tally()
    writers = writers_of(agents)
    started = time.monotonic()
    deadline = started + seconds
    async with anyio.create_task_group() as tg:
        for i, agent in enumerate(agents):
            tg.start_soon(run_agent, agent, url, i, deadline, max_calls, tally, writers)
    tally.elapsed = time.monotonic() - started
    return tally


def overlapping(spans: Sequence[tuple[Any, Any, Any]]) -> list[str]:
    """The pairs of ``(value, valid_from, valid_to)`` whose half-open valid
    intervals overlap (``None``: unknown start / open end)."""
    ordered = sorted(spans, key=lambda s: (s[1] is not None, s[1]))
    found = []
    for i, (a, a_from, a_to) in enumerate(ordered):
        for b, b_from, b_to in ordered[i + 1:]:
            if a_to is None or b_from is None or a_to > b_from:
                found.append(f"{a} [{a_from}, {a_to}) overlaps {b} [{b_from}, {b_to})")
            else:
                break  # sorted by start: every later one starts even later
    return found


def verify(db: str, tally: Tally, agents: Sequence[Agent]) -> dict[str, Any]:
    """The checks, on the store itself (see the module docstring)."""
    lost: list[str] = []
    misattributed: list[str] = []
    leaked: list[str] = list(tally.cross)
    overlaps: list[str] = []
    reader_writes: list[str] = list(tally.reader_writes)
    writers = writers_of(agents)
    with chronomem.open(db, namespace=NAMESPACES[0]) as mem:
        views = {ns: mem.view(ns) for ns in NAMESPACES}
        # every version of every subject written: the acknowledged version must be there (later
        # writes may have made newer ones: a status ended by the next value is a version by its writer)
        versions: dict[tuple[str, str], dict[tuple[str, int], Any]] = {}
        for ack in tally.acks:
            key = (ack.namespace, ack.subject)
            if key not in versions:
                versions[key] = {(f.id, f.version): f for f in views[ack.namespace].history(ack.subject)}
            f = versions[key].get((ack.fact_id, ack.version))
            if f is None:
                lost.append(f"{ack.namespace} {ack.fact_id} v{ack.version} {ack.subject} {ack.predicate} {ack.object}")
                continue
            if (f.subject, f.predicate, f.object) != (ack.subject, ack.predicate, ack.object):
                lost.append(f"{ack.fact_id}: stored as {f.subject} {f.predicate} {f.object}")
            if f.recorded_by != ack.agent:
                misattributed.append(f"{ack.fact_id} v{ack.version} written by {ack.agent}, "
                                     f"recorded by {f.recorded_by}")
        for ack in tally.acks[:: max(1, len(tally.acks) // 200)]:  # a sample: not visible from the other side
            for ns, view in views.items():
                if ns != ack.namespace:
                    with contextlib.suppress(FactNotFoundError):
                        view.fact(ack.fact_id)
                        leaked.append(f"{ack.fact_id} of {ack.namespace} found in {ns}")
        for ns, view in views.items():
            for f in view.facts(limit=1_000_000):
                if not str(f.object).startswith(ns + ":"):
                    leaked.append(f"stored in {ns}: {f.subject} {f.predicate} {f.object}")
                if f.recorded_by not in writers[ns]:
                    leaked.append(f"stored in {ns} by {f.recorded_by}: {f.subject} {f.predicate} {f.object}")
            for subject in PROJECTS:
                spans = [(f.object, f.valid_from, f.valid_to) for f in view.facts(subject, "status", limit=1_000_000)]
                overlaps += [f"{ns} {subject}: {x}" for x in overlapping(spans)]
            for agent in agents:
                if agent.namespace != ns and view.facts(recorded_by=agent.name, limit=1):
                    leaked.append(f"{agent.name} of {agent.namespace} recorded a fact in {ns}")
                if agent.scope == "read":  # every version it could have written, superseded ones too
                    for subject in (*PROJECTS, *(f"{agent.name}-item-{k}" for k in range(ITEMS))):
                        for f in view.history(subject, recorded_by=agent.name):
                            reader_writes.append(f"{ns}: {f.subject} {f.predicate} {f.object} by {agent.name}")
    return {"acknowledged_writes": len(tally.acks), "lost": lost, "misattributed": misattributed,
            "cross_namespace": leaked, "cardinality_overlaps": overlaps, "reader_writes": reader_writes}


_PRINCIPAL = re.compile(r" path=/mcp .*? principal=(\S+) ns=(\S+)")


def access_log(text: str, agents: Sequence[Agent]) -> dict[str, Any]:
    """The server's ``POST /mcp`` lines: how many, and any whose principal is
    not one of the agents or not in that agent's namespace."""
    home = {a.name: a.namespace for a in agents}
    lines, wrong = 0, []
    for line in text.splitlines():
        m = _PRINCIPAL.search(line) if line.startswith("time=") else None
        if m is None:
            continue
        lines += 1
        if home.get(m.group(1)) != m.group(2):
            wrong.append(line)
    return {"access_log_lines": lines, "access_log_wrong": wrong}


def _ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def summary(tally: Tally) -> dict[str, Any]:
    ok = tally.latencies["write"] + tally.latencies["read"]
    refused = sum(tally.refusals.values())
    unexpected = sum(tally.errors.values())
    return {
        "calls": len(ok) + refused + unexpected + len(tally.reader_writes),
        "ok_calls": len(ok),
        "seconds": round(tally.elapsed, 2),
        "throughput_per_s": round(len(ok) / tally.elapsed, 1) if tally.elapsed else 0.0,
        "p50_ms": _ms(ok, 0.50), "p99_ms": _ms(ok, 0.99),
        "write_p50_ms": _ms(tally.latencies["write"], 0.50), "write_p99_ms": _ms(tally.latencies["write"], 0.99),
        "read_p50_ms": _ms(tally.latencies["read"], 0.50), "read_p99_ms": _ms(tally.latencies["read"], 0.99),
        "refused_p50_ms": _ms(tally.latencies["refused"], 0.50),
        "mean_ms": round(1000 * statistics.fmean(ok), 2) if ok else None,
        "writes_ok": len(tally.latencies["write"]), "reads_ok": len(tally.latencies["read"]),
        "refused_expected": refused, "refusals": dict(tally.refusals),
        "error_count": unexpected, "errors": dict(tally.errors),
    }


def run(db: str, *, agents: int = 16, readers: int = 1, seconds: float = 10.0, pool_size: int = 10,
        log_dir: Path | None = None) -> dict[str, Any]:
    """Start the server and make the agents' tokens (CLI) meanwhile, run the
    agents for ``seconds``, stop the server (SIGTERM: drained), check the
    store; the figures and the checks (``ok``: every check empty)."""
    setup_started = time.monotonic()
    prepare(db)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chronomem-team-")))
        log_path = (log_dir or tmp) / "serve.log"
        env = _env(tmp / "pycache")
        with server(db, pool_size=pool_size, log_path=log_path, env=env) as ready:
            # the tokens are made while the server starts: it reads them at each request
            team = make_agents(db, agents, readers, env)
            url = ready()
            setup = time.monotonic() - setup_started
            tally = anyio.run(run_agents, team, url, seconds)
        out = {"agents": agents, "read_only_agents": sum(a.scope == "read" for a in team),
               "namespaces": list(NAMESPACES), "pool_size": pool_size, "setup_s": round(setup, 2),
               **summary(tally), **verify(db, tally, team), **access_log(log_path.read_text(), team)}
    out["ok"] = not any(out[k] for k in CHECKS)
    return out


@contextlib.contextmanager
def fresh_schema(base: str) -> Iterator[str]:
    """A store URL on a new schema of ``base``, dropped afterwards."""
    import psycopg

    name = "team_load_" + uuid.uuid4().hex[:12]
    try:
        yield f"{base}{'&' if '?' in base else '?'}schema={name}"
    finally:
        with psycopg.connect(base, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default=os.environ.get("CHRONOMEM_TEST_PG_URL", DEFAULT_DB),
                   help="PostgreSQL database; the run uses a fresh schema in it, dropped afterwards")
    p.add_argument("--agents", type=int, default=16)
    p.add_argument("--readers", type=int, default=1, help="agents per namespace with a read-only token")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--pool-size", type=int, default=10)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    with fresh_schema(a.db) as db:
        out = run(db, agents=a.agents, readers=a.readers, seconds=a.seconds, pool_size=a.pool_size)
    if a.json:
        print(json.dumps(out))
    else:
        for key in ("agents", "read_only_agents", "pool_size", "setup_s", "seconds", "calls", "ok_calls",
                    "throughput_per_s", "p50_ms", "p99_ms", "write_p50_ms", "write_p99_ms", "read_p50_ms",
                    "read_p99_ms", "writes_ok", "reads_ok", "refused_expected", "error_count",
                    "acknowledged_writes", "access_log_lines"):
            print(f"{key:>20}: {out[key]}")
        print(f"{'errors':>20}: {out['errors'] or 'none'}")
        for check in CHECKS:
            print(f"{check:>20}: {len(out[check])}" + (f"  e.g. {out[check][:3]}" if out[check] else ""))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
