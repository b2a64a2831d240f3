"""Copy a whole memory between stores of any backend (``chronomem copy``).

Backend-neutral: each namespace is read as one consistent snapshot of the
source and streamed, as the portable records of :mod:`chronomem.service.transfer.portable`
(the serializer the JSONL export uses too, so a copy and a backup carry the
same things), into one write transaction of the destination, through the
raw-restore primitives of :class:`~chronomem.store.protocol.WriteTx`. SQLite →
PostgreSQL and back keep everything a reader can see:

* every fact version with both time axes as stored (valid and system
  intervals, precisions, close kinds, ``invalidated_by`` / ``closed_by``),
  fact ids and version numbers;
* provenance: each version's source and episode id, and every extra source
  with its original ``recorded_at`` and episode;
* entities (name, type, properties, creation time) with every name key and
  alias, including keys moved by merges;
* predicates with cardinality, inverse, description and aliases;
* merges with their undo records (ids and times as in the source, the
  entities and versions they name mapped to the destination's ids), so
  ``unmerge(op_id)`` works in the destination and a ``known_at`` read by a
  name a merge moved answers as in the source;
* episodes (evidence memory): text, times, source, session, speaker,
  metadata, supersession, erasure tombstones (id and times, no text),
  resolved time mentions and every stored embedding (bit for bit, per
  model); the lexical index is rebuilt in the destination as ingest builds
  it (its date words in ``timezone``).

Not copied: the erasure log (counts of physical deletions, never read back).
Each namespace is copied into a namespace of the same name, which must be
empty in the destination.
"""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from ...core.time import get_timezone
from ...errors import ConflictError, InvalidInputError
from ...store.protocol import Store
from ..gcpause import paused_gc
from .portable import namespace_is_empty, namespace_records
from .restore import Restorer

__all__ = ["CopyResult", "copy_store"]

log = logging.getLogger("chronomem.copy")

_PROGRESS_EVERY = 5000

Progress = Callable[[str, int], None]


@dataclass
class CopyResult:
    """What :func:`copy_store` copied, per namespace and in total
    (``episodes``: with their content; ``tombstones``: erased episodes)."""

    namespaces: list[str] = field(default_factory=list)
    entities: int = 0
    predicates: int = 0
    versions: int = 0
    facts: int = 0
    sources: int = 0
    episodes: int = 0
    tombstones: int = 0
    vectors: int = 0
    operations: int = 0
    import_keys: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def copy_store(
    src: Store,
    dst: Store,
    namespaces: Sequence[str] | None = None,
    *,
    progress: Progress | None = None,
    timezone: str | _dt.tzinfo | None = None,
) -> CopyResult:
    """Copy ``namespaces`` (default: all) of ``src`` into ``dst``.

    Raises :class:`ConflictError` if a destination namespace already holds
    entities, predicates or episodes (nothing is written then), and
    :class:`InvalidInputError` for a namespace ``src`` does not have.
    """
    available = src.namespaces()
    names = list(available) if namespaces is None else list(dict.fromkeys(namespaces))
    missing = [n for n in names if n not in available]
    if missing:
        have = ", ".join(available) or "none"
        raise InvalidInputError(f"the source has no namespace {missing[0]!r} (it has: {have})")
    if src.url == dst.url:
        raise InvalidInputError("source and destination are the same store")
    for name in names:
        ns = dst.namespace_id(name, create=False)
        if ns is not None and not namespace_is_empty(dst, ns):
            raise ConflictError(f"namespace {name!r} of the destination is not empty; copy into an empty store")
    result = CopyResult()
    tz = get_timezone(timezone)
    for name in names:
        _copy_namespace(src, dst, name, result, progress, tz)
        result.namespaces.append(name)
    log.info("copied %s -> %s: %s", src.url, dst.url, result)
    return result


def _copy_namespace(src: Store, dst: Store, name: str, result: CopyResult, progress: Progress | None,
                    tz: _dt.tzinfo) -> None:
    """One namespace, in one write transaction of ``dst``."""
    src_ns = src.namespace_id(name, create=False)
    assert src_ns is not None
    dst_ns = dst.namespace_id(name)
    assert dst_ns is not None
    with src.read(), paused_gc(), dst.write() as tx:
        r = Restorer(tx, dst_ns, tz, elsewhere="copy into an empty store")
        for rec in namespace_records(src, src_ns):
            r.add(rec)
            if progress is not None and rec["type"] == "fact" and len(r.versions) % _PROGRESS_EVERY == 0:
                progress(name, len(r.versions))
        r.finish()
    for key, count in r.counts().items():
        setattr(result, key, getattr(result, key) + count)
