"""The episode (evidence) SQL both backends run, written once here.

:class:`EpisodeSQL` composes every shared statement for one
:class:`~chronomem.store.sql.dialect.Dialect`. :class:`BaseEpisodeTx` holds
the episode writes whose logic is the same on both backends and runs them
through the write transaction's hooks (``_execute``, ``_insert_id``, see
:class:`~chronomem.store.sql.tx.BaseTx`); :class:`BaseEpisodeStore` the
episode reads, run through the store's ``_fetch`` (see
:class:`~chronomem.store.sql.reads.RowReadsMixin`), binding lists of values
as the dialect does. What really differs — the lexical index (FTS5 ``bm25``
against ``tsvector``/``ts_rank_cd``) and its common-term counts, how vectors
are written (pgvector's extra column) — stays in
:mod:`chronomem.store.sqlite.episodes` and
:mod:`chronomem.store.postgres.episodes`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from operator import attrgetter
from typing import Any, ClassVar, Sequence

from ...errors import InvalidInputError
from ..protocol import EpisodeFilter, EpisodeRecord, PooledEpisode
from .dialect import Dialect
from .tx import Cursor

__all__ = ["BaseEpisodeStore", "BaseEpisodeTx", "EP_COLS", "EpisodeSQL", "pruned_query"]

# the columns of an EpisodeRecord, in order, of ``episodes e``
EP_COLS = (
    "e.rowid, e.id, e.ns_id, e.text, e.occurred_at, e.occurred_prec, e.recorded_at, e.source, e.session, "
    "e.speaker, e.metadata, e.superseded_by, e.superseded_at, e.erased_at, e.superseded_recorded_at, "
    "e.recorded_by"
)

# the columns an insert of an episode sets; a raw restore also sets its
# supersession and erasure (tombstones included)
_INSERT_COLS = ("id", "ns_id", "text", "occurred_at", "occurred_prec", "recorded_at", "source", "session",
                "speaker", "metadata", "recorded_by")
_RESTORE_COLS = (*_INSERT_COLS, "superseded_by", "superseded_at", "erased_at", "superseded_recorded_at")
# their values, from the EpisodeRecord fields of the same names
_insert_values = attrgetter(*_INSERT_COLS)
_restore_values = attrgetter(*_RESTORE_COLS)

# the optional conditions of an EpisodeFilter: (attribute, condition on its value)
_FILTERS = (
    ("recorded_by", "e.recorded_at <= {ph}"),
    ("occurred_by", "COALESCE(e.occurred_at, e.recorded_at) <= {ph}"),
    ("not_superseded_at", "(e.superseded_at IS NULL OR e.superseded_at > {ph})"),
    ("session", "e.session = {ph}"),
    ("since", "COALESCE(e.occurred_at, e.recorded_at) >= {ph}"),
    ("until", "COALESCE(e.occurred_at, e.recorded_at) < {ph}"),
)


def _rec(r: Sequence[Any]) -> EpisodeRecord:
    return EpisodeRecord(*r)


def pruned_query(match: str, terms: Sequence[str], counts: Sequence[int], cap: int, budget: int = 0) -> str:
    """``match`` (quoted ``terms`` joined with OR) without the terms whose
    episode count in ``counts`` is above ``cap``, and, with a ``budget``, only
    as many of the rest, rarest first, as fit in ``budget`` postings (the
    summed counts: what ranking the query costs). The rarest term always
    stays; the kept terms keep their order. ``cap`` or ``budget`` <= 0: no
    such limit."""
    order = sorted(range(len(terms)), key=lambda i: (counts[i], i))
    keep: list[int] = []
    total = 0
    for i in order:
        n = counts[i]
        if keep and ((cap > 0 and n > cap) or (budget > 0 and total + n > budget)):
            break
        keep.append(i)
        total += n
    if len(keep) == len(terms):
        return match
    return " OR ".join('"' + terms[i].replace('"', '""') + '"' for i in sorted(keep))


class EpisodeSQL:
    """The shared episode statements in dialect ``d`` (kept as :attr:`dialect`)."""

    def __init__(self, d: Dialect) -> None:
        ph, values, ret = d.ph, d.values, d.ret
        self.dialect = d
        self.filters = tuple((attr, cond.format(ph=ph)) for attr, cond in _FILTERS)
        # not_superseded_at with supersessions_recorded_by: a supersession
        # recorded later than that had not happened yet
        self.not_superseded_known = (
            f"(e.superseded_at IS NULL OR e.superseded_at > {ph} OR e.superseded_recorded_at > {ph})"
        )
        self.in_ns = f"e.ns_id = {ph}"
        episodes = f"SELECT {EP_COLS} FROM episodes e WHERE"
        live_after = f"e.ns_id = {ph} AND e.rowid > {ph} AND e.erased_at IS NULL"

        # -- writes ----------------------------------------------------------
        def insert(cols: tuple[str, ...]) -> str:
            return f"INSERT INTO episodes ({', '.join(cols)}) VALUES {values(len(cols))}{ret('rowid')}"

        self.insert_episode = insert(_INSERT_COLS)
        adjacent = f"{episodes} e.ns_id = {ph} AND e.session = {ph} AND e.rowid"
        self.episode_before = f"{adjacent} < {ph} AND e.erased_at IS NULL ORDER BY e.rowid DESC LIMIT 1"
        self.episode_after = f"{adjacent} > {ph} AND e.erased_at IS NULL ORDER BY e.rowid LIMIT 1"
        self.times_head = "INSERT INTO episode_times (episode_rowid, start_us, end_us, phrase, precision) VALUES "
        self.time_values = values(5)
        self.insert_time = self.times_head + self.time_values
        self.embedding_model = f"SELECT id, dim FROM embedding_models WHERE name = {ph}"
        self.insert_embedding_model = f"INSERT INTO embedding_models (name, dim) VALUES {values(2)}{ret('id')}"
        self.episode_by_id = f"{episodes} e.id = {ph}"
        # raw restore (export/import, copy): every column as carried
        self.restore_episode = insert(_RESTORE_COLS)
        self.supersede_episode = (
            f"UPDATE episodes SET superseded_by = {ph}, superseded_at = {ph}, superseded_recorded_at = {ph} "
            f"WHERE rowid = {ph}"
        )
        self.episode_fact_ids = (
            f"SELECT fact_id FROM facts WHERE episode_id = {ph} UNION "
            f"SELECT fact_id FROM fact_sources WHERE episode_id = {ph} ORDER BY 1"
        )
        self.delete_index = f"DELETE FROM episodes_fts WHERE rowid = {ph}"
        self.delete_vectors = f"DELETE FROM episode_vectors WHERE episode_rowid = {ph}"
        self.delete_times = f"DELETE FROM episode_times WHERE episode_rowid = {ph}"
        self.episode_by_rowid = f"{episodes} e.rowid = {ph}"
        self.erase_episode = (
            "UPDATE episodes SET text = '', source = NULL, session = NULL, speaker = NULL, metadata = NULL, "
            f"erased_at = {ph} WHERE rowid = {ph}"
        )
        self.episode_erasures = f"SELECT count(*) FROM erasures WHERE ns_id = {ph} AND kind = 'episode'"
        self.bump_generation = (
            "INSERT INTO meta (key, value) VALUES ('episode_generation', '1') ON CONFLICT (key) DO UPDATE "
            "SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
        )

        # -- reads (the ``*_head`` pieces end where a list condition goes) ------
        self.episodes_head = f"{episodes} "
        self.list_episodes_tail = f" ORDER BY COALESCE(e.occurred_at, e.recorded_at), e.rowid LIMIT {ph} OFFSET {ph}"
        self.pooled_head = ("SELECT e.rowid, e.id, e.text, e.occurred_at, e.recorded_at, e.session, e.speaker, "
                            "e.metadata FROM episodes e WHERE e.erased_at IS NULL AND ")
        self.episode_times_head = "SELECT episode_rowid, start_us, end_us, phrase, precision FROM episode_times WHERE "
        # an episode's time mentions in insertion order
        self.episode_times_tail = f" ORDER BY episode_rowid, {d.insert_order}"
        self.embedding_models = "SELECT id, name, dim FROM embedding_models ORDER BY id"
        self.vector_stats = (
            "SELECT count(*), COALESCE(max(episode_rowid), 0) FROM episode_vectors "
            f"WHERE ns_id = {ph} AND model_id = {ph}"
        )
        self.has_vectors = (
            f"SELECT EXISTS (SELECT 1 FROM episode_vectors WHERE ns_id = {ph} AND model_id = {ph})"
        )
        self.load_vectors = (
            "SELECT v.episode_rowid, v.vector, v.scale, e.recorded_at, e.occurred_at, e.session "
            "FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid "
            f"WHERE v.ns_id = {ph} AND v.model_id = {ph} AND v.episode_rowid > {ph} "
            f"ORDER BY v.episode_rowid LIMIT {ph}"
        )
        self.superseded_episodes = (
            "SELECT rowid, superseded_at, superseded_recorded_at FROM episodes "
            f"WHERE ns_id = {ph} AND superseded_by IS NOT NULL"
        )
        self.episodes_missing_vectors = (
            f"{episodes} {live_after} AND NOT EXISTS "
            f"(SELECT 1 FROM episode_vectors v WHERE v.model_id = {ph} AND v.episode_rowid = e.rowid) "
            f"ORDER BY e.rowid LIMIT {ph}"
        )
        self.episode_index_rows = f"{episodes} {live_after} ORDER BY e.rowid LIMIT {ph}"
        self.episode_rows = f"{episodes} e.ns_id = {ph} AND e.rowid > {ph} ORDER BY e.rowid LIMIT {ph}"
        self.citing_head = f"SELECT DISTINCT episode_id, fact_id FROM facts WHERE ns_id = {ph} AND "
        self.citing_sources = " UNION SELECT s.episode_id, s.fact_id FROM fact_sources s WHERE "
        self.names_with_prefix = (
            "SELECT DISTINCT e.name FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
            f"WHERE k.ns_id = {ph} AND k.key >= {ph} AND k.key < {ph} LIMIT {ph}"
        )
        self.episode_generation = "SELECT value FROM meta WHERE key = 'episode_generation'"
        # -- imports (schema 7) -------------------------------------------------
        self.import_keys_head = f"SELECT key, episode_id, digest FROM import_keys WHERE ns_id = {ph} AND "
        self.all_import_keys = f"SELECT key, episode_id, digest FROM import_keys WHERE ns_id = {ph} ORDER BY key"
        self.put_import_key = (
            f"INSERT INTO import_keys (ns_id, key, episode_id, digest) VALUES {values(4)} "
            "ON CONFLICT (ns_id, key) DO UPDATE SET episode_id = excluded.episode_id, digest = excluded.digest"
        )
        self.import_file = f"SELECT fingerprint FROM import_files WHERE ns_id = {ph} AND path_key = {ph}"
        self.put_import_file = (
            f"INSERT INTO import_files (ns_id, path_key, fingerprint, imported_at) VALUES {values(4)} "
            "ON CONFLICT (ns_id, path_key) DO UPDATE SET fingerprint = excluded.fingerprint, "
            "imported_at = excluded.imported_at"
        )
        self.forget_import_digests = f"UPDATE import_keys SET digest = '' WHERE episode_id = {ph}"
        self.episode_count = f"SELECT count(*) FROM episodes WHERE ns_id = {ph} AND erased_at IS NULL"

    def where(self, f: EpisodeFilter) -> tuple[list[str], list[Any]]:
        """The conditions on ``episodes e`` of a filter, and their parameters."""
        where = [self.in_ns, "e.erased_at IS NULL"]
        params: list[Any] = [f.ns_id]
        for attr, cond in self.filters:
            value = getattr(f, attr)
            if value is not None:
                if attr == "not_superseded_at" and f.supersessions_recorded_by is not None:
                    where.append(self.not_superseded_known)
                    params.extend((value, f.supersessions_recorded_by))
                    continue
                where.append(cond)
                params.append(value)
        return where, params


class BaseEpisodeTx(ABC):
    """Episode writes both backends run alike, inside the caller's write
    transaction (mixed into the backend's ``BaseTx`` subclass)."""

    ep_sql: ClassVar[EpisodeSQL]
    now: int

    # -- hooks (BaseTx's, and one of the episode tables) ---------------------
    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement in the transaction."""

    @abstractmethod
    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an insert of ``EpisodeSQL`` that ends with the dialect's ``RETURNING``; the new key."""

    @abstractmethod
    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None: ...

    def delete_episode_index(self, rowid: int) -> None:
        """Delete an episode's index row (a backend keeping statistics of
        the index adjusts them here)."""
        self._execute(self.ep_sql.delete_index, (rowid,))

    def _model_added(self, model_id: int, dim: int) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Optional hook, a no-op by default: an embedding model was recorded
        (a backend may override it to index the model's vectors)."""

    # -- episodes --------------------------------------------------------------
    def insert_episode(self, rec: EpisodeRecord) -> int:
        """Insert the row; index it with ``replace_episode_index``."""
        return self._insert_id(self.ep_sql.insert_episode, _insert_values(rec))

    def restore_episode(self, rec: EpisodeRecord) -> int:
        """Insert a carried episode as it was stored (export/import, copy):
        its supersession and erasure included. Its mentions, vectors and
        index rows are the caller's to write."""
        return self._insert_id(self.ep_sql.restore_episode, _restore_values(rec))

    def adjacent_episodes(self, rec: EpisodeRecord) -> tuple[EpisodeRecord | None, EpisodeRecord | None]:
        """The episodes just before and after ``rec`` in its session (rowid order)."""
        if rec.session is None:
            return None, None
        key = (rec.ns_id, rec.session, rec.rowid)
        before = self._execute(self.ep_sql.episode_before, key).fetchone()
        after = self._execute(self.ep_sql.episode_after, key).fetchone()
        return (_rec(before) if before else None), (_rec(after) if after else None)

    def replace_episode_times(self, rowid: int, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        self._execute(self.ep_sql.delete_times, (rowid,))
        self.insert_episode_times(items)

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        r = self._execute(self.ep_sql.episode_by_id, (episode_id,)).fetchone()
        return None if r is None else _rec(r)

    def supersede_episode(self, old_rowid: int, new_id: str, at: int, recorded_at: int) -> None:
        """``old_rowid`` is overridden by ``new_id`` from ``at`` on (valid
        time), as recorded at ``recorded_at`` (system time)."""
        self._execute(self.ep_sql.supersede_episode, (new_id, at, recorded_at, old_rowid))

    def episode_fact_ids(self, episode_id: str) -> list[str]:
        return [str(fid) for (fid,) in self._execute(self.ep_sql.episode_fact_ids, (episode_id, episode_id))]

    def erase_episode(self, rowid: int) -> list[EpisodeRecord]:
        """Delete the content (text, speaker, source, session, metadata, index
        row, vectors, mentions); the row stays as a tombstone with its id,
        namespace, times and supersession link. Returns the live episodes
        just before and after it in its session: their index rows quote its
        text (the neighbours column), so the caller re-indexes them now that
        they neighbour each other, in this transaction, and then calls
        :meth:`compact_episode_index`."""
        q = self.ep_sql
        row = self._execute(q.episode_by_rowid, (rowid,)).fetchone()
        # read before the tombstone drops the session they are found by
        quoting = [r for r in self.adjacent_episodes(_rec(row)) if r is not None] if row else []
        self.delete_episode_index(rowid)
        self._execute(q.delete_vectors, (rowid,))
        self._execute(q.delete_times, (rowid,))
        self._execute(q.erase_episode, (self.now, rowid))
        return quoting

    @abstractmethod
    def compact_episode_index(self) -> None:
        """After an erasure's index rows were deleted and rewritten: make the
        lexical index drop the deleted terms it still keeps (a backend whose
        index only marks deletions)."""

    def bump_episode_generation(self) -> None:
        self._execute(self.ep_sql.bump_generation)

    # -- imports ---------------------------------------------------------------
    def put_import_keys(self, items: Sequence[tuple[int, str, str, str]]) -> None:
        for item in items:
            self._execute(self.ep_sql.put_import_key, item)

    def put_import_file(self, ns_id: int, path_key: str, fingerprint: str) -> None:
        self._execute(self.ep_sql.put_import_file, (ns_id, path_key, fingerprint, self.now))

    def forget_import_digests(self, episode_id: str) -> None:
        self._execute(self.ep_sql.forget_import_digests, (episode_id,))

    # -- embedding models --------------------------------------------------------
    def embedding_model_id(self, name: str, dim: int) -> int:
        row = self._execute(self.ep_sql.embedding_model, (name,)).fetchone()
        if row is not None:
            if int(row[1]) != dim:
                raise InvalidInputError(
                    f"embedding model {name!r} is recorded with {row[1]} dimensions, not {dim}"
                )
            return int(row[0])
        model_id = self._insert_id(self.ep_sql.insert_embedding_model, (name, dim))
        self._model_added(model_id, dim)
        return model_id


class BaseEpisodeStore(ABC):
    """Episode reads both backends run alike (mixed into the store)."""

    ep_sql: ClassVar[EpisodeSQL]

    # -- hooks -------------------------------------------------------------------
    @abstractmethod
    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]:
        """Every row of each ``(sql, params)``, run one after the other on one
        connection (as ``RowReadsMixin._fetch``)."""

    def _in(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """The condition that ``column`` is one of ``values``, and its parameters
        (padded: a search's lists of many lengths make a few statements)."""
        params: list[Any] = []
        return self.ep_sql.dialect.is_in(column, values, params, pad=True), params

    # -- episodes ------------------------------------------------------------------
    def _in_queries(self, head: str, column: str, values: Sequence[Any], size: int,
                    tail: str = "") -> list[tuple[str, Sequence[Any]]]:
        """``head`` + (``column`` is one of a chunk of ``values``) + ``tail``, a statement a chunk."""
        queries: list[tuple[str, Sequence[Any]]] = []
        for chunk in self.ep_sql.dialect.chunks(values, size):
            cond, params = self._in(column, chunk)
            queries.append((head + cond + tail, params))
        return queries

    def _records(self, sql: str, params: Sequence[Any]) -> list[EpisodeRecord]:
        (rows,) = self._fetch((sql, params))
        return [_rec(r) for r in rows]

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        (rows,) = self._fetch((self.ep_sql.episode_by_id, (episode_id,)))
        return _rec(rows[0]) if rows else None

    def episodes_by_rowids(self, rowids: Sequence[int]) -> list[EpisodeRecord]:
        if not rowids:
            return []
        queries = self._in_queries(self.ep_sql.episodes_head, "e.rowid", rowids, 500)
        out = {int(r[0]): _rec(r) for rows in self._fetch(*queries) for r in rows}
        return [out[r] for r in rowids if r in out]

    def list_episodes(self, f: EpisodeFilter, limit: int, offset: int = 0) -> list[EpisodeRecord]:
        q = self.ep_sql
        where, params = q.where(f)
        return self._records(q.episodes_head + " AND ".join(where) + q.list_episodes_tail, [*params, limit, offset])

    def episode_times(self, rowids: Sequence[int]) -> list[tuple[int, int, int, str, int]]:
        if not rowids:
            return []
        q = self.ep_sql
        queries = self._in_queries(q.episode_times_head, "episode_rowid", rowids, 500, q.episode_times_tail)
        return [(int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4])) for rows in self._fetch(*queries) for r in rows]

    def pooled_episodes(self, rowids: Sequence[int]) -> tuple[list[PooledEpisode],
                                                             list[tuple[int, int, int, str, int]]]:
        if not rowids:
            return [], []
        q = self.ep_sql
        eps = self._in_queries(q.pooled_head, "e.rowid", rowids, 500)
        got = self._fetch(*eps, *self._in_queries(q.episode_times_head, "episode_rowid", rowids, 500,
                                                  q.episode_times_tail))
        pooled = [PooledEpisode._make(r) for rows in got[:len(eps)] for r in rows]
        live = {p.rowid for p in pooled}
        return pooled, [(int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]))
                        for rows in got[len(eps):] for r in rows if r[0] in live]

    def superseded_episodes(self, ns_id: int) -> list[tuple[int, int, int]]:
        """``(rowid, superseded_at, superseded_recorded_at)`` of the namespace's superseded episodes."""
        (rows,) = self._fetch((self.ep_sql.superseded_episodes, (ns_id,)))
        return [(int(a), int(b), int(c)) for a, b, c in rows]

    def episodes_missing_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                                 limit: int) -> list[EpisodeRecord]:
        return self._records(self.ep_sql.episodes_missing_vectors, (ns_id, after_rowid, model_id, limit))

    def episode_index_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]:
        return self._records(self.ep_sql.episode_index_rows, (ns_id, after_rowid, limit))

    def episode_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]:
        """Every episode of a namespace by rowid, erased ones (tombstones) included."""
        return self._records(self.ep_sql.episode_rows, (ns_id, after_rowid, limit))

    def facts_citing_episodes(self, ns_id: int, episode_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(episode_id, fact_id)`` for every fact that cites one of the episodes."""
        if not episode_ids:
            return []
        q = self.ep_sql
        queries: list[tuple[str, Sequence[Any]]] = []
        for chunk in self.ep_sql.dialect.chunks(episode_ids, 400):
            in_facts, params = self._in("episode_id", chunk)
            in_sources, more = self._in("s.episode_id", chunk)
            queries.append((q.citing_head + in_facts + q.citing_sources + in_sources, [ns_id, *params, *more]))
        return [(str(a), str(b)) for rows in self._fetch(*queries) for a, b in rows]

    def episode_generation(self) -> int:
        (rows,) = self._fetch((self.ep_sql.episode_generation, ()))
        return int(rows[0][0]) if rows else 0

    def episode_count(self, ns_id: int) -> int:
        (rows,) = self._fetch((self.ep_sql.episode_count, (ns_id,)))
        return int(rows[0][0])

    def episode_erasures(self, ns_id: int) -> int:
        """How many episodes of the namespace were ever erased (the erasure
        log only grows): a vector cache that saw another count reloads."""
        (rows,) = self._fetch((self.ep_sql.episode_erasures, (ns_id,)))
        return int(rows[0][0])

    @abstractmethod
    def after_erasure(self, kind: str) -> None:
        """Called once an erasure of ``kind`` (``"episode"``, ``"fact"`` or
        ``"entity"``) has committed: best effort, drop what the backend still
        keeps of the deleted bytes outside its live rows."""

    # -- vectors ---------------------------------------------------------------------
    def embedding_model(self, name: str) -> tuple[int, int] | None:
        (rows,) = self._fetch((self.ep_sql.embedding_model, (name,)))
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def embedding_models(self) -> list[tuple[int, str, int]]:
        (rows,) = self._fetch((self.ep_sql.embedding_models, ()))
        return [(int(a), str(b), int(c)) for a, b, c in rows]

    def vector_stats(self, ns_id: int, model_id: int) -> tuple[int, int]:
        """``(count, max episode rowid)`` of one namespace's vectors of one model."""
        (rows,) = self._fetch((self.ep_sql.vector_stats, (ns_id, model_id)))
        return int(rows[0][0]), int(rows[0][1])

    def has_vectors(self, ns_id: int, model_id: int) -> bool:
        """Whether the namespace holds a vector of the model (at 1M vectors the
        count of :meth:`vector_stats` takes ~70 ms; this, one index probe)."""
        (rows,) = self._fetch((self.ep_sql.has_vectors, (ns_id, model_id)))
        return bool(rows[0][0])

    def load_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                     limit: int) -> list[tuple[int, bytes, float, int, int | None, str | None]]:
        """``(rowid, int8 bytes, scale, recorded_at, occurred_at, session)`` by
        rowid: vectors as stored (:mod:`chronomem.core.quantize`)."""
        (rows,) = self._fetch((self.ep_sql.load_vectors, (ns_id, model_id, after_rowid, limit)))
        return [(int(r[0]), bytes(r[1]), float(r[2]), int(r[3]), r[4], r[5]) for r in rows]

    # -- imports -----------------------------------------------------------------------
    def import_keys(self, ns_id: int, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``key -> (episode_id, digest)`` for those of ``keys`` stored."""
        if not keys:
            return {}
        head = self.ep_sql.import_keys_head
        queries = [(sql, [ns_id, *params]) for sql, params in self._in_queries(head, "key", keys, 400)]
        return {str(k): (str(e), str(d)) for rows in self._fetch(*queries) for k, e, d in rows}

    def import_file(self, ns_id: int, path_key: str) -> str | None:
        (rows,) = self._fetch((self.ep_sql.import_file, (ns_id, path_key)))
        return str(rows[0][0]) if rows else None

    def all_import_keys(self, ns_id: int) -> list[tuple[str, str, str]]:
        (rows,) = self._fetch((self.ep_sql.all_import_keys, (ns_id,)))
        return [(str(k), str(e), str(d)) for k, e, d in rows]

    # -- names -------------------------------------------------------------------------
    def entity_names_with_prefix(self, ns_id: int, prefix: str, limit: int) -> list[str]:
        """Names of entities with a name key (or alias) starting with ``prefix``
        (an index range scan, for fuzzy candidates)."""
        if not prefix:
            return []
        hi = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        (rows,) = self._fetch((self.ep_sql.names_with_prefix, (ns_id, prefix, hi, limit)))
        return [str(n) for (n,) in rows]
