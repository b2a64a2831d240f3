"""SQLite primitives for episodes (evidence): rows, time mentions, vectors
and the FTS5 lexical index, all written in the caller's transaction.

:class:`EpisodeTxMixin` is mixed into the write transaction and
:class:`EpisodeStoreMixin` into :class:`~chronomem.store.sqlite.store.SQLiteStore`;
what both backends do alike is in :mod:`chronomem.store.sql.episodes`, in the SQLite dialect.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Sequence

from ...core.quantize import quantize
from ...errors import InvalidInputError
from ..protocol import EpisodeFilter
from ..sql.dialect import SQLITE
from ..sql.episodes import BaseEpisodeStore, BaseEpisodeTx, EpisodeSQL, pruned_query
from ..sql.fts5 import MAX_CACHED_TERMS, term_tokens
from . import lexstats
from .lexindex import DELETED, LOG_KEEP, LOG_PRUNE_EVERY, LexIndex, fts5_averages

__all__ = ["EpisodeStoreMixin", "EpisodeTxMixin"]

_SQL = EpisodeSQL(SQLITE)

# after an erasure, the WAL checkpoint waits at most this long for readers
_ERASE_CHECKPOINT_MS = 1000

log = logging.getLogger("chronomem.store.sqlite")


def _match_terms(match: str) -> list[str]:
    """The terms of an OR-query as ``fts_query`` builds it (quoted, joined with OR)."""
    return [t[1:-1].replace('""', '"') for t in match.split(" OR ")]


def _in(column: str, n: int) -> str:
    return f"{column} = ?" if n == 1 else f"{column} IN ({','.join('?' * n)})"


class EpisodeTxMixin(BaseEpisodeTx):
    """Episode writes inside one ``BEGIN IMMEDIATE`` transaction (the ones
    both backends share are in :class:`~chronomem.store.sql.episodes.BaseEpisodeTx`)."""

    ep_sql = _SQL
    con: sqlite3.Connection

    def replace_episode_index(self, rowid: int, index: tuple[str, str, str, str], new: bool = False) -> None:
        """Write the FTS row of an episode (``new``: it has none yet), and
        its namespace's counts (:mod:`.lexstats`)."""
        con = self.con
        old = None if new else lexstats.index_row(con, rowid)
        if not new:
            con.execute(_SQL.delete_index, (rowid,))
        con.execute("INSERT INTO episodes_fts (rowid, body, speaker, context, neighbors) VALUES (?,?,?,?,?)",
                    (rowid, *index))
        row = lexstats.index_row(con, rowid)
        if old is not None:
            self._count_index(old[0], -1, -old[1])
        if row is not None:
            self._count_index(row[0], 1, row[1])
        self._log_index_write(rowid)

    def delete_episode_index(self, rowid: int) -> None:
        """Delete the FTS row of an episode and take it out of its
        namespace's counts; a row no episode names (an orphan) is in no
        namespace's counts, which are counted again."""
        row = lexstats.index_row(self.con, rowid)
        self.con.execute(_SQL.delete_index, (rowid,))
        if row is not None:
            self._count_index(row[0], -1, -row[1])
        elif self.con.execute("SELECT changes()").fetchone()[0]:
            self.__dict__["_index_recount"] = True  # (once, at commit: however many orphans go)

    def _count_index(self, ns_id: int, rows: int, tokens: int) -> None:
        """Add to a namespace's counts, written once at commit (:meth:`flush_index_counts`)."""
        counts: dict[int, list[int]] = self.__dict__.setdefault("_index_counts", {})
        got = counts.setdefault(ns_id, [0, 0])
        got[0] += rows
        got[1] += tokens

    def flush_index_counts(self) -> None:
        """Write the namespaces' counts this transaction changed (the store
        calls it just before ``COMMIT``), or count them all again after an
        orphan index row went (the recount sees this transaction's rows)."""
        counts: dict[int, list[int]] | None = self.__dict__.pop("_index_counts", None)
        if self.__dict__.pop("_index_recount", False):
            lexstats.recount(self.con)
            return
        for ns_id, (rows, tokens) in sorted((counts or {}).items()):
            if rows or tokens:
                lexstats.adjust(self.con, ns_id, rows, tokens)

    def _log_index_write(self, rowid: int) -> None:
        """Append to ``episode_index_log`` (what warm copies of the index
        replay: :mod:`.lexindex`); every ``LOG_PRUNE_EVERY`` rows, drop the
        ones more than ``LOG_KEEP`` behind."""
        seq = int(self.con.execute("INSERT INTO episode_index_log (episode_rowid) VALUES (?)", (rowid,)).lastrowid
                  or 0)
        if seq % LOG_PRUNE_EVERY == 0:
            self.con.execute("DELETE FROM episode_index_log WHERE seq <= ?", (seq - LOG_KEEP,))

    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None:
        self.con.executemany(_SQL.insert_time, list(items))

    def compact_episode_index(self) -> None:
        """FTS5 only marks a deletion (it writes the row's terms again,
        flagged, into a new segment) and keeps the old terms in their
        segments until a merge reaches them, so an erased turn's words would
        stay in the file. ``optimize`` merges every segment into one now (the
        freed pages are zeroed: ``PRAGMA secure_delete``). It rewrites the
        whole index: 0.5 s at 100k episodes (a 35 MB index) on a 2-core VM,
        up to 1 s when many segments had piled up. FTS5's ``secure-delete``
        option would avoid that, but it needs SQLite 3.42 and makes the table
        unreadable to older versions."""
        self.con.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')")
        self._log_index_write(DELETED)  # rows were deleted: warm copies rebuild

    def put_episode_vectors(self, model_id: int, items: Sequence[tuple[int, int, bytes]]) -> None:
        """``items`` are ``(episode_rowid, ns_id, float32 bytes)``, stored as
        int8 bytes and a scale (:mod:`chronomem.core.quantize`)."""
        packed = quantize([blob for _rowid, _ns, blob in items])
        self.con.executemany(
            "INSERT OR REPLACE INTO episode_vectors (episode_rowid, model_id, ns_id, vector, scale) "
            "VALUES (?,?,?,?,?)",
            [(rowid, model_id, ns, q, scale) for (rowid, ns, _blob), (q, scale) in zip(items, packed, strict=True)],
        )


class EpisodeStoreMixin(BaseEpisodeStore):
    """Episode reads on the store's connection (the ones both backends share
    are in :class:`~chronomem.store.sql.episodes.BaseEpisodeStore`)."""

    ep_sql = _SQL
    _con: sqlite3.Connection
    _lock: threading.RLock
    _df_cache: dict[str, tuple[int, int]]
    _lexcopy: LexIndex
    path: str
    _busy_ms: int

    def after_erasure(self, kind: str) -> None:
        """After any erasure (episode, fact or entity; it lives here beside
        the store's connection): empty the WAL (``wal_checkpoint(TRUNCATE)``).
        Until the next checkpoint its frames keep every page as it was written
        since the last one, the erased text included. Best effort: while
        another connection reads an older snapshot those frames stay in use,
        so after ``_ERASE_CHECKPOINT_MS`` it gives up and leaves the WAL to the
        background checkpointer, which empties it once the store is quiet."""
        if self.path == ":memory:":
            return
        with self._lock:
            con = self._con
            if con.in_transaction:
                return
            # TRUNCATE holds the write lock while it waits for readers: briefly
            con.execute(f"PRAGMA busy_timeout = {min(self._busy_ms, _ERASE_CHECKPOINT_MS)}")
            try:
                busy, left, _copied = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                log.info("after an erasure: WAL checkpoint skipped (%s)", exc)
                return
            finally:
                con.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        if busy:
            log.info("after an erasure: a reader keeps %d WAL frames with pages from before it; "
                     "the checkpointer empties the WAL once the store is quiet", left)

    def prune_common_terms(self, match: str, cap: int, budget: int = 0) -> str:
        """Drop from an OR-query (as built by ``fts_query``) the terms that
        occur in more than ``cap`` episodes, then the most common of the rest
        until their summed episode counts fit in ``budget``, keeping at least
        the rarest term (:func:`pruned_query`). Scoring every episode that
        contains a common term is what makes BM25 slow on large stores, and
        such terms weigh least in BM25. Document frequencies come from
        ``fts5vocab`` (cached per term)."""
        terms = _match_terms(match)
        if len(terms) < 2 or (cap <= 0 and budget <= 0):
            return match
        tokens = term_tokens(terms)
        with self._lock:
            con = self._con
            if not hasattr(self, "_df_cache"):
                con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ev_vocab USING "
                            "fts5vocab(main, 'episodes_fts', 'row')")
                self._df_cache = {}
            gen_row = con.execute(_SQL.episode_generation).fetchone()
            gen = int(gen_row[0]) if gen_row else 0
            df: list[int] = []
            for toks in tokens:
                most = 0
                for token in toks:
                    cached = self._df_cache.get(token)
                    if cached is not None and (cached[1] == gen or (cached[0] < cap // 2 and gen - cached[1] < 1000)):
                        n = cached[0]
                    else:
                        row = con.execute("SELECT doc FROM temp.ev_vocab WHERE term = ?", (token,)).fetchone()
                        n = int(row[0]) if row else 0
                        if len(self._df_cache) >= MAX_CACHED_TERMS:
                            self._df_cache.clear()  # (a cache of counts: refilled as queries come)
                        self._df_cache[token] = (n, gen)
                    most = max(most, n)
                df.append(most)
        return pruned_query(match, terms, df, cap, budget)

    def prepare_lexical(self) -> bool:
        """Build this process's numpy copy of the FTS5 index now (:mod:`.lexindex`;
        a long-lived process makes one at its second lexical search anyway)."""
        return self._lexcopy.build_now()

    def lexical_search(self, match: str, f: EpisodeFilter, limit: int,
                       weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """``(rowid, score)`` best first; score is ``-bm25`` (higher is
        better) over the namespace's statistics (:mod:`.lexstats`).

        A namespace holding every index row of the file is FTS5's whole
        table: FTS5 ranks (or the warm copy, :mod:`.lexindex`, with the same
        bits). Fast path: rank the matches alone with some headroom, then
        apply the filter to those rows; only when the filter removed too
        many does the joined (filter-first) query run. A namespace beside
        others is ranked within itself: by the warm copy, or from FTS5's
        token instances (:func:`.lexstats.namespace_bm25`), never by FTS5's
        ``bm25``, whose statistics span the file."""
        fast = (
            "SELECT rowid, bm25(episodes_fts, ?, ?, ?, ?) AS s FROM episodes_fts "
            "WHERE episodes_fts MATCH ? ORDER BY s LIMIT ?"
        )
        headroom = limit * 2
        terms = _match_terms(match)
        if " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) != match:
            terms = []  # not a plain OR of terms: FTS5 parses it (and ranks it over the file)
        with self._lock:
            con = self._con
            try:
                # the numpy copy of the index, when this process has a current one (same scores, same order)
                rows = self._lexcopy.top(con, terms, weights, headroom, f.ns_id) if terms else None
                stats: tuple[int, int] | None = None  # (not read where the copy answers and the filter keeps enough)
                if rows is None:
                    stats = lexstats.namespace_stats(con, f.ns_id)
                    if terms and stats != fts5_averages(con):  # beside other namespaces
                        rows = lexstats.namespace_bm25(con, term_tokens(terms), weights, f.ns_id, stats, headroom)
                    else:
                        rows = [(int(r), -float(s)) for r, s in con.execute(fast, [*weights, match, headroom])]
                kept = self._filtered(rows, f, limit)
                if len(kept) >= limit or len(rows) < headroom:
                    return kept
                stats = stats or lexstats.namespace_stats(con, f.ns_id)
                if terms and stats != fts5_averages(con):  # the namespace's whole ranking, filtered
                    everything = self._lexcopy.top(con, terms, weights, 1 << 62, f.ns_id)
                    if everything is None:
                        everything = lexstats.namespace_bm25(con, term_tokens(terms), weights, f.ns_id, stats)
                    return self._filtered(everything, f, limit)
                where, params = _SQL.where(f)
                sql = (
                    "SELECT e.rowid, bm25(episodes_fts, ?, ?, ?, ?) AS s FROM episodes_fts "
                    "JOIN episodes e ON e.rowid = episodes_fts.rowid "
                    f"WHERE episodes_fts MATCH ? AND {' AND '.join(where)} ORDER BY s LIMIT ?"
                )
                full = con.execute(sql, [*weights, match, *params, limit]).fetchall()
            except sqlite3.OperationalError as exc:  # a malformed MATCH is a bug in the escaping
                raise InvalidInputError(f"cannot run the lexical query {match!r}: {exc}") from None
        return [(int(r[0]), -float(r[1])) for r in full]

    def _filtered(self, ranked: Sequence[tuple[int, float]], f: EpisodeFilter, limit: int) -> list[tuple[int, float]]:
        """The first ``limit`` of ``ranked`` that pass the filter, read 500 rows at a time."""
        where, params = _SQL.where(f)
        kept: list[tuple[int, float]] = []
        for start in range(0, len(ranked), 500):
            chunk = ranked[start:start + 500]
            ids = [int(r[0]) for r in chunk]
            allowed = {int(x) for (x,) in self._con.execute(
                f"SELECT e.rowid FROM episodes e NOT INDEXED WHERE {_in('e.rowid', len(ids))} AND "
                + " AND ".join(where), [*ids, *params])}
            kept.extend(r for r in chunk if r[0] in allowed)
            if len(kept) >= limit:
                break
        return kept[:limit]
