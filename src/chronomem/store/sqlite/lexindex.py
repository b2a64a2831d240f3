"""A warm process's numpy copy of the FTS5 index, ranking an OR-query by
FTS5's own ``bm25`` with the same bits, ~15x faster.

FTS5 calls its ``bm25`` auxiliary function once per matching row: at 100k
episodes a search's pruned query (~20k rows) spends ~8-11 ms there, more
than the rest of a warm search. This copy holds the index as postings
(term -> rows, and each row's token count per column) and scores every
matching row at once with numpy, in the order and with the operations of
``fts5Bm25Function`` (``ext/fts5/fts5_aux.c``; :mod:`..sql.fts5`): the
scores equal FTS5's bit for bit and ties go to the lower rowid, as FTS5
orders them, so a search answers the same with or without it. The
statistics are the searching namespace's (:mod:`.lexstats`): FTS5's own
where the namespace is the whole table; beside other namespaces, those
:func:`.lexstats.namespace_bm25` scores with when there is no copy.

It is a cache, never the truth. A process builds it in a background thread
(its own connection, one read transaction) at its ``BUILD_AFTER``-th
lexical search if that comes ``BUILD_DELAY_S`` after its first, from ``BUILD_MIN_ROWS`` rows up to ``MAX_TOKENS`` tokens
(~6 bytes a posting: ~15 MB at 100k episodes); until then, and whenever it
is not current, FTS5 answers. Every write of an index row appends the
episode's rowid to ``episode_index_log`` (:class:`.episodes.EpisodeTxMixin`),
a deletion appends ``DELETED``; a search first reads the log's last number
and replays what it has not seen (re-tokenising those rows with FTS5's own
tokenizer), then checks its row and token counts against FTS5's own
(the ``averages`` record): any mismatch, a deletion, a replay over
``MAX_REPLAY`` rows or a log pruned past its position starts a rebuild.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import threading
import time
from array import array
from typing import Any, Sequence

from ..sql.fts5 import COLUMNS, term_tokens, tokenize_rows
from .lexstats import freq, idf, term_score, varint

__all__ = ["BUILD_AFTER", "BUILD_DELAY_S", "BUILD_MIN_ROWS", "DELETED", "LOG_KEEP", "LOG_PRUNE_EVERY", "LexIndex",
           "MAX_REPLAY", "MAX_TOKENS", "fts5_averages"]

log = logging.getLogger("chronomem.store.sqlite")

#: a process's lexical search starts the copy when it is at least its BUILD_AFTER-th and comes at
#: least BUILD_DELAY_S after its first: a one-shot CLI call or hook never pays for it
BUILD_AFTER = 2
BUILD_DELAY_S = 1.0
#: below this many index rows FTS5 alone answers (in about a millisecond)
BUILD_MIN_ROWS = 5_000
#: above this many tokens (FTS5's count, all rows) no copy is made: it would hold ~6 bytes a posting
MAX_TOKENS = 30_000_000
#: a replay of more log rows than this rebuilds in the background instead
MAX_REPLAY = 5_000
#: the log keeps this many rows; every LOG_PRUNE_EVERY-th write drops older ones
LOG_KEEP = 200_000
LOG_PRUNE_EVERY = 4_096
#: the log's mark for "index rows were deleted" (an erasure): copies rebuild
DELETED = -1
# rows read per fetch while building
_CHUNK = 65_536
_COLUMN_NO = {name: i for i, name in enumerate(COLUMNS)}


def fts5_averages(con: sqlite3.Connection) -> tuple[int, int]:
    """``(rows, tokens of all columns)`` from FTS5's ``averages`` record (the
    figures its ``bm25`` reads for N and avgdl)."""
    row = con.execute("SELECT block FROM episodes_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    buf = bytes(row[0])
    nrow, at = varint(buf, 0)
    tokens = 0
    for _ in COLUMNS:
        n, at = varint(buf, at)
        tokens += n
    return nrow, tokens


def _log_seq(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT coalesce(max(seq), 0) FROM episode_index_log").fetchone()[0])


class _Postings:
    """One copy: the postings read in one transaction plus the rows
    replayed since. Slots are positions in the row arrays; a rewritten row
    gets a new slot and its old one dies."""

    def __init__(self, np: Any, seq: int, terms: dict[str, int], toff: Any, pslot: Any, pcode: Any,
                 combos: list[tuple[int, ...]], rowids: Any, dl: Any, ns: Any) -> None:
        self.np = np
        self.seq = seq
        self.terms = terms
        self.nbase_terms = len(terms)
        self.toff, self.pslot, self.pcode = toff, pslot, pcode
        self.combos = combos
        self.combo_no = {c: i for i, c in enumerate(combos)}
        self.nbase = len(rowids)
        self.nslots = self.nbase
        self.rowids = np.asarray(rowids, dtype=np.int64)
        self.dl = np.asarray(dl, dtype=np.int64)
        self.ns = np.asarray(ns, dtype=np.int64)  # each row's namespace (-1: no episode row)
        self.live = np.ones(self.nbase, dtype=bool)
        self.nrow = self.nbase
        self.ntok = int(self.dl.sum())
        # each namespace's (rows, tokens): its bm25 statistics (:mod:`.lexstats`)
        self.ns_stats: dict[int, list[int]] = {}
        if self.nbase:
            keys, inv = np.unique(self.ns, return_inverse=True)
            rows = np.bincount(inv, minlength=len(keys))
            toks = np.bincount(inv, weights=self.dl, minlength=len(keys))
            for k, r, t in zip(keys.tolist(), rows.tolist(), toks.tolist(), strict=True):
                self.ns_stats[int(k)] = [int(r), int(t)]
        self.ndead = 0
        self.delta_slot: dict[int, int] = {}
        self.delta: dict[int, tuple[array[int], array[int]]] = {}
        self._delta_np: dict[int, tuple[Any, Any]] = {}
        self._freqs: dict[tuple[float, ...], Any] = {}

    # -- reading ----------------------------------------------------------
    def _freq_table(self, weights: Sequence[float]) -> Any:
        key = tuple(float(w) for w in weights)
        table = self._freqs.get(key)
        if table is None or len(table) != len(self.combos):
            table = self.np.array([freq(c, key) for c in self.combos], dtype=self.np.float64)
            self._freqs[key] = table
        return table

    def _term(self, tid: int) -> tuple[Any, Any]:
        np = self.np
        if tid < self.nbase_terms:
            a, b = int(self.toff[tid]), int(self.toff[tid + 1])
            s, c = self.pslot[a:b], self.pcode[a:b]
        else:
            s, c = self.pslot[:0], self.pcode[:0]
        if tid in self.delta:
            got = self._delta_np.get(tid)
            if got is None:
                ds, dc = self.delta[tid]
                got = self._delta_np[tid] = (np.array(ds, dtype=np.int32), np.array(dc, dtype=np.int32))
            s = np.concatenate([s, got[0]])
            c = np.concatenate([c.astype(np.int32), got[1]])
        if self.ndead:
            keep = self.live[s]
            s, c = s[keep], c[keep]
        return s, c

    def top(self, tokens: Sequence[str], weights: Sequence[float], limit: int,
            ns_id: int | None = None) -> list[tuple[int, float]]:
        """The best ``limit`` rows (of namespace ``ns_id``, if given) with
        their scores, over that namespace's statistics (its rows, tokens
        and rows holding each term: :mod:`.lexstats`), or the whole file's
        (as FTS5's) with no namespace."""
        np = self.np
        freqs = self._freq_table(weights)
        nrow, ntok = (self.nrow, self.ntok) if ns_id is None else self.ns_stats.get(ns_id, (0, 0))
        if nrow <= 0:
            return []
        avgdl = float(ntok) / float(nrow)
        slots: list[Any] = []
        parts: list[Any] = []
        for tok in tokens:  # phrase order: FTS5 adds the phrases' terms in it
            tid = self.terms.get(tok)
            if tid is None:
                continue
            s, c = self._term(tid)
            if ns_id is not None:
                mine = self.ns[s] == ns_id
                s, c = s[mine], c[mine]
            if not len(s):
                continue
            slots.append(s)
            parts.append(term_score(idf(nrow, len(s)), freqs[c], self.dl[s].astype(np.float64), avgdl))
        if not slots:
            return []
        uniq, inv = np.unique(np.concatenate(slots), return_inverse=True)
        score = np.bincount(inv, weights=np.concatenate(parts), minlength=len(uniq))  # (summed in phrase order)
        rowids = self.rowids[uniq]
        neg = -score
        if len(uniq) > limit:
            kth = np.partition(neg, limit - 1)[limit - 1]
            sel = np.flatnonzero(neg <= kth)
        else:
            sel = np.arange(len(uniq))
        order = sel[np.lexsort((rowids[sel], neg[sel]))][:limit]
        return list(zip(rowids[order].tolist(), score[order].tolist(), strict=True))

    # -- replaying --------------------------------------------------------
    def _slot_of(self, rowid: int) -> int | None:
        slot = self.delta_slot.get(rowid)
        if slot is not None:
            return slot
        i = int(self.np.searchsorted(self.rowids[:self.nbase], rowid))
        return i if i < self.nbase and int(self.rowids[i]) == rowid else None

    def _grow(self, need: int) -> None:
        np = self.np
        if need <= len(self.rowids):
            return
        cap = max(need, len(self.rowids) * 5 // 4 + 1024)
        for name, dtype in (("rowids", np.int64), ("dl", np.int64), ("ns", np.int64), ("live", bool)):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=dtype)
            new[:len(old)] = old
            setattr(self, name, new)

    def replay(self, seq: int, rows: dict[int, tuple[str, str, str, str] | None], ns: dict[int, int]) -> None:
        """Apply the current content of the rows the log named (``None``:
        gone); ``ns``: their namespaces."""
        for rowid in rows:
            old = self._slot_of(rowid)
            if old is not None and self.live[old]:
                self.live[old] = False
                self.nrow -= 1
                self.ntok -= int(self.dl[old])
                gone = self.ns_stats.setdefault(int(self.ns[old]), [0, 0])
                gone[0] -= 1
                gone[1] -= int(self.dl[old])
                self.ndead += 1
                self.delta_slot.pop(rowid, None)
        present = [(rowid, content) for rowid, content in rows.items() if content is not None]
        for (rowid, _content), toks in zip(present, tokenize_rows([c for _r, c in present]), strict=True):
            self._grow(self.nslots + 1)
            slot = self.nslots
            self.nslots += 1
            self.rowids[slot] = rowid
            self.ns[slot] = ns.get(rowid, -1)
            self.dl[slot] = len(toks)
            self.live[slot] = True
            self.nrow += 1
            self.ntok += len(toks)
            added = self.ns_stats.setdefault(int(self.ns[slot]), [0, 0])
            added[0] += 1
            added[1] += len(toks)
            self.delta_slot[rowid] = slot
            counts: dict[str, list[int]] = {}
            for term, col, _offset in toks:
                counts.setdefault(term, [0, 0, 0, 0])[col] += 1
            for term, combo_list in counts.items():
                tid = self.terms.setdefault(term, len(self.terms))
                combo = tuple(combo_list)
                code = self.combo_no.get(combo)
                if code is None:
                    code = self.combo_no[combo] = len(self.combos)
                    self.combos.append(combo)
                ds, dc = self.delta.setdefault(tid, (array("i"), array("i")))
                ds.append(slot)
                dc.append(code)
                self._delta_np.pop(tid, None)
        self.seq = seq


def _build(np: Any, path: str) -> _Postings | None:
    """Read the whole index in one read transaction of a connection of its
    own, streaming: FTS5's token instances come ordered by term, row and
    column, so each (term, row) run becomes one posting as it passes, and
    what is held is the postings themselves (6 bytes each) plus a chunk."""
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexcopy_v USING "
                    "fts5vocab(main, 'episodes_fts', 'instance')")
        con.execute("BEGIN")
        seq = _log_seq(con)
        nrow, ntok = fts5_averages(con)
        if nrow < BUILD_MIN_ROWS or ntok > MAX_TOKENS:
            return None
        rowids = np.fromiter((r for (r,) in con.execute("SELECT id FROM episodes_fts_docsize ORDER BY id")),
                             dtype=np.int64, count=nrow)
        ns = np.full(nrow, -1, dtype=np.int64)
        pairs = np.array(con.execute("SELECT rowid, ns_id FROM episodes ORDER BY rowid").fetchall(),
                         dtype=np.int64).reshape(-1, 2)
        at = np.searchsorted(rowids, pairs[:, 0])
        hit = at < nrow
        hit[hit] = rowids[at[hit]] == pairs[hit, 0]
        ns[at[hit]] = pairs[hit, 1]
        del pairs
        pslot = np.empty(ntok, dtype=np.int32)  # (a posting holds one token at least)
        pcode = np.empty(ntok, dtype=np.uint16)  # (int32 past 65,535 combinations: never seen)
        dl = np.zeros(nrow, dtype=np.int64)
        terms: dict[str, int] = {}
        per_term = array("q")
        combo_no: dict[tuple[int, ...], int] = {}
        n = 0
        cur = con.execute("SELECT term, doc, col FROM temp.lexcopy_v")
        term_at: str | None = None
        doc_at = -1
        counts = [0, 0, 0, 0]
        col_no = _COLUMN_NO
        while True:
            chunk = cur.fetchmany(_CHUNK)
            docs, codes, sizes = array("q"), array("i"), array("i")
            for term, doc, col in chunk:
                if doc != doc_at or term != term_at:
                    if term_at is not None:
                        combo = tuple(counts)
                        docs.append(doc_at)
                        codes.append(combo_no.setdefault(combo, len(combo_no)))
                        sizes.append(sum(counts))
                        counts = [0, 0, 0, 0]
                    if term != term_at:
                        if term_at is not None and term < term_at:
                            raise RuntimeError("fts5vocab rows out of term order")
                        terms[term] = len(terms)
                        per_term.append(0)
                        term_at = term
                    elif doc < doc_at:
                        raise RuntimeError("fts5vocab rows out of row order")
                    doc_at = doc
                    per_term[-1] += 1
                counts[col_no[col]] += 1
            if not chunk and term_at is not None:  # the last posting
                docs.append(doc_at)
                codes.append(combo_no.setdefault(tuple(counts), len(combo_no)))
                sizes.append(sum(counts))
            if len(combo_no) > 65_535 and pcode.dtype != np.int32:
                pcode = pcode.astype(np.int32)
            if docs:
                slots = np.searchsorted(rowids, np.frombuffer(docs, dtype=np.int64)).astype(np.int32)
                pslot[n:n + len(docs)] = slots
                pcode[n:n + len(docs)] = np.frombuffer(codes, dtype=np.int32)
                dl += np.bincount(slots, weights=np.frombuffer(sizes, dtype=np.int32), minlength=nrow).astype(np.int64)
                n += len(docs)
            if not chunk:
                break
        con.execute("COMMIT")
    finally:
        con.close()
    combos = sorted(combo_no, key=combo_no.__getitem__)
    toff = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.frombuffer(per_term, dtype=np.int64), out=toff[1:])
    # (views: the arrays were sized by the token count, ~10% over the postings)
    post = _Postings(np, seq, terms, toff, pslot[:n], pcode[:n], combos, rowids, dl, ns)
    if (post.nrow, post.ntok) != (nrow, ntok) or int(toff[-1]) != n:
        log.warning("lexical copy: %d rows / %d tokens read, FTS5 counts %d / %d; not used",
                    post.nrow, post.ntok, nrow, ntok)
        return None
    return post


class LexIndex:
    """The numpy copy of one SQLite store's FTS5 index (none for ``:memory:``
    or without numpy). Its methods run under the store's lock, on the store's
    connection; the build runs in a thread with a connection of its own."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._post: _Postings | None = None
        self._searches = 0
        self._building = False
        self._built: _Postings | None = None  # handed over by the build thread
        self._hand = threading.Lock()
        self._tried_at: int | None = None  # the log's position at the last build started
        self._first: float | None = None  # when this process's first lexical search ran
        self.disabled = path == ":memory:"
        self._np: Any = None
        self.answered = 0  # searches the copy answered (tests, benchmarks)

    @property
    def current(self) -> _Postings | None:
        """The copy in use (tests, benchmarks)."""
        self._take()
        return self._post

    def _take(self) -> None:
        """Put a copy a build handed over in use."""
        with self._hand:
            if self._built is not None:
                self._post, self._built = self._built, None

    def build_now(self) -> bool:
        """Build the copy in this thread (a server warming up, tests);
        ``False``: none was made (too small, too large, no numpy)."""
        if self.disabled:
            return False
        try:
            self._np = self._np or importlib.import_module("numpy")
        except ModuleNotFoundError:
            self.disabled = True
            return False
        post = _build(self._np, self._path)
        if post is not None:
            with self._hand:
                self._built = post  # (in use from the next search: that runs under the store's lock)
        return post is not None

    def _start_build(self) -> None:
        if self._building:
            return
        if self._np is None:
            try:
                self._np = importlib.import_module("numpy")  # (here: not from two threads at once)
            except ModuleNotFoundError:
                self.disabled = True
                return
        self._building = True
        threading.Thread(target=self._build, name="chronomem-lexcopy", daemon=True).start()

    def _build(self) -> None:
        post: _Postings | None = None
        try:
            post = _build(self._np, self._path)
        except Exception as exc:  # noqa: BLE001 - a cache: FTS5 keeps answering
            log.warning("lexical copy not built: %s", exc)
        with self._hand:
            self._built = post
            self._building = False

    def top(self, con: sqlite3.Connection, terms: Sequence[str], weights: Sequence[float],
            limit: int, ns_id: int | None = None) -> list[tuple[int, float]] | None:
        """The best ``limit`` rows ``(rowid, -bm25)`` of the OR of ``terms``
        (of namespace ``ns_id``, if given) as FTS5 ranks them, or ``None``:
        let FTS5 answer (no current copy, or a term FTS5 reads as a phrase
        of several tokens)."""
        if self.disabled or con.in_transaction:
            return None
        self._searches += 1
        self._take()
        post = self._post
        if post is None:
            # no copy: build one in a process that lives on, unless the last
            # attempt saw the index as it is now or it is too small or too large
            now = time.monotonic()
            if self._first is None:
                self._first = now
            if self._searches >= BUILD_AFTER and now - self._first >= BUILD_DELAY_S and not self._building:
                seq = _log_seq(con)
                if seq != self._tried_at:
                    self._tried_at = seq
                    nrow, ntok = fts5_averages(con)
                    if BUILD_MIN_ROWS <= nrow and ntok <= MAX_TOKENS:
                        self._start_build()
            return None
        if not self._catch_up(con, post):
            self._post = None
            self._tried_at = None
            self._start_build()
            return None
        tokens = []
        for toks in term_tokens(terms):
            if len(toks) != 1:
                return None
            tokens.append(toks[0])
        self.answered += 1
        return post.top(tokens, weights, limit, ns_id)

    def _catch_up(self, con: sqlite3.Connection, post: _Postings) -> bool:
        """Replay the log past the copy's position; ``False``: rebuild."""
        seq = _log_seq(con)
        if seq == post.seq:
            return True
        con.execute("BEGIN")
        try:
            seq = _log_seq(con)
            oldest = con.execute("SELECT min(seq) FROM episode_index_log").fetchone()[0]
            logged = [int(r) for (r,) in con.execute(
                "SELECT episode_rowid FROM episode_index_log WHERE seq > ? ORDER BY seq LIMIT ?",
                (post.seq, MAX_REPLAY + 1))]
            if (oldest is not None and int(oldest) > post.seq + 1) or len(logged) > MAX_REPLAY or DELETED in logged:
                return False
            want = list(dict.fromkeys(logged))
            rows: dict[int, tuple[str, str, str, str] | None] = dict.fromkeys(want)
            ns: dict[int, int] = {}
            cols = ", ".join(f"f.{c}" for c in COLUMNS)
            for start in range(0, len(want), 500):
                chunk = want[start:start + 500]
                # each row's content and its episode's namespace, in one read
                for r in con.execute(f"SELECT f.rowid, {cols}, e.ns_id FROM episodes_fts f "
                                     "LEFT JOIN episodes e ON e.rowid = f.rowid "
                                     f"WHERE f.rowid IN ({','.join('?' * len(chunk))})", chunk):
                    rows[int(r[0])] = (r[1] or "", r[2] or "", r[3] or "", r[4] or "")
                    if r[5] is not None:
                        ns[int(r[0])] = int(r[5])
            expect = fts5_averages(con)
        finally:
            con.execute("COMMIT")
        post.replay(seq, rows, ns)
        if (post.nrow, post.ntok) != expect:
            log.warning("lexical copy: %d rows / %d tokens after replay, FTS5 counts %d / %d; rebuilding",
                        post.nrow, post.ntok, *expect)
            return False
        if post.ndead > max(post.nbase // 4, MAX_REPLAY):
            return False  # mostly replayed by now: a fresh copy is smaller and faster
        return True

