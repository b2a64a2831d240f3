#!/usr/bin/env python3
"""chronomem on PostgreSQL vs SQLite: the fact-store benchmark's workload.

Run:  .venv/bin/python bench/pg_bench.py [--pg postgresql://postgres@127.0.0.1:5432/test]
                                         [--size 100000] [--window 2000] [--queries 2000]
                                         [--icews-limit 0] [--writers 1,2,4,8] [--per-writer 400]
                                         [--backends sqlite,postgres] [--json out.json|-]

Measured for each backend, on a fresh store (SQLite: a file in a temp dir;
PostgreSQL: a fresh schema of the --pg database, dropped afterwards):

* fill: the kg_bench workload (``bench/kg_bench.py``: ~N/10 entities, 50
  predicates, 6 single-valued with supersession) bulk-loaded with add_facts in
  50k-row chunks;
* per-call writes: a window of ``add_fact`` calls after the fill, each its own
  transaction. SQLite runs its default durability (WAL, synchronous=NORMAL: no
  fsync per commit); PostgreSQL runs twice: its default durability (every
  acknowledged commit flushed, as the server's synchronous_commit=on) and
  ``durability="async"`` (the closer match to SQLite's default: a server crash
  may lose the last few hundred ms of acknowledged commits, never corrupts);
* as-of reads: ``facts(subject=, as_of=)`` and ``facts(predicate=, as_of=)``
  latency (p50 / p99) on the filled store;
* ICEWS bulk: the 271k rows of ``shared/data/tkg/icews_combined_named.tsv`` in
  one ``add_facts`` call (goal on PostgreSQL: >= 20,000 facts/s);
* concurrent writers: 1, 2, 4 and 8 processes, each making --per-writer
  ``add_fact`` calls on its own subjects (a third of them on a single-valued
  predicate), started together; aggregate writes/s over the wall time
  (PostgreSQL also with durability="async");
* the write floor (PostgreSQL, ``bench/pg_write_bench.py``, ~2 minutes; skip
  with ``--skip floor``): ``add_fact`` against plain psycopg doing the least
  the same rows need, side by side for 1, 4 and 8 writer processes with
  ``synchronous_commit`` on and off, and the round trips per write of each.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import kg_bench  # noqa: E402  (the shared workload generator)
import pg_write_bench  # noqa: E402  (the write floor)

import chronomem  # noqa: E402

DEFAULT_PG = os.environ.get("CHRONOMEM_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
ICEWS = HERE.parent.parent / "shared" / "data" / "tkg" / "icews_combined_named.tsv"


def pct(vals: list[float], q: float) -> float:
    vals = sorted(vals)
    return vals[min(len(vals) - 1, max(0, int(round(q * (len(vals) - 1)))))] if vals else float("nan")


class Target:
    """A fresh store of one backend; ``url()`` opens it, ``drop()`` removes it."""

    def __init__(self, backend: str, pg: str, tmp: Path) -> None:
        self.backend = backend
        self.pg = pg
        self.name = "bench_" + uuid.uuid4().hex[:12]
        self.path = tmp / f"{self.name}.db"

    def url(self) -> str:
        if self.backend == "sqlite":
            return str(self.path)
        sep = "&" if "?" in self.pg else "?"
        return f"{self.pg}{sep}schema={self.name}"

    def drop(self) -> None:
        if self.backend == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return
        import psycopg

        with psycopg.connect(self.pg, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


def timed(fn: Callable[[Any], Any], items: list[Any], warmup: int = 50) -> dict[str, float]:
    for it in items[:warmup]:
        fn(it)
    lat = []
    t0 = time.perf_counter()
    for it in items:
        a = time.perf_counter()
        fn(it)
        lat.append((time.perf_counter() - a) * 1e6)
    total = time.perf_counter() - t0
    return {"rate": len(items) / total, "p50_us": pct(lat, 0.5), "p99_us": pct(lat, 0.99)}


def run_workload(t: Target, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    wl = tmp / "workload.tsv"
    if not wl.exists():
        kg_bench.write_workload(wl, args.size + 2 * args.window, args.size, 42)
    src = kg_bench.read_workload(wl)
    with chronomem.open(t.url(), namespace="default") as m:
        for p in kg_bench.PRED_ONE:
            m.define_predicate(p, cardinality="one")
        fill = [next(src)[:5] for _ in range(args.size)]
        t0 = time.perf_counter()
        for i in range(0, len(fill), 50_000):
            m.add_facts(fill[i:i + 50_000])
        out["fill_rate"] = len(fill) / (time.perf_counter() - t0)

        def write(row: Any) -> None:
            s, p, o, vf, vt, _prev = row
            m.add_fact(s, p, o, valid_from=vf, valid_to=vt, source="bench")

        out["write"] = timed(write, [next(src) for _ in range(args.window)], warmup=0)
        q = kg_bench.make_queries(args.size, 42, args.queries, max(20, args.queries // 20))
        out["read_subject"] = timed(lambda x: m.facts(subject=x[0], as_of=x[1]), [tuple(x) for x in q["subject"]])
        out["read_predicate"] = timed(lambda x: m.facts(predicate=x[0], as_of=x[1]),
                                      [tuple(x) for x in q["predicate"]], warmup=5)
    if t.backend == "postgres":
        with chronomem.open(t.url(), namespace="default", durability="async") as m:
            def write_async(row: Any) -> None:
                s, p, o, vf, vt, _prev = row
                m.add_fact(s, p, o, valid_from=vf, valid_to=vt, source="bench")

            out["write_async"] = timed(write_async, [next(src) for _ in range(args.window)], warmup=0)
    return out


def run_icews(t: Target, rows: list[dict[str, str]]) -> dict[str, Any]:
    with chronomem.open(t.url(), namespace="default") as m:
        t0 = time.perf_counter()
        m.add_facts(rows)
        el = time.perf_counter() - t0
        return {"rows": len(rows), "seconds": el, "rate": len(rows) / el, "facts": m.stats().facts}


def _writer(url: str, w: int, n: int, start: Any, durability: str) -> float:
    with chronomem.open(url, namespace="default", durability=durability) as m:
        start.wait()
        t0 = time.perf_counter()
        for i in range(n):
            s = f"w{w}_e{i % 50}"
            if i % 3 == 0:
                m.add_fact(s, "status", f"s{i}", valid_from=kg_bench.iso_day(i))
            else:
                m.add_fact(s, "knows", f"w{w}_e{(i * 7) % 97}", valid_from=kg_bench.iso_day(i))
        return time.perf_counter() - t0


def run_writers(t: Target, procs: int, per: int, durability: str = "normal") -> dict[str, Any]:
    with chronomem.open(t.url(), namespace="default") as m:
        m.define_predicate("status", cardinality="one")
    ctx = mp.get_context("spawn")
    start = ctx.Manager().Event()
    with ctx.Pool(procs) as pool:
        pending = pool.starmap_async(_writer, [(t.url(), w, per, start, durability) for w in range(procs)])
        time.sleep(1.0 + 0.3 * procs)  # let every process connect
        t0 = time.perf_counter()
        start.set()
        pending.get()
        wall = time.perf_counter() - t0
    return {"procs": procs, "writes": procs * per, "seconds": wall, "rate": procs * per / wall}


def fnum(x: Any, unit: str = "") -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}{unit}" if x >= 100 else f"{x:,.1f}{unit}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", default=DEFAULT_PG)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--icews-limit", type=int, default=0)
    ap.add_argument("--writers", default="1,2,4,8")
    ap.add_argument("--per-writer", type=int, default=400)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: workload,icews,writers,floor")
    ap.add_argument("--backends", default="sqlite,postgres", help="comma list: sqlite,postgres")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    res: dict[str, Any] = {"args": vars(args), "sqlite": {}, "postgres": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows = kg_bench.icews_rows(ICEWS, args.icews_limit) if "icews" not in skip and ICEWS.exists() else []
        for backend in [b for b in ("sqlite", "postgres") if b in args.backends.split(",")]:
            r = res[backend]
            if "workload" not in skip:
                t = Target(backend, args.pg, tmp)
                try:
                    r.update(run_workload(t, args, tmp))
                finally:
                    t.drop()
                print(f"{backend}: workload done", file=sys.stderr)
            if rows:
                t = Target(backend, args.pg, tmp)
                try:
                    r["icews"] = run_icews(t, rows)
                finally:
                    t.drop()
                print(f"{backend}: icews {r['icews']['rate']:,.0f} facts/s", file=sys.stderr)
            if "writers" not in skip:
                r["writers"] = []
                for n in [int(x) for x in args.writers.split(",")]:
                    t = Target(backend, args.pg, tmp)
                    try:
                        r["writers"].append(run_writers(t, n, args.per_writer))
                    finally:
                        t.drop()
                    print(f"{backend}: {n} writers {r['writers'][-1]['rate']:,.0f} writes/s", file=sys.stderr)
                if backend == "postgres":
                    r["writers_async"] = []
                    for n in [int(x) for x in args.writers.split(",")]:
                        t = Target(backend, args.pg, tmp)
                        try:
                            r["writers_async"].append(run_writers(t, n, args.per_writer, durability="async"))
                        finally:
                            t.drop()
                        print(f"{backend}: {n} writers, durability=async: "
                              f"{r['writers_async'][-1]['rate']:,.0f} writes/s", file=sys.stderr)
    s, p = res["sqlite"], res["postgres"]

    def g(d: dict[str, Any], *path: str) -> Any:
        for k in path:
            if not isinstance(d, dict) or k not in d:
                return None
            d = d[k]
        return d

    lines = [
        ("bulk fill (add_facts, workload)", g(s, "fill_rate"), g(p, "fill_rate"), " facts/s"),
        ("per-call add_fact", g(s, "write", "rate"), g(p, "write", "rate"), " /s"),
        ("per-call add_fact p50", g(s, "write", "p50_us"), g(p, "write", "p50_us"), " us"),
        ("per-call add_fact, PG durability=async", None, g(p, "write_async", "rate"), " /s"),
        ("as-of read by subject p50", g(s, "read_subject", "p50_us"), g(p, "read_subject", "p50_us"), " us"),
        ("as-of read by subject p99", g(s, "read_subject", "p99_us"), g(p, "read_subject", "p99_us"), " us"),
        ("as-of read by predicate p50", g(s, "read_predicate", "p50_us"), g(p, "read_predicate", "p50_us"), " us"),
        ("ICEWS bulk add_facts", g(s, "icews", "rate"), g(p, "icews", "rate"), " facts/s"),
    ]
    for i, w in enumerate(p.get("writers") or []):
        sw = (s.get("writers") or [None] * (i + 1))[i]
        lines.append((f"{w['procs']} concurrent writer processes", sw and sw["rate"], w["rate"], " writes/s"))
    for w in p.get("writers_async") or []:
        lines.append((f"{w['procs']} writers, PG durability=async", None, w["rate"], " writes/s"))
    print(f"\n{'metric':48} {'SQLite':>16} {'PostgreSQL':>16}")
    for name, a, b, unit in lines:
        print(f"{name:48} {fnum(a, unit):>16} {fnum(b, unit):>16}")
    ic = g(p, "icews", "rate")
    if ic is not None:
        print(f"\ngoal: PostgreSQL ICEWS bulk >= 20,000 facts/s: {'met' if ic >= 20000 else 'NOT met'} ({ic:,.0f})")
    ws = p.get("writers") or []
    if len(ws) > 1:
        best = max(ws[1:], key=lambda w: w["rate"])
        scaled = best["rate"] > 1.1 * ws[0]["rate"]
        print(f"goal: aggregate writes scale beyond one writer: {'met' if scaled else 'NOT met'}"
              f" (1: {ws[0]['rate']:,.0f}/s, best {best['procs']}: {best['rate']:,.0f}/s)")
    if "floor" not in skip and "postgres" in args.backends.split(","):
        floor_args = argparse.ArgumentParser()
        pg_write_bench.add_args(floor_args)
        fargs = floor_args.parse_args(["--pg", args.pg])
        res["floor"] = pg_write_bench.run(fargs)
        pg_write_bench.report(res["floor"], fargs)
    if args.json:
        text = json.dumps(res, indent=2, default=str)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
