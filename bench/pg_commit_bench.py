#!/usr/bin/env python3
"""How a PostgreSQL write waits for its WAL flush: the variants, measured.

Run:  .venv/bin/python bench/pg_commit_bench.py [--pg postgresql://postgres@127.0.0.1:5432/test]
                                                [--calls 500] [--writers 4] [--rounds 7] [--block 60]

The variants replace ``CommitPlan.statements`` (``store/postgres/tx.py``):

* ``old``: commit asynchronously, release the lock, then an empty
  synchronous transaction -- which flushes nothing (a transaction that writes
  no WAL commits asynchronously): not durable, the bug this replaced;
* ``sync``: commit synchronously, locks held through the flush (what a role
  that may not call ``pg_logical_emit_message`` gets);
* ``emit``: the early lock release with a wait transaction that writes a
  logical message (chronomem's default);
* ``async``: ``durability="async"``, no wait.

One writer: ``add_fact`` latency, the variants interleaved call by call, so
load from elsewhere hits all of them alike. N writer processes: aggregate
writes/s of three workloads, every writer switching variant at once, block
by block: ``spread`` (``bench/pg_bench.py``'s writers: own subjects, a third
single-valued), ``group`` (all on one single-valued (subject, predicate), as
``tests/test_race.py``) and ``exclusive`` (two-fact ``add_facts`` batches,
which take the store's lock exclusively). Each store is a fresh schema of
--pg, dropped afterwards.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing as mp
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import chronomem  # noqa: E402
from chronomem.store.postgres import tx as postgres_tx  # noqa: E402

DEFAULT_PG = os.environ.get("CHRONOMEM_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
_REAL = postgres_tx.CommitPlan.statements
Statements = Callable[[Any, str], list[tuple[str, Any]]]


def _old(plan: Any, end: str) -> list[tuple[str, Any]]:
    return [("COMMIT", ()), (f"SELECT {end}", ()), ("BEGIN", ()), ("SELECT pg_current_xact_id()", ()),
            ("COMMIT", ())]


VARIANTS: dict[str, Statements] = {
    "old": _old,
    "sync": lambda plan, end: _REAL(dataclasses.replace(plan, emit=False), end),
    "emit": _REAL,
    "async": lambda plan, end: _REAL(dataclasses.replace(plan, durability="async"), end),
}


def use(name: str) -> None:
    postgres_tx.CommitPlan.statements = VARIANTS[name]  # type: ignore[method-assign]


def fresh(pg: str) -> tuple[str, Callable[[], None]]:
    name = "commit_bench_" + uuid.uuid4().hex[:10]

    def drop() -> None:
        import psycopg

        with psycopg.connect(pg, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    return f"{pg}{'&' if '?' in pg else '?'}schema={name}", drop


def one_writer(pg: str, calls: int) -> None:
    url, drop = fresh(pg)
    lat: dict[str, list[float]] = {k: [] for k in VARIANTS}
    try:
        with chronomem.open(url, embedder=None) as m:
            m.define_predicate("status", cardinality="one")
            for i in range(calls):
                for k in VARIANTS:
                    use(k)
                    t = time.perf_counter()
                    if i % 3 == 0:
                        m.add_fact(f"{k}_e{i % 50}", "status", f"s{i}")
                    else:
                        m.add_fact(f"{k}_e{i % 50}", "knows", f"{k}_e{(i * 7) % 97}")
                    lat[k].append(time.perf_counter() - t)
    finally:
        drop()
    print(f"1 writer, {calls} add_fact per variant, interleaved call by call")
    print(f"{'variant':8} {'p50 ms':>8} {'mean ms':>8} {'writes/s':>9}")
    for k, v in lat.items():
        v = v[20:]  # warm-up
        print(f"{k:8} {statistics.median(v) * 1e3:8.2f} {statistics.mean(v) * 1e3:8.2f} {1 / statistics.mean(v):9,.0f}")


def _writer(url: str, w: int, rounds: int, block: int, barrier: Any,
            workload: str) -> list[tuple[int, str, float, float]]:
    out = []
    with chronomem.open(url, embedder=None) as m:
        i = 0
        for r in range(rounds):
            for name in VARIANTS:
                use(name)
                barrier.wait()
                t0 = time.time()
                for _ in range(block):
                    s = f"w{w}_e{i % 50}"
                    if workload == "group":
                        m.add_fact("Acme", "status", f"w{w}_{i}", valid_from=f"2024-01-{1 + (i * 7 + w) % 28:02d}")
                    elif workload == "exclusive":
                        m.add_facts([(s, "knows", f"w{w}_e{(i * 7) % 97}"), (s, "likes", f"w{w}_e{(i * 5) % 89}")])
                    elif i % 3 == 0:
                        m.add_fact(s, "status", f"s{i}")
                    else:
                        m.add_fact(s, "knows", f"w{w}_e{(i * 7) % 97}")
                    i += 1
                out.append((r, name, t0, time.time()))
    return out


def writers(pg: str, workload: str, procs: int, rounds: int, block: int) -> None:
    url, drop = fresh(pg)
    try:
        with chronomem.open(url, embedder=None) as m:
            m.define_predicate("status", cardinality="one")
        ctx = mp.get_context("spawn")
        barrier = ctx.Manager().Barrier(procs)
        with ctx.Pool(procs) as pool:
            res = pool.starmap(_writer, [(url, w, rounds, block, barrier, workload) for w in range(procs)])
    finally:
        drop()
    print(f"{procs} writers, workload {workload}, {rounds} rounds x {block} writes per writer and variant")
    print(f"{'variant':8} {'median writes/s':>16}   runs")
    for name in VARIANTS:
        rates = []
        for r in range(rounds):
            spans = [x for proc in res for x in proc if x[0] == r and x[1] == name]
            rates.append(procs * block / (max(s[3] for s in spans) - min(s[2] for s in spans)))
        print(f"{name:8} {statistics.median(rates):16,.0f}   {' / '.join(f'{x:,.0f}' for x in rates)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", default=DEFAULT_PG)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=int, default=60)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    one_writer(args.pg, args.calls)
    for workload in ("spread", "group", "exclusive"):
        writers(args.pg, workload, args.writers, args.rounds, args.block)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
