#!/usr/bin/env python3
"""Latency of a pinned read on a read replica beside the same read on the
primary (``docs/postgres.md``, "Read replica").

Starts a throwaway primary and a streaming standby of it on loopback ports
(``tests/pg_cluster.replica_pair``: initdb, ``pg_basebackup -R``; run as the
``postgres`` user under root), writes ``--facts`` facts over ``--subjects``
subjects (a single-valued predicate superseded along the way), settles a
time T, waits until the standby has replayed it, then times ``--reads``
reads of ``facts(subject=..., known_at=T)`` through a memory opened with
``read_replica=`` and through one without, interleaved (one of each per
round, in turns, after a warm-up read of every subject). It also counts the transactions each server ran
per read (``pg_stat_database.xact_commit``). Both servers are removed after.

    .venv/bin/python bench/replica_bench.py [--reads 500] [--facts 20000] [--later 0] [--read subject]

``--later N`` supersedes N subjects' ``works_at`` after T was settled
(the standby replays them before the reads): the primary's clock has moved
past the settled time, so the replica path's check on the primary
(``store/postgres/replica_patch.py``) looks up every returned row (without
it, the check only reads the clock). ``--read predicate`` reads
``facts(predicate=p<i % 7>, known_at=T)`` (about ``facts / 9`` rows each)
instead of one subject's facts (about ``facts / subjects``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402

import chronomem  # noqa: E402
from chronomem.core.time import to_us  # noqa: E402
from pg_cluster import Cluster, replica_pair  # noqa: E402

SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{root}'
max_connections = 40
shared_buffers = 64MB
fsync = off
autovacuum = off
"""


def one(c: Cluster, sql: str) -> int:
    with psycopg.connect(c.url, autocommit=True) as con:
        row = con.execute(sql).fetchone()
        return int(row[0]) if row and row[0] is not None else -1


def caught_up(primary: Cluster, standby: Cluster) -> None:
    target = one(primary, "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
    while one(standby, "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint") < target:
        time.sleep(0.01)


def xacts(c: Cluster) -> tuple[int, int]:
    """Transactions committed and buffer pages touched (hit or read) so far."""
    time.sleep(0.3)  # an exiting backend's report
    with psycopg.connect(c.url, autocommit=True) as con:
        row = con.execute("SELECT xact_commit, blks_hit + blks_read FROM pg_stat_database "
                          "WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=500)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--subjects", type=int, default=500)
    ap.add_argument("--later", type=int, default=0)
    ap.add_argument("--read", choices=("subject", "predicate"), default="subject")
    args = ap.parse_args()
    pair = replica_pair(SETTINGS, "the benchmark needs a server pair of its own")
    primary, standby = next(pair)
    try:
        url = f"{primary.url}?schema=bench"
        with chronomem.open(url) as w:
            w.define_predicate("works_at", cardinality="one")
            batch = []
            for i in range(args.facts):
                s = f"person{i % args.subjects}"
                if i % 5 == 0:
                    batch.append({"subject": s, "predicate": "works_at", "object": f"org{i % 97}",
                                  "valid_from": f"{2000 + (i // args.subjects) % 24}-01"})
                else:
                    batch.append({"subject": s, "predicate": f"p{i % 7}", "object": f"o{i}",
                                  "valid_from": f"{2000 + i % 24}-03"})
                if len(batch) == 2000:
                    w.add_facts(batch)
                    batch = []
            if batch:
                w.add_facts(batch)
            known = w.now()

        def later(n: int, tag: str) -> None:
            """Closes after T (and after the settles so far): the standby replays
            them too, but the check on the primary cannot know it has."""
            if n:
                with chronomem.open(url) as lw:
                    lw.add_facts([{"subject": f"person{i % args.subjects}", "predicate": "works_at",
                                   "object": f"{tag}{i}", "valid_from": "2030-01"} for i in range(n)])
        if args.read == "subject":
            subjects = [f"person{i}" for i in range(args.subjects)]

            def read(mem: chronomem.Memory, key: str) -> list[chronomem.Fact]:
                return mem.facts(key, known_at=known)
        else:
            subjects = [f"p{i}" for i in range(7)]

            def read(mem: chronomem.Memory, key: str) -> list[chronomem.Fact]:
                return mem.facts(predicate=key, known_at=known)
        with chronomem.open(url, read_replica=standby.url) as rep, chronomem.open(url) as only:
            rep.store.settle(to_us(known))  # type: ignore[attr-defined]
            only.store.settle(to_us(known))  # type: ignore[attr-defined]
            later(args.later, "later")
            caught_up(primary, standby)
            sizes = []
            for s in subjects:  # warm both servers' caches, the name cache and both pools
                want = [f.to_dict() for f in read(only, s)]
                assert [f.to_dict() for f in read(rep, s)] == want
                sizes.append(len(want))
            n_rows = round(statistics.fmean(sizes))
            before = dict(rep.store.replica_stats())  # type: ignore[attr-defined]
            # the time of the check on the primary, inside the replica path's reads
            t_check: list[float] = []
            check = getattr(rep.store, "_as_on_primary", None)  # (None: a version without the check)

            def timed_check(*a: object) -> object:
                t = time.perf_counter()
                try:
                    return check(*a)  # type: ignore[misc]
                finally:
                    t_check.append(time.perf_counter() - t)
            if check is not None:
                rep.store._as_on_primary = timed_check  # type: ignore[attr-defined]
            t_rep: list[float] = []
            t_pri: list[float] = []
            for i in range(args.reads):  # interleaved, the order swapped every round
                s = subjects[i % len(subjects)]
                for mem, out in ((rep, t_rep), (only, t_pri))[:: 1 if i % 2 else -1]:
                    t = time.perf_counter()
                    read(mem, s)
                    out.append(time.perf_counter() - t)
            after = dict(rep.store.replica_stats())  # type: ignore[attr-defined]
        # what each server runs per read: transactions of a memory that warms up
        # (every subject once: names cached) and reads, less those of one that only
        # warms up; counted once it is closed (a backend reports them when it exits)
        def run(extra: dict[str, str], reads: int) -> tuple[int, int, int, int]:
            start = (xacts(primary), xacts(standby))
            with chronomem.open(url, **extra) as mem:  # type: ignore[arg-type]
                for i in range(len(subjects)):  # warm up (settles T)
                    read(mem, subjects[i])
                later(1 if args.later else 0, f"run{reads}{len(extra)}")  # the clock moves past the settle
                caught_up(primary, standby)
                for i in range(reads):
                    read(mem, subjects[i % len(subjects)])
            end = (xacts(primary), xacts(standby))
            return (end[0][0] - start[0][0], end[1][0] - start[1][0],
                    end[0][1] - start[0][1], end[1][1] - start[1][1])

        per_read = []
        for extra in ({"read_replica": standby.url}, {}):
            full, warm = run(extra, args.reads), run(extra, 0)
            per_read.append(tuple((full[k] - warm[k]) / args.reads for k in range(4)))
        what = "facts(subject, known_at=T)" if args.read == "subject" else "facts(predicate=..., known_at=T)"
        print(f"{args.facts} facts over {args.subjects} subjects, {args.later} superseded after T was settled; "
              f"{args.reads} reads of {what} ({n_rows} rows each on average) each way")
        print(f"{'path':<24}{'p50 ms':>8}{'p99 ms':>8}{'mean ms':>8}  tx/read primary, standby"
              "  pages/read primary, standby")
        for name, ts, per in (("read_replica (standby)", t_rep, per_read[0]), ("primary only", t_pri, per_read[1])):
            print(f"{name:<24}{pct(ts, 50) * 1e3:>8.3f}{pct(ts, 99) * 1e3:>8.3f}"
                  f"{statistics.fmean(ts) * 1e3:>8.3f}{per[0]:>12.2f}{per[1]:>9.2f}{per[2]:>19.1f}{per[3]:>9.1f}")
        if t_check:
            print(f"of which the check on the primary (read_replica): p50 {pct(t_check, 50) * 1e3:.3f} ms, "
                  f"p99 {pct(t_check, 99) * 1e3:.3f} ms, mean {statistics.fmean(t_check) * 1e3:.3f} ms")
        print("replica stats during the replica run:",
              {k: after[k] - before[k] for k in after if k != "replayed"})
    finally:
        try:
            next(pair)
        except StopIteration:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
