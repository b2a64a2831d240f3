"""SQLite FTS5's tokens and ``bm25`` on PostgreSQL, so that both backends
rank episodes alike (issue 16).

Tokens: the episode's four index columns (text, speaker, context,
neighbours: ``replace_episode_index``) go through SQLite FTS5's own
``porter unicode61 remove_diacritics 2`` tokenizer, in an in-memory
contentless FTS5 table of this thread, read back with ``fts5vocab``
(``instance``): the tokenizer is literally the code SQLite's store indexes
with. They become a ``tsvector`` literal (:func:`tsvector_literal`): each
token at a position, weighted ``A``..``D`` by its column. Columns follow one
another with one free position between them, so a phrase never matches
across two columns (as in FTS5). The row's token count (``dl``) is kept
beside the ``tsvector``. Query terms go through the same tokenizer
(:func:`query_phrases`); the ``tsquery`` is built from the literal lexemes
(:func:`tsquery_literal`), never through a text-search configuration.

PostgreSQL's limits, and what happens past them:

* a position is at most 16383: the tokens of a row past that position are
  all stored at 16383, and one lexeme keeps one position there per column,
  so their term frequencies count once (a row of over ~16k tokens, four
  columns together); ``dl`` stays exact.
* a lexeme keeps at most 256 positions in a row (PostgreSQL drops the rest):
  a token said more than 256 times in one row counts 256 times.
* a lexeme is at most 2046 bytes: a longer token (FTS5 keeps it whole) is
  stored as ``~`` and its SHA-256 (``~`` is never part of an FTS5 token), the
  same for a query term, so it still matches, only itself.
* a ``tsvector`` is at most 1 MB: a row past it is refused by the server
  (:class:`~chronomem.errors.StoreError`), as with ``to_tsvector`` before.

Scores: FTS5's ``bm25`` (``ext/fts5/fts5_aux.c``, ``fts5Bm25Function``),
k1 = 1.2, b = 0.75, per query phrase i: idf_i = ln((N - n_i + 0.5) /
(n_i + 0.5)), 1e-6 when <= 0; f_i = the column weights summed over the
phrase's occurrences in the row; D = the row's token count; avgdl = the
tokens of all rows / N; score = sum_i idf_i * f_i (k1 + 1) / (f_i + k1
(1 - b + b D / avgdl)), returned positive (SQLite's ``bm25()`` is its
negation). N, avgdl and n_i are the namespace's (FTS5's span the file).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from ..sql.fts5 import K1, TOKENIZE, B, Token, term_tokens, tokenize_rows

__all__ = [
    "B", "K1", "MAX_LEXEME_BYTES", "MAX_POSITION", "TOKENIZE", "Token", "lexeme", "query_phrases",
    "tokenize_rows", "tsquery_literal", "tsvector_literal",
]

MAX_POSITION = 16383
MAX_LEXEME_BYTES = 2046
_WEIGHTS = "ABCD"


def lexeme(token: str) -> str:
    """The stored lexeme of an FTS5 token (a token over PostgreSQL's 2046
    bytes as ``~`` + its SHA-256)."""
    if len(token) * 4 > MAX_LEXEME_BYTES and len(token.encode("utf-8")) > MAX_LEXEME_BYTES:
        return "~" + hashlib.sha256(token.encode("utf-8")).hexdigest()
    return token


def _quote(lex: str) -> str:
    return "'" + lex.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: Sequence[Token]) -> tuple[str, int]:
    """``(tsvector literal, token count)`` of one row's tokens."""
    sizes = [0, 0, 0, 0]
    for _term, col, offset in tokens:
        sizes[col] = max(sizes[col], offset + 1)
    base = [0, 0, 0, 0]
    for c in range(1, 4):
        base[c] = base[c - 1] + sizes[c - 1] + 1
    positions: dict[str, list[str]] = {}
    for term, col, offset in tokens:
        pos = min(base[col] + offset + 1, MAX_POSITION)
        positions.setdefault(lexeme(term), []).append(f"{pos}{_WEIGHTS[col]}")
    return " ".join(f"{_quote(lex)}:{','.join(p)}" for lex, p in positions.items()), len(tokens)


def query_phrases(terms: Sequence[str]) -> list[tuple[str, ...]]:
    """Each query term's lexemes (a term FTS5 splits into several tokens is
    a phrase); a term without a token is left out (it matches nothing)."""
    return [tuple(lexeme(term) for term in toks) for toks in term_tokens(terms) if toks]


def tsquery_literal(phrases: Sequence[tuple[str, ...]]) -> str:
    """The ``tsquery`` matching a row that holds any of the phrases (a phrase's
    lexemes at consecutive positions: ``<->``)."""
    parts = []
    for phrase in phrases:
        quoted = [_quote(lex) for lex in phrase]
        parts.append(quoted[0] if len(quoted) == 1 else "(" + " <-> ".join(quoted) + ")")
    return " | ".join(parts)
