"""PostgreSQL primitives for episodes (evidence): rows, time mentions,
vectors and the tsvector lexical index, all written in the caller's
transaction. The PostgreSQL counterpart of :mod:`chronomem.store.sqlite.episodes`;
what both backends do alike is in :mod:`chronomem.store.sql.episodes`.

Lexical search ranks as SQLite's FTS5 does (issue 16): an episode's index
row holds the tokens FTS5's ``porter unicode61 remove_diacritics 2``
tokenizer makes of its four columns, as a ``tsvector`` weighted A-D by
column (GIN-indexed), beside its namespace and token count; the score is
FTS5's ``bm25`` over the namespace's statistics, computed in one SQL
statement over the matched rows (each phrase's weighted frequency by
``ts_rank_cd``: see ``_BM25``; :mod:`chronomem.store.postgres.fts5_bm25`
gives the formula and PostgreSQL's limits). FTS5's MATCH string (quoted terms joined with OR,
from :func:`chronomem.service.evidence.lexical.fts_query`) is turned into a
``tsquery`` of the same tokens. Vectors: ``bytea`` of int8 and a ``real``
scale (:mod:`chronomem.core.quantize`, as on SQLite); with pgvector, also the
float32 vector as written in a ``vector`` column and an HNSW index per model
for SQL users.
"""

from __future__ import annotations

import logging
import re
from array import array
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ...core.quantize import quantize
from ...errors import InvalidInputError, StoreError
from ..protocol import EpisodeFilter
from ..sql.dialect import POSTGRES
from ..sql.episodes import BaseEpisodeStore, BaseEpisodeTx, EpisodeSQL, pruned_query
from ..sql.fts5 import MAX_CACHED_TERMS, term_tokens
from .fts5_bm25 import K1, B, lexeme, query_phrases, tokenize_rows, tsquery_literal, tsvector_literal

if TYPE_CHECKING:  # pragma: no cover
    import psycopg

__all__ = ["PgEpisodeStoreMixin", "PgEpisodeTxMixin", "tsquery_terms"]

_SQL = EpisodeSQL(POSTGRES)
_INDEX_ROW = (
    "INSERT INTO episodes_fts (rowid, ns_id, dl, tsv) SELECT e.rowid, e.ns_id, %s, %s::tsvector "
    "FROM episodes e WHERE e.rowid = %s "
    "ON CONFLICT (rowid) DO UPDATE SET ns_id = EXCLUDED.ns_id, dl = EXCLUDED.dl, tsv = EXCLUDED.tsv"
)
# bm25 of every row of the namespace that matches the tsquery (FTS5's
# fts5Bm25Function; the matched rows give n_i, the namespace's N and avgdl
# come as parameters), then the filter and the limit. f_i, the column weights
# summed over the phrase's occurrences in the row, is ts_rank_cd of the
# phrase alone without normalisation: each occurrence is a cover of its own
# (its lexemes at consecutive positions of one column), worth the weight of
# its column (ts_rank_cd takes weights in [0, 1], in the order D, C, B, A:
# they come scaled by the largest, which multiplies the rank back; float4,
# so f_i is exact to ~1e-7). Reading the term frequencies from the tsvector
# instead (unnest) took 5 times as long at 100k episodes (docs/postgres.md).
# Parameters: the phrase numbers, each phrase's tsquery, the namespace, the
# query's tsquery, the scaled weights, the scale, N, k1, k1, b, b, avgdl, the
# filter's parameters, the limit. A row's terms are summed in phrase order, as
# FTS5 adds them: summed in the order the join delivered them, a score moved in
# its last bit when another namespace's rows changed the plan.
_BM25 = """
WITH q (phrase, query) AS (SELECT * FROM unnest(%s::int[], %s::tsquery[])),
m AS MATERIALIZED (
    SELECT x.rowid, x.dl, x.tsv FROM episodes_fts x WHERE x.ns_id = %s AND x.tsv @@ %s::tsquery
),
f AS (
    SELECT m.rowid, m.dl, q.phrase, ts_rank_cd(%s::float4[], m.tsv, q.query, 0) * %s::float8 AS f
    FROM m CROSS JOIN q WHERE m.tsv @@ q.query
),
n AS (
    SELECT phrase, (%s::float8 - count(*) + 0.5) / (count(*) + 0.5) AS r FROM f GROUP BY phrase
),
s AS (
    SELECT f.rowid, sum(CASE WHEN n.r <= 1 THEN 1e-6 ELSE ln(n.r) END
                        * ((f.f * (%s::float8 + 1.0))
                           / (f.f + %s::float8 * (1 - %s::float8 + %s::float8 * f.dl / %s::float8)))
                        ORDER BY f.phrase) AS score
    FROM f JOIN n USING (phrase) GROUP BY f.rowid
)
SELECT s.rowid, s.score FROM s JOIN episodes e ON e.rowid = s.rowid
WHERE {where} ORDER BY s.score DESC, s.rowid LIMIT %s
"""
_TERM = re.compile(r'"((?:[^"]|"")*)"')

# the tables an erasure of each kind rewrites (after_erasure analyzes them again)
_FACT_TABLES = "facts, fact_sources, entities, entity_keys, operations"
_ERASED_TABLES = {"episode": "episodes, episodes_fts, episode_times, episode_vectors",
                  "fact": _FACT_TABLES, "entity": _FACT_TABLES}

log = logging.getLogger("chronomem.store.postgres")


def tsquery_terms(match: str) -> list[str]:
    """The terms of an FTS5 MATCH string made of quoted terms joined by OR."""
    return [m.group(1).replace('""', '"') for m in _TERM.finditer(match)]


def _floats(blob: bytes) -> list[float]:
    return array("f", blob).tolist()


class PgEpisodeTxStore(Protocol):
    """What :class:`PgEpisodeTxMixin` uses of its store
    (:class:`~chronomem.store.postgres.store.PostgresStore`); a protocol, so this module
    need not import the store (that import made a cycle)."""

    @property
    def pgvector(self) -> bool:
        """Whether the store keeps vectors also as pgvector's ``vector``."""
        ...


class PgEpisodeTxMixin(BaseEpisodeTx):
    """Episode writes inside one PostgreSQL write transaction (the ones both
    backends share are in :class:`~chronomem.store.sql.episodes.BaseEpisodeTx`)."""

    ep_sql = _SQL
    store: PgEpisodeTxStore

    if TYPE_CHECKING:  # pragma: no cover - provided by PgTx
        @property
        def conn(self) -> "psycopg.Connection[Any]": ...

    def replace_episode_index(self, rowid: int, index: tuple[str, str, str, str], new: bool = False) -> None:
        """Write the lexical index row of an episode (``new``: it has none
        yet): FTS5's tokens of its four columns, its namespace and token count."""
        (tokens,) = tokenize_rows([index])
        tsv, dl = tsvector_literal(tokens)
        self.conn.execute(_INDEX_ROW, (dl, tsv, rowid))

    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        if items:
            self.conn.execute(
                _SQL.times_head + ", ".join([_SQL.time_values] * len(items)), [v for item in items for v in item]
            )

    def compact_episode_index(self) -> None:
        """Nothing to do inside the transaction: the rewritten ``tsvector``
        rows replace the old ones for every query at once (MVCC). The old
        row versions (and their GIN entries) stay on disk as dead tuples
        until ``VACUUM``; see :meth:`PgEpisodeStoreMixin.after_erasure`."""

    def _model_added(self, model_id: int, dim: int) -> None:
        if self.store.pgvector:
            # an ANN index per model (pgvector indexes need a fixed dimension)
            self.conn.execute(
                f"CREATE INDEX episode_vectors_hnsw_{model_id} ON episode_vectors USING hnsw "
                f"((embedding::public.vector({int(dim)})) public.vector_cosine_ops) WHERE model_id = {model_id}"
            )

    def put_episode_vectors(self, model_id: int, items: Sequence[tuple[int, int, bytes]]) -> None:
        """``items`` are ``(episode_rowid, ns_id, float32 bytes)``, stored as
        int8 bytes and a scale (:mod:`chronomem.core.quantize`); pgvector's
        column keeps the float32 values."""
        if not items:
            return
        packed = quantize([blob for _rowid, _ns, blob in items])
        data: list[tuple[Any, ...]]
        if self.store.pgvector:
            sql = (
                "INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector, scale, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s::real[]::public.vector) ON CONFLICT (model_id, episode_rowid) "
                "DO UPDATE SET vector = EXCLUDED.vector, scale = EXCLUDED.scale, embedding = EXCLUDED.embedding, "
                "ns_id = EXCLUDED.ns_id"
            )
            data = [(rowid, model_id, ns, q, scale, _floats(blob))
                    for (rowid, ns, blob), (q, scale) in zip(items, packed, strict=True)]
        else:
            sql = (
                "INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector, scale) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (model_id, episode_rowid) "
                "DO UPDATE SET vector = EXCLUDED.vector, scale = EXCLUDED.scale, ns_id = EXCLUDED.ns_id"
            )
            data = [(rowid, model_id, ns, q, scale)
                    for (rowid, ns, _blob), (q, scale) in zip(items, packed, strict=True)]
        self.conn.cursor().executemany(sql, data)


class PgEpisodeStoreMixin(BaseEpisodeStore):
    """Episode reads (pooled connection, or the thread's open transaction);
    the ones both backends share are in
    :class:`~chronomem.store.sql.episodes.BaseEpisodeStore`."""

    ep_sql = _SQL

    if TYPE_CHECKING:  # pragma: no cover - provided by PostgresStore
        from contextlib import AbstractContextManager

        def _conn(self) -> AbstractContextManager[Any]: ...

    def after_erasure(self, kind: str) -> None:
        """``ANALYZE`` the tables the erasure touched: the planner's
        statistics (``pg_statistic``, read through ``pg_stats``) keep sampled
        column values, the erased names and text among them, until the next
        ``ANALYZE``, and autovacuum does not analyze a large table again for
        one erased row. ``ANALYZE`` samples live rows only (at most 30,000
        per table: about 0.25 s at 100k episodes). Best effort: a table
        whose lock is held (autovacuum) is skipped, and one this role does
        not own is skipped with the server's warning.

        No ``VACUUM``, by choice: no query sees the erased rows once the
        transaction commits, but their old versions stay in the table and
        index files (dead tuples) and in the WAL. A plain ``VACUUM`` (it
        cannot run inside the write transaction) only marks that space free:
        measured on PostgreSQL 15, the bytes were still in the heap and GIN
        files afterwards. Only ``VACUUM FULL`` (a rewrite under an exclusive
        lock of the whole table) removed them: an operator's step, not a
        request's (``docs/evidence.md``, "Erasure")."""
        tables = _ERASED_TABLES[kind]
        try:
            with self._conn() as conn:
                conn.execute(f"ANALYZE (SKIP_LOCKED) {tables}")
        except StoreError as exc:  # never fail an erasure that has committed
            log.warning("after an erasure: ANALYZE %s failed (%s); the planner statistics may keep "
                        "erased values until the next ANALYZE", tables, exc)

    def prune_common_terms(self, match: str, cap: int, budget: int = 0) -> str:
        """Drop from an OR-query (as built by ``fts_query``) the terms that
        occur in more than ``cap`` episodes, then the most common of the rest
        until their summed counts fit in ``budget``, keeping at least the
        rarest term (as the SQLite store does: ranking every episode that
        contains a common term is what makes full-text search slow on large
        stores). A term is counted as FTS5 tokenizes it, over every namespace
        (as FTS5's ``fts5vocab`` counts on SQLite). Counts stop at
        ``max(cap, budget) + 1`` and are cached per term: a count above that
        stays above it while episodes are added, smaller ones are read again
        when the episode generation moves."""
        terms = tsquery_terms(match)
        if len(terms) < 2 or (cap <= 0 and budget <= 0):
            return match
        bound = max(cap, budget)
        cache: dict[str, tuple[int, int]] = self.__dict__.setdefault("_df_cache", {})
        gen = self.episode_generation()
        df: list[int] = []
        with self._conn() as conn:
            for tokens in term_tokens(terms):
                if not tokens:
                    df.append(0)
                    continue
                tsq = tsquery_literal([tuple(lexeme(t) for t in tokens)])
                got = cache.get(tsq)
                if got is not None and (got[1] == gen or got[0] > bound):
                    n = got[0]
                else:
                    row = conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM episodes_fts WHERE tsv @@ %s::tsquery LIMIT %s) s",
                        (tsq, bound + 1),
                    ).fetchone()
                    n = int(row[0]) if row else 0
                    if len(cache) >= MAX_CACHED_TERMS:
                        cache.clear()  # (a cache of counts: refilled as queries come)
                    cache[tsq] = (n, gen)
                df.append(n)
        return pruned_query(match, terms, df, cap, budget)

    def bm25_stats(self, ns_id: int) -> tuple[int, int]:
        """``(rows, tokens)`` of the namespace's lexical index: bm25's N and
        N * avgdl. Cached per namespace for one episode generation (every
        write of episodes or index rows moves it), so a search sees the
        statistics of the generation it read just before: exact, except that
        a write committing between that read and the search is missing from
        N and avgdl (not from n_i, which the search counts itself)."""
        cache: dict[int, tuple[int, int, int]] = self.__dict__.setdefault("_bm25_stats", {})
        gen = self.episode_generation()
        got = cache.get(ns_id)
        if got is not None and got[0] == gen:
            return got[1], got[2]
        with self._conn() as conn:
            row = conn.execute("SELECT count(*), COALESCE(sum(dl), 0) FROM episodes_fts WHERE ns_id = %s",
                               (ns_id,)).fetchone()
        n, total = (int(row[0]), int(row[1])) if row else (0, 0)
        cache[ns_id] = (gen, n, total)
        return n, total

    def prepare_lexical(self) -> bool:
        """Nothing to build: PostgreSQL ranks in SQL, on the server."""
        return False

    def lexical_search(self, match: str, f: EpisodeFilter, limit: int,
                       weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """``(rowid, score)`` best first: FTS5's ``bm25`` with the column
        weights (text, speaker, context, neighbours), positive (SQLite's
        store negates ``bm25()`` to the same number), over the namespace's
        statistics; ties by rowid. A negative weight (which FTS5 would take)
        is refused: :class:`InvalidInputError`."""
        phrases = query_phrases(tsquery_terms(match))
        if not phrases or limit <= 0:
            return []
        n_rows, tokens = self.bm25_stats(f.ns_id)
        if n_rows == 0:
            return []
        avgdl = tokens / n_rows
        if min(weights) < 0:
            raise InvalidInputError(f"bm25 column weights must not be negative: {weights}")
        top = max(weights)
        scaled = [w / top if top > 0 else 0.0 for w in reversed(weights)]  # D, C, B, A
        where, params = _SQL.where(f)
        sql = _BM25.format(where=" AND ".join(where))
        args = [list(range(len(phrases))), [tsquery_literal([p]) for p in phrases], f.ns_id,
                tsquery_literal(phrases), scaled, float(top), float(n_rows), K1, K1, B, B, avgdl, *params, limit]
        with self._conn() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
