"""PostgreSQL primitives for episodes (evidence): rows, time mentions,
vectors and the tsvector lexical index, all written in the caller's
transaction. The PostgreSQL counterpart of :mod:`chronomem.store.sqlite.episodes`;
what both backends do alike is in :mod:`chronomem.store.sql.episodes`.

Lexical search: a weighted ``tsvector`` per episode with the ``simple``
configuration (language-neutral: no stemming and no stop-word list, so
Chinese bigrams, mixed scripts and names index as they are) and a GIN index;
ranked with ``ts_rank_cd`` and the four column weights. FTS5's MATCH string
(quoted terms joined with OR, from :func:`chronomem.service.evidence.lexical.fts_query`)
is turned into the equivalent ``tsquery``. Vectors: ``bytea`` of int8 and a
``real`` scale (:mod:`chronomem.core.quantize`, as on SQLite); with pgvector,
also the float32 vector as written in a ``vector`` column and an HNSW index
per model for SQL users.
"""

from __future__ import annotations

import logging
import re
from array import array
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ...core.quantize import quantize
from ...errors import StoreError
from ..protocol import EpisodeFilter
from ..sql.dialect import POSTGRES
from ..sql.episodes import BaseEpisodeStore, BaseEpisodeTx, EpisodeSQL, pruned_query

if TYPE_CHECKING:  # pragma: no cover
    import psycopg

__all__ = ["PgEpisodeStoreMixin", "PgEpisodeTxMixin", "tsquery_terms"]

_SQL = EpisodeSQL(POSTGRES)
_TSV = (
    "setweight(to_tsvector('simple', %s), 'A') || setweight(to_tsvector('simple', %s), 'B') || "
    "setweight(to_tsvector('simple', %s), 'C') || setweight(to_tsvector('simple', %s), 'D')"
)
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
        """Write the lexical index row of an episode (``new``: it has none yet)."""
        self.conn.execute(
            f"INSERT INTO episodes_fts (rowid, tsv) VALUES (%s, {_TSV}) "
            "ON CONFLICT (rowid) DO UPDATE SET tsv = EXCLUDED.tsv",
            (rowid, *index),
        )

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
        stores). Counts stop at ``max(cap, budget) + 1`` and are cached per
        term: a count above that stays above it while episodes are added,
        smaller ones are read again when the episode generation moves."""
        terms = tsquery_terms(match)
        if len(terms) < 2 or (cap <= 0 and budget <= 0):
            return match
        bound = max(cap, budget)
        cache: dict[str, tuple[int, int]] = self.__dict__.setdefault("_df_cache", {})
        gen = self.episode_generation()
        df: list[int] = []
        with self._conn() as conn:
            for term in terms:
                got = cache.get(term)
                if got is not None and (got[1] == gen or got[0] > bound):
                    n = got[0]
                else:
                    row = conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM episodes_fts "
                        "WHERE tsv @@ plainto_tsquery('simple', %s) LIMIT %s) s",
                        (term, bound + 1),
                    ).fetchone()
                    n = int(row[0]) if row else 0
                    cache[term] = (n, gen)
                df.append(n)
        return pruned_query(match, terms, df, cap, budget)

    def lexical_search(self, match: str, f: EpisodeFilter, limit: int,
                       weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """``(rowid, score)`` best first; the score is ``ts_rank_cd`` with the
        column weights (text, speaker, context, neighbours) scaled to at most 1
        (higher is better, like SQLite's ``-bm25``)."""
        terms = tsquery_terms(match)
        if not terms:
            return []
        top = max(max(weights), 1e-9)
        body, speaker, context, neighbors = (max(0.0, w) / top for w in weights)
        where, params = _SQL.where(f)
        query = " || ".join(["plainto_tsquery('simple', %s)"] * len(terms))
        sql = (
            f"SELECT e.rowid, ts_rank_cd(%s::float4[], x.tsv, q.query) AS s "
            f"FROM (SELECT {query} AS query) q JOIN episodes_fts x ON x.tsv @@ q.query "
            f"JOIN episodes e ON e.rowid = x.rowid WHERE {' AND '.join(where)} ORDER BY s DESC, e.rowid LIMIT %s"
        )
        with self._conn() as conn:
            rows = conn.execute(sql, [[neighbors, context, speaker, body], *terms, *params, limit]).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
