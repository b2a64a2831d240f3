"""Copy a whole memory between stores of any backend (``chronomem copy``).

Backend-neutral: it reads one consistent snapshot of the source through the
:class:`~chronomem.store.base.Store` read methods and writes the destination
in one write transaction through the raw-restore primitives of
:class:`~chronomem.store.base.WriteTx` — the path the JSONL import uses — so
SQLite → PostgreSQL and back keep everything a reader can see:

* every fact version with both time axes as stored (valid and system
  intervals, precisions, close kinds, ``invalidated_by`` / ``closed_by``),
  fact ids and version numbers;
* provenance: each version's source and episode id, and every extra source
  with its original ``recorded_at``;
* entities (name, type, properties, creation time) with every name key and
  alias, including keys moved by merges;
* predicates with cardinality, inverse, description and aliases;
* merges with their undo records (ids and times as in the source, the
  entities and versions they name mapped to the destination's ids), so
  ``unmerge(op_id)`` works in the destination and a ``known_at`` read by a
  name a merge moved answers as in the source.

* episodes (evidence memory), when both stores hold them: text, times,
  source, session, speaker, metadata, supersession, resolved time mentions
  and every stored embedding (bit for bit); the lexical index is rebuilt in
  the destination (its date words in ``timezone``).

Not copied: the erasure log and erased episodes' tombstones.
Each namespace is copied into a namespace of the same name, which must be
empty in the destination.
"""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Sequence, cast

from ._gc import paused_gc
from ._identity import portable_merge_payload, restore_merge
from .errors import ConflictError, InvalidInputError
from .normalize import normalize_key
from .store.base import EpisodeRecord, EpisodeStore, Row, Store, WriteTx
from .timeutil import MAX_US, MIN_US, get_timezone

__all__ = ["CopyResult", "copy_store"]

log = logging.getLogger("chronomem.copy")

_ROW_BATCH = 5000
_SOURCE_BATCH = 500

Progress = Callable[[str, int], None]


@dataclass
class CopyResult:
    """What :func:`copy_store` copied, per namespace and in total."""

    namespaces: list[str] = field(default_factory=list)
    entities: int = 0
    predicates: int = 0
    versions: int = 0
    facts: int = 0
    sources: int = 0
    episodes: int = 0
    vectors: int = 0
    operations: int = 0

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
    entities or predicates (nothing is written then), and
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
    episodes = hasattr(src, "lexical_search") and hasattr(dst, "lexical_search")
    for name in names:
        ns = dst.namespace_id(name, create=False)
        if ns is not None and (
            dst.entities(ns) or dst.predicates(ns) or (episodes and cast(EpisodeStore, dst).episode_count(ns))
        ):
            raise ConflictError(f"namespace {name!r} of the destination is not empty; copy into an empty store")
    result = CopyResult()
    tz = get_timezone(timezone)
    for name in names:
        _copy_namespace(src, dst, name, result, progress)
        if episodes:
            _copy_episodes(cast(EpisodeStore, src), cast(EpisodeStore, dst), name, result, tz)
        result.namespaces.append(name)
    log.info("copied %s -> %s: %s", src.url, dst.url, result)
    return result


def _copy_namespace(src: Store, dst: Store, name: str, result: CopyResult, progress: Progress | None) -> None:
    src_ns = src.namespace_id(name, create=False)
    assert src_ns is not None
    dst_ns = dst.namespace_id(name)
    assert dst_ns is not None
    with src.read():
        predicates = src.predicates(src_ns)
        entities = src.entities(src_ns)
        keys = src.entity_keys(src_ns)
        operations = src.operations(src_ns)
        op_ids = {op[0] for op in operations}
        closed_version: dict[int, tuple[str, int]] = {}  # rowid -> (fact id, version), of merged-away versions
        with paused_gc(), dst.write() as tx:
            pred_map: dict[int, int] = {}
            for p in predicates:
                if p.declared or p.aliases:
                    rec = tx.define_predicate(
                        dst_ns, p.key, p.name, p.cardinality, p.inverse, p.description,
                        [(normalize_key(a, "predicate alias"), a) for a in p.aliases],
                    )
                else:
                    rec = tx.create_predicate(dst_ns, p.key, p.name)
                pred_map[p.id] = rec.id
            ent_map: dict[int, int] = {}
            for e in entities:
                ent_map[e.id] = tx.insert_entity(dst_ns, e.key, e.name, e.type, e.properties, e.created_at)
            for key, eid, alias_name in keys:
                tx.add_entity_key(dst_ns, key, ent_map[eid], alias_name)
            latest = max([e.created_at for e in entities] or [MIN_US])
            fact_ids: dict[str, None] = {}
            batch: list[Row] = []
            versions = 0

            def flush() -> None:
                nonlocal batch
                if batch:
                    tx.insert_rows(batch)
                    batch = []
                    if progress is not None:
                        progress(name, versions)

            for r in src.iter_rows(src_ns):
                fact_ids.setdefault(r.fact_id, None)
                if r.closed_by in op_ids and r.rowid is not None:
                    closed_version[r.rowid] = (r.fact_id, r.version)
                batch.append(r.copy(
                    rowid=None, ns_id=dst_ns, subject_id=ent_map[r.subject_id],
                    predicate_id=pred_map[r.predicate_id],
                    object_id=ent_map[r.object_id] if r.object_id is not None else None,
                    subject_name=None, predicate_name=None, object_name=None,
                ))
                versions += 1
                latest = max(latest, r.sf, r.st if r.st != MAX_US else MIN_US)
                if len(batch) >= _ROW_BATCH:
                    flush()
            flush()
            ids = list(fact_ids)
            sources = 0
            for i in range(0, len(ids), _SOURCE_BATCH):
                items = src.sources(ids[i:i + _SOURCE_BATCH])
                if items:
                    tx.insert_sources(items)
                    sources += len(items)
                    latest = max([latest] + [at for _f, _s, _e, at in items])
            _copy_operations(tx, dst_ns, operations, {e.id: e.key for e in entities},
                             {e.key: ent_map[e.id] for e in entities}, closed_version)
            for _id, _kind, at, _payload, undone_at in operations:
                latest = max(latest, at, undone_at if undone_at is not None else MIN_US)
            if latest > MIN_US:
                tx.note_system_time(latest)
    result.predicates += len(predicates)
    result.entities += len(entities)
    result.versions += versions
    result.facts += len(fact_ids)
    result.sources += sources
    result.operations += len(operations)


def _copy_operations(
    tx: WriteTx,
    dst_ns: int,
    operations: Sequence[tuple[str, str, int, str, int | None]],
    src_keys: dict[int, str],
    dst_ids: dict[str, int],
    closed_version: dict[int, tuple[str, int]],
) -> None:
    """Write the source's merges with their payloads' entity ids and closed
    rowids mapped to the destination's (through entity keys and (fact id,
    version) pairs, as an export does)."""
    for op_id, kind, at, payload, undone_at in operations:
        if kind != "merge":  # the only kind there is; a newer one would need its own mapping
            raise InvalidInputError(f"cannot copy operation {op_id} of unknown kind {kind!r}")
        if tx.operation(op_id) is not None:
            raise ConflictError(f"operation {op_id} already exists in the destination; copy into an empty store")
        restore_merge(tx, dst_ns, op_id, at, undone_at, portable_merge_payload(payload, src_keys, closed_version),
                      dst_ids)


def _copy_episodes(src: EpisodeStore, dst: EpisodeStore, name: str, result: CopyResult, tz: _dt.tzinfo) -> None:
    from .evidence.episodes import index_parts

    src_ns = src.namespace_id(name, create=False)
    dst_ns = dst.namespace_id(name)
    assert src_ns is not None and dst_ns is not None
    with src.read():
        recs: list[EpisodeRecord] = []
        last = 0
        while True:
            batch = src.episode_index_rows(src_ns, last, _ROW_BATCH)
            if not batch:
                break
            recs += batch
            last = batch[-1].rowid
        if not recs:
            return
        with dst.write() as tx:
            new_rowid: dict[int, int] = {}
            copied: list[EpisodeRecord] = []
            for rec in recs:
                moved = replace(rec, ns_id=dst_ns)
                rowid = tx.insert_episode(moved)
                new_rowid[rec.rowid] = rowid
                copied.append(replace(moved, rowid=rowid))
                if rec.superseded_by is not None and rec.superseded_at is not None:
                    tx.supersede_episode(rowid, rec.superseded_by, rec.superseded_at)
            # the lexical index, with each turn's neighbours in its session
            by_session: dict[str | None, list[EpisodeRecord]] = {}
            for rec in copied:
                by_session.setdefault(rec.session, []).append(rec)
            for session, turns in by_session.items():
                for i, rec in enumerate(turns):
                    prev = turns[i - 1] if session is not None and i > 0 else None
                    nxt = turns[i + 1] if session is not None and i + 1 < len(turns) else None
                    tx.replace_episode_index(rec.rowid, index_parts(rec, prev, nxt, tz), new=True)
            ids = [r.rowid for r in recs]
            for start in range(0, len(ids), _SOURCE_BATCH):
                times = src.episode_times(ids[start:start + _SOURCE_BATCH])
                if times:
                    tx.insert_episode_times([(new_rowid[t[0]], t[1], t[2], t[3], t[4]) for t in times])
            for model_id, model, dim in src.embedding_models():
                dst_model = tx.embedding_model_id(model, dim)
                after = 0
                while True:
                    vecs = src.load_vectors(src_ns, model_id, after, _ROW_BATCH)
                    if not vecs:
                        break
                    tx.put_episode_vectors(dst_model, [(new_rowid[v[0]], dst_ns, v[1]) for v in vecs
                                                       if v[0] in new_rowid])
                    result.vectors += len(vecs)
                    after = vecs[-1][0]
            tx.bump_episode_generation()
    result.episodes += len(recs)
