"""SQLite primitives for episodes (evidence): rows, time mentions, vectors
and the FTS5 lexical index, all written in the caller's transaction.

:class:`EpisodeTxMixin` is mixed into the write transaction and
:class:`EpisodeStoreMixin` into :class:`~chronomem.store.sqlite.SQLiteStore`.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any, Sequence

from ..errors import InvalidInputError
from .base import EpisodeFilter, EpisodeRecord

__all__ = ["EpisodeStoreMixin", "EpisodeTxMixin"]

_EP_COLS = (
    "e.rowid, e.id, e.ns_id, e.text, e.occurred_at, e.occurred_prec, e.recorded_at, e.source, e.session, "
    "e.speaker, e.metadata, e.superseded_by, e.superseded_at, e.erased_at"
)


def _rec(r: Sequence[Any]) -> EpisodeRecord:
    return EpisodeRecord(*r)


def _in(column: str, n: int) -> str:
    return f"{column} = ?" if n == 1 else f"{column} IN ({','.join('?' * n)})"


def _where(f: EpisodeFilter) -> tuple[list[str], list[Any]]:
    where = ["e.ns_id = ?", "e.erased_at IS NULL"]
    params: list[Any] = [f.ns_id]
    if f.recorded_by is not None:
        where.append("e.recorded_at <= ?")
        params.append(f.recorded_by)
    if f.not_superseded_at is not None:
        where.append("(e.superseded_at IS NULL OR e.superseded_at > ?)")
        params.append(f.not_superseded_at)
    if f.session is not None:
        where.append("e.session = ?")
        params.append(f.session)
    if f.since is not None:
        where.append("COALESCE(e.occurred_at, e.recorded_at) >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("COALESCE(e.occurred_at, e.recorded_at) < ?")
        params.append(f.until)
    return where, params


class EpisodeTxMixin:
    """Episode writes inside one ``BEGIN IMMEDIATE`` transaction."""

    con: sqlite3.Connection
    now: int

    def insert_episode(self, rec: EpisodeRecord) -> int:
        """Insert the row; index it with :meth:`replace_episode_index`."""
        cur = self.con.execute(
            "INSERT INTO episodes (id, ns_id, text, occurred_at, occurred_prec, recorded_at, source, session, "
            "speaker, metadata) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (rec.id, rec.ns_id, rec.text, rec.occurred_at, rec.occurred_prec, rec.recorded_at, rec.source,
             rec.session, rec.speaker, rec.metadata),
        )
        return int(cur.lastrowid or 0)

    def replace_episode_index(self, rowid: int, index: tuple[str, str, str, str], new: bool = False) -> None:
        """Write the FTS row of an episode (``new``: it has none yet)."""
        if not new:
            self.con.execute("DELETE FROM episodes_fts WHERE rowid = ?", (rowid,))
        self.con.execute(
            "INSERT INTO episodes_fts (rowid, body, speaker, context, neighbors) VALUES (?,?,?,?,?)", (rowid, *index)
        )

    def adjacent_episodes(self, rec: EpisodeRecord) -> tuple[EpisodeRecord | None, EpisodeRecord | None]:
        """The episodes just before and after ``rec`` in its session (rowid order)."""
        if rec.session is None:
            return None, None
        before = self.con.execute(
            f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = ? AND e.session = ? AND e.rowid < ? "
            "AND e.erased_at IS NULL ORDER BY e.rowid DESC LIMIT 1",
            (rec.ns_id, rec.session, rec.rowid),
        ).fetchone()
        after = self.con.execute(
            f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = ? AND e.session = ? AND e.rowid > ? "
            "AND e.erased_at IS NULL ORDER BY e.rowid LIMIT 1",
            (rec.ns_id, rec.session, rec.rowid),
        ).fetchone()
        return (_rec(before) if before else None), (_rec(after) if after else None)

    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        self.con.executemany(
            "INSERT INTO episode_times (episode_rowid, start_us, end_us, phrase, precision) VALUES (?,?,?,?,?)",
            list(items),
        )

    def replace_episode_times(self, rowid: int, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        self.con.execute("DELETE FROM episode_times WHERE episode_rowid = ?", (rowid,))
        self.insert_episode_times(items)

    def embedding_model_id(self, name: str, dim: int) -> int:
        row = self.con.execute("SELECT id, dim FROM embedding_models WHERE name = ?", (name,)).fetchone()
        if row is not None:
            if int(row[1]) != dim:
                raise InvalidInputError(
                    f"embedding model {name!r} is recorded with {row[1]} dimensions, not {dim}"
                )
            return int(row[0])
        cur = self.con.execute("INSERT INTO embedding_models (name, dim) VALUES (?,?)", (name, dim))
        return int(cur.lastrowid or 0)

    def put_episode_vectors(self, model_id: int, items: Sequence[tuple[int, int, bytes]]) -> None:
        """``items`` are ``(episode_rowid, ns_id, float32 bytes)``."""
        self.con.executemany(
            "INSERT OR REPLACE INTO episode_vectors (episode_rowid, model_id, ns_id, vector) VALUES (?,?,?,?)",
            [(rowid, model_id, ns, blob) for rowid, ns, blob in items],
        )

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        r = self.con.execute(f"SELECT {_EP_COLS} FROM episodes e WHERE e.id = ?", (episode_id,)).fetchone()
        return None if r is None else _rec(r)

    def supersede_episode(self, old_rowid: int, new_id: str, at: int) -> None:
        self.con.execute(
            "UPDATE episodes SET superseded_by = ?, superseded_at = ? WHERE rowid = ?", (new_id, at, old_rowid)
        )

    def episode_fact_ids(self, episode_id: str) -> list[str]:
        return [
            fid
            for (fid,) in self.con.execute(
                "SELECT fact_id FROM facts WHERE episode_id = ? UNION "
                "SELECT fact_id FROM fact_sources WHERE episode_id = ? ORDER BY 1",
                (episode_id, episode_id),
            )
        ]

    def erase_episode(self, rowid: int) -> None:
        """Delete the content (text, index, vectors, mentions); the row stays
        as a tombstone with its id and times."""
        self.con.execute("DELETE FROM episodes_fts WHERE rowid = ?", (rowid,))
        self.con.execute("DELETE FROM episode_vectors WHERE episode_rowid = ?", (rowid,))
        self.con.execute("DELETE FROM episode_times WHERE episode_rowid = ?", (rowid,))
        self.con.execute(
            "UPDATE episodes SET text = '', source = NULL, session = NULL, speaker = NULL, metadata = NULL, "
            "erased_at = ? WHERE rowid = ?",
            (self.now, rowid),
        )

    def bump_episode_generation(self) -> None:
        self.con.execute(
            "INSERT INTO meta (key, value) VALUES ('episode_generation', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )


class EpisodeStoreMixin:
    """Episode reads on the store's connection."""

    _con: sqlite3.Connection
    _lock: threading.RLock
    _df_cache: dict[str, tuple[int, int]]

    def prune_common_terms(self, match: str, cap: int) -> str:
        """Drop from an OR-query (as built by ``fts_query``) the terms that
        occur in more than ``cap`` episodes, keeping at least the rarest one.
        Scoring every episode that contains a very common term is what makes
        BM25 slow on large stores, and such terms barely move BM25 anyway.
        Document frequencies come from ``fts5vocab`` (cached per term)."""
        terms = [t[1:-1].replace('""', '"') for t in match.split(" OR ")]
        if len(terms) < 2 or cap <= 0:
            return match
        with self._lock:
            con = self._con
            if not hasattr(self, "_df_cache"):
                con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ev_vocab USING fts5vocab(main, 'episodes_fts', 'row')")
                con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ev_qtok USING "
                            "fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
                con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ev_qtok_v USING fts5vocab(temp, 'ev_qtok', 'instance')")
                self._df_cache = {}
            gen_row = con.execute("SELECT value FROM meta WHERE key = 'episode_generation'").fetchone()
            gen = int(gen_row[0]) if gen_row else 0
            con.executemany("INSERT INTO temp.ev_qtok (rowid, body) VALUES (?, ?)",
                            [(i + 1, t) for i, t in enumerate(terms)])
            tokens = con.execute("SELECT doc, term FROM temp.ev_qtok_v").fetchall()
            con.execute("DELETE FROM temp.ev_qtok")
            df: dict[int, int] = {}
            for doc, token in tokens:
                cached = self._df_cache.get(token)
                if cached is not None and (cached[1] == gen or (cached[0] < cap // 2 and gen - cached[1] < 1000)):
                    n = cached[0]
                else:
                    row = con.execute("SELECT doc FROM temp.ev_vocab WHERE term = ?", (token,)).fetchone()
                    n = int(row[0]) if row else 0
                    self._df_cache[token] = (n, gen)
                df[int(doc)] = max(df.get(int(doc), 0), n)
        keep = [t for i, t in enumerate(terms) if df.get(i + 1, 0) <= cap]
        if not keep:
            keep = [terms[min(range(len(terms)), key=lambda i: df.get(i + 1, 0))]]
        if len(keep) == len(terms):
            return match
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in keep)

    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None:
        with self._lock:
            r = self._con.execute(f"SELECT {_EP_COLS} FROM episodes e WHERE e.id = ?", (episode_id,)).fetchone()
        return None if r is None else _rec(r)

    def episodes_by_rowids(self, rowids: Sequence[int]) -> list[EpisodeRecord]:
        out: dict[int, EpisodeRecord] = {}
        with self._lock:
            for start in range(0, len(rowids), 500):
                chunk = list(rowids[start:start + 500])
                for r in self._con.execute(
                    f"SELECT {_EP_COLS} FROM episodes e WHERE {_in('e.rowid', len(chunk))}", chunk
                ):
                    out[int(r[0])] = _rec(r)
        return [out[r] for r in rowids if r in out]

    def list_episodes(self, f: EpisodeFilter, limit: int, offset: int = 0) -> list[EpisodeRecord]:
        where, params = _where(f)
        with self._lock:
            rows = self._con.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE {' AND '.join(where)} "
                "ORDER BY COALESCE(e.occurred_at, e.recorded_at), e.rowid LIMIT ? OFFSET ?",
                params + [limit, offset],
            ).fetchall()
        return [_rec(r) for r in rows]

    def episode_times(self, rowids: Sequence[int]) -> list[tuple[int, int, int, str, int]]:
        if not rowids:
            return []
        out: list[tuple[int, int, int, str, int]] = []
        with self._lock:
            for start in range(0, len(rowids), 500):
                chunk = list(rowids[start:start + 500])
                out += [
                    (int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]))
                    for r in self._con.execute(
                        "SELECT episode_rowid, start_us, end_us, phrase, precision FROM episode_times WHERE "
                        + _in("episode_rowid", len(chunk)) + " ORDER BY episode_rowid, rowid",
                        chunk,
                    )
                ]
        return out

    def lexical_search(self, match: str, f: EpisodeFilter, limit: int,
                       weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """``(rowid, score)`` best first; score is ``-bm25`` (higher is better).

        Fast path: rank the FTS matches alone (FTS5 keeps only the best rows)
        with some headroom, then apply the filter to those rows; only when the
        filter removed too many does the joined (filter-first) query run."""
        fast = (
            "SELECT rowid, bm25(episodes_fts, ?, ?, ?, ?) AS s FROM episodes_fts "
            "WHERE episodes_fts MATCH ? ORDER BY s LIMIT ?"
        )
        headroom = limit * 2
        with self._lock:
            try:
                rows = self._con.execute(fast, [*weights, match, headroom]).fetchall()
                if not rows:
                    return []
                ids = [int(r[0]) for r in rows]
                where, params = _where(f)
                allowed: set[int] = set()
                for start in range(0, len(ids), 500):
                    chunk = ids[start:start + 500]
                    allowed.update(
                        int(x) for (x,) in self._con.execute(
                            f"SELECT e.rowid FROM episodes e NOT INDEXED WHERE {_in('e.rowid', len(chunk))} AND "
                            + " AND ".join(where),
                            [*chunk, *params],
                        )
                    )
                kept = [(int(r[0]), -float(r[1])) for r in rows if int(r[0]) in allowed]
                if len(kept) >= limit or len(rows) < headroom:
                    return kept[:limit]
                sql = (
                    "SELECT e.rowid, bm25(episodes_fts, ?, ?, ?, ?) AS s FROM episodes_fts "
                    "JOIN episodes e ON e.rowid = episodes_fts.rowid "
                    f"WHERE episodes_fts MATCH ? AND {' AND '.join(where)} ORDER BY s LIMIT ?"
                )
                full = self._con.execute(sql, [*weights, match, *params, limit]).fetchall()
            except sqlite3.OperationalError as exc:  # a malformed MATCH is a bug in the escaping
                raise InvalidInputError(f"cannot run the lexical query {match!r}: {exc}") from None
        return [(int(r[0]), -float(r[1])) for r in full]

    def embedding_model(self, name: str) -> tuple[int, int] | None:
        with self._lock:
            r = self._con.execute("SELECT id, dim FROM embedding_models WHERE name = ?", (name,)).fetchone()
        return None if r is None else (int(r[0]), int(r[1]))

    def embedding_models(self) -> list[tuple[int, str, int]]:
        with self._lock:
            return [(int(a), str(b), int(c)) for a, b, c in
                    self._con.execute("SELECT id, name, dim FROM embedding_models ORDER BY id")]

    def vector_stats(self, ns_id: int, model_id: int) -> tuple[int, int]:
        """``(count, max episode rowid)`` of one namespace's vectors of one model."""
        with self._lock:
            r = self._con.execute(
                "SELECT count(*), COALESCE(max(episode_rowid), 0) FROM episode_vectors WHERE ns_id = ? AND model_id = ?",
                (ns_id, model_id),
            ).fetchone()
        return int(r[0]), int(r[1])

    def load_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                     limit: int) -> list[tuple[int, bytes, int, int | None, str | None]]:
        """``(rowid, vector, recorded_at, occurred_at, session)`` by rowid."""
        with self._lock:
            return [
                (int(r[0]), bytes(r[1]), int(r[2]), r[3], r[4])
                for r in self._con.execute(
                    "SELECT v.episode_rowid, v.vector, e.recorded_at, e.occurred_at, e.session "
                    "FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid "
                    "WHERE v.ns_id = ? AND v.model_id = ? AND v.episode_rowid > ? "
                    "ORDER BY v.episode_rowid LIMIT ?",
                    (ns_id, model_id, after_rowid, limit),
                )
            ]

    def superseded_episodes(self, ns_id: int) -> list[tuple[int, int]]:
        with self._lock:
            return [
                (int(a), int(b))
                for a, b in self._con.execute(
                    "SELECT rowid, superseded_at FROM episodes WHERE ns_id = ? AND superseded_by IS NOT NULL",
                    (ns_id,),
                )
            ]

    def episodes_missing_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                                 limit: int) -> list[EpisodeRecord]:
        with self._lock:
            rows = self._con.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = ? AND e.rowid > ? AND e.erased_at IS NULL AND NOT EXISTS "
                "(SELECT 1 FROM episode_vectors v WHERE v.model_id = ? AND v.episode_rowid = e.rowid) "
                "ORDER BY e.rowid LIMIT ?",
                (ns_id, after_rowid, model_id, limit),
            ).fetchall()
        return [_rec(r) for r in rows]

    def episode_index_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]:
        with self._lock:
            rows = self._con.execute(
                f"SELECT {_EP_COLS} FROM episodes e WHERE e.ns_id = ? AND e.rowid > ? AND e.erased_at IS NULL "
                "ORDER BY e.rowid LIMIT ?",
                (ns_id, after_rowid, limit),
            ).fetchall()
        return [_rec(r) for r in rows]

    def facts_citing_episodes(self, ns_id: int, episode_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(episode_id, fact_id)`` for every fact that cites one of the episodes."""
        if not episode_ids:
            return []
        out: list[tuple[str, str]] = []
        with self._lock:
            for start in range(0, len(episode_ids), 400):
                chunk = list(episode_ids[start:start + 400])
                out += [
                    (str(a), str(b))
                    for a, b in self._con.execute(
                        f"SELECT DISTINCT episode_id, fact_id FROM facts WHERE ns_id = ? AND "
                        f"{_in('episode_id', len(chunk))} UNION SELECT s.episode_id, s.fact_id FROM fact_sources s "
                        f"WHERE {_in('s.episode_id', len(chunk))}",
                        [ns_id, *chunk, *chunk],
                    )
                ]
        return out

    def entity_names_with_prefix(self, ns_id: int, prefix: str, limit: int) -> list[str]:
        """Names of entities with a name key (or alias) starting with ``prefix``
        (an index range scan, for fuzzy candidates)."""
        if not prefix:
            return []
        hi = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        with self._lock:
            return [
                str(n)
                for (n,) in self._con.execute(
                    "SELECT DISTINCT e.name FROM entity_keys k JOIN entities e ON e.id = k.entity_id "
                    "WHERE k.ns_id = ? AND k.key >= ? AND k.key < ? LIMIT ?",
                    (ns_id, prefix, hi, limit),
                )
            ]

    def episode_generation(self) -> int:
        with self._lock:
            r = self._con.execute("SELECT value FROM meta WHERE key = 'episode_generation'").fetchone()
        return int(r[0]) if r else 0

    def episode_count(self, ns_id: int) -> int:
        with self._lock:
            return int(self._con.execute("SELECT count(*) FROM episodes WHERE ns_id = ? AND erased_at IS NULL", (ns_id,)).fetchone()[0])
