#!/usr/bin/env python3
"""Peak RSS of the fact side (issue 20): bulk loads, reads and per-call writes.

Run:  .venv/bin/python bench/fact_memory_bench.py [--sizes 100000,1000000] [--phases ...]
                                                  [--trace PHASE] [--keep DIR]

Every phase runs in a fresh subprocess, so its figure is that process's own
peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), including the
interpreter and the imports (a bare ``import chronomem`` is printed as
``import``). The workload is :mod:`kg_bench`'s (seeded: ~N/10 entities, 50
predicates, 6 single-valued). Phases, per size N, on one SQLite file:

* ``bulk-one``: ``add_facts`` of all N rows in one call (one transaction), the
  items handed over as a generator so the caller holds none of them;
* ``bulk-50k``: the same rows in ``add_facts`` calls of 50,000 (what
  ``kg_bench`` and ``chronomem import``'s batches do), on a fresh file;
* ``read``: a fresh process opens the ``bulk-50k`` store and makes 1,000
  ``facts(subject=, as_of=)`` calls (kg_bench's query list);
* ``write``: a fresh process opens that store and makes 1,000 ``add_fact``
  calls (the workload's next rows);
* ``sqlite-load`` / ``sqlite-read``: plain :mod:`sqlite3` as a floor: the
  same N rows into one table with two indexes in one transaction (names as
  text, times as text), and 1,000 subject look-ups on it.

``--pg URL`` runs the chronomem phases on PostgreSQL (one schema per
store, dropped before its bulk load); the peak RSS is then the client's.

``--trace PHASE`` runs that phase under :mod:`tracemalloc` and prints the 20
lines holding the most memory at its peak (slower, and its RSS figure then
includes tracemalloc's own bookkeeping).
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kg_bench import PRED_ONE, fact_stream, make_queries  # noqa: E402

PHASES = ("import", "bulk-one", "bulk-50k", "read", "write", "sqlite-load", "sqlite-read")
SEED = 7


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def items(n: int) -> Iterator[tuple[str, str, str, str, str | None]]:
    it = fact_stream(n, SEED)
    for _ in range(n):
        yield next(it)[:5]


def _trace_start(spec: dict[str, Any]) -> None:
    if spec.get("trace"):
        import tracemalloc  # noqa: PLC0415

        tracemalloc.start(1)


def _trace_report(spec: dict[str, Any], out: dict[str, Any]) -> None:
    if not spec.get("trace"):
        return
    import tracemalloc  # noqa: PLC0415

    snap = tracemalloc.take_snapshot()
    out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    out["top"] = [f"{s.size / 2**20:8.1f} MB {s.count:9d} {s.traceback[0]}"
                  for s in snap.statistics("lineno")[:20]]


def _peak_hook(spec: dict[str, Any], out: dict[str, Any]) -> Any:
    """For a traced bulk load: a snapshot taken just before the commit (the
    batch's peak), through the unit of work's flush."""
    if not spec.get("trace"):
        return None
    from chronomem.service import unit_of_work  # noqa: PLC0415

    orig = unit_of_work.UnitOfWork.flush

    def flush(self: Any, *, last: bool = True) -> None:
        # each flush of a big part (add_facts hands a batch over in parts):
        # the report of the last one stays
        if self._work is not None and len(self._work.new_rows) > 1000:
            _trace_report(spec, out)
        orig(self, last=last)

    unit_of_work.UnitOfWork.flush = flush  # type: ignore[method-assign]
    return orig


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    phase, n, db = spec["phase"], spec["n"], spec["db"]
    out: dict[str, Any] = {}
    _trace_start(spec)
    t0 = time.perf_counter()
    if phase == "import":
        import chronomem  # noqa: F401, PLC0415
    elif phase in ("bulk-one", "bulk-50k"):
        import chronomem  # noqa: PLC0415

        _peak_hook(spec, out)
        if spec.get("flush_rows"):
            from chronomem.service import facts  # noqa: PLC0415

            facts.FLUSH_ROWS = spec["flush_rows"]
        mem = chronomem.open(db, namespace="default")
        for p in PRED_ONE:
            mem.define_predicate(p, cardinality="one")
        t0 = time.perf_counter()
        if phase == "bulk-one":
            mem.add_facts(items(n))
        else:
            src = items(n)
            while True:
                chunk = list(itertools.islice(src, 50_000))
                if not chunk:
                    break
                mem.add_facts(chunk)
        mem.close()
    elif phase == "read":
        import chronomem  # noqa: PLC0415

        mem = chronomem.open(db, namespace="default")
        qs = make_queries(n, SEED, 1000, 0)["subject"]
        t0 = time.perf_counter()
        rows = 0
        for s, day in qs:
            rows += len(mem.facts(subject=s, as_of=day))
        out["rows"] = rows
        _trace_report(spec, out)
        mem.close()
    elif phase == "write":
        import chronomem  # noqa: PLC0415

        mem = chronomem.open(db, namespace="default")
        it = fact_stream(n, SEED)
        for _ in range(n):  # past the loaded rows
            next(it)
        t0 = time.perf_counter()
        for _ in range(1000):
            s, p, o, vf, vt, _prev = next(it)
            mem.add_fact(s, p, o, valid_from=vf, valid_to=vt)
        _trace_report(spec, out)
        mem.close()
    elif phase == "sqlite-load":
        import sqlite3  # noqa: PLC0415

        con = sqlite3.connect(db, isolation_level=None)
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("CREATE TABLE t (s TEXT, p TEXT, o TEXT, vf TEXT, vt TEXT)")
        con.execute("CREATE INDEX t_s ON t (s, p)")
        con.execute("CREATE INDEX t_p ON t (p)")
        con.execute("BEGIN")
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", items(n))
        con.execute("COMMIT")
        con.close()
    elif phase == "sqlite-read":
        import sqlite3  # noqa: PLC0415

        con = sqlite3.connect(db)
        qs = make_queries(n, SEED, 1000, 0)["subject"]
        t0 = time.perf_counter()
        rows = 0
        for s, day in qs:
            rows += len(con.execute("SELECT * FROM t WHERE s = ? AND vf <= ? AND (vt IS NULL OR vt > ?)",
                                    (s, day, day)).fetchall())
        out["rows"] = rows
        con.close()
    out["seconds"] = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = ru.ru_utime + ru.ru_stime  # the whole process's (steadier than wall time on a shared machine)
    out["rss_mb"] = rss_mb()
    return out


def run(spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"phase {spec['phase']} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _drop_schema(url: str, schema: str) -> None:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000", help="comma-separated fact counts")
    ap.add_argument("--phases", default=",".join(PHASES), help="comma-separated, of: " + ", ".join(PHASES))
    ap.add_argument("--trace", default="", help="run this phase under tracemalloc and print its top 20 lines")
    ap.add_argument("--flush-rows", type=int, default=0,
                    help="add_facts parts of this many items (chronomem.service.facts.FLUSH_ROWS)")
    ap.add_argument("--keep", default="", help="keep the stores in this directory")
    ap.add_argument("--json", default="", help="also write the figures to this file (- for stdout)")
    ap.add_argument("--pg", default="", metavar="URL",
                    help="run the chronomem phases on this PostgreSQL database (a schema per store, dropped "
                         "first), the plain-sqlite3 floor stays on SQLite")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        ap.error(f"unknown phase(s): {', '.join(sorted(unknown))}")
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="factmem-"))
    tmp.mkdir(parents=True, exist_ok=True)
    print(f"{'phase':<12} {'N':>9} {'peak RSS MB':>12} {'seconds':>9} {'CPU s':>7}")
    results: list[dict[str, Any]] = []
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            for phase in phases:
                if phase == "bulk-one":
                    db = tmp / f"one-{n}.db"
                elif phase.startswith("sqlite"):
                    db = tmp / f"plain-{n}.db"
                else:
                    db = tmp / f"chunked-{n}.db"
                target = str(db)
                if args.pg and not phase.startswith("sqlite") and phase != "import":
                    schema = "factmem_" + db.stem.replace("-", "_")
                    target = f"{args.pg}{'&' if '?' in args.pg else '?'}schema={schema}"
                    if phase in ("bulk-one", "bulk-50k"):
                        _drop_schema(args.pg, schema)
                elif phase in ("bulk-one", "bulk-50k", "sqlite-load"):
                    for f in tmp.glob(db.name + "*"):
                        f.unlink()
                res = run({"phase": phase, "n": n, "db": target, "trace": phase == args.trace,
                           "flush_rows": args.flush_rows})
                print(f"{phase:<12} {n:>9,} {res['rss_mb']:>12.0f} {res['seconds']:>9.1f} {res['cpu_s']:>7.1f}",
                      flush=True)
                results.append({"phase": phase, "n": n, **res})
                for line in res.get("top", []):
                    print("    " + line)
                if "traced_peak_mb" in res:
                    print(f"    traced peak {res['traced_peak_mb']:.0f} MB")
            if not args.keep:
                for f in tmp.glob(f"one-{n}.db*"):
                    f.unlink()
        if args.json:
            text = json.dumps(results, indent=1)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text + "\n", encoding="utf-8")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
