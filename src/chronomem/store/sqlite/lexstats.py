"""Each namespace's BM25 statistics on SQLite: its index rows and their
tokens (N and N * avgdl), and its own ``bm25`` when FTS5's would not do.

FTS5's ``bm25`` reads N, avgdl and each phrase's row count over the whole
table, so in a file with several namespaces one namespace's episodes would
move another's scores (issue 16). ``episode_index_stats`` (migration 0015)
keeps ``(rows, tokens)`` per namespace, updated in the write transaction of
every index row written or deleted (from FTS5's own ``docsize`` record of
the row; a transaction's changes are summed and written once, before its
``COMMIT``: :func:`adjust`). A search whose namespace holds every index
row of the file lets FTS5 rank (the statistics are the same); otherwise the
warm numpy copy ranks within the namespace (:mod:`.lexindex`), or, with no
copy, :func:`namespace_bm25` scores the namespace's matching rows from
FTS5's token instances (``fts5vocab``) with the same operations, in the same
order: the three give the same bits where they overlap, and PostgreSQL's
``bm25`` the same scores (:mod:`chronomem.store.postgres.fts5_bm25`). The
counts are read outside the search's read of the index: a write committing
in between gives that one search the counts of just before it (as on
PostgreSQL, whose N and avgdl are cached per episode generation).
"""

from __future__ import annotations

import heapq
import json
import math
import sqlite3
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

from ..sql.fts5 import COLUMNS, K1, B

__all__ = ["INDEX_ROWS", "KEPT", "adjust", "freq", "idf", "index_row", "kept", "namespace_bm25", "namespace_stats",
           "recount", "row_tokens", "term_score", "totals", "varint"]

_COLUMN_NO = {name: i for i, name in enumerate(COLUMNS)}


def varint(buf: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (``sqlite3Fts5GetVarint``): big-endian 7-bit groups,
    the 9th byte whole. Returns ``(value, next offset)``."""
    value = 0
    for i in range(8):
        byte = buf[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | buf[at + 8], at + 9


def row_tokens(blob: bytes | None) -> int:
    """A row's token count, all columns, from its FTS5 ``docsize`` record."""
    if not blob:
        return 0
    buf, at, total = bytes(blob), 0, 0
    if len(buf) == len(COLUMNS) and max(buf) < 0x80:  # (each column under 128 tokens: a byte each)
        return sum(buf)
    for _ in COLUMNS:
        n, at = varint(buf, at)
        total += n
    return total


def index_row(con: sqlite3.Connection, rowid: int) -> tuple[int, int] | None:
    """``(namespace, tokens)`` of an episode's index row, ``None`` if it has
    none (or no episode row names its namespace)."""
    row = con.execute("SELECT e.ns_id, d.sz FROM episodes_fts_docsize d JOIN episodes e ON e.rowid = d.id "
                      "WHERE d.id = ?", (rowid,)).fetchone()
    return None if row is None else (int(row[0]), row_tokens(row[1]))


def adjust(con: sqlite3.Connection, ns_id: int, rows: int, tokens: int) -> None:
    """Add ``rows`` and ``tokens`` (negative: remove) to a namespace's counts."""
    con.execute("INSERT INTO episode_index_stats (ns_id, nrow, ntok) VALUES (?, ?, ?) ON CONFLICT (ns_id) "
                "DO UPDATE SET nrow = nrow + excluded.nrow, ntok = ntok + excluded.ntok", (ns_id, rows, tokens))


#: every index row's namespace and FTS5 ``docsize`` record (:func:`totals` counts them)
INDEX_ROWS = "SELECT e.ns_id, d.sz FROM episodes_fts_docsize d JOIN episodes e ON e.rowid = d.id"
#: a namespace's kept ``(rows, tokens)``
KEPT = "SELECT nrow, ntok FROM episode_index_stats WHERE ns_id = ?"


def totals(rows: Iterable[tuple[int, bytes | None]]) -> dict[int, tuple[int, int]]:
    """Each namespace's ``(rows, tokens)`` counted from :data:`INDEX_ROWS`' rows."""
    out: dict[int, list[int]] = {}
    for ns_id, sz in rows:
        t = out.setdefault(int(ns_id), [0, 0])
        t[0] += 1
        t[1] += row_tokens(sz)
    return {ns: (r, t) for ns, (r, t) in out.items()}


def recount(con: sqlite3.Connection) -> int:
    """Count every namespace's rows and tokens again from FTS5's records
    (migration 0015's step; after orphan index rows are deleted). Returns
    the index rows counted."""
    counted = totals(con.execute(INDEX_ROWS))
    con.execute("DELETE FROM episode_index_stats")
    con.executemany("INSERT INTO episode_index_stats (ns_id, nrow, ntok) VALUES (?, ?, ?)",
                    [(ns, r, t) for ns, (r, t) in sorted(counted.items())])
    return sum(r for r, _t in counted.values())


def kept(rows: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """``(rows, tokens)`` from :data:`KEPT`'s rows (none: nothing indexed)."""
    return (0, 0) if not rows else (int(rows[0][0]), int(rows[0][1]))


def namespace_stats(con: sqlite3.Connection, ns_id: int) -> tuple[int, int]:
    """``(rows, tokens)`` of the namespace's index rows."""
    return kept(con.execute(KEPT, (ns_id,)).fetchall())


def idf(nrow: int, nhit: int) -> float:
    """FTS5's idf of a phrase in ``nhit`` of ``nrow`` rows: ln((N - n + 0.5) /
    (n + 0.5)), 1e-6 where that is not positive."""
    value = math.log((nrow - nhit + 0.5) / (nhit + 0.5))
    return 1e-6 if value <= 0.0 else value


def term_score(weight: float, f: Any, d: Any, avgdl: float) -> Any:
    """A phrase's part of a row's ``bm25``, ``weight`` its idf (floats, or
    numpy arrays of rows: the same operations in the same order, so the same
    bits)."""
    return weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))


def freq(combo: Sequence[int], weights: Sequence[float]) -> float:
    """f(q, D) as ``fts5Bm25Function`` sums it: the column's weight added once
    per occurrence, columns in order."""
    f = 0.0
    for col, n in enumerate(combo):
        w = float(weights[col]) if col < len(weights) else 1.0
        for _ in range(n):
            f += w
    return f


# a token instance's row and column as one integer (row * 4 + column): a
# term's instances come back as one string, ~3x faster than a Python row each
_CODE = ("i.doc * 4 + (CASE i.col WHEN 'body' THEN 0 WHEN 'speaker' THEN 1 WHEN 'context' THEN 2 "
         "ELSE 3 END)")


def _phrase_hits(con: sqlite3.Connection, tokens: Sequence[str], ns_id: int) -> dict[int, list[int]]:
    """Each row of the namespace holding the phrase: its occurrences per
    column (FTS5: the tokens at consecutive offsets of one column)."""
    out: dict[int, list[int]] = {}
    if len(tokens) == 1:
        codes = con.execute(f"SELECT group_concat({_CODE}) FROM temp.ev_inst i JOIN episodes e ON e.rowid = i.doc "
                            "WHERE i.term = ? AND e.ns_id = ?", (tokens[0], ns_id)).fetchone()[0]
        for code, n in Counter(map(int, codes.split(",")) if codes else ()).items():
            out.setdefault(code >> 2, [0, 0, 0, 0])[code & 3] += n
        return out
    where: list[set[tuple[int, int, int]]] = []
    for tok in tokens:
        where.append({(int(d), _COLUMN_NO[c], int(o)) for d, c, o in con.execute(
            "SELECT i.doc, i.col, i.offset FROM temp.ev_inst i JOIN episodes e ON e.rowid = i.doc "
            "WHERE i.term = ? AND e.ns_id = ?", (tok, ns_id))})
    for doc, col, off in sorted(where[0]):
        if all((doc, col, off + j) in where[j] for j in range(1, len(tokens))):
            out.setdefault(doc, [0, 0, 0, 0])[col] += 1
    return out


def _sizes(con: sqlite3.Connection, docs: Sequence[int]) -> dict[int, int]:
    """Each row's token count (its ``docsize`` record), in one statement.
    Mostly every column holds under 128 tokens, a one-byte varint each: then
    the records come as one hex string and are summed four bytes at a time
    (a varint decoded per row took ~40% of a search's time)."""
    ids, hexed, n, nbytes = con.execute(
        "SELECT group_concat(id), group_concat(hex(sz), ''), count(*), sum(length(sz)) FROM episodes_fts_docsize "
        "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(docs)),)).fetchone()
    if not n:
        return {}
    width = len(COLUMNS)
    if nbytes == width * n:
        buf = bytes.fromhex(hexed)
        if max(buf) < 0x80:
            sizes = map(sum, zip(*(buf[c::width] for c in range(width)), strict=True))
            return dict(zip(map(int, ids.split(",")), sizes, strict=True))
    return {int(rowid): row_tokens(sz) for rowid, sz in con.execute(
        "SELECT id, sz FROM episodes_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(docs)),))}


def namespace_bm25(con: sqlite3.Connection, phrases: Sequence[Sequence[str]], weights: Sequence[float],
                   ns_id: int, stats: tuple[int, int], limit: int | None = None) -> list[tuple[int, float]]:
    """The best ``limit`` (``None``: every) rows of the namespace matching
    the OR of ``phrases`` (each as FTS5 tokenizes a query term), ``(rowid,
    score)`` best first, ties by rowid: FTS5's ``bm25`` (positive) over the
    namespace's statistics ``stats`` = ``(rows, tokens)``, with the
    operations and the order of :meth:`.lexindex._Postings.top` (the same
    bits)."""
    nrow, ntok = stats
    if nrow <= 0 or (limit is not None and limit <= 0):
        return []
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ev_inst USING fts5vocab(main, 'episodes_fts', 'instance')")
    avgdl = float(ntok) / float(nrow)
    hits = [_phrase_hits(con, toks, ns_id) if toks else {} for toks in phrases]
    dl = _sizes(con, sorted({d for h in hits for d in h}))
    score: dict[int, float] = {}
    fs: dict[tuple[int, ...], float] = {}  # (few distinct combinations)
    for h in hits:  # phrase order: FTS5 adds the phrases' terms in it
        if not h:
            continue
        w = idf(nrow, len(h))
        for doc, combo in h.items():
            key_ = tuple(combo)
            f = fs.get(key_)
            if f is None:
                f = fs[key_] = freq(combo, weights)
            score[doc] = score.get(doc, 0.0) + term_score(w, f, float(dl.get(doc, 0)), avgdl)
    key: Callable[[tuple[int, float]], tuple[float, int]] = lambda x: (-x[1], x[0])  # noqa: E731
    if limit is None or limit >= len(score):
        return sorted(score.items(), key=key)
    return heapq.nsmallest(limit, score.items(), key=key)
