"""The mapped vector file: one namespace's vectors of one model, beside a
SQLite database, opened by memory-mapping instead of loading.

A cold process (a CLI call, a hook) used to read every vector out of SQLite
and mix each with its session neighbours (``dense_context``) before its first
dense search: ~1 s and ~80 MB at 100k episodes. This file keeps both, as
stored (int8 rows with a float32 scale, :mod:`chronomem.core.quantize`), so
opening it costs a header read and a search touches only the pages it reads.
It is a cache: the store's ``episode_vectors`` rows stay the truth; a file
that does not match them (another count of erased episodes, a row added
below its last rowid, another store's rows) is rebuilt from them.

Layout (little-endian): a 4 KiB header, then columns of ``capacity`` rows
each, 64-byte aligned — rowid, recorded_at, occurred_at, session key (int64),
position of the previous turn of the session (int64, -1: none), scale,
context scale (float32), the vector and the context vector (int8 × dim).
The context vector is ``normalize(q + w·prev + w·next)`` for the file's
weight ``w``: computed once, when a row is appended, and recomputed for the
session's previous turn when its next one arrives.

Crash safety: a writer (one at a time: ``flock`` on ``<file>.lock``) sets
the header's ``dirty`` flag, writes rows past ``count`` and the one
predecessor per session it updates, then publishes the new ``count`` and
clears the flag, all through one shared mapping: the page cache sees each
store in order, so a process killed anywhere (kill -9) leaves either the old
header or the flag set, and the next opener rebuilds; readers never look
past ``count``. Nothing is flushed to disk: after an operating-system crash
the file may disagree with its header, so delete the ``<db>.ann-*`` files
then (they are rebuilt). A file that must grow, or be rebuilt, is written
beside and renamed over, so a reader holding the old mapping keeps a
consistent (older) file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import glob
import hashlib
import logging
import mmap
import os
import struct
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ...core.quantize import dequantize_rows, quantize_rows
from .qmatrix import mix_context

__all__ = ["MappedVectors", "VectorFile", "session_key", "vector_file_path"]

log = logging.getLogger("chronomem.evidence.vecfile")

MAGIC = b"CMVECS01"
VERSION = 1
HEADER = 4096
_ALIGN = 64
# magic, version, dim, capacity, count, max_rowid, erasures, dirty, weight, generation, lineage, fingerprint
_HEAD = struct.Struct("<8sIIQQqqIdq16s32s")
_MIN_CAPACITY = 4096

Row = tuple[int, bytes, float, int, "int | None", "str | None"]  # EpisodeStore.load_vectors


def session_key(session: str | None) -> int:
    """The int64 key of a session name (0: no session), the same in every
    process: turns are neighbours when their keys are equal."""
    if session is None:
        return 0
    key = int.from_bytes(hashlib.blake2b(session.encode("utf-8"), digest_size=8).digest(), "little", signed=True)
    return key or 1


def vector_file_path(db_path: str, ns_id: int, model_id: int) -> str:
    # (named like the ANN files, so an erasure's drop_ann_files removes it too)
    return f"{db_path}.ann-{ns_id}-{model_id}.vec"


def fingerprint(row: Row) -> bytes:
    """What ties a file to its store: the digest of the stored form of its last row."""
    rowid, q, scale, recorded, occurred, session = row
    h = hashlib.sha256(struct.pack("<qfqq", rowid, scale, recorded, occurred if occurred is not None else -1))
    h.update(q)
    h.update((session or "").encode("utf-8"))
    return h.digest()


def _layout(capacity: int, dim: int) -> dict[str, tuple[int, str, tuple[int, ...]]]:
    """Column name -> (offset, dtype, shape)."""
    cols = [("rowids", "<i8", (capacity,)), ("recorded", "<i8", (capacity,)), ("occurred", "<i8", (capacity,)),
            ("sessions", "<i8", (capacity,)), ("prev", "<i8", (capacity,)), ("scales", "<f4", (capacity,)),
            ("ctx_scales", "<f4", (capacity,)), ("q", "i1", (capacity, dim)), ("ctx", "i1", (capacity, dim))]
    out: dict[str, tuple[int, str, tuple[int, ...]]] = {}
    offset = HEADER
    for name, dtype, shape in cols:
        out[name] = (offset, dtype, shape)
        size = int(shape[0]) * (int(shape[1]) if len(shape) > 1 else 1) * int(dtype[-1])
        offset += (size + _ALIGN - 1) // _ALIGN * _ALIGN
    out["_end"] = (offset, "", ())
    return out


@dataclass(frozen=True)
class Header:
    dim: int
    capacity: int
    count: int
    max_rowid: int
    erasures: int
    dirty: bool
    weight: float
    lineage: bytes
    fingerprint: bytes
    # the store's episode generation the rows were checked against: equal to the
    # store's now, nothing was written since (0: unknown)
    generation: int = 0

    def pack(self) -> bytes:
        return _HEAD.pack(MAGIC, VERSION, self.dim, self.capacity, self.count, self.max_rowid, self.erasures,
                          int(self.dirty), self.weight, self.generation, self.lineage, self.fingerprint)


def read_header(path: str) -> Header | None:
    """The file's header, or ``None`` when it is missing or not a vector file of this version."""
    try:
        with open(path, "rb") as fh:
            return _header_of(fh)
    except OSError:
        return None


def _header_of(fh: Any) -> Header | None:
    raw = fh.read(_HEAD.size)
    size = os.fstat(fh.fileno()).st_size
    if len(raw) < _HEAD.size:
        return None
    magic, version, dim, capacity, count, max_rowid, erasures, dirty, weight, gen, lineage, fp = _HEAD.unpack(raw)
    if magic != MAGIC or version != VERSION or count > capacity or dim <= 0:
        return None
    if size < _layout(capacity, dim)["_end"][0]:
        return None  # truncated
    return Header(dim, capacity, count, max_rowid, erasures, bool(dirty), weight, lineage, fp, gen)


@dataclass(frozen=True, eq=False)
class MappedVectors:
    """A read-only view of a file's first ``count`` rows (numpy memmaps)."""

    header: Header
    rowids: Any
    recorded: Any
    occurred: Any
    sessions: Any
    scales: Any
    ctx_scales: Any
    q: Any
    ctx: Any


class VectorFile:
    """Open, check, extend and rebuild one mapped vector file."""

    def __init__(self, np: Any, path: str, dim: int, weight: float) -> None:
        self.np = np
        self.path = path
        self.dim = dim
        self.weight = weight

    # -- reading --------------------------------------------------------------

    def view(self) -> MappedVectors | None:
        """The file's rows as read-only arrays, or ``None`` when it is missing,
        torn (dirty) or of another shape. The header and the mapping come
        from one open file: a writer renaming a new file over this one does
        not change what this view reads. (A writer appending to this one
        changes only rows past the view's ``count`` and, in place, the
        context vector of a session's last turn: a view may read one such
        row half-updated, a mix of two valid vectors.)"""
        np = self.np
        try:
            with open(self.path, "rb") as fh:
                head = _header_of(fh)
                if head is None or head.dirty or head.dim != self.dim or head.weight != self.weight:
                    return None
                lay = _layout(head.capacity, head.dim)
                mm = mmap.mmap(fh.fileno(), lay["_end"][0], access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        n = head.count

        def col(name: str) -> Any:
            offset, dtype, shape = lay[name]
            return np.ndarray((n, *shape[1:]), dtype=dtype, buffer=mm, offset=offset)  # (read-only: the map is)

        return MappedVectors(head, col("rowids"), col("recorded"), col("occurred"), col("sessions"),
                             col("scales"), col("ctx_scales"), col("q"), col("ctx"))

    # -- writing --------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The one writer of this file (across processes)."""
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # (closing releases the lock)

    def mark(self, generation: int) -> None:
        """Record that the rows are the store's at ``generation`` (under :meth:`locked`)."""
        head = read_header(self.path)
        if head is None or head.dirty or head.generation == generation:
            return
        with open(self.path, "r+b") as fh:
            fh.write(dataclasses.replace(head, generation=generation).pack())

    def create(self, capacity: int, erasures: int) -> None:
        """An empty file (replacing any), under :meth:`locked`."""
        capacity = max(_MIN_CAPACITY, capacity)
        head = Header(self.dim, capacity, 0, 0, erasures, False, self.weight, uuid.uuid4().bytes, b"\0" * 32)
        self._write_new(head, None)

    def _write_new(self, head: Header, old: _Writable | None) -> None:
        """Write a file with ``head`` (copying ``old``'s rows) beside, then rename it over."""
        np = self.np
        for stale in glob.glob(glob.escape(self.path) + ".tmp-*"):
            with contextlib.suppress(OSError):
                os.remove(stale)  # a writer killed while writing one (we hold the lock)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        lay = _layout(head.capacity, head.dim)
        with open(tmp, "wb") as fh:
            fh.truncate(lay["_end"][0])
            fh.write(head.pack())
        if old is not None and old.head.count:
            new = _Writable(head, None, lay, np, head.capacity, path=tmp)
            n = old.head.count
            for name in ("rowids", "recorded", "occurred", "sessions", "prev", "scales", "ctx_scales", "q", "ctx"):
                new.cols[name][:n] = old.cols[name][:n]
            new.close()
        os.replace(tmp, self.path)

    def append(self, rows: Sequence[Row], erasures: int) -> Header:
        """Add ``rows`` (rowids above the file's last one, in order) with their
        context vectors, updating each session's previous turn; under
        :meth:`locked`. Returns the new header."""
        head = read_header(self.path)
        assert head is not None and not head.dirty
        if head.count + len(rows) > head.capacity:
            old = _Writable(head, None, _layout(head.capacity, head.dim), self.np, head.capacity, path=self.path)
            grown = Header(head.dim, max(2 * head.capacity, head.count + len(rows)), head.count, head.max_rowid,
                           head.erasures, False, head.weight, head.lineage, head.fingerprint)
            self._write_new(grown, old)
            old.close()
            head = grown
        w = _Writable(head, None, _layout(head.capacity, head.dim), self.np, head.capacity, path=self.path)
        try:
            w.set_header(Header(head.dim, head.capacity, head.count, head.max_rowid, head.erasures, True,
                                head.weight, head.lineage, head.fingerprint))
            w.add(rows, self.weight)
            done = Header(head.dim, head.capacity, head.count + len(rows), rows[-1][0] if rows else head.max_rowid,
                          erasures, False, head.weight, head.lineage,
                          fingerprint(rows[-1]) if rows else head.fingerprint)
            w.set_header(done)
            return done
        finally:
            w.close()


class _Writable:
    """The columns of a file mapped for writing (all ``capacity`` rows)."""

    def __init__(self, head: Header, mm: mmap.mmap | None, lay: dict[str, tuple[int, str, tuple[int, ...]]],
                 np: Any, rows: int, path: str | None = None) -> None:
        if mm is None:
            assert path is not None
            with open(path, "r+b") as fh:
                mm = mmap.mmap(fh.fileno(), lay["_end"][0], access=mmap.ACCESS_WRITE)
        self.head, self.mm, self.np = head, mm, np
        self.cols = {name: np.ndarray((rows, *shape[1:]), dtype=dtype, buffer=mm, offset=offset)
                     for name, (offset, dtype, shape) in lay.items() if name != "_end"}

    def set_header(self, head: Header) -> None:
        self.mm[:_HEAD.size] = head.pack()
        self.head = head

    def close(self) -> None:
        self.cols = {}
        with contextlib.suppress(BufferError):  # (a view still alive: the GC unmaps it)
            self.mm.close()

    def add(self, rows: Sequence[Row], weight: float) -> None:
        np = self.np
        c = self.cols
        n0, m = self.head.count, len(rows)
        if m == 0:
            return
        dim = self.head.dim
        new = slice(n0, n0 + m)
        c["rowids"][new] = np.fromiter((r[0] for r in rows), np.int64, m)
        c["q"][new] = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(m, dim)
        c["scales"][new] = np.fromiter((r[2] for r in rows), np.float32, m)
        c["recorded"][new] = np.fromiter((r[3] for r in rows), np.int64, m)
        c["occurred"][new] = np.fromiter((r[4] if r[4] is not None else r[3] for r in rows), np.int64, m)
        keys = [session_key(r[5]) for r in rows]
        c["sessions"][new] = np.asarray(keys, np.int64)
        # each new row's previous turn: the last earlier row of its session
        last: dict[int, int] = {}
        wanted = {k for k in keys if k != 0}
        if wanted and n0:
            old = c["sessions"][:n0]
            hit = np.nonzero(np.isin(old, np.fromiter(wanted, np.int64, len(wanted))))[0]
            for pos in hit.tolist():  # (ascending: the last one wins)
                last[int(old[pos])] = pos
        prev = np.full(m, -1, np.int64)
        nxt: dict[int, int] = {}  # position -> its next turn's position
        for j, key in enumerate(keys):
            if key == 0:
                continue
            p = last.get(key)
            if p is not None:
                prev[j] = p
                nxt[p] = n0 + j
            last[key] = n0 + j
        c["prev"][new] = prev
        # the context vectors to (re)compute: the new rows and each one's predecessor
        touched = sorted(set(range(n0, n0 + m)) | {p for p in nxt if p < n0})
        for a in range(0, len(touched), 4096):
            self._context(np.asarray(touched[a:a + 4096], np.int64), nxt, weight)

    def _context(self, pos: Any, nxt: dict[int, int], weight: float) -> None:
        np = self.np
        c = self.cols

        def rows(at: Any) -> Any:
            return dequantize_rows(np, c["q"][at], c["scales"][at])

        prev = c["prev"][pos]
        following = np.asarray([nxt.get(int(p), -1) for p in pos], np.int64)
        win = mix_context(np, rows(pos), rows(np.where(prev >= 0, prev, pos)),
                          rows(np.where(following >= 0, following, pos)),
                          (prev >= 0).astype(np.float32)[:, None], (following >= 0).astype(np.float32)[:, None], weight)
        q, s = quantize_rows(np, win)
        c["ctx"][pos] = q
        c["ctx_scales"][pos] = s
