"""PostgreSQL primitives for episodes (evidence): rows, time mentions,
vectors and the tsvector lexical index, all written in the caller's
transaction. The PostgreSQL counterpart of ``store/sqlite_episodes.py``.

Lexical search: a weighted ``tsvector`` per episode with the ``simple``
configuration (language-neutral: no stemming and no stop-word list, so
Chinese bigrams, mixed scripts and names index as they are) and a GIN index;
ranked with ``ts_rank_cd`` and the four column weights. FTS5's MATCH string
(quoted terms joined with OR, from :func:`chronomem.evidence.lexical.fts_query`)
is turned into the equivalent ``tsquery``. Vectors: ``real[]`` (float32, the
exact bytes the client's ANN index loads); with pgvector, also a ``vector``
column and an HNSW index per model for SQL users.
"""

from __future__ import annotations

import re
from array import array
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import InvalidInputError
from .base import EpisodeFilter, EpisodeRecord

if TYPE_CHECKING:  # pragma: no cover
    import psycopg

    from .postgres import PostgresStore

__all__ = ["PgEpisodeStoreMixin", "PgEpisodeTxMixin", "tsquery_terms"]

_EP_COLS = (
    "e.rowid, e.id, e.ns_id, e.text, e.occurred_at, e.occurred_prec, e.recorded_at, e.source, e.session, "
    "e.speaker, e.metadata, e.superseded_by, e.superseded_at, e.erased_at"
)
_TSV = (
    "setweight(to_tsvector('simple', %s), 'A') || setweight(to_tsvector('simple', %s), 'B') || "
    "setweight(to_tsvector('simple', %s), 'C') || setweight(to_tsvector('simple', %s), 'D')"
)
_TERM = re.compile(r'"((?:[^"]|"")*)"')


def _rec(r: Sequence[Any]) -> EpisodeRecord:
    return EpisodeRecord(*r)


def tsquery_terms(match: str) -> list[str]:
    """The terms of an FTS5 MATCH string made of quoted terms joined by OR."""
    return [m.group(1).replace('""', '"') for m in _TERM.finditer(match)]


def _floats(blob: bytes) -> list[float]:
    return array("f", blob).tolist()


def _where(f: EpisodeFilter) -> tuple[list[str], list[Any]]:
    where = ["e.ns_id = %s", "e.erased_at IS NULL"]
    params: list[Any] = [f.ns_id]
    if f.recorded_by is not None:
        where.append("e.recorded_at <= %s")
        params.append(f.recorded_by)
    if f.not_superseded_at is not None:
        where.append("(e.superseded_at IS NULL OR e.superseded_at > %s)")
        params.append(f.not_superseded_at)
    if f.session is not None:
        where.append("e.session = %s")
        params.append(f.session)
    if f.since is not None:
        where.append("COALESCE(e.occurred_at, e.recorded_at) >= %s")
        params.append(f.since)
    if f.until is not None:
        where.append("COALESCE(e.occurred_at, e.recorded_at) < %s")
        params.append(f.until)
    return where, params


class PgEpisodeTxMixin:
    """Episode writes inside one PostgreSQL write transaction."""

    store: "PostgresStore"
    now: int

    if TYPE_CHECKING:  # pragma: no cover - provided by PgTx
        @property
        def conn(self) -> "psycopg.Connection[Any]": ...

    def insert_episode(self, rec: EpisodeRecord) -> int:
        """Insert the row; index it with :meth:`replace_episode_index`."""
        row = self.conn.execute(
            "INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at, source, session, "
            "speaker, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING rowid",
            (rec.id, rec.ns_id, rec.text, rec.occurred_at, rec.occurred_prec, rec.recorded_at, rec.source,
             rec.session, rec.speaker, rec.metadata),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def replace_episode_index(self, rowid: int, index: tuple[str, str, str, str], new: bool = False) -> None:
        """Write the lexical index row of an episode (``new``: it has none yet)."""
        self.conn.execute(
            f"INSERT INTO episodes_fts (rowid, tsv) VALUES (%s, {_TSV}) "
            "ON CONFLICT (rowid) DO UPDATE SET tsv = EXCLUDED.tsv",
            (rowid, *index),
        )

    def adjacent_episodes(self, rec: EpisodeRecord) -> tuple[EpisodeRecord | None, EpisodeRecord | None]:
        """The episodes just before and after ``rec`` in its session (rowid order)."""
        if rec.session is None:
            return None, None
        before = self.conn.execute(
            f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = %s AND e.session = %s AND e.rowid < %s "
            "AND e.erased_at IS NULL ORDER BY e.rowid DESC LIMIT 1",
            (rec.ns_id, rec.session, rec.rowid),
        ).fetchone()
        after = self.conn.execute(
            f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = %s AND e.session = %s AND e.rowid > %s "
            "AND e.erased_at IS NULL ORDER BY e.rowid LIMIT 1",
            (rec.ns_id, rec.session, rec.rowid),
        ).fetchone()
        return (_rec(before) if before else None), (_rec(after) if after else None)

    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        if items:
            self.conn.execute(
                "INSERT INTO episode_times (episode_rowid, start_us, end_us, phrase, precision) VALUES "
                + ", ".join(["(%s, %s, %s, %s, %s)"] * len(items)),
                [v for item in items for v in item],
            )

    def replace_episode_times(self, rowid: int, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        self.conn.execute("DELETE FROM episode_times WHERE episode_rowid = %s", (rowid,))
        self.insert_episode_times(items)

    def embedding_model_id(self, name: str, dim: int) -> int:
        row = self.conn.execute("SELECT id, dim FROM embedding_models WHERE name = %s", (name,)).fetchone()
        if row is not None:
            if int(row[1]) != dim:
                raise InvalidInputError(
                    f"embedding model {name!r} is recorded with {row[1]} dimensions, not {dim}"
                )
            return int(row[0])
        got = self.conn.execute(
            "INSERT INTO embedding_models (name, dim) VALUES (%s, %s) RETURNING id", (name, dim)
        ).fetchone()
        assert got is not None
        model_id = int(got[0])
        if self.store.pgvector:
            # an ANN index per model (pgvector indexes need a fixed dimension)
            self.conn.execute(
                f"CREATE INDEX episode_vectors_hnsw_{model_id} ON episode_vectors USING hnsw "
                f"((embedding::public.vector({int(dim)})) public.vector_cosine_ops) WHERE model_id = {model_id}"
            )
        return model_id

    def put_episode_vectors(self, model_id: int, items: Sequence[tuple[int, int, bytes]]) -> None:
        """``items`` are ``(episode_rowid, ns_id, float32 bytes)``."""
        if not items:
            return
        data: list[tuple[Any, ...]]
        if self.store.pgvector:
            sql = (
                "INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector, embedding) "
                "VALUES (%s, %s, %s, %s, %s::real[]::public.vector) ON CONFLICT (model_id, episode_rowid) "
                "DO UPDATE SET vector = EXCLUDED.vector, embedding = EXCLUDED.embedding, ns_id = EXCLUDED.ns_id"
            )
            data = [(rowid, model_id, ns, v, v) for rowid, ns, blob in items for v in [_floats(blob)]]
        else:
            sql = (
                "INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (model_id, episode_rowid) DO UPDATE SET vector = EXCLUDED.vector, ns_id = EXCLUDED.ns_id"
            )
            data = [(rowid, model_id, ns, _floats(blob)) for rowid, ns, blob in items]
        self.conn.cursor().executemany(sql, data)

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        r = self.conn.execute(f"SELECT {_EP_COLS} FROM episodes e WHERE e.id = %s", (episode_id,)).fetchone()
        return None if r is None else _rec(r)

    def supersede_episode(self, old_rowid: int, new_id: str, at: int) -> None:
        self.conn.execute(
            "UPDATE episodes SET superseded_by = %s, superseded_at = %s WHERE rowid = %s", (new_id, at, old_rowid)
        )

    def episode_fact_ids(self, episode_id: str) -> list[str]:
        return [
            str(fid)
            for (fid,) in self.conn.execute(
                "SELECT fact_id FROM facts WHERE episode_id = %s UNION "
                "SELECT fact_id FROM fact_sources WHERE episode_id = %s ORDER BY 1",
                (episode_id, episode_id),
            )
        ]

    def erase_episode(self, rowid: int) -> None:
        """Delete the content (text, index, vectors, mentions); the row stays
        as a tombstone with its id and times."""
        self.conn.execute("DELETE FROM episodes_fts WHERE rowid = %s", (rowid,))
        self.conn.execute("DELETE FROM episode_vectors WHERE episode_rowid = %s", (rowid,))
        self.conn.execute("DELETE FROM episode_times WHERE episode_rowid = %s", (rowid,))
        self.conn.execute(
            "UPDATE episodes SET text = '', source = NULL, session = NULL, speaker = NULL, metadata = NULL, "
            "erased_at = %s WHERE rowid = %s",
            (self.now, rowid),
        )

    def bump_episode_generation(self) -> None:
        self.conn.execute(
            "INSERT INTO meta AS m (key, value) VALUES ('episode_generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = (m.value::bigint + 1)::text"
        )


class PgEpisodeStoreMixin:
    """Episode reads (pooled connection, or the thread's open transaction)."""

    if TYPE_CHECKING:  # pragma: no cover - provided by PostgresStore
        from contextlib import AbstractContextManager

        def _conn(self) -> AbstractContextManager[Any]: ...

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        with self._conn() as conn:
            r = conn.execute(f"SELECT {_EP_COLS} FROM episodes e WHERE e.id = %s", (episode_id,)).fetchone()
        return None if r is None else _rec(r)

    def episodes_by_rowids(self, rowids: Sequence[int]) -> list[EpisodeRecord]:
        if not rowids:
            return []
        with self._conn() as conn:
            out = {
                int(r[0]): _rec(r)
                for r in conn.execute(f"SELECT {_EP_COLS} FROM episodes e WHERE e.rowid = ANY(%s)", (list(rowids),))
            }
        return [out[r] for r in rowids if r in out]

    def list_episodes(self, f: EpisodeFilter, limit: int, offset: int = 0) -> list[EpisodeRecord]:
        where, params = _where(f)
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE {' AND '.join(where)} "
                "ORDER BY COALESCE(e.occurred_at, e.recorded_at), e.rowid LIMIT %s OFFSET %s",
                params + [limit, offset],
            ).fetchall()
        return [_rec(r) for r in rows]

    def episode_times(self, rowids: Sequence[int]) -> list[tuple[int, int, int, str, int]]:
        if not rowids:
            return []
        with self._conn() as conn:
            return [
                (int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]))
                for r in conn.execute(
                    "SELECT episode_rowid, start_us, end_us, phrase, precision FROM episode_times "
                    "WHERE episode_rowid = ANY(%s) ORDER BY episode_rowid, id",
                    (list(rowids),),
                )
            ]

    def prune_common_terms(self, match: str, cap: int) -> str:
        """Drop from an OR-query (as built by ``fts_query``) the terms that
        occur in more than ``cap`` episodes, keeping at least the rarest one
        (as the SQLite store does: ranking every episode that contains a very
        common term is what makes full-text search slow on large stores).
        Counts stop at ``cap + 1`` and are cached per term: a count above the
        cap stays above it while episodes are added, smaller ones are read
        again when the episode generation moves."""
        terms = tsquery_terms(match)
        if len(terms) < 2 or cap <= 0:
            return match
        cache: dict[str, tuple[int, int]] = self.__dict__.setdefault("_df_cache", {})
        gen = self.episode_generation()
        df: list[int] = []
        with self._conn() as conn:
            for term in terms:
                got = cache.get(term)
                if got is not None and (got[1] == gen or got[0] > cap):
                    n = got[0]
                else:
                    row = conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM episodes_fts "
                        "WHERE tsv @@ plainto_tsquery('simple', %s) LIMIT %s) s",
                        (term, cap + 1),
                    ).fetchone()
                    n = int(row[0]) if row else 0
                    cache[term] = (n, gen)
                df.append(n)
        keep = [t for t, n in zip(terms, df) if n <= cap]
        if not keep:
            keep = [terms[min(range(len(terms)), key=df.__getitem__)]]
        if len(keep) == len(terms):
            return match
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in keep)

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
        where, params = _where(f)
        query = " || ".join(["plainto_tsquery('simple', %s)"] * len(terms))
        sql = (
            f"SELECT e.rowid, ts_rank_cd(%s::float4[], x.tsv, q.query) AS s "
            f"FROM (SELECT {query} AS query) q JOIN episodes_fts x ON x.tsv @@ q.query "
            f"JOIN episodes e ON e.rowid = x.rowid WHERE {' AND '.join(where)} ORDER BY s DESC, e.rowid LIMIT %s"
        )
        with self._conn() as conn:
            rows = conn.execute(sql, [[neighbors, context, speaker, body], *terms, *params, limit]).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def embedding_model(self, name: str) -> tuple[int, int] | None:
        with self._conn() as conn:
            r = conn.execute("SELECT id, dim FROM embedding_models WHERE name = %s", (name,)).fetchone()
        return None if r is None else (int(r[0]), int(r[1]))

    def embedding_models(self) -> list[tuple[int, str, int]]:
        with self._conn() as conn:
            return [(int(a), str(b), int(c)) for a, b, c in
                    conn.execute("SELECT id, name, dim FROM embedding_models ORDER BY id")]

    def vector_stats(self, ns_id: int, model_id: int) -> tuple[int, int]:
        """``(count, max episode rowid)`` of one namespace's vectors of one model."""
        with self._conn() as conn:
            r = conn.execute(
                "SELECT count(*), COALESCE(max(episode_rowid), 0) FROM episode_vectors "
                "WHERE ns_id = %s AND model_id = %s",
                (ns_id, model_id),
            ).fetchone()
        return int(r[0]), int(r[1])

    def load_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                     limit: int) -> list[tuple[int, bytes, int, int | None, str | None]]:
        """``(rowid, float32 bytes, recorded_at, occurred_at, session)`` by rowid."""
        with self._conn() as conn:
            return [
                (int(r[0]), array("f", r[1]).tobytes(), int(r[2]), r[3], r[4])
                for r in conn.execute(
                    "SELECT v.episode_rowid, v.vector, e.recorded_at, e.occurred_at, e.session "
                    "FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid "
                    "WHERE v.ns_id = %s AND v.model_id = %s AND v.episode_rowid > %s "
                    "ORDER BY v.episode_rowid LIMIT %s",
                    (ns_id, model_id, after_rowid, limit),
                )
            ]

    def superseded_episodes(self, ns_id: int) -> list[tuple[int, int]]:
        with self._conn() as conn:
            return [
                (int(a), int(b))
                for a, b in conn.execute(
                    "SELECT rowid, superseded_at FROM episodes WHERE ns_id = %s AND superseded_by IS NOT NULL",
                    (ns_id,),
                )
            ]

    def episodes_missing_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                                 limit: int) -> list[EpisodeRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = %s AND e.rowid > %s AND e.erased_at IS NULL "
                "AND NOT EXISTS (SELECT 1 FROM episode_vectors v WHERE v.model_id = %s AND v.episode_rowid = e.rowid) "
                "ORDER BY e.rowid LIMIT %s",
                (ns_id, after_rowid, model_id, limit),
            ).fetchall()
        return [_rec(r) for r in rows]

    def episode_index_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = %s AND e.rowid > %s AND e.erased_at IS NULL "
                "ORDER BY e.rowid LIMIT %s",
                (ns_id, after_rowid, limit),
            ).fetchall()
        return [_rec(r) for r in rows]

    def facts_citing_episodes(self, ns_id: int, episode_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(episode_id, fact_id)`` for every fact that cites one of the episodes."""
        if not episode_ids:
            return []
        ids = list(episode_ids)
        with self._conn() as conn:
            return [
                (str(a), str(b))
                for a, b in conn.execute(
                    "SELECT DISTINCT episode_id, fact_id FROM facts WHERE ns_id = %s AND episode_id = ANY(%s) "
                    "UNION SELECT s.episode_id, s.fact_id FROM fact_sources s WHERE s.episode_id = ANY(%s)",
                    (ns_id, ids, ids),
                )
            ]

    def entity_names_with_prefix(self, ns_id: int, prefix: str, limit: int) -> list[str]:
        """Names of entities with a name key (or alias) starting with ``prefix``
        (an index range scan, for fuzzy candidates)."""
        if not prefix:
            return []
        hi = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        with self._conn() as conn:
            return [
                str(n)
                for (n,) in conn.execute(
                    "SELECT DISTINCT e.name FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
                    "WHERE k.ns_id = %s AND k.key >= %s AND k.key < %s LIMIT %s",
                    (ns_id, prefix, hi, limit),
                )
            ]

    def episode_generation(self) -> int:
        with self._conn() as conn:
            r = conn.execute("SELECT value FROM meta WHERE key = 'episode_generation'").fetchone()
        return int(r[0]) if r else 0

    def episode_count(self, ns_id: int) -> int:
        with self._conn() as conn:
            r = conn.execute(
                "SELECT count(*) FROM episodes WHERE ns_id = %s AND erased_at IS NULL", (ns_id,)
            ).fetchone()
        return int(r[0])
