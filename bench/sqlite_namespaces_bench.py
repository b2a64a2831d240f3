#!/usr/bin/env python3
"""SQLite lexical search in a file of two namespaces: each ranked over its own
BM25 statistics (schema 15, ``store/sqlite/lexstats.py``), against FTS5's
``bm25`` over the whole file (what ranked before: the floor, one C call per
matching row) and the warm numpy copy.

Run:  .venv/bin/python bench/sqlite_namespaces_bench.py [--n 100000] [--queries 300] [--dir /tmp/nsb]

The file holds ``n`` episodes: namespace ``a`` and namespace ``b`` each half
of the LoCoMo dev turns repeated with variants (``bench/pg_lexical_bench.py``'s
corpus, written with the store's own write primitives). Per LoCoMo question,
one ``prune_common_terms`` (the default postings budget) and then, in
namespace ``a`` with the default weights and a pool of 100, timed apart:

* ``namespace``: ``lexical_search`` with no copy (a one-shot process: the
  namespace's rows scored from FTS5's token instances);
* ``fts5_file``: FTS5's own ``bm25`` over the file for the same MATCH (the
  statement ``lexical_search`` ran before schema 15; it ranks the namespace
  over the other's statistics too, so its answer differs);
* ``copy``: ``lexical_search`` with the warm numpy copy (a process that lives on).

``--dir`` keeps the file for the next run. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pg_lexical_bench import LOCOMO, build, corpus, pct  # noqa: E402

import chronomem  # noqa: E402
from chronomem.service.evidence import SearchConfig  # noqa: E402
from chronomem.service.evidence.episodes import episode_store  # noqa: E402
from chronomem.service.evidence.lexical import fts_query  # noqa: E402
from chronomem.store.protocol import EpisodeFilter  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--dir", default=None, help="keep the store here (reused when present)")
    args = ap.parse_args()
    if not LOCOMO.exists():
        sys.exit(f"skipped: {LOCOMO} is absent (../shared beside the project root)")
    base, questions = corpus(args.n)
    questions = questions[: args.queries]
    folder = Path(args.dir) if args.dir else Path(__import__("tempfile").mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ns-{args.n}.db"
    built = path.exists()
    mems = {ns: chronomem.open(str(path), ns, embedder=None, timezone="UTC") for ns in ("a", "b")}
    try:
        if not built:
            for mem in mems.values():
                build(mem, base, args.n // 2)
        a = mems["a"]
        es: Any = episode_store(a.store)
        cfg = SearchConfig()
        w = cfg.bm25_weights
        f = EpisodeFilter(a._scope.ns_id)
        fast = ("SELECT rowid, bm25(episodes_fts, ?, ?, ?, ?) AS s FROM episodes_fts "
                "WHERE episodes_fts MATCH ? ORDER BY s LIMIT ?")
        matches = [m for q in questions if (m := fts_query(q))]
        matches = [es.prune_common_terms(m, cfg.lexical_df_cap, cfg.lexical_postings_budget) for m in matches]
        times: dict[str, list[float]] = {"namespace": [], "fts5_file": [], "copy": []}
        es._lexcopy.disabled = True
        for m in matches[:20]:  # warm-up: the page cache, the term caches
            es.lexical_search(m, f, 100, w)
        for m in matches:
            t = time.perf_counter()
            es.lexical_search(m, f, 100, w)
            times["namespace"].append(time.perf_counter() - t)
            t = time.perf_counter()
            es._con.execute(fast, [*w, m, 200]).fetchall()
            times["fts5_file"].append(time.perf_counter() - t)
        es._lexcopy.disabled = False
        es.prepare_lexical()
        for m in matches:
            before = es._lexcopy.answered
            t = time.perf_counter()
            es.lexical_search(m, f, 100, w)
            times["copy"].append(time.perf_counter() - t)
            assert es._lexcopy.answered > before, "the copy did not answer"
        out: dict[str, Any] = {"episodes": args.n, "namespaces": 2, "queries": len(matches)}
        for name, v in times.items():
            out[name] = {"p50_ms": round(pct(v, 50) * 1e3, 2), "p90_ms": round(pct(v, 90) * 1e3, 2),
                         "p99_ms": round(pct(v, 99) * 1e3, 2)}
        out["namespace_vs_fts5_file_p50"] = round(out["namespace"]["p50_ms"] / out["fts5_file"]["p50_ms"], 2)
        out["copy_vs_fts5_file_p50"] = round(out["copy"]["p50_ms"] / out["fts5_file"]["p50_ms"], 2)
        print(json.dumps(out, indent=2))
    finally:
        for mem in mems.values():
            mem.close()


if __name__ == "__main__":
    main()
