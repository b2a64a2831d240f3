#!/usr/bin/env python3
"""Evidence-memory benchmark: ingest throughput, search and recall latency, RSS.

Run:  .venv/bin/python bench/evidence_bench.py [--sizes 10000,100000,1000000]
                                               [--facts 1000000] [--queries 200] [--json out.json]
                                               [--embedder minilm|bge-small|e5-multilingual] [--dir D [--reuse]]

Needs the ``evidence`` extra (and the ``ann`` extra, usearch, for the ANN path
above ``SearchConfig.ann_threshold``) and ``../shared/data/locomo/locomo_dev.json``.

What is measured
* Cold start: loading the embedding model (default: the bundled MiniLM int8
  ONNX model; ``--embedder`` picks another built-in one); RSS after loading.
* Query embedding: the --queries questions embedded one at a time in this
  warm process (``query_embed_p50_ms``): the part of every warm search
  below that no store change can remove.
* Ingest: ``add_episodes`` of the 2,960 LoCoMo dev turns (time mentions,
  embeddings in batches, FTS, one transaction per conversation): episodes/s.
* Search at N episodes: the corpus is the LoCoMo turns repeated with
  variations (a variant tag in the text, a different session and date) until
  N. Embedding 1M texts would take hours on 2 cores, so each variant's vector
  is its base turn's real MiniLM vector plus 0.35 times another random turn's
  vector plus Gaussian noise (sigma 0.01 per dimension), re-normalised (so
  variants are not near-duplicates of each other); rows are written with the
  store's own write primitives (no time mentions). Queries are --queries LoCoMo questions taken
  evenly from every conversation (the first 200 would all be one conversation's, whose speakers'
  names are rarer in the corpus than others': its p50 was ~30% lower); each timing is one full
  ``Memory.search`` call (query embedding, FTS5 BM25, dense, fusion, views,
  hydration) in the default ``as_world`` view, p50/p99 over the queries after
  one warm-up query: first with FTS5 ranking the lexical side (``fts5_*``),
  then with the process's numpy copy of the FTS5 index, made by
  ``prepare_search(warm=True)`` (``lexical_copy_s``; same answers, so the
  recall figures must match). Those passes ask the same questions, so a process's
  per-text caches (a query term's tokens and counts, a turn's words) have seen them;
  ``unseen_*`` times as many questions asked for the first time, with the copy. At
  N >= ``ann_threshold`` the dense part is the ANN
  index; its recall@10 against exact search is reported, and the database file's size (``db_mb``).
* Cold: ``prepare_search()`` builds the mapped vector file and the ANN index
  (``prepare_s``), as a batch write leaves them; then ``chronomem search`` and
  ``recall`` run ``--cold-runs`` times each in fresh processes (median wall time, peak RSS),
  printed beside the figures measured before (``BEFORE``).
* Quality at N: ``evidence_recall_at_10``, the share of each question's
  evidence turns found in the top 10 (any variant of the turn counts), and
  the same search with ``lexical_postings_budget=0`` (``no_budget_*``) beside
  it: what the budget costs in recall and saves in time.
* Recall: ``Memory.recall`` p50 on the largest corpus <= 100k plus ``--facts``
  facts about LoCoMo speakers and synthetic entities.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import chronomem
from chronomem.adapters.eval import _gold_turns, load_locomo, locomo_episodes
from chronomem.core.ids import new_id
from chronomem.service.evidence import EMBEDDERS, SearchConfig, get_embedder
from chronomem.service.evidence.episodes import index_parts
from chronomem.store.protocol import EpisodeRecord
from chronomem.store.sqlite import lexindex

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


#: the same cold figures measured on this machine before the mapped vector file and the
#: usearch index (a94fca2 with hnswlib 0.8.0 and its ANN file, the same 100k store; search: two
#: runs, recall: one)
BEFORE = {100_000: {"search_s": "1.25-1.70", "search_rss_mb": 590, "recall_s": "1.43", "recall_rss_mb": 590}}


# Runs one command and reports its wall time and peak RSS. The command is a
# child of this small launcher, not of the benchmark: Linux carries a forked
# process's high-water RSS through exec, so a child of the benchmark (1-2 GB
# by then) would report the benchmark's peak, not its own.
_LAUNCHER = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_pid, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall": time.perf_counter() - t0, "rss_kb": usage.ru_maxrss, "status": status,
                  "stderr": err.decode(errors="replace")[-2000:]}))
"""


def cold_cli(db: Path, question: str, runs: int) -> dict[str, Any]:
    """Median wall time and peak RSS of ``chronomem search`` and ``recall``
    in fresh processes (the console script, as an agent's hook runs it)."""
    exe = str(Path(sys.executable).with_name("chronomem"))
    # chronomem's bytecode compiled, as an installed package has it (pip compiles on install): an
    # editable checkout run with PYTHONDONTWRITEBYTECODE=1 compiled every module in every process,
    # ~0.2-0.3 s of each cold figure here
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(chronomem.__file__).parent)], check=True)
    out: dict[str, Any] = {}
    for command in ("search", "recall"):
        walls, rss = [], []
        for _ in range(runs):
            done = subprocess.run([sys.executable, "-c", _LAUNCHER, exe, "--db", str(db), "--namespace", "bench",
                                   command, question], capture_output=True, text=True, check=True)
            got = json.loads(done.stdout)
            if got["status"] != 0:
                raise SystemExit(f"chronomem {command} failed: {got['stderr']}")
            walls.append(got["wall"])
            rss.append(got["rss_kb"] / 1024)
        out[f"{command}_s"] = round(statistics.median(walls), 3)
        out[f"{command}_s_max"] = round(max(walls), 3)
        out[f"{command}_rss_mb"] = round(max(rss), 1)
    return out


def vector_recall(mem: chronomem.Memory, emb: Any, questions: list[str]) -> float:
    """Recall@10 of the ANN index's dense top 10 against the exact dense top
    10 (context vectors, raw view), question by question: the index alone,
    where ``ann_recall_at_10_vs_exact`` compares whole searches (fusion with
    BM25 and the ranker included)."""
    from chronomem.service.evidence.episodes import episode_store
    from chronomem.store.protocol import EpisodeFilter

    es = episode_store(mem.store)
    model_id, dim = es.embedding_model(emb.name) or (0, 0)
    cache, path = mem._embedding.vectors(), mem.store.capabilities.local_path
    slot = cache.slot(es, mem._ns, model_id, dim, path)
    f = EpisodeFilter(mem._ns)
    ctx = SearchConfig().dense_context
    found = []
    for q in emb.embed(questions, "query"):
        exact = {r for r, _ in cache.search(slot, q, 10, f, [], ctx)}
        approx = cache.ann_search(slot, q, 10, f, [], ctx, path, (mem._ns, model_id))
        found.append(len(exact & {r for r, _ in approx or []}) / 10)
    return round(statistics.mean(found), 4)


def fresh(db: Path) -> None:
    """Remove ``db`` and what lives beside it (WAL, vector file, ANN index, locks)."""
    for path in db.parent.glob(db.name + "*"):
        path.unlink()


def build_corpus(mem: chronomem.Memory, base: list[dict[str, Any]], vecs: Any, n: int, model: tuple[str, int],
                 seed: int = 7) -> float:
    """Write ``n`` episodes (variants of ``base``) with derived vectors."""
    rng = np.random.default_rng(seed)
    store: Any = mem.store
    t0 = time.perf_counter()
    written = 0
    batch = 20_000
    while written < n:
        m = min(batch, n - written)
        with store.write() as tx:
            model_id = tx.embedding_model_id(*model)
            recs = []
            for j in range(m):
                i = written + j
                b = base[i % len(base)]
                variant = i // len(base)
                text = b["text"] if variant == 0 else f"{b['text']} (v{variant})"
                occurred = b["occurred_at"].timestamp() * 1e6 + variant * 86_400e6
                rec = EpisodeRecord(0, new_id(),
                                    mem._ns, text, int(occurred), 6, tx.now, None,
                                    f"{b['session']}#{variant}", b["speaker"], None)
                rowid = tx.insert_episode(rec)
                recs.append(dataclasses.replace(rec, rowid=rowid))
            for rec in recs:
                tx.replace_episode_index(rec.rowid, index_parts(rec, None, None, mem.tz), new=True)
            idx = np.arange(written, written + m) % len(base)
            other = rng.integers(0, len(base), size=m)
            noise = rng.normal(0.0, 0.01, size=(m, vecs.shape[1])).astype(np.float32)
            mix = (0.35 * vecs[other] + noise) * (np.arange(written, written + m) >= len(base))[:, None]
            v = vecs[idx] + mix
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            tx.put_episode_vectors(model_id, [(r.rowid, mem._ns, v[k].astype(np.float32).tobytes())
                                              for k, r in enumerate(recs)])
            tx.bump_episode_generation()
        written += m
        print(f"  corpus {written}/{n}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cold-runs", type=int, default=5, help="Fresh processes per cold figure (median).")
    ap.add_argument("--dir", default=None, help="Where the databases go (default: a temporary directory).")
    ap.add_argument("--reuse", action="store_true",
                    help="Search the search-N.db files an earlier run left in --dir instead of building them "
                         "again (a code change measured against the same stored vectors).")
    ap.add_argument("--embedder", default="minilm", choices=sorted(EMBEDDERS),
                    help="Built-in embedder to measure (bge-small needs the bge extra).")
    args = ap.parse_args()
    if not LOCOMO.exists():
        print(f"skipped: LoCoMo data not found at {LOCOMO} (see ../shared/README.md)")
        return
    out: dict[str, Any] = {"machine": {"cpus": os.cpu_count()}}
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="chronomem-evbench-"))
    rss0 = rss_mb()
    t0 = time.perf_counter()
    emb = get_embedder(args.embedder)
    emb.embed(["warm up"], "query")
    out["model"] = {"name": emb.name, "cold_start_s": round(time.perf_counter() - t0, 3),
                    "rss_before_mb": round(rss0, 1), "rss_with_model_mb": round(rss_mb(), 1)}
    print("model", out["model"])

    data = load_locomo(LOCOMO)
    # ingest throughput (real embeddings)
    fresh(workdir / "ingest.db")
    mem = chronomem.open(workdir / "ingest.db", namespace="ingest", embedder=emb)
    base: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for conv in data:
        eps = locomo_episodes(conv)
        mem.add_episodes(eps)
        base += eps
    dt = time.perf_counter() - t0
    out["ingest"] = {"episodes": len(base), "seconds": round(dt, 2), "episodes_per_s": round(len(base) / dt, 1)}
    print("ingest", out["ingest"])
    mem.close()
    base_vecs = emb.embed([f"{b['speaker']}: {b['text']}" for b in base], "passage")
    # (question, its evidence as positions in `base`): a corpus row is a variant of base[(rowid - 1) % len(base)]
    where = {(b["source"], b["metadata"]["dia_id"]): i for i, b in enumerate(base)}
    every = [(q["question"], {where[(f"locomo:{conv.get('sample_id', '')}", d)] for d in _gold_turns(q["evidence"])
                              if (f"locomo:{conv.get('sample_id', '')}", d) in where})
             for conv in data for q in conv["qa"] if q.get("question") and _gold_turns(q.get("evidence") or [])]
    # spread over every conversation: their speakers' names differ a lot in how common they are
    asked = every[:: max(1, len(every) // args.queries)][: args.queries]
    questions = [q for q, _ in asked]
    # as many other questions, spread alike: the warm passes above repeat `asked`, so a process's
    # per-text caches (a query term's tokens and counts, a turn's words) have seen them
    seen = {q for q, _ in asked}
    rest = [x for x in every if x[0] not in seen]
    unseen = rest[:: max(1, len(rest) // args.queries)][: args.queries]
    no_budget = dataclasses.replace(SearchConfig(), lexical_postings_budget=0)
    # the floor of a dense search: the query embedding alone, one question at a time, as a search makes it
    for q in questions[:20]:
        emb.embed([q], "query")
    times = []
    for q in questions:
        t0 = time.perf_counter()
        emb.embed([q], "query")
        times.append((time.perf_counter() - t0) * 1000)
    out["model"].update({"query_embed_p50_ms": round(pct(times, 50), 2),
                         "query_embed_p99_ms": round(pct(times, 99), 2)})
    print(f"  query embedding alone p50 / p99: {out['model']['query_embed_p50_ms']} / "
          f"{out['model']['query_embed_p99_ms']} ms (the floor under every warm search below)")

    out["search"] = {}
    sizes = [int(s) for s in args.sizes.split(",") if s]
    recall_size = max([s for s in sizes if s <= 100_000] or [sizes[0]])
    for n in sizes:
        db = workdir / f"search-{n}.db"
        res: dict[str, Any] = {}
        if args.reuse and db.exists():
            mem = chronomem.open(db, namespace="bench", embedder=emb)
            res["build_s"] = "reused"
        else:
            fresh(db)
            mem = chronomem.open(db, namespace="bench", embedder=emb)
            res["build_s"] = round(build_corpus(mem, base, base_vecs, n, (emb.name, emb.dim)), 1)
        t0 = time.perf_counter()
        res["prepared"] = mem.prepare_search()  # the vector file and the ANN index, as a batch write leaves them
        res["prepare_s"] = round(time.perf_counter() - t0, 1)
        res["cold"] = cold_cli(db, questions[0], args.cold_runs)
        t0 = time.perf_counter()
        mem.search(questions[0])  # the first search of this process: opens what prepare_search built
        res["first_search_s"] = round(time.perf_counter() - t0, 2)
        store: Any = mem.store

        def rowid(ids: list[str], store: Any = store) -> list[int]:
            return [store.episode_by_id(i).rowid for i in ids]

        # warm search with FTS5 ranking alone (a copy of the index is never made), then with
        # this process's numpy copy of it (store/sqlite/lexindex.py: same answers, bit for bit)
        build_after = lexindex.BUILD_AFTER
        lexindex.BUILD_AFTER = 10**12
        passes: list[tuple[str, SearchConfig]] = [("fts5_", SearchConfig())]
        for label, cfg in passes + [("", SearchConfig()), ("no_budget_", no_budget), ("unseen_", SearchConfig())]:
            if label == "":
                lexindex.BUILD_AFTER = build_after
                t0 = time.perf_counter()
                res["lexical_copy"] = mem.prepare_search(warm=True).get("lexical")
                res["lexical_copy_s"] = round(time.perf_counter() - t0, 1)
            times, found = [], []
            for q, gold in unseen if label == "unseen_" else asked:
                t0 = time.perf_counter()
                hits = mem.search(q, config=cfg)
                times.append((time.perf_counter() - t0) * 1000)
                got = {(r - 1) % len(base) for r in rowid([h.episode.id for h in hits])}
                found.append(len(got & gold) / len(gold) if gold else 0.0)
            res.update({f"{label}p50_ms": round(pct(times, 50), 2), f"{label}p99_ms": round(pct(times, 99), 2),
                        f"{label}evidence_recall_at_10": round(statistics.mean(found), 3)})
        res.update({"ann": n >= SearchConfig().ann_threshold, "rss_mb": round(rss_mb(), 1),
                    "db_mb": round(db.stat().st_size / 2**20, 1)})  # (int8 vectors since schema 9)
        if res["ann"]:
            exact = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=10**12)
            approx = SearchConfig.preset("dense")
            overlap = []
            for q in questions[:50]:
                a = {h.episode.id for h in mem.search(q, config=approx, view="raw")}
                e = {h.episode.id for h in mem.search(q, config=exact, view="raw")}
                overlap.append(len(a & e) / max(1, len(e)))
            res["ann_recall_at_10_vs_exact"] = round(statistics.mean(overlap), 4)
            res["ann_vector_recall_at_10"] = vector_recall(mem, emb, questions[:50])
        out["search"][str(n)] = res
        print("search", n, res)
        print(f"  warm search p50 / p99 at {n:,}: FTS5 {res['fts5_p50_ms']} / {res['fts5_p99_ms']} ms, with the "
              f"lexical copy {res['p50_ms']} / {res['p99_ms']} ms (copy made: {res['lexical_copy']}, "
              f"{res['lexical_copy_s']} s); recall@10 {res['fts5_evidence_recall_at_10']} / "
              f"{res['evidence_recall_at_10']}; {len(unseen)} questions not asked before: "
              f"{res['unseen_p50_ms']} / {res['unseen_p99_ms']} ms")
        if n in BEFORE:
            print(f"  cold at {n:,} before / now: search {BEFORE[n]['search_s']} s, {BEFORE[n]['search_rss_mb']} MB"
                  f" / {res['cold']['search_s']} s, {res['cold']['search_rss_mb']} MB; recall "
                  f"{BEFORE[n]['recall_s']} s / {res['cold']['recall_s']} s, {res['cold']['recall_rss_mb']} MB")
        if n == recall_size and args.facts:
            t0 = time.perf_counter()
            speakers = sorted({b["speaker"] for b in base if b["speaker"]})
            chunk = 50_000
            for start in range(0, args.facts, chunk):
                mem.add_facts([(f"{speakers[i % len(speakers)]}" if i % 10 == 0 else f"entity {i // 7}",
                                f"rel{i % 50}", f"value {i}", f"20{10 + i % 14}-0{1 + i % 9}")
                               for i in range(start, min(args.facts, start + chunk))])
            facts_s = time.perf_counter() - t0
            rt = []
            for q in questions:
                t0 = time.perf_counter()
                mem.recall(q)
                rt.append((time.perf_counter() - t0) * 1000)
            out["recall"] = {"episodes": n, "facts": args.facts, "facts_load_s": round(facts_s, 1),
                             "p50_ms": round(pct(rt, 50), 2), "p99_ms": round(pct(rt, 99), 2)}
            print("recall", out["recall"])
        mem.close()
    out["rss_peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    text = json.dumps(out, indent=2)
    if args.json == "-":
        print(text)
    elif args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
