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

Above ``ann_threshold`` vectors, and when the optional ``hnswlib`` is
installed, an HNSW index answers instead: a cache persisted beside the
database file (``<db>.ann-<ns>-<model>-<context>.bin``), extended with new rows
incrementally and rebuilt from the store whenever it does not match it. It
over-fetches and applies the same filters; a query whose filter leaves too few
candidates falls back to the exact search.

Erasure: the caches hold the erased episode's vector, and the context
vectors mix it into its neighbours'. A cache that sees another count of
erased episodes than it was built with (``EpisodeStore.episode_erasures``)
reloads from the store, and so does an ANN file (its sidecar JSON records the
count); the erasing process also deletes the namespace's ANN files
(:func:`drop_ann_files`).
"""

from __future__ import annotations

import glob
import importlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping

from ...store.protocol import EpisodeFilter, EpisodeStore
from .embed import load_numpy
from .qmatrix import QMatrix, frozen

__all__ = ["VectorCache", "VectorSlot"]

log = logging.getLogger("chronomem.evidence.vector")

_LOAD_BATCH = 50_000


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
    sessions: Any
    session_codes: Mapping[str, int]
    generation: int = -1
    max_rowid: int = 0
    erasures: int = 0  # the namespace's erased episodes when the arrays were loaded
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
            recorded=np.zeros(0, np.int64), occurred=np.zeros(0, np.int64), sessions=np.zeros(0, np.int32),
            session_codes={}, erasures=erasures,
        )

    def slot(self, store: EpisodeStore, ns_id: int, model_id: int, dim: int) -> VectorSlot:
        """An up-to-date snapshot of the arrays for ``(ns_id, model_id)``:
        it holds at least every vector committed before this call."""
        gen = store.episode_generation()
        with self._lock:
            slot = self._slots.get((ns_id, model_id))
            # (a snapshot newer than `gen` holds all `gen` has: the generation only grows)
            if slot is not None and slot.generation >= gen:
                return slot
            count, max_rowid = store.vector_stats(ns_id, model_id)
            # an erasure since: nothing of the old arrays may stay (a row count
            # alone can miss one, when vectors were also added below max_rowid)
            erasures = store.episode_erasures(ns_id)
            if slot is None or count < slot.size or max_rowid < slot.max_rowid or erasures != slot.erasures:
                slot = self._empty(dim, erasures)
                for ann_key in [a for a in self._ann if a[:2] == (ns_id, model_id)]:
                    del self._ann[ann_key]  # reloaded from its file (or rebuilt) at the next ANN search
            fresh = self._append(store, slot, ns_id, model_id, gen)
            if fresh.size != count:  # rows changed under us (erasures): reload everything
                fresh = self._append(store, self._empty(dim, erasures), ns_id, model_id, gen)
            self._slots[(ns_id, model_id)] = fresh  # published: one atomic dict store
            return fresh

    def _append(self, store: EpisodeStore, slot: VectorSlot, ns_id: int, model_id: int, gen: int) -> VectorSlot:
        """A new snapshot: ``slot``'s rows and the stored ones after them."""
        np = self._np
        parts: list[list[Any]] = [[slot.rowids], [slot.recorded], [slot.occurred], [slot.sessions]]
        blocks = [slot.vecs]
        codes = dict(slot.session_codes)
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
                (codes.setdefault(r[5], len(codes) + 1) if r[5] is not None else 0 for r in rows), np.int32, n))
            max_rowid = int(rowids[-1])
            log.debug("loaded %d vectors (ns %d, model %d)", n, ns_id, model_id)
        if len(parts[0]) == 1:  # nothing new: the same arrays (and their context matrices)
            return replace(slot, generation=gen)
        rowids_, recorded, occurred, sessions = (frozen(np.concatenate(p)) for p in parts)
        return VectorSlot(dim=slot.dim, rowids=rowids_, vecs=QMatrix.concat(np, blocks), recorded=recorded,
                          occurred=occurred, sessions=sessions, session_codes=MappingProxyType(codes), generation=gen,
                          max_rowid=max_rowid, erasures=slot.erasures)

    def matrix(self, slot: VectorSlot, context: float) -> QMatrix:
        """The search matrix: each episode's vector, or with ``context > 0``
        ``normalize(context * prev + v + context * next)`` over its
        neighbours in the same session (rowid order). Computed from the
        snapshot's vectors a block of rows at a time and quantized like
        them, cached with it."""
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
                win = vecs + context * (has_prev[a:b] * slot.vecs.take(prev[a:b])
                                        + has_next[a:b] * slot.vecs.take(nxt[a:b]))
                win /= np.maximum(np.linalg.norm(win, axis=1, keepdims=True), 1e-12)
                parts.append(QMatrix.of_floats(np, win))
            matrix = QMatrix.concat(np, parts)
            slot.windows[context] = matrix
            return matrix

    def invalidate(self) -> None:
        with self._lock:
            self._slots.clear()
            self._ann.clear()

    def ann_search(self, slot: VectorSlot, query: Any, k: int, f: EpisodeFilter,
                   superseded: list[tuple[int, int, int]], context: float, path: str | None,
                   key: tuple[int, int]) -> list[tuple[int, float]] | None:
        """The approximate top-``k`` (or ``None`` when the exact search must answer)."""
        if f.session is not None or f.since is not None or f.until is not None:
            return None  # selective filters: exact search is both right and fast enough
        hnsw = _hnswlib()
        if hnsw is None:
            return None
        np = self._np
        with self._lock:
            index = self._ann.get((*key, context))
            if index is None:
                index = self._ann[(*key, context)] = AnnIndex(hnsw, slot.dim, _ann_path(path, key, context))
        matrix = self.matrix(slot, context)
        if not index.sync(slot, matrix):
            return None  # the index is ahead of this (older) snapshot on another lineage
        gone = set(superseded_rowids(f, superseded))
        ahead = max(0, index.count - slot.size)  # rows of a newer snapshot, skipped below
        fetch = min(slot.size + ahead, k + len(gone) + 16 + ahead)
        positions, sims = index.query(np.asarray(query, dtype=np.float32).reshape(1, -1), fetch)
        out: list[tuple[int, float]] = []
        for pos, sim in zip(positions, sims, strict=True):
            if pos >= slot.size:
                continue  # a row another thread's newer snapshot added: not in this one
            rowid = int(slot.rowids[pos])
            if (rowid in gone or (f.recorded_by is not None and int(slot.recorded[pos]) > f.recorded_by)
                    or (f.occurred_by is not None and int(slot.occurred[pos]) > f.occurred_by)):
                continue
            out.append((rowid, float(sim)))
            if len(out) == k:
                break
        if len(out) < min(k, slot.size - len(gone)) and (f.recorded_by is not None or f.occurred_by is not None):
            return None  # the view filtered out too much: be exact
        return out

    def search(self, slot: VectorSlot, query: Any, k: int, f: EpisodeFilter,
               superseded: list[tuple[int, int, int]], context: float = 0.0) -> list[tuple[int, float]]:
        """``(rowid, cosine)`` best first, among the rows ``f`` allows (exact)."""
        np = self._np
        if slot.size == 0 or k <= 0:
            return []
        scores = self.matrix(slot, context).dot(np.asarray(query, dtype=np.float32).reshape(-1))
        mask = None

        def both(m: Any) -> Any:
            return m if mask is None else (mask & m)

        if f.recorded_by is not None:
            mask = both(slot.recorded <= f.recorded_by)
        if f.occurred_by is not None:
            mask = both(slot.occurred <= f.occurred_by)
        if f.since is not None:
            mask = both(slot.occurred >= f.since)
        if f.until is not None:
            mask = both(slot.occurred < f.until)
        if f.session is not None:
            code = slot.session_codes.get(f.session)
            mask = both(slot.sessions == (code if code is not None else -1))
        if superseded:
            gone = superseded_rowids(f, superseded)
            if gone:
                mask = both(~np.isin(slot.rowids, np.asarray(gone, np.int64)))
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        k = min(k, slot.size)
        if k < slot.size:
            top = np.argpartition(-scores, k - 1)[:k]
        else:
            top = np.arange(slot.size)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(slot.rowids[i]), float(scores[i])) for i in top if scores[i] > -np.inf]


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


def _hnswlib() -> Any:
    try:
        return importlib.import_module("hnswlib")
    except ModuleNotFoundError:
        return None


def _ann_path(db_path: str | None, key: tuple[int, int], context: float) -> str | None:
    if not db_path or db_path == ":memory:":
        return None
    return f"{db_path}.ann-{key[0]}-{key[1]}-{context:g}.bin"


def drop_ann_files(db_path: str | None, ns_id: int) -> None:
    """Delete the namespace's ANN files (every model and context weight):
    after an erasure they hold the erased vector; the next ANN search
    rebuilds them from the store."""
    if not db_path or db_path == ":memory:":
        return
    for path in glob.glob(f"{glob.escape(db_path)}.ann-{ns_id}-*"):
        try:
            os.remove(path)
        except OSError as exc:
            log.warning("could not delete the ANN cache %s after an erasure: %s", path, exc)


class AnnIndex:
    """An HNSW index over one slot's search matrix, labels = array positions.

    A cache: its sidecar JSON records how many rows (and the last rowid) it
    holds; anything that does not match the store is rebuilt from it.
    """

    M = 16
    EF_CONSTRUCTION = 100
    EF_SEARCH = 400

    def __init__(self, hnsw: Any, dim: int, path: str | None) -> None:
        self._hnsw = hnsw
        self.dim = dim
        self.path = path
        self.index: Any = None
        self.count = 0
        self.max_rowid = 0
        self.erasures = 0
        # the rowids of the snapshot last synced in this process (immutable):
        # a thread with an older snapshot of the same rows may query the index
        self._rowids: Any = None
        self._generation = -1
        self._lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        if self.path is None or not os.path.exists(self.path) or not os.path.exists(self.path + ".json"):
            return
        try:
            with open(self.path + ".json", encoding="utf-8") as fh:
                meta = json.load(fh)
            index = self._hnsw.Index(space="ip", dim=self.dim)
            index.load_index(self.path, max_elements=int(meta["count"]))
            self.index, self.count, self.max_rowid = index, int(meta["count"]), int(meta["max_rowid"])
            self.erasures = int(meta.get("erasures", 0))  # files from before erasures were counted: 0
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log.warning("ANN cache %s unusable (%s); it will be rebuilt", self.path, exc)
            self.index, self.count, self.max_rowid = None, 0, 0

    def _save(self) -> None:
        if self.path is None or self.index is None:
            return
        tmp = self.path + ".tmp"
        self.index.save_index(tmp)
        os.replace(tmp, self.path)
        with open(self.path + ".json", "w", encoding="utf-8") as fh:
            json.dump({"count": self.count, "max_rowid": self.max_rowid, "erasures": self.erasures}, fh)

    def sync(self, slot: VectorSlot, matrix: QMatrix) -> bool:
        """Bring the index up to the slot: add new rows (and re-add the row
        before the first new one, whose context vector changed), or rebuild.
        ``False`` when the index is ahead of ``slot`` (another thread synced a
        newer snapshot) but not on its rows: the caller searches exactly."""
        with self._lock:
            n = slot.size
            ahead = self._rowids
            if self.index is not None and self.count > n and ahead is not None and slot.generation <= self._generation:
                # an older snapshot: positions below n are its rows when both come
                # from the same arrays grown by appends (the caller skips the others)
                return self.erasures == slot.erasures and (n == 0 or int(ahead[n - 1]) == int(slot.rowids[n - 1]))
            consistent = (
                self.index is not None and self.count <= n and self.erasures == slot.erasures
                and (self.count == 0 or int(slot.rowids[self.count - 1]) == self.max_rowid)
            )
            if not consistent:
                log.info("building ANN index over %d vectors", n)
                index = self._hnsw.Index(space="ip", dim=self.dim)
                index.init_index(max_elements=max(n, 1), ef_construction=self.EF_CONSTRUCTION, M=self.M)
                index.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
                self.index, self.count, self.erasures = index, 0, slot.erasures
            self._rowids, self._generation = slot.rowids, slot.generation
            if self.count == n:
                return True
            assert self.index is not None
            if n > self.index.get_max_elements():
                self.index.resize_index(max(n, int(self.index.get_max_elements() * 1.5)))
            start = max(0, self.count - 1)
            np_ = importlib.import_module("numpy")
            for a, block in matrix.blocks(start, n):  # dequantized a bounded block at a time
                self.index.add_items(block, np_.arange(a, a + block.shape[0]))
            self.count = n
            self.max_rowid = int(slot.rowids[n - 1])
            self._save()
            return True

    def query(self, q: Any, k: int) -> tuple[list[int], list[float]]:
        with self._lock:
            assert self.index is not None
            self.index.set_ef(max(self.EF_SEARCH, k + 10))
            labels, dists = self.index.knn_query(q, k=k)
        return [int(x) for x in labels[0]], [1.0 - float(d) for d in dists[0]]
