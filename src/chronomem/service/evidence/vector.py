"""Dense search over the vectors stored in the database.

The store's ``episode_vectors`` rows are the source of truth. This module
keeps, per (namespace, model), an in-process matrix loaded from them and
refreshed incrementally: a write bumps the store's episode generation, and the
next search appends the new rows (or reloads when rows went away). The matrix
stays int8 with a scale per row, as stored (:class:`~.qmatrix.QMatrix`: a
quarter of float32's memory; measured in ``docs/evidence.md``). Search is
exact (a matrix-vector product, a bounded block of rows dequantized at a
time, ``argpartition``) with the view's filters as a boolean mask, so views
never need a second index.

Threads: a search works on an immutable :class:`VectorSlot` (read-only
arrays, row-aligned, published as one object); a refresh builds the next one
and swaps it in, so a search never sees the vectors of one generation beside
the columns of another.

Beside a SQLite file the arrays are not loaded but memory-mapped from the
vector file (:mod:`.vecfile`), which also holds the context vectors of the
default weight (:data:`FILE_CONTEXT`), computed once when a row arrives; a
cold process opens it instead of reading every vector out of SQLite. No
process holds all vectors in Python objects: rows arrive from the store in
batches of ``_LOAD_BATCH``.

Above ``ann_threshold`` vectors an inverted-file index (:mod:`.ann`)
answers for the rows it covers and the exact product for the rows appended
since; it is built by batch writes (:meth:`VectorCache.prepare`) and, when
missing or stale, in the background while the exact search answers. A query
whose filter leaves too few candidates falls back to the exact search.

Erasure: the caches hold the erased episode's vector, and the context
vectors mix it into its neighbours'. A cache that sees another count of
erased episodes than it was built with (``EpisodeStore.episode_erasures``)
reloads from the store, and so do the vector file and the ANN file (both
record the count); the erasing process also deletes the namespace's files
(:func:`drop_ann_files`).
"""

from __future__ import annotations

import glob
import logging
import os
import threading
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from ...store.protocol import EpisodeFilter, EpisodeStore
from .ann import AnnIndex, ann_path
from .embed import load_numpy
from .qmatrix import QMatrix, frozen, mix_context
from .vecfile import Row, VectorFile, fingerprint, session_key, vector_file_path

__all__ = ["FILE_CONTEXT", "VectorCache", "VectorSlot"]

log = logging.getLogger("chronomem.evidence.vector")

_LOAD_BATCH = 50_000
#: the context weight the vector file holds (``SearchConfig.dense_context``'s default)
FILE_CONTEXT = 0.3


@dataclass(frozen=True, eq=False)
class VectorSlot:
    """One namespace's vectors of one model at one generation: an immutable
    snapshot. Its arrays (read-only) and columns are row-aligned and published
    together as one object: a search keeps the snapshot it took while a writer
    builds and publishes the next one, so it never sees arrays of two sizes."""

    dim: int
    rowids: Any
    vecs: QMatrix
    recorded: Any
    occurred: Any
    sessions: Any  # int64 session keys (vecfile.session_key; 0: none)
    generation: int = -1
    max_rowid: int = 0
    erasures: int = 0  # the namespace's erased episodes when the arrays were loaded
    # what an index built over these rows' positions is valid for: new when the
    # arrays are rebuilt, kept while they only grow
    lineage: bytes = b""
    # context matrices derived from these arrays (filled once per weight, under the cache's lock)
    windows: dict[float, QMatrix] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(self.rowids.shape[0])


class VectorCache:
    """Per-process cache of the stored vectors, exact top-k search.

    Thread-safe by snapshots: :meth:`slot` returns an immutable
    :class:`VectorSlot`; a refresh builds a new one from the old one plus the
    new rows and replaces the dict entry (one atomic store), never touching a
    published snapshot."""

    def __init__(self) -> None:
        self._np = load_numpy()
        self._slots: dict[tuple[int, int], VectorSlot] = {}
        # ANN indexes per (ns, model, context weight): they outlive snapshots
        self._ann: dict[tuple[int, int, float], AnnIndex] = {}
        self._lock = threading.Lock()

    def _empty(self, dim: int, erasures: int) -> VectorSlot:
        np = self._np
        return VectorSlot(
            dim=dim, rowids=np.zeros(0, np.int64), vecs=QMatrix.empty(np, dim),
            recorded=np.zeros(0, np.int64), occurred=np.zeros(0, np.int64), sessions=np.zeros(0, np.int64),
            erasures=erasures, lineage=uuid.uuid4().bytes,
        )

    def slot(self, store: EpisodeStore, ns_id: int, model_id: int, dim: int,
             db_path: str | None = None) -> VectorSlot:
        """An up-to-date snapshot of the arrays for ``(ns_id, model_id)``:
        it holds at least every vector committed before this call. With
        ``db_path`` (a SQLite file) the arrays are the mapped vector file's."""
        gen = store.episode_generation()
        with self._lock:
            slot = self._slots.get((ns_id, model_id))
            # (a snapshot newer than `gen` holds all `gen` has: the generation only grows)
            if slot is not None and slot.generation >= gen:
                return slot
            if db_path and db_path != ":memory:":
                vf = VectorFile(self._np, vector_file_path(db_path, ns_id, model_id), dim, FILE_CONTEXT)
                fresh = self._file_slot(store, vf, ns_id, model_id, gen)
            else:
                count, max_rowid = store.vector_stats(ns_id, model_id)
                # an erasure since: nothing of the old arrays may stay (a row count
                # alone can miss one, when vectors were also added below max_rowid)
                erasures = store.episode_erasures(ns_id)
                if slot is None or count < slot.size or max_rowid < slot.max_rowid or erasures != slot.erasures:
                    slot = self._empty(dim, erasures)
                fresh = self._append(store, slot, ns_id, model_id, gen)
                if fresh.size != count:  # rows changed under us (erasures): reload everything
                    fresh = self._append(store, self._empty(dim, erasures), ns_id, model_id, gen)
            self._slots[(ns_id, model_id)] = fresh  # published: one atomic dict store
            return fresh

    def _file_slot(self, store: EpisodeStore, vf: VectorFile, ns_id: int, model_id: int, gen: int) -> VectorSlot:
        """The snapshot over the vector file, brought up to the store first
        (extended with the new rows, or rebuilt when it is not a prefix of them).

        A file marked with the store's current generation (nothing written
        since it was checked) whose last row is the store's is used as it
        is: a cold process opening a 1M-vector file skips the count of the
        store's vectors (~70 ms)."""
        view = vf.view()
        erasures = store.episode_erasures(ns_id)
        if not (view is not None and view.header.generation == gen and view.header.erasures == erasures
                and self._prefix(store, view, ns_id, model_id, view.header.max_rowid, erasures)):
            count, max_rowid = store.vector_stats(ns_id, model_id)
            if view is None or view.header.count != count or not self._prefix(store, view, ns_id, model_id,
                                                                               max_rowid, erasures):
                with vf.locked():  # one writer across processes; another may have done it meanwhile
                    view = self._sync_file(store, vf, ns_id, model_id, count, max_rowid, erasures)
            if view.header.generation != gen:
                with vf.locked():
                    vf.mark(gen)  # (the rows hold every vector committed before `gen` was read)
        np = self._np
        n = view.header.count
        return VectorSlot(dim=vf.dim, rowids=view.rowids, vecs=QMatrix(np, view.q, view.scales),
                          recorded=view.recorded, occurred=view.occurred, sessions=view.sessions, generation=gen,
                          max_rowid=view.header.max_rowid if n else 0, erasures=view.header.erasures,
                          lineage=view.header.lineage, windows={FILE_CONTEXT: QMatrix(np, view.ctx, view.ctx_scales)})

    def _sync_file(self, store: EpisodeStore, vf: VectorFile, ns_id: int, model_id: int, count: int,
                   max_rowid: int, erasures: int) -> Any:
        """Extend the file with the store's rows past it, or rebuild it when
        it is not a prefix of them (under ``vf.locked()``); its new view."""
        view = vf.view()
        for attempt in range(2):
            if view is None or attempt or not self._prefix(store, view, ns_id, model_id, max_rowid, erasures):
                log.info("building the vector file %s", vf.path)
                vf.create(count, erasures)
                after = 0
            else:
                after = view.header.max_rowid
            while True:
                rows: list[Row] = store.load_vectors(ns_id, model_id, after, _LOAD_BATCH)
                if not rows:
                    break
                vf.append(rows, erasures)
                after = rows[-1][0]
            view = vf.view()
            assert view is not None
            # fewer rows than counted: rows were stored below the file's last rowid, which
            # appending misses; more: committed since the count (their rowids are past its
            # last one), or else rows left the store (doctor --repair): rebuilt once
            head = view.header
            if head.count == count or (head.count > count and head.max_rowid > max_rowid):
                break
        return view

    @staticmethod
    def _prefix(store: EpisodeStore, view: Any, ns_id: int, model_id: int, max_rowid: int, erasures: int) -> bool:
        """Whether the file's rows are the store's first rows (so new ones append)."""
        head = view.header
        if head.erasures != erasures or head.max_rowid > max_rowid:
            return False
        if head.count == 0:
            return True
        last = store.load_vectors(ns_id, model_id, head.max_rowid - 1, 1)
        return bool(last) and last[0][0] == head.max_rowid and fingerprint(last[0]) == head.fingerprint

    def _append(self, store: EpisodeStore, slot: VectorSlot, ns_id: int, model_id: int, gen: int) -> VectorSlot:
        """A new snapshot: ``slot``'s rows and the stored ones after them."""
        np = self._np
        parts: list[list[Any]] = [[slot.rowids], [slot.recorded], [slot.occurred], [slot.sessions]]
        blocks = [slot.vecs]
        keys: dict[str | None, int] = {}
        max_rowid = slot.max_rowid
        while True:
            rows = store.load_vectors(ns_id, model_id, max_rowid, _LOAD_BATCH)
            if not rows:
                break
            n = len(rows)
            rowids = np.fromiter((r[0] for r in rows), np.int64, n)
            parts[0].append(rowids)
            blocks.append(QMatrix(np, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(n, slot.dim),
                                  np.fromiter((r[2] for r in rows), np.float32, n)))
            parts[1].append(np.fromiter((r[3] for r in rows), np.int64, n))
            parts[2].append(np.fromiter((r[4] if r[4] is not None else r[3] for r in rows), np.int64, n))
            parts[3].append(np.fromiter(
                (keys[r[5]] if r[5] in keys else keys.setdefault(r[5], session_key(r[5])) for r in rows), np.int64, n))
            max_rowid = int(rowids[-1])
            log.debug("loaded %d vectors (ns %d, model %d)", n, ns_id, model_id)
        if len(parts[0]) == 1:  # nothing new: the same arrays (and their context matrices)
            return replace(slot, generation=gen)
        rowids_, recorded, occurred, sessions = (frozen(np.concatenate(p)) for p in parts)
        return VectorSlot(dim=slot.dim, rowids=rowids_, vecs=QMatrix.concat(np, blocks), recorded=recorded,
                          occurred=occurred, sessions=sessions, generation=gen, max_rowid=max_rowid,
                          erasures=slot.erasures, lineage=slot.lineage)

    def matrix(self, slot: VectorSlot, context: float) -> QMatrix:
        """The search matrix: each episode's vector, or with ``context > 0``
        ``normalize(context * prev + v + context * next)`` over its
        neighbours in the same session (rowid order). Read from the vector
        file for its weight; otherwise computed from the snapshot's vectors
        a block of rows at a time and quantized like them, cached with it."""
        if context <= 0 or slot.size == 0:
            return slot.vecs
        np = self._np
        with self._lock:
            cached = slot.windows.get(context)
            if cached is not None:
                return cached
            order = np.lexsort((slot.rowids, slot.sessions))
            sess = slot.sessions[order]
            same = (sess[1:] == sess[:-1]) & (sess[1:] != 0)
            prev = np.arange(slot.size)
            nxt = np.arange(slot.size)
            prev[order[1:][same]] = order[:-1][same]
            nxt[order[:-1][same]] = order[1:][same]
            has_prev = (prev != np.arange(slot.size)).astype(np.float32)[:, None]
            has_next = (nxt != np.arange(slot.size)).astype(np.float32)[:, None]
            parts = []
            for a, vecs in slot.vecs.blocks():
                b = a + vecs.shape[0]
                win = mix_context(np, vecs, slot.vecs.take(prev[a:b]), slot.vecs.take(nxt[a:b]),
                                  has_prev[a:b], has_next[a:b], context)
                parts.append(QMatrix.of_floats(np, win))
            matrix = QMatrix.concat(np, parts)
            slot.windows[context] = matrix
            return matrix

    def invalidate(self) -> None:
        with self._lock:
            self._slots.clear()
            self._ann.clear()

    def index(self, slot: VectorSlot, context: float, path: str | None, key: tuple[int, int]) -> AnnIndex:
        """The ANN index of ``key`` and ``context`` (opened from its file at first use)."""
        with self._lock:
            index = self._ann.get((*key, context))
            if index is None:
                index = self._ann[(*key, context)] = AnnIndex(slot.dim, ann_path(path, key, context))
        return index

    def prepare(self, slot: VectorSlot, context: float, path: str | None, key: tuple[int, int],
                complete: bool = False) -> bool:
        """Build the ANN index now if it is missing or stale (a batch write
        calls this, so that searches find it current) or, with ``complete``,
        whenever rows past it exist."""
        index = self.index(slot, context, path, key)
        built = index.usable(slot)
        if index.stale(slot) or (complete and built is not None and built.count < slot.size):
            index.build(slot, self.matrix(slot, context), wait=True)
        return True

    def ann_search(self, slot: VectorSlot, query: Any, k: int, f: EpisodeFilter,
                   superseded: list[tuple[int, int, int]], context: float, path: str | None,
                   key: tuple[int, int]) -> list[tuple[int, float]] | None:
        """The approximate top-``k`` (or ``None`` when the exact search must
        answer: no index yet — one is then built in the background — or a
        selective filter). The index's rows are scored on the vectors they
        had at its build (a turn's context vector may have changed since:
        docs/evidence.md); the rows past it exactly."""
        if f.session is not None or f.since is not None or f.until is not None:
            return None  # selective filters: exact search is both right and fast enough
        index = self.index(slot, context, path, key)
        matrix = self.matrix(slot, context)
        built = index.usable(slot)
        if built is None or index.stale(slot):
            index.build_in_background(slot, matrix)
        if built is None:
            return None
        np = self._np
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        gone = superseded_rowids(f, superseded)
        rowids, scores = built.search(np, q, k, recorded_by=f.recorded_by, occurred_by=f.occurred_by,
                                      gone=np.asarray(gone, np.int64) if gone else None)
        out = [(int(r), float(s)) for r, s in zip(rowids.tolist(), scores.tolist(), strict=True)]
        # and the rows the index does not cover yet
        if built.count < slot.size:
            out += self._exact(slot, matrix, q, k, f, superseded, start=built.count)
        out.sort(key=lambda x: -x[1])
        out = out[:k]
        if len(out) < min(k, slot.size - len(gone)) and (f.recorded_by is not None or f.occurred_by is not None):
            return None  # the view left too few in the probed lists: be exact
        return out

    def search(self, slot: VectorSlot, query: Any, k: int, f: EpisodeFilter,
               superseded: list[tuple[int, int, int]], context: float = 0.0) -> list[tuple[int, float]]:
        """``(rowid, cosine)`` best first, among the rows ``f`` allows (exact)."""
        if slot.size == 0 or k <= 0:
            return []
        q = self._np.asarray(query, dtype=self._np.float32).reshape(-1)
        return self._exact(slot, self.matrix(slot, context), q, k, f, superseded)

    def _exact(self, slot: VectorSlot, matrix: QMatrix, q: Any, k: int, f: EpisodeFilter,
               superseded: list[tuple[int, int, int]], start: int = 0) -> list[tuple[int, float]]:
        """The exact top-``k`` among rows ``[start, size)``."""
        np = self._np
        if start:
            matrix = QMatrix(np, matrix.q[start:], matrix.scales[start:])
        scores = matrix.dot(q)
        rowids = slot.rowids[start:]
        mask = None

        def both(m: Any) -> Any:
            return m if mask is None else (mask & m)

        if f.recorded_by is not None:
            mask = both(slot.recorded[start:] <= f.recorded_by)
        if f.occurred_by is not None:
            mask = both(slot.occurred[start:] <= f.occurred_by)
        if f.since is not None:
            mask = both(slot.occurred[start:] >= f.since)
        if f.until is not None:
            mask = both(slot.occurred[start:] < f.until)
        if f.session is not None:
            mask = both(slot.sessions[start:] == session_key(f.session))
        if superseded:
            gone = superseded_rowids(f, superseded)
            if gone:
                mask = both(~np.isin(rowids, np.asarray(gone, np.int64)))
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        size = int(scores.shape[0])
        k = min(k, size)
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < size else np.arange(size)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(rowids[i]), float(scores[i])) for i in top if scores[i] > -np.inf]


def superseded_rowids(f: EpisodeFilter, superseded: list[tuple[int, int, int]]) -> list[int]:
    """The rowids among ``superseded`` (``EpisodeStore.superseded_episodes``)
    that ``f`` drops: the supersession took effect by ``f.not_superseded_at``
    and, with ``f.supersessions_recorded_by``, had been recorded by then (the
    condition ``EpisodeSQL.where`` writes in SQL)."""
    at, known = f.not_superseded_at, f.supersessions_recorded_by
    if at is None:
        return []
    return [rowid for rowid, took_effect, recorded in superseded
            if took_effect <= at and (known is None or recorded <= known)]


def drop_ann_files(db_path: str | None, ns_id: int) -> None:
    """Delete the namespace's vector and ANN files (every model and context
    weight): after an erasure they hold the erased vector; the next search
    rebuilds them from the store. (Lock files stay: a writer may hold one.)"""
    if not db_path or db_path == ":memory:":
        return
    for path in glob.glob(f"{glob.escape(db_path)}.ann-{ns_id}-*"):
        if path.endswith(".lock"):
            continue
        try:
            os.remove(path)
        except OSError as exc:
            log.warning("could not delete the ANN cache %s after an erasure: %s", path, exc)
