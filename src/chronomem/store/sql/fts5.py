"""SQLite FTS5's tokenizer and ``bm25`` constants, shared by SQLite's
numpy postings (:mod:`chronomem.store.sqlite.lexindex`) and PostgreSQL's
copy of FTS5's tokens (:mod:`chronomem.store.postgres.fts5_bm25`): both
read tokens as the store's ``episodes_fts`` table makes them."""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Sequence

__all__ = ["B", "COLUMNS", "K1", "MAX_CACHED_TERMS", "TOKENIZE", "Token", "term_tokens", "tokenize_rows"]

#: the tokenizer of ``episodes_fts`` (migration 0002); a test holds the two equal
TOKENIZE = "porter unicode61 remove_diacritics 2"
#: FTS5's bm25 parameters (``ext/fts5/fts5_aux.c``)
K1, B = 1.2, 0.75
COLUMNS = ("body", "speaker", "context", "neighbors")
_COLUMN_NO = {name: i for i, name in enumerate(COLUMNS)}

# (token, column 0-3, offset in the column)
Token = tuple[str, int, int]

_local = threading.local()

#: query terms whose tokens :func:`term_tokens` remembers (~200 bytes each:
#: at most ~2 MB); past it the oldest quarter goes
MAX_CACHED_TERMS = 10_000
_TERMS: dict[str, tuple[str, ...]] = {}


def _forget_in_child() -> None:
    """A forked child makes its own tokenizer (SQLite connections are not to
    be used across a fork)."""
    global _local
    _local = threading.local()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_forget_in_child)


def _tokenizer() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table (contentless: ``delete-all`` empties it)."""
    con: sqlite3.Connection | None = getattr(_local, "con", None)
    if con is None:
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.execute(f"CREATE VIRTUAL TABLE t USING fts5({', '.join(COLUMNS)}, content='', "
                    f"tokenize='{TOKENIZE}')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab('t', 'instance')")
        _local.con = con
    return con


def tokenize_rows(rows: Sequence[tuple[str, str, str, str]]) -> list[list[Token]]:
    """Each row's tokens as FTS5 makes them, in column then offset order."""
    out: list[list[Token]] = [[] for _ in rows]
    if not rows:
        return out
    con = _tokenizer()
    try:
        con.executemany(f"INSERT INTO t (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?)",
                        [(i + 1, *row) for i, row in enumerate(rows)])
        for term, doc, col, offset in con.execute("SELECT term, doc, col, offset FROM v"):
            out[int(doc) - 1].append((str(term), _COLUMN_NO[col], int(offset)))
    finally:
        con.execute("INSERT INTO t (t) VALUES ('delete-all')")
    for tokens in out:
        tokens.sort(key=lambda t: (t[1], t[2]))
    return out


def term_tokens(terms: Sequence[str]) -> list[tuple[str, ...]]:
    """Each query term's tokens (in the body column) as FTS5 makes them.

    A search tokenizes its terms twice (pruning the common ones, then
    ranking), and the same words come back query after query: a term's
    tokens are remembered (:data:`MAX_CACHED_TERMS`), so only new terms pay
    the in-memory table's round trip (~0.1-0.2 ms a search)."""
    cache = _TERMS
    missing = [t for t in dict.fromkeys(terms) if t not in cache]
    if missing:
        if len(cache) + len(missing) > MAX_CACHED_TERMS:
            for old in list(cache)[: max(len(missing), MAX_CACHED_TERMS // 4)]:
                cache.pop(old, None)  # (dicts keep insertion order: the oldest first)
        for term, toks in zip(missing, tokenize_rows([(t, "", "", "") for t in missing]), strict=True):
            cache[term] = tuple(tok for tok, _col, _off in toks)
    out = []
    for t in terms:
        got = cache.get(t)
        if got is None:  # (another thread trimmed it meanwhile)
            got = tuple(tok for tok, _col, _off in tokenize_rows([(t, "", "", "")])[0])
        out.append(got)
    return out
