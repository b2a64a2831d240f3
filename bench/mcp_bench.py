"""MCP tool round-trip latency: ``fact_add``, ``facts``, ``remember`` and
``recall`` over stdio and HTTP.

Each transport talks to a real server process through the official MCP SDK
client: ``chronomem --db FILE mcp`` (stdio) and the streamable-HTTP app under
uvicorn on 127.0.0.1 (HTTP). A round trip is one ``tools/call`` from the
client's send to its parsed result. Goal: p50 <= 5 ms over stdio for the fact
tools. ``remember`` (an episode with two facts; embeds the text with the
bundled offline model) fills the evidence store with ``--episodes`` episodes,
then ``recall`` (entity facts + hybrid search, packed into 1500 tokens) is
timed on questions about them.

    .venv/bin/python bench/mcp_bench.py [--calls 500] [--episodes 500] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
from mcp import Client, StdioServerParameters

_HTTP_SERVER = """
import sys, uvicorn, chronomem
from chronomem.adapters.mcp import build_http_app
mem = chronomem.open(sys.argv[1])
uvicorn.run(build_http_app(mem), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CHRONOMEM_DB", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _http_process(db: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", _HTTP_SERVER, str(db), str(port)], env=_env())
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the HTTP server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.asynccontextmanager
async def _client(transport: str, db: Path, url: str | None) -> AsyncIterator[Client]:
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=["-m", "chronomem", "--db", str(db), "mcp"],
                                       env=_env())
        async with Client(params, mode="legacy") as c:
            yield c
    else:
        assert url is not None
        async with Client(url) as c:
            yield c


def _stats(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50_ms": round(q[49], 3), "p99_ms": round(q[98], 3), "mean_ms": round(statistics.fmean(ms), 3),
            "calls": len(ms)}


async def _measure(transport: str, db: Path, url: str | None, calls: int,
                   episodes: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    async with _client(transport, db, url) as c:
        for i in range(20):  # warm up: imports, SQLite page cache, connection setup
            await c.call_tool("fact_add", {"subject": f"warm{i}", "predicate": "p", "object": "o"})
            await c.call_tool("facts", {"subject": f"warm{i}"})
        samples = []
        for i in range(calls):
            args = {"subject": f"person{i % 200}", "predicate": "works_at", "object": f"org{i}",
                    "valid_from": "2024-03", "source": "bench"}
            t0 = time.perf_counter()
            r = await c.call_tool("fact_add", args)
            samples.append(time.perf_counter() - t0)
            assert not r.is_error
        out["fact_add"] = _stats(samples)
        samples = []
        for i in range(calls):
            t0 = time.perf_counter()
            r = await c.call_tool("facts", {"subject": f"person{i % 200}", "limit": 20})
            samples.append(time.perf_counter() - t0)
            assert not r.is_error
        out["facts"] = _stats(samples)
        await c.call_tool("predicate_define", {"name": "lead", "cardinality": "one"})
        await c.call_tool("remember", {"text": "warm-up: loads the embedding model"})
        samples = []
        for i in range(episodes):
            team, who = f"team{i % 50}", f"person{i}"
            ep_args: dict[str, Any] = {"text": f"{who} now leads {team}; the decision was made in the weekly sync "
                            f"about project{i % 30} and its {['database', 'frontend', 'billing'][i % 3]} work.",
                    "occurred_at": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}", "speaker": f"person{i % 7}",
                    "session": f"sync{i % 40}",
                    "facts": [{"subject": team, "predicate": "lead", "object": who,
                               "valid_from": f"2025-{1 + i % 12:02d}"},
                              {"subject": who, "predicate": "works_on", "object": f"project{i % 30}"}]}
            t0 = time.perf_counter()
            r = await c.call_tool("remember", ep_args)
            samples.append(time.perf_counter() - t0)
            assert not r.is_error, r.content
        out["remember"] = _stats(samples)
        for i in range(10):  # warm up the vector cache
            await c.call_tool("recall", {"question": f"who leads team{i}?"})
        samples = []
        for i in range(calls):
            q = [f"Who leads team{i % 50} and what did they decide?", f"What does person{i % episodes} work on?",
                 f"billing work in project{i % 30}"][i % 3]
            t0 = time.perf_counter()
            r = await c.call_tool("recall", {"question": q})
            samples.append(time.perf_counter() - t0)
            assert not r.is_error, r.content
        out["recall"] = _stats(samples)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=500, help="calls per tool and transport")
    ap.add_argument("--episodes", type=int, default=500, help="episodes stored with remember before timing recall")
    ap.add_argument("--no-http", action="store_true", help="stdio only")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ns = ap.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        results["stdio"] = anyio.run(_measure, "stdio", db, None, ns.calls, ns.episodes)
        if not ns.no_http:
            db2 = Path(tmp) / "bench-http.db"
            with _http_process(db2) as url:
                results["http"] = anyio.run(_measure, "http", db2, url, ns.calls, ns.episodes)
    if ns.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'transport':<10}{'tool':<10}{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}{'calls':>7}")
    for transport, tools in results.items():
        for tool, s in tools.items():
            print(f"{transport:<10}{tool:<10}{s['p50_ms']:>9.2f}{s['p99_ms']:>9.2f}{s['mean_ms']:>9.2f}{s['calls']:>7}")
    goal = results["stdio"]["fact_add"]["p50_ms"] <= 5 and results["stdio"]["facts"]["p50_ms"] <= 5
    print(f"goal p50 <= 5 ms over stdio: {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
