"""The approximate nearest-neighbour index of dense search: an inverted file
(IVF) in numpy over a slot's context matrix as stored (int8 rows and their
scales, so a probed row scores exactly as the exact search scores it).

Spherical k-means splits the rows into ``nlist`` lists (about 4·√n); the
rows are stored again grouped by list, so a query scores the centroids,
reads the ``nprobe`` nearest lists as contiguous runs of rows and multiplies
only those. Beside a SQLite database the index is a file
(``<db>.ann-<ns>-<model>-<w>.ivf``) **memory-mapped on open**: a cold
process reads the header and the centroids, and a query touches only the
lists it probes — at 1M rows a few MB, where an HNSW graph file must be
walked whole to be opened (usearch's view touched 311 MB of a 660 MB file
here). Elsewhere (PostgreSQL, ``:memory:``) the same arrays live in the
process. The header records what the index was built over (row count, last
rowid, the slot's lineage, erased count): an index that does not match the
slot is not used.

An index covers the slot's first ``count`` rows; rows appended since (the
*delta*) are searched exactly and merged. When the delta grows past
:data:`DELTA_SHARE` of the index (or when there is no usable index) a new
one is built — by a batch write synchronously (:meth:`AnnIndex.build`), by a
search in a background thread while the exact search answers — written
beside and renamed over the file, so a torn index file is never read (a
process killed mid-build leaves a ``.tmp``, removed by the next build). The
build copies the rows as they are then: a turn whose context vector changes
later (the previous turn of a session that gets a new one) is found by its
old vector until the next build, and scored by its new one.

Why not HNSW: measured on the 1M bench corpus, usearch's graph (connectivity
16) levelled off at recall@10 0.88 against exact search however wide the
query; connectivity 32 reached 0.958 at expansion 4,000 (5.5 ms), but
opening its 660 MB file touched 311 MB and that query 164 MB more, against a
cold-process budget of 600 MB with the model. docs/evidence.md has the
figures of this index.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import math
import os
import struct
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .embed import load_numpy

if TYPE_CHECKING:  # pragma: no cover
    from .qmatrix import QMatrix


class VectorSlot(Protocol):
    """What an index reads of a :class:`~.vector.VectorSlot` (declared here:
    ``vector`` imports this module)."""

    @property
    def rowids(self) -> Any: ...
    @property
    def recorded(self) -> Any: ...
    @property
    def occurred(self) -> Any: ...
    @property
    def erasures(self) -> int: ...
    @property
    def lineage(self) -> bytes: ...
    @property
    def size(self) -> int: ...

__all__ = ["DELTA_SHARE", "AnnIndex", "Built", "ann_path", "build_index", "nlist_for", "nprobe_for"]

log = logging.getLogger("chronomem.evidence.ann")

#: rebuild when the rows searched exactly past the index exceed this share of it
DELTA_SHARE = 0.10
#: ... and this many rows (a few thousand rows cost well under a millisecond exactly)
DELTA_MIN = 4096

MAGIC = b"CMIVF001"
HEADER = 4096
# magic, dim, nlist, nprobe, count, max_rowid, erasures, lineage; then the centroids
# (float32), the list offsets (int64) and the rows grouped by list (record_dtype)
_HEAD = struct.Struct("<8sIIIQqq16s")
_ALIGN = 64
_BLOCK = 2048  # rows scored against the centroids at once (scores: 33 MB at 4,000 lists)
# A batch read is scored while it is still in the CPU's cache (a 4 MB L2
# here): 2,048 rows (0.8 MB at 384 dimensions) converted 256 at a time
# (0.4 MB of float32) took 8.5 ms a query at 1M rows where 16,384 rows
# converted 1,024 at a time took 9.7 (1.00 vs 1.15 ms at 100k)
_RUN = 256  # probed rows converted to float32 at once
_BATCH = 2048  # probed rows read into one buffer


def nlist_for(count: int) -> int:
    """How many lists an index of ``count`` rows has: about 4·√n, within [16, 8192]."""
    return max(16, min(8192, int(4 * math.sqrt(max(1, count)))))


def nprobe_for(nlist: int) -> int:
    """How many lists a query reads: a sixteenth of them (at least 8).

    Measured (recall@10 against exact search, 50 queries): on the bench
    corpora a 64th already gives 0.98 at 100k and 1.0 at 1M (4.8 ms at a
    24th, 7.3 ms at a 16th there); on a less clustered corpus (each 100k
    bench vector mixed with two random others) a 24th gave 0.91-0.94, a
    16th 0.94-0.96 and an 8th 0.98-0.99: the sixteenth is for corpora less
    clustered than the bench's."""
    return max(8, min(nlist, nlist // 16))


def ann_path(db_path: str | None, key: tuple[int, int], context: float) -> str | None:
    if not db_path or db_path == ":memory:":
        return None
    return f"{db_path}.ann-{key[0]}-{key[1]}-{context:g}.ivf"


def record_dtype(np: Any, dim: int) -> Any:
    """One stored row of a list: its vector as stored and what a view filters on."""
    return np.dtype([("q", "i1", (dim,)), ("scale", "<f4"), ("rowid", "<i8"), ("recorded", "<i8"),
                     ("occurred", "<i8")])


def _layout(np: Any, dim: int, nlist: int, count: int) -> dict[str, int]:
    """Byte offsets of the file's parts."""
    centroids = HEADER
    offsets = centroids + (nlist * dim * 4 + _ALIGN - 1) // _ALIGN * _ALIGN
    records = offsets + ((nlist + 1) * 8 + _ALIGN - 1) // _ALIGN * _ALIGN
    return {"centroids": centroids, "offsets": offsets, "records": records,
            "_end": records + count * record_dtype(np, dim).itemsize}


@dataclass(frozen=True, eq=False)
class Built:
    """One built index and what it was built over. The lists' rows are in
    ``records`` (in memory) or read from the file at ``path`` with
    ``os.preadv``: a memory-mapped read of scattered runs maps far more than
    it reads (here, ~1 MB per ~100 KB list, the page cache's large folios),
    which put 280 MB on a cold process's RSS at 1M rows."""

    centroids: Any  # (nlist, dim) float32, unit rows
    offsets: Any  # (nlist + 1,) int64: list i is records [offsets[i], offsets[i+1])
    records: Any  # (count,) record_dtype grouped by list, or None: read from `path`
    path: str | None
    base: int  # the records' byte offset in the file
    nprobe: int
    count: int
    max_rowid: int
    erasures: int
    lineage: bytes

    def covers(self, slot: VectorSlot) -> bool:
        return (self.lineage == slot.lineage and self.erasures == slot.erasures
                and self.count <= slot.size and (self.count == 0 or int(slot.rowids[self.count - 1]) == self.max_rowid))

    def _batches(self, np: Any, lists: Any) -> Any:
        """The records of the lists in ``lists`` (in file order), several
        lists at a time: one structured array of up to ``_BATCH`` rows per
        batch (a list longer than that is a batch of its own). A query then
        pays one read per list into a buffer reused across batches, and one
        filter and product per batch: at 1M rows it reads 250 lists of ~250
        rows, and an array, a mask and a product per list took ~30 % longer."""
        dtype = record_dtype(np, int(self.centroids.shape[1]))
        starts = self.offsets[lists]
        sizes = self.offsets[lists + 1] - starts
        if self.records is not None:
            idx: list[Any] = []
            rows = 0
            for a, n in zip(starts.tolist(), sizes.tolist(), strict=True):
                if rows and rows + n > _BATCH:
                    yield self.records[np.concatenate(idx)]
                    idx, rows = [], 0
                idx.append(np.arange(a, a + n))
                rows += n
            if rows:
                yield self.records[np.concatenate(idx)]
            return
        assert self.path is not None
        buf = np.empty(max(1, min(_BATCH, int(sizes.sum()))), dtype)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            rows = 0
            for a, n in zip(starts.tolist(), sizes.tolist(), strict=True):
                if rows and rows + n > _BATCH:  # (batches as in memory: each row scores alike)
                    yield buf[:rows]
                    rows = 0
                if n > _BATCH:  # a list longer than a batch: a buffer of its own
                    yield self._read_rows(fd, np.empty(n, dtype), a)
                    continue
                self._read_rows(fd, buf[rows:rows + n], a)
                rows += n
            if rows:
                yield buf[:rows]
        finally:
            os.close(fd)

    def _read_rows(self, fd: int, into: Any, first: int) -> Any:
        """Read ``len(into)`` records from record ``first`` on into ``into``."""
        size = into.nbytes
        if size and os.preadv(fd, [memoryview(into.view("u1"))], self.base + first * into.dtype.itemsize) != size:
            raise OSError(f"{self.path}: short read (the index file changed under a search)")
        return into

    def search(self, np: Any, query: Any, k: int, nprobe: int | None = None, *, recorded_by: int | None = None,
               occurred_by: int | None = None, gone: Any = None) -> tuple[Any, Any]:
        """``(rowids, scores)`` of the best ``k`` rows of the probed lists that
        the filters keep (recorded / occurred by, rowids not ``gone``), best first."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        probe = min(int(self.centroids.shape[0]), nprobe or self.nprobe)
        cs = self.centroids @ query
        lists = np.argpartition(-cs, probe - 1)[:probe] if probe < cs.shape[0] else np.arange(cs.shape[0])
        lists = np.sort(lists)  # (the file in order: reads go forward)
        scores, rowids = self._scan(np, lists, query, recorded_by, occurred_by, gone)
        if not scores:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        all_scores, all_rowids = np.concatenate(scores), np.concatenate(rowids)
        k = min(k, all_scores.shape[0])
        top = np.argpartition(-all_scores, k - 1)[:k] if k < all_scores.shape[0] else np.arange(all_scores.shape[0])
        top = top[np.argsort(-all_scores[top], kind="stable")]
        return all_rowids[top], all_scores[top]

    def _scan(self, np: Any, lists: Any, query: Any, recorded_by: int | None, occurred_by: int | None,
              gone: Any) -> tuple[list[Any], list[Any]]:
        """The scores and rowids (arrays, in the lists' order) of the rows of
        ``lists`` that the filters keep."""
        scores: list[Any] = []
        rowids: list[Any] = []
        buf = np.empty((_RUN, int(self.centroids.shape[1])), np.float32)
        for run in self._batches(np, lists):
            keep = None
            if recorded_by is not None:
                keep = run["recorded"] <= recorded_by
            if occurred_by is not None:
                m = run["occurred"] <= occurred_by
                keep = m if keep is None else (keep & m)
            if gone is not None and len(gone):
                m = ~np.isin(run["rowid"], gone)
                keep = m if keep is None else (keep & m)
            if keep is not None and not keep.all():
                run = run[keep]
            rowids.append(run["rowid"].copy())  # (the batch's buffer is reused)
            out = np.empty(run.shape[0], np.float32)
            for c in range(0, run.shape[0], _RUN):
                block = buf[:min(_RUN, run.shape[0] - c)]
                np.copyto(block, run["q"][c:c + _RUN], casting="unsafe")  # int8 -> float32 is exact
                np.dot(block, query, out=out[c:c + _RUN])
            out *= run["scale"]
            scores.append(out)
        return scores, rowids


def _read(path: str, np: Any) -> Built | None:
    """The index file (its header, centroids and list offsets read; the rows
    stay in the file), or ``None`` when it is missing or not an index."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_HEAD.size)
            if len(raw) < _HEAD.size:
                return None
            magic, dim, nlist, nprobe, count, max_rowid, erasures, lineage = _HEAD.unpack(raw)
            if magic != MAGIC or dim <= 0 or nlist <= 0:
                return None
            lay = _layout(np, dim, nlist, count)
            if os.fstat(fh.fileno()).st_size < lay["_end"]:
                return None
            fh.seek(lay["centroids"])
            centroids = np.frombuffer(fh.read(nlist * dim * 4), dtype="<f4").reshape(nlist, dim)
            fh.seek(lay["offsets"])
            offsets = np.frombuffer(fh.read((nlist + 1) * 8), dtype="<i8")
    except (OSError, ValueError, struct.error):
        return None
    if offsets.shape[0] != nlist + 1 or int(offsets[-1]) != count:
        return None
    return Built(centroids, offsets, None, path, lay["records"], nprobe, count, max_rowid, erasures, lineage)


def _write(path: str, built: Built) -> None:
    """``built`` (in memory) as a file: written beside, then renamed over."""
    np = load_numpy()
    dim, nlist = int(built.centroids.shape[1]), int(built.centroids.shape[0])
    lay = _layout(np, dim, nlist, built.count)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(_HEAD.pack(MAGIC, dim, nlist, built.nprobe, built.count, built.max_rowid, built.erasures,
                            built.lineage))
        fh.seek(lay["centroids"])
        fh.write(np.ascontiguousarray(built.centroids, dtype="<f4").tobytes())
        fh.seek(lay["offsets"])
        fh.write(np.ascontiguousarray(built.offsets, dtype="<i8").tobytes())
        fh.seek(lay["records"])
        for a in range(0, built.count, 65536):
            fh.write(built.records[a:a + 65536].tobytes())
        fh.truncate(lay["_end"])
    os.replace(tmp, path)


def train(np: Any, q: Any, scales: Any, count: int, nlist: int, seed: int = 0, iterations: int = 8,
          sample_per_list: int = 24) -> Any:
    """Spherical k-means centroids (unit rows) of the first ``count`` int8 rows,
    fitted on a seeded sample of ``sample_per_list`` rows per list: the same
    rows give the same centroids."""
    rng = np.random.default_rng(seed)
    take = min(count, nlist * sample_per_list)
    pick = np.sort(rng.choice(count, size=take, replace=False)) if take < count else np.arange(count)
    x = q[pick].astype(np.float32) * scales[pick][:, None]
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    nlist = min(nlist, take)
    c = x[rng.choice(take, size=nlist, replace=False)].copy()
    for _ in range(iterations):
        assign = _nearest(np, x, c)
        sums = np.zeros_like(c)
        np.add.at(sums, assign, x)
        empty = np.linalg.norm(sums, axis=1) == 0
        if empty.any():  # an empty list starts again from a random row
            sums[empty] = x[rng.choice(take, size=int(empty.sum()), replace=False)]
        c = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return c.astype(np.float32)


def _nearest(np: Any, x: Any, c: Any) -> Any:
    """The nearest centroid of each row of ``x`` (float, or int8 as stored;
    converted to float32 a block at a time)."""
    out = np.empty(x.shape[0], np.int64)
    for a in range(0, x.shape[0], _BLOCK):
        out[a:a + _BLOCK] = np.argmax(x[a:a + _BLOCK].astype(np.float32) @ c.T, axis=1)
    return out


def build_index(np: Any, q: Any, scales: Any, rowids: Any, recorded: Any, occurred: Any, count: int,
                erasures: int, lineage: bytes) -> Built:
    """An index of the first ``count`` rows (in memory)."""
    nlist = min(nlist_for(count), count)
    c = train(np, q, scales, count, nlist)
    nlist = int(c.shape[0])
    assign = _nearest(np, q[:count], c)  # (on the int8 rows: a row's scale does not change its nearest)
    order = np.argsort(assign, kind="stable")
    offsets = np.zeros(nlist + 1, np.int64)
    np.cumsum(np.bincount(assign, minlength=nlist), out=offsets[1:])
    records = np.empty(count, record_dtype(np, int(q.shape[1])))
    for a in range(0, count, 65536):  # (a block at a time: the gathers stay small)
        at = order[a:a + 65536]
        part = records[a:a + 65536]
        part["q"], part["scale"] = q[at], scales[at]
        part["rowid"], part["recorded"], part["occurred"] = rowids[at], recorded[at], occurred[at]
    max_rowid = int(rowids[count - 1]) if count else 0
    return Built(c, offsets, records, None, 0, nprobe_for(nlist), count, max_rowid, erasures, lineage)


class AnnIndex:
    """The index of one (namespace, model, context weight)."""

    def __init__(self, dim: int, path: str | None) -> None:
        self._np = load_numpy()
        self.dim = dim
        self.path = path
        self.built: Built | None = None
        self._building = False
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()  # (in memory: the builds' lock, as the file lock is on disk)
        if path is not None and os.path.exists(path):
            self.built = _read(path, self._np)
            if self.built is None:
                log.warning("ANN index %s unusable; it will be rebuilt", path)
            elif int(self.built.centroids.shape[1]) != dim:
                self.built = None

    def usable(self, slot: VectorSlot) -> Built | None:
        built = self.built
        return built if built is not None and built.covers(slot) else None

    def stale(self, slot: VectorSlot) -> bool:
        """Whether a new build is due: none usable, or too large a delta."""
        built = self.usable(slot)
        if built is None:
            return True
        delta = slot.size - built.count
        return delta > max(DELTA_MIN, int(built.count * DELTA_SHARE))

    def build(self, slot: VectorSlot, matrix: QMatrix, *, wait: bool = False) -> None:
        """Build the index over all of ``slot`` and publish it. A build in
        progress elsewhere (another process, or this one's background thread)
        is left to finish; with ``wait`` (``prepare_search``) this waits for
        it and builds only if what it wrote does not cover ``slot``."""
        with self._file_lock(wait) as mine:
            if not mine:
                return  # another builder has it; the next search picks it up
            np = self._np
            n = slot.size
            if n == 0:
                return
            if wait:  # (what a build we waited for left)
                done = _read(self.path, np) if self.path is not None else self.built
                if done is not None and done.covers(slot) and done.count == n:
                    self.built = done
                    return
            log.info("building the ANN index over %d vectors", n)
            built = build_index(np, matrix.q, matrix.scales, slot.rowids, slot.recorded, slot.occurred, n,
                                slot.erasures, slot.lineage)
            if self.path is not None:
                _write(self.path, built)
                on_disk = _read(self.path, np)
                built = on_disk if on_disk is not None else built  # (the rows stay in the file)
            self.built = built

    def build_in_background(self, slot: VectorSlot, matrix: QMatrix) -> None:
        """:meth:`build` in a daemon thread (one at a time per index); the
        caller searches exactly meanwhile."""
        with self._lock:
            if self._building:
                return
            self._building = True

        def run() -> None:
            try:
                self.build(slot, matrix)
            except Exception:  # pragma: no cover - logged: the exact search keeps answering
                log.exception("building the ANN index failed")
            finally:
                self._building = False

        thread = threading.Thread(target=run, name="chronomem-ann-build", daemon=True)
        thread.start()
        _BUILDS.add(thread)

    @contextlib.contextmanager
    def _file_lock(self, wait: bool = False) -> Any:
        if self.path is None:  # (in memory: one build at a time in this process)
            got = self._build_lock.acquire(blocking=wait)
            try:
                yield got
            finally:
                if got:
                    self._build_lock.release()
            return
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            with contextlib.suppress(OSError):
                os.remove(self.path + ".tmp")  # a build killed before its rename (we hold the lock)
            yield True
        finally:
            os.close(fd)


#: how long a process that is exiting waits for an index build it started
#: (a CLI call has printed its answer by then; a longer build is left to the
#: next process, or to a batch write, ``prepare_search`` or a server)
EXIT_WAIT_S = 10.0
_BUILDS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _wait_for_builds() -> None:
    for thread in list(_BUILDS):
        thread.join(timeout=EXIT_WAIT_S)
