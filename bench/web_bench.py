#!/usr/bin/env python3
"""Latency of the entity page (``/entity/{name}`` and its ``.json`` twin).

Builds a store of ``--size`` facts (default 1,000,000) with bulk
``add_facts`` in batches, containing two probe entities with exactly 50 and
500 facts each (a mix of single-valued predicates that supersede, open and
closed intervals), then times ``--requests`` GETs of each page in process
through ``httpx.ASGITransport`` (the full Starlette app, no socket) and prints
p50/p90/max in milliseconds. Goal: p50 <= 30 ms for the 50-fact entity.

    .venv/bin/python bench/web_bench.py                 # 1M facts (several minutes to build)
    .venv/bin/python bench/web_bench.py --size 100000   # quicker
    .venv/bin/python bench/web_bench.py --db /tmp/big.db --reuse   # keep / reuse the built store
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import httpx

import chronomem
from chronomem.adapters.web import create_app

PROBES = {"Probe50": 50, "Probe500": 500}
BATCH = 50_000
PREDICATES = [f"rel{i}" for i in range(40)]
SINGLE = ["ceo", "lives in", "status", "owner"]


def probe_items(name: str, n: int, rng: random.Random) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(n):
        if i % 5 == 0:  # single-valued: successive values supersede each other
            pred = SINGLE[(i // 5) % len(SINGLE)]
            items.append({"subject": name, "predicate": pred, "object": f"{name} value {i}",
                          "valid_from": f"{1990 + (i // 5) % 34}-{1 + i % 12:02d}"})
        else:
            start = 1980 + rng.randrange(44)
            item: dict[str, Any] = {"subject": name, "predicate": rng.choice(PREDICATES),
                                    "object": f"Entity {rng.randrange(10_000)}", "valid_from": str(start)}
            if rng.random() < 0.6:
                item["valid_to"] = str(start + 1 + rng.randrange(10))
            items.append(item)
    return items


def filler(size: int, rng: random.Random) -> Iterator[list[tuple[str, str, str, str]]]:
    entities = max(10, size // 10)
    batch: list[tuple[str, str, str, str]] = []
    for _ in range(size):
        batch.append((f"Entity {rng.randrange(entities)}", rng.choice(PREDICATES),
                      f"Entity {rng.randrange(entities)}", f"{1980 + rng.randrange(44)}-{1 + rng.randrange(12):02d}"))
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def build(path: Path, size: int, seed: int) -> float:
    rng = random.Random(seed)
    mem = chronomem.open(str(path))
    for pred in SINGLE:
        mem.define_predicate(pred, "one")
    t0 = time.perf_counter()
    probes = sum(PROBES.values())
    done = 0
    for batch in filler(max(0, size - probes), rng):
        mem.add_facts(batch)
        done += len(batch)
        print(f"\r  built {done:,} facts", end="", file=sys.stderr, flush=True)
    for name, n in PROBES.items():
        mem.add_facts(probe_items(name, n, rng))
    print(file=sys.stderr)
    mem.close()
    return time.perf_counter() - t0


async def measure(mem: chronomem.Memory, requests: int) -> dict[str, dict[str, float]]:
    app = create_app(mem)
    out: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        for name, n in PROBES.items():
            for kind, url in (("html", f"/entity/{name}"), ("json", f"/entity/{name}.json")):
                for _ in range(3):  # warm-up
                    r = await client.get(url)
                    r.raise_for_status()
                times = []
                for _ in range(requests):
                    t0 = time.perf_counter()
                    r = await client.get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert r.status_code == 200
                total = r.json()["timeline"]["total"] if kind == "json" else n
                assert total == n, f"{name} has {total} timeline bars, expected {n}"
                times.sort()
                out[f"{n} facts {kind}"] = {
                    "p50_ms": round(statistics.median(times), 2),
                    "p90_ms": round(times[int(len(times) * 0.9) - 1], 2),
                    "max_ms": round(times[-1], 2),
                    "bytes": len(r.content),
                }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1_000_000, help="facts in the store (default 1,000,000)")
    ap.add_argument("--requests", type=int, default=50, help="timed requests per page (default 50)")
    ap.add_argument("--db", type=Path, help="store file (default: a temporary file)")
    ap.add_argument("--reuse", action="store_true", help="reuse --db if it exists instead of rebuilding")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", dest="json_out", help="also write the results as JSON to this file ('-' = stdout)")
    args = ap.parse_args()
    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory(prefix="chronomem-web-bench-")
        args.db = Path(tmp.name) / "bench.db"
    build_s = None
    if not (args.reuse and args.db.exists()):
        if args.db.exists():
            args.db.unlink()
        print(f"building {args.size:,} facts in {args.db} ...", file=sys.stderr)
        build_s = build(args.db, args.size, args.seed)
    mem = chronomem.open(str(args.db))
    stats = mem.stats()
    results = asyncio.run(measure(mem, args.requests))
    mem.close()
    report = {"size": stats.facts, "versions": stats.versions, "entities": stats.entities,
              "build_seconds": round(build_s, 1) if build_s is not None else None, "requests": args.requests,
              "results": results, "goal": "p50 <= 30 ms for the 50-fact entity"}
    print(f"store: {stats.facts:,} facts ({stats.versions:,} versions, {stats.entities:,} entities)"
          + (f", built in {build_s:.1f} s" if build_s is not None else ""))
    print(f"{'page':<20} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8} {'bytes':>9}")
    for key, r in results.items():
        print(f"{key:<20} {r['p50_ms']:>8.2f} {r['p90_ms']:>8.2f} {r['max_ms']:>8.2f} {r['bytes']:>9,}")
    ok = results["50 facts html"]["p50_ms"] <= 30 and results["50 facts json"]["p50_ms"] <= 30
    print("goal met: p50 <= 30 ms for 50 facts" if ok else "goal MISSED: p50 > 30 ms for 50 facts")
    if args.json_out:
        text = json.dumps(report, indent=2)
        if args.json_out == "-":
            print(text)
        else:
            Path(args.json_out).write_text(text)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
