#!/usr/bin/env python3
"""Where the time of an as-of read goes: chronomem's ``facts()`` against the
floor of the SQL it runs, and against MemPalace's ``query_entity`` /
``query_relationship`` on the same workload (``bench/kg_bench.py``'s).

For each store size it times, per query, p50 over the same query list:

* ``SQL rowid``: the exact statement ``Memory.facts_sql`` shows, on a plain
  ``sqlite3`` connection with the store's cache/mmap settings, selecting only
  ``rowid``: the index search and table lookups, nothing converted.
* ``SQL rows``: the same statement with every column ``facts()`` needs: the
  above plus ``sqlite3``'s conversion of 19 columns per row to Python objects.
* ``facts()``: the whole public call (argument checks, the SQL with its
  key lookup, the Python sort of one entity's rows, and a frozen ``Fact``
  with datetimes per row).
* MemPalace (``mempalace`` from PyPI, in ``.venv-bench``; skipped with a note
  if it is not installed): its read returns dicts with ISO strings.

The "Python" column is ``facts()`` minus ``SQL rows``: what chronomem itself
adds. Run it with ``.venv-bench/bin/python bench/read_floor.py`` (``--sizes``,
``--peer-max``, ``--queries``); ``--json PATH`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kg_bench as kb  # noqa: E402  (the shared workload)


def p50_us(fn: Callable[[Any], Any], items: list[Any], warmup: int = 100) -> tuple[float, float]:
    """p50 latency in µs and the mean number of rows returned (``kg_bench.time_calls``)."""
    res = kb.time_calls(fn, items, warmup)
    return res["p50_us"], res["rows_avg"]


def fill_chronomem(path: Path, workload: Path, n: int) -> Any:
    import chronomem  # noqa: PLC0415

    mem = chronomem.open(str(path))
    kb.chronomem_fill(mem, kb.read_workload(workload), n)
    mem.close()  # checkpoints the load, as kg_bench does before measuring
    return chronomem.open(str(path))


def fill_mempalace(path: Path, workload: Path, n: int) -> Any:
    from mempalace.knowledge_graph import KnowledgeGraph  # noqa: PLC0415

    kg = KnowledgeGraph(str(path))
    kg._conn().execute("PRAGMA synchronous=OFF")  # noqa: SLF001 - fill speed only
    src = kb.read_workload(workload)
    for _ in range(n):
        kb.mempalace_put(kg, *next(src))
    return kg


def bare_connection(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), check_same_thread=False)
    con.execute("PRAGMA cache_size = -65536")
    con.execute("PRAGMA mmap_size = 1073741824")
    return con


def rowid_only(sql: str) -> str:
    head, _, rest = sql.partition(" FROM ")
    return "SELECT f.rowid FROM " + rest


def measure(n: int, args: argparse.Namespace, tmp: Path, peer: bool) -> dict[str, Any]:
    workload = tmp / f"workload_{n}.tsv"
    kb.write_workload(workload, n, n, args.seed)
    qs = kb.make_queries(n, args.seed, args.queries, args.pred_queries)
    subj = [tuple(x) for x in qs["subject"]]
    pred = [tuple(x) for x in qs["predicate"]]
    print(f"[{kb.fmt_size(n)}] filling chronomem ...", file=sys.stderr, flush=True)
    mem = fill_chronomem(tmp / f"cm_{n}.db", workload, n)
    con = bare_connection(tmp / f"cm_{n}.db")
    out: dict[str, Any] = {"size": n}
    for kind, items, call in (
        ("subject", subj, lambda x: mem.facts(subject=x[0], as_of=x[1])),
        ("predicate", pred, lambda x: mem.facts(predicate=x[0], as_of=x[1])),
    ):
        stmts = [mem.facts_sql(**{kind: x[0]}, as_of=x[1]) for x in items]
        full = [(sql.rstrip(";"), params) for sql, params in stmts]
        rid = [(rowid_only(sql), params) for sql, params in full]
        warm = 100 if kind == "subject" else 5
        res: dict[str, Any] = {}
        res["sql_rowid_us"], _ = p50_us(lambda s: con.execute(*s).fetchall(), rid, warm)
        res["sql_rows_us"], _ = p50_us(lambda s: con.execute(*s).fetchall(), full, warm)
        res["facts_us"], res["rows"] = p50_us(call, items, warm)
        out[kind] = res
    mem.close()
    con.close()
    if peer:
        print(f"[{kb.fmt_size(n)}] filling MemPalace ...", file=sys.stderr, flush=True)
        kg = fill_mempalace(tmp / f"mp_{n}.sqlite3", workload, n)
        out["subject"]["mempalace_us"], _ = p50_us(lambda x: kg.query_entity(x[0], as_of=x[1]), subj, 100)
        out["predicate"]["mempalace_us"], _ = p50_us(lambda x: kg.query_relationship(x[0], as_of=x[1]), pred, 5)
        kg.close()
    return out


def render(results: list[dict[str, Any]], file: Any) -> None:
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    t = Table(title="as-of read: chronomem facts() vs the floor of its SQL vs MemPalace (p50 µs)")
    for col in ("size", "read", "rows", "SQL rowid", "SQL rows", "facts()", "Python", "µs/row",
                "MemPalace", "facts()/MemPalace"):
        t.add_column(col, justify="right")
    for r in results:
        for kind in ("subject", "predicate"):
            m = r[kind]
            mp = m.get("mempalace_us")
            py = m["facts_us"] - m["sql_rows_us"]
            per_row = (m["facts_us"] - m["sql_rowid_us"]) / m["rows"] if m["rows"] else float("nan")
            t.add_row(kb.fmt_size(r["size"]), kind, f"{m['rows']:.1f}", f"{m['sql_rowid_us']:.1f}",
                      f"{m['sql_rows_us']:.1f}", f"{m['facts_us']:.1f}", f"{py:.1f}", f"{per_row:.2f}",
                      "-" if mp is None else f"{mp:.1f}",
                      "-" if mp is None else f"{m['facts_us'] / mp:.2f}x")
    Console(file=file, width=140).print(t)
    print("SQL rowid: index search and table lookups only; SQL rows: plus sqlite3's conversion of the "
          "19 columns; Python: facts() minus SQL rows (names, the sort, Fact objects); "
          "µs/row: (facts() - SQL rowid) / rows.", file=file)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="store sizes (facts)")
    ap.add_argument("--peer-max", type=int, default=10_000,
                    help="largest size also filled into MemPalace (its fill slows with size; 0 = skip)")
    ap.add_argument("--queries", type=int, default=2000, help="facts(subject, as_of) queries per size")
    ap.add_argument("--pred-queries", type=int, default=50, help="facts(predicate, as_of) queries per size")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = ap.parse_args()
    try:
        import mempalace.knowledge_graph  # noqa: F401, PLC0415
        have_peer = True
    except ImportError:
        have_peer = False
        print("note: mempalace is not installed (use .venv-bench, `make bench`): peer columns skipped",
              file=sys.stderr)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="chronomem-readfloor-") as d:
        results = [measure(n, args, Path(d), have_peer and n <= args.peer_max) for n in sizes]
    render(results, sys.stdout)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
