#!/usr/bin/env python3
"""PostgreSQL lexical search at N episodes: index write cost, size, query p50.

Run:  .venv/bin/python bench/pg_lexical_bench.py --pg URL [--n 100000] [--queries 200] [--postings]

``URL`` names a schema of its own (``?schema=...``; emptied first). The
corpus is the LoCoMo dev turns (``../shared/data/locomo/locomo_dev.json``)
repeated with variants (a tag in the text, another session and date), each
indexed with its session neighbours, written with the store's own write
primitives in transactions of 5,000 episodes. Figures:

* ``index_write_s``: the time spent in ``replace_episode_index`` alone
  (tokens, ``tsvector`` and the row with its GIN entries), per 1,000 episodes too;
* ``fts_mb``: ``pg_total_relation_size('episodes_fts')`` after ``VACUUM ANALYZE``;
* ``p50_ms`` / ``p90_ms``: one ``prune_common_terms`` + ``lexical_search``
  (pool 100, the default weights, the ``as_world`` filter) per LoCoMo
  question, after one warm-up pass over them all.

It runs on whatever chronomem is imported (``PYTHONPATH=old/src`` measures
an older commit). ``--postings`` (issue 16's alternative, today's code only)
also writes the same tokens as a postings table (lexeme, namespace, rowid,
term frequency per column; a row's length in a table beside it), timed the
same way, and ranks each question with FTS5's bm25 from it in SQL (one-token
terms, which is all LoCoMo's questions give), checking that its top 10 is
the ``tsvector`` path's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

import chronomem
from chronomem.adapters.eval import load_locomo, locomo_episodes
from chronomem.core.ids import new_id
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.episodes import episode_store, index_parts
from chronomem.service.evidence.lexical import fts_query
from chronomem.store.postgres.store import split_schema
from chronomem.store.protocol import EpisodeFilter, EpisodeRecord

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev.json"
BATCH = 5_000


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def corpus(n: int) -> tuple[list[dict[str, Any]], list[str]]:
    data = load_locomo(LOCOMO)
    base = [e for conv in data for e in locomo_episodes(conv)]
    questions = [q["question"] for conv in data for q in conv["qa"] if q.get("question")]
    return base, questions


def build(mem: chronomem.Memory, base: list[dict[str, Any]], n: int) -> tuple[float, float, list[Any]]:
    """Write ``n`` variants of ``base``; ``(total s, index s, index parts)``."""
    store: Any = mem.store
    ns = mem._scope.ns_id
    t_all = time.perf_counter()
    t_index = 0.0
    parts: list[Any] = []
    written = 0
    while written < n:
        m = min(BATCH, n - written)
        with store.write() as tx:
            recs = []
            for j in range(m):
                i = written + j
                b = base[i % len(base)]
                variant = i // len(base)
                text = b["text"] if variant == 0 else f"{b['text']} (v{variant})"
                occurred = b["occurred_at"].timestamp() * 1e6 + variant * 86_400e6
                rec = EpisodeRecord(0, new_id(), ns, text, int(occurred), 6, tx.now, None,
                                    f"{b['session']}#{variant}", b["speaker"], None)
                recs.append(dataclasses.replace(rec, rowid=tx.insert_episode(rec)))
            batch_parts = []
            for k, rec in enumerate(recs):
                prev = recs[k - 1] if k and recs[k - 1].session == rec.session else None
                nxt = recs[k + 1] if k + 1 < len(recs) and recs[k + 1].session == rec.session else None
                batch_parts.append((rec.rowid, index_parts(rec, prev, nxt, mem._scope.tz)))
            t0 = time.perf_counter()
            for rowid, p in batch_parts:
                tx.replace_episode_index(rowid, p, new=True)
            t_index += time.perf_counter() - t0
            tx.bump_episode_generation()
            parts.extend(batch_parts)
        written += m
        print(f"  corpus {written}/{n}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return time.perf_counter() - t_all, t_index, parts


_POSTINGS_DDL = """
DROP TABLE IF EXISTS bench_postings, bench_doclen;
CREATE TABLE bench_doclen (rowid BIGINT PRIMARY KEY, ns_id BIGINT NOT NULL, dl INTEGER NOT NULL);
CREATE INDEX bench_doclen_ns ON bench_doclen (ns_id) INCLUDE (dl);
CREATE TABLE bench_postings (
    ns_id BIGINT NOT NULL, lexeme TEXT NOT NULL, rowid BIGINT NOT NULL,
    a SMALLINT NOT NULL, b SMALLINT NOT NULL, c SMALLINT NOT NULL, d SMALLINT NOT NULL,
    PRIMARY KEY (ns_id, lexeme, rowid)
);
"""

# one statement an episode, as replace_episode_index writes its one row
_POSTINGS_ROW = (
    "WITH d AS (INSERT INTO bench_doclen VALUES (%s, %s, %s)) INSERT INTO bench_postings "
    "SELECT %s, l, %s, a, b, c, d FROM unnest(%s::text[], %s::int2[], %s::int2[], %s::int2[], %s::int2[]) "
    "AS u (l, a, b, c, d)"
)

_POSTINGS_BM25 = """
WITH q (phrase, lexeme) AS (SELECT * FROM unnest(%s::int[], %s::text[])),
f AS (
    SELECT p.rowid, q.phrase, p.a * %s::float8 + p.b * %s::float8 + p.c * %s::float8 + p.d * %s::float8 AS f
    FROM bench_postings p JOIN q ON p.lexeme = q.lexeme WHERE p.ns_id = %s
),
n AS (SELECT phrase, (%s::float8 - count(*) + 0.5) / (count(*) + 0.5) AS r FROM f GROUP BY phrase),
s AS (
    SELECT f.rowid, sum(CASE WHEN n.r <= 1 THEN 1e-6 ELSE ln(n.r) END
                        * ((f.f * 2.2) / (f.f + 1.2 * (1 - 0.75 + 0.75 * l.dl / %s::float8)))) AS score
    FROM f JOIN n USING (phrase) JOIN bench_doclen l ON l.rowid = f.rowid GROUP BY f.rowid
)
SELECT s.rowid, s.score FROM s JOIN episodes e ON e.rowid = s.rowid
WHERE {where} ORDER BY s.score DESC, s.rowid LIMIT %s
"""


def postings(url: str, ns: int, parts: list[Any], questions: list[str], f: EpisodeFilter,
             es: Any, weights: tuple[float, ...]) -> dict[str, Any]:
    from chronomem.store.postgres.episodes import _SQL, tsquery_terms
    from chronomem.store.postgres.fts5_bm25 import lexeme, query_phrases, tokenize_rows

    conninfo, schema = split_schema(url)
    out: dict[str, Any] = {}
    with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
        con.execute(_POSTINGS_DDL)
        con.commit()
        t_index = 0.0
        for start in range(0, len(parts), BATCH):
            chunk = parts[start:start + BATCH]
            t0 = time.perf_counter()
            with con.cursor() as cur:
                for rowid, p in chunk:  # as the write path: one episode at a time, one statement
                    (tokens,) = tokenize_rows([p])
                    tf: dict[str, list[int]] = {}
                    for term, col, _off in tokens:
                        tf.setdefault(lexeme(term), [0, 0, 0, 0])[col] += 1
                    cols = list(zip(*tf.values(), strict=True)) if tf else [(), (), (), ()]
                    cur.execute(_POSTINGS_ROW, (rowid, ns, len(tokens), ns, rowid, list(tf), *map(list, cols)))
            con.commit()
            t_index += time.perf_counter() - t0
        out["index_write_s"] = round(t_index, 2)
        out["index_write_ms_per_1000"] = round(t_index / len(parts) * 1e6, 1)
        con.autocommit = True
        con.execute("VACUUM ANALYZE bench_postings, bench_doclen")
        size = con.execute(
            "SELECT pg_total_relation_size('bench_postings') + pg_total_relation_size('bench_doclen')").fetchone()
        out["postings_mb"] = round(int(size[0]) / 1e6, 1) if size else None
        stats = con.execute("SELECT count(*), sum(dl) FROM bench_doclen WHERE ns_id = %s", (ns,)).fetchone()
        assert stats is not None
        n_rows, total = int(stats[0]), int(stats[1])
        where, params = _SQL.where(f)
        sql = _POSTINGS_BM25.format(where=" AND ".join(where))
        cfg = SearchConfig()
        times: list[float] = []
        same = 0
        for rnd in range(2):
            for q in questions:
                match = fts_query(q)
                if match is None:
                    continue
                t0 = time.perf_counter()
                match = es.prune_common_terms(match, cfg.lexical_df_cap, cfg.lexical_postings_budget)
                phrases = query_phrases(tsquery_terms(match))
                assert all(len(p) == 1 for p in phrases)
                rows = con.execute(sql, [list(range(len(phrases))), [p[0] for p in phrases], *weights, ns,
                                         float(n_rows), total / n_rows, *params, 100]).fetchall()
                if rnd:
                    times.append(time.perf_counter() - t0)
                    want = es.lexical_search(match, f, 100, cfg.bm25_weights)
                    same += [r for r, _s in want[:10]] == [int(r) for r, _s in rows[:10]]
        out["p50_ms"] = round(pct(times, 50) * 1e3, 2)
        out["p90_ms"] = round(pct(times, 90) * 1e3, 2)
        out["top10_equal_to_tsvector"] = f"{same}/{len(times)}"
        con.execute("DROP TABLE bench_postings, bench_doclen")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", required=True, help="PostgreSQL URL with ?schema=NAME (emptied first)")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--postings", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    conninfo, schema = split_schema(args.pg)
    if not schema:
        raise SystemExit("--pg needs ?schema=NAME")
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    base, every = corpus(args.n)
    questions = every[:: max(1, len(every) // args.queries)][: args.queries]
    out: dict[str, Any] = {"chronomem": str(Path(chronomem.__file__).parent), "n": args.n}
    mem = chronomem.open(args.pg, namespace="bench", embedder=None)
    try:
        total_s, index_s, parts = build(mem, base, args.n)
        out["write_s"] = round(total_s, 2)
        out["index_write_s"] = round(index_s, 2)
        out["index_write_ms_per_1000"] = round(index_s / args.n * 1e6, 1)
        with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema},public") as con:
            con.execute("VACUUM ANALYZE episodes, episodes_fts")
            size = con.execute("SELECT pg_total_relation_size('episodes_fts')").fetchone()
            out["fts_mb"] = round(int(size[0]) / 1e6, 1) if size else None
        es = episode_store(mem.store)
        cfg = SearchConfig()
        now = int(time.time() * 1e6)
        f = EpisodeFilter(mem._scope.ns_id, occurred_by=now, not_superseded_at=now)
        times: list[float] = []
        hits = 0
        for rnd in range(2):  # a warm-up pass, then the timed one
            for q in questions:
                match = fts_query(q)
                if match is None:
                    continue
                t0 = time.perf_counter()
                match = es.prune_common_terms(match, cfg.lexical_df_cap, cfg.lexical_postings_budget)
                got = es.lexical_search(match, f, cfg.pool, cfg.bm25_weights)
                if rnd:
                    times.append(time.perf_counter() - t0)
                    hits += bool(got)
        out["queries"] = len(times)
        out["queries_with_hits"] = hits
        out["p50_ms"] = round(pct(times, 50) * 1e3, 2)
        out["p90_ms"] = round(pct(times, 90) * 1e3, 2)
        out["mean_ms"] = round(statistics.mean(times) * 1e3, 2)
        print(json.dumps(out), flush=True)
        if args.postings:
            out["postings"] = postings(args.pg, mem._scope.ns_id, parts, questions, f, es, cfg.bm25_weights)
            print(json.dumps({"postings": out["postings"]}), flush=True)
    finally:
        mem.close()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
