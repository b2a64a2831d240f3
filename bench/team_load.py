"""A team on one server: N simulated agents over MCP streamable HTTP, in two
namespaces, mixing writes and reads against real ``chronomem serve``
processes on PostgreSQL (loopback only). Afterwards it checks the store:

* nothing lost: every write the server acknowledged (a fact id) is there,
  with its subject, predicate and object, in its own namespace only;
* no cross-namespace result: every fact a read returned (during the run) and
  every fact stored (after it) carries its own namespace's tag;
* no cardinality overlap: on the single-valued ``status`` predicate, no
  (subject, predicate) has believed versions whose valid intervals overlap.

It prints the throughput (tool calls a second), p50 / p99 latency per call
(client side: send to parsed result) and the error counts.
``tests/test_team_load.py`` runs it bounded (≤ 60 s) and asserts the checks.

    .venv/bin/python bench/team_load.py [--agents 16] [--seconds 20] [--pool-size 10]
        [--db postgresql://postgres@127.0.0.1:5432/test] [--json]

Namespaces: until namespace-bound tokens exist, each namespace has a
``chronomem serve`` of its own on the same database (``--namespace``); the
three ``TODO(tokens)`` lines say what changes when one server with a token
per agent replaces them (docs/team.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Sequence

import anyio

import chronomem
from chronomem.errors import FactNotFoundError

NAMESPACES = ("team-a", "team-b")
#: subjects both namespaces write: a read that leaked would show the other's
PROJECTS = tuple(f"project-{k}" for k in range(4))
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/test"

_SCRIPT = Path(sys.executable).with_name("chronomem")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


@dataclasses.dataclass
class Agent:
    name: str
    namespace: str
    url: str  # the MCP endpoint
    token: str | None = None


@dataclasses.dataclass
class Ack:
    namespace: str
    fact_id: str
    subject: str
    predicate: str
    object: str


@dataclasses.dataclass
class Tally:
    """What the agents saw, shared by their tasks (one event loop: no lock)."""

    latencies: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {"write": [], "read": []})
    errors: Counter[str] = dataclasses.field(default_factory=Counter)
    acks: list[Ack] = dataclasses.field(default_factory=list)
    cross: list[str] = dataclasses.field(default_factory=list)
    elapsed: float = 0.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("CHRONOMEM_DB", "CHRONOMEM_NAMESPACE", "CHRONOMEM_TOKEN"):
        env.pop(name, None)
    return env


def prepare(db: str) -> None:
    """``status`` is single-valued in both namespaces (the cardinality check)."""
    with chronomem.open(db, namespace=NAMESPACES[0]) as mem:
        for ns in NAMESPACES:
            mem.view(ns).define_predicate("status", "one")


@contextlib.contextmanager
def servers(db: str, *, pool_size: int, log_dir: Path) -> Iterator[dict[str, str]]:
    """``chronomem serve`` per namespace on loopback; ``{namespace: MCP URL}``.
    Their access logs go to files in ``log_dir`` (a pipe nobody reads would
    fill and stall the server)."""
    # TODO(tokens): one server for every namespace:
    #   [*CLI, "--db", db, "serve", "--host", "127.0.0.1", "--port", "0", "--json", "--pool-size", str(pool_size)]
    procs: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}
    try:
        for ns in NAMESPACES:
            err = open(log_dir / f"serve-{ns}.log", "w")  # noqa: SIM115 - closed with the process below
            proc = subprocess.Popen([*CLI, "--db", db, "--namespace", ns, "serve", "--host", "127.0.0.1",
                                     "--port", "0", "--json", "--pool-size", str(pool_size)],
                                    stdout=subprocess.PIPE, stderr=err, text=True, env=_env())
            err.close()
            procs.append(proc)
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"serve for {ns} did not start: {(log_dir / f'serve-{ns}.log').read_text()}")
            urls[ns] = json.loads(line)["mcp"]
        yield urls
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()  # graceful: SIGTERM drains, then closes the pool
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def make_agents(urls: dict[str, str], n: int, db: str) -> list[Agent]:
    agents = []
    for i in range(n):
        ns = NAMESPACES[i % len(NAMESPACES)]
        name = f"agent-{i:02d}"
        # TODO(tokens): token = json.loads(subprocess.run([*CLI, "--db", db, "token", "create", "--namespace", ns, "--scope", "write", "--name", name, "--json"], capture_output=True, text=True, check=True).stdout)["token"]  # noqa: E501
        agents.append(Agent(name, ns, urls[ns], token=None))
    return agents


def _text(result: Any) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)[:80]


async def run_agent(agent: Agent, index: int, deadline: float, max_calls: int, tally: Tally) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(index)
    ns = agent.namespace
    # TODO(tokens): headers = {"Authorization": f"Bearer {agent.token}"} (one URL for every agent)
    headers = {"Authorization": f"Bearer {agent.token}"} if agent.token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
    try:
        async with http, Client(streamable_http_client(agent.url, http_client=http)) as client:
            for k in range(max_calls):
                if time.monotonic() >= deadline:
                    break
                roll = rng.random()
                if roll < 0.35:  # a note of its own (multi-valued)
                    kind = "write"
                    args = {"subject": f"{agent.name}-item-{k % 40}", "predicate": "note",
                            "object": f"{ns}:{agent.name}-n{k}"}
                    tool = "fact_add"
                elif roll < 0.55:  # a shared project's single-valued status, at some day of 2024
                    kind = "write"
                    args = {"subject": rng.choice(PROJECTS), "predicate": "status",
                            "object": f"{ns}:s{rng.randrange(6)}",
                            "valid_from": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"}
                    tool = "fact_add"
                else:  # read a shared project or one of its own items
                    kind = "read"
                    subject = rng.choice(PROJECTS) if rng.random() < 0.6 else f"{agent.name}-item-{rng.randrange(40)}"
                    args = {"subject": subject, "limit": 50}
                    tool = "facts"
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, args)
                except Exception as exc:  # noqa: BLE001 - counted, the agent goes on
                    tally.errors[f"{kind}:{type(exc).__name__}"] += 1
                    continue
                tally.latencies[kind].append(time.perf_counter() - started)
                if result.is_error:
                    tally.errors[f"{kind}:tool error: {_text(result)}"] += 1
                    continue
                data = result.structured_content or {}
                if tool == "fact_add":
                    f = data["fact"]
                    tally.acks.append(Ack(ns, f["id"], args["subject"], args["predicate"], args["object"]))
                else:
                    for f in data.get("facts", []):
                        if not str(f["object"]).startswith(ns + ":"):
                            tally.cross.append(f"{agent.name} in {ns} read {f['subject']} {f['object']}")
    except Exception as exc:  # noqa: BLE001 - a session that failed to open or broke
        tally.errors[f"session:{type(exc).__name__}: {exc}"[:120]] += 1


async def run_agents(agents: Sequence[Agent], seconds: float, max_calls: int = 10**9) -> Tally:
    tally = Tally()
    started = time.monotonic()
    deadline = started + seconds
    async with anyio.create_task_group() as tg:
        for i, agent in enumerate(agents):
            tg.start_soon(run_agent, agent, i, deadline, max_calls, tally)
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


def verify(db: str, tally: Tally) -> dict[str, Any]:
    """The three checks, on the store itself (see the module docstring)."""
    lost: list[str] = []
    leaked: list[str] = list(tally.cross)
    overlaps: list[str] = []
    with chronomem.open(db, namespace=NAMESPACES[0]) as mem:
        views = {ns: mem.view(ns) for ns in NAMESPACES}
        for ack in tally.acks:
            try:
                f = views[ack.namespace].fact(ack.fact_id)
            except FactNotFoundError:
                lost.append(f"{ack.namespace} {ack.fact_id} {ack.subject} {ack.predicate} {ack.object}")
                continue
            if (f.subject, f.predicate, f.object) != (ack.subject, ack.predicate, ack.object):
                lost.append(f"{ack.fact_id}: stored as {f.subject} {f.predicate} {f.object}")
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
            for subject in PROJECTS:
                spans = [(f.object, f.valid_from, f.valid_to) for f in view.facts(subject, "status", limit=1_000_000)]
                overlaps += [f"{ns} {subject}: {x}" for x in overlapping(spans)]
    return {"acknowledged_writes": len(tally.acks), "lost": lost, "cross_namespace": leaked,
            "cardinality_overlaps": overlaps}


def _ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def summary(tally: Tally) -> dict[str, Any]:
    every = tally.latencies["write"] + tally.latencies["read"]
    return {
        "calls": len(every) + sum(tally.errors.values()),
        "ok_calls": len(every) - sum(n for k, n in tally.errors.items() if "tool error" in k),
        "seconds": round(tally.elapsed, 2),
        "throughput_per_s": round(len(every) / tally.elapsed, 1) if tally.elapsed else 0.0,
        "p50_ms": _ms(every, 0.50), "p99_ms": _ms(every, 0.99),
        "write_p50_ms": _ms(tally.latencies["write"], 0.50), "write_p99_ms": _ms(tally.latencies["write"], 0.99),
        "read_p50_ms": _ms(tally.latencies["read"], 0.50), "read_p99_ms": _ms(tally.latencies["read"], 0.99),
        "mean_ms": round(1000 * statistics.fmean(every), 2) if every else None,
        "errors": dict(tally.errors), "error_count": sum(tally.errors.values()),
    }


def run(db: str, *, agents: int = 16, seconds: float = 10.0, pool_size: int = 10,
        log_dir: Path | None = None) -> dict[str, Any]:
    """Start the servers, run the agents for ``seconds``, stop the servers
    (SIGTERM: drained), check the store; the figures and the checks."""
    prepare(db)
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chronomem-team-")))
        with servers(db, pool_size=pool_size, log_dir=log_dir) as urls:
            tally = anyio.run(run_agents, make_agents(urls, agents, db), seconds)
        out = {"agents": agents, "namespaces": list(NAMESPACES), "pool_size": pool_size, **summary(tally),
               **verify(db, tally)}
        out["access_log_lines"] = sum(
            1 for ns in NAMESPACES for line in (log_dir / f"serve-{ns}.log").read_text().splitlines()
            if line.startswith("time=") and " path=/mcp " in line)
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
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--pool-size", type=int, default=10)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    with fresh_schema(a.db) as db:
        out = run(db, agents=a.agents, seconds=a.seconds, pool_size=a.pool_size)
    if a.json:
        print(json.dumps(out))
    else:
        for key in ("agents", "pool_size", "seconds", "calls", "throughput_per_s", "p50_ms", "p99_ms",
                    "write_p50_ms", "write_p99_ms", "read_p50_ms", "read_p99_ms", "error_count",
                    "acknowledged_writes", "access_log_lines"):
            print(f"{key:>20}: {out[key]}")
        print(f"{'errors':>20}: {out['errors'] or 'none'}")
        for check in ("lost", "cross_namespace", "cardinality_overlaps"):
            print(f"{check:>20}: {len(out[check])}" + (f"  e.g. {out[check][:3]}" if out[check] else ""))
    return 0 if not (out["lost"] or out["cross_namespace"] or out["cardinality_overlaps"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
