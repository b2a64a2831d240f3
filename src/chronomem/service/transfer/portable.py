"""Portable records: one namespace as store-independent records, and their
restore into an empty namespace of any store.

The one serializer behind ``chronomem export`` / ``import`` (:mod:`.io`
writes these records as JSON lines) and ``chronomem copy`` (:mod:`.copy`
streams them from one store into another), so a backup and a copy carry
exactly the same things. :func:`namespace_records` yields, in this order:

* ``predicate`` and ``entity`` records (every name key of an entity, also
  the keys a merge moved);
* ``fact`` records, one per version, with both time axes, provenance, what
  cut its valid interval short (``end_kind``, ``invalidated_by``,
  ``end_reason``, and ``stated_end``: the end it was given, where a cut left
  no closed version to record it), how the version was closed and who
  recorded it (``recorded_by``); ``source`` records (extra evidence, with the
  episode each cites); ``operation`` records (merges and their undo records);
* ``embedding_model`` records (name and dimension of every model the store
  records, in registration order, so ``embedder="auto"`` picks the same one)
  and ``episode`` records: text, ``occurred_at`` with its precision,
  ``recorded_at``, source, session, speaker, metadata, supersession
  (``superseded_by``; ``superseded_at``, when it takes effect in valid
  time; ``superseded_recorded_at``, when it was recorded), erasure (a
  tombstone keeps its id and times, its text is empty), who recorded it, the resolved time
  mentions and the float32 vector of each model (the stored int8 vector
  times its scale: importing it stores the same int8 bytes again);
* ``import_key`` records: what transcript imports stored (a hashed message
  key, the episode holding its latest version, a digest of that version),
  so a restored memory does not import the same messages again. The
  per-file fingerprints are not carried (they describe this machine's files).

A record is a dict shaped like its JSON line (``docs/cli.md``) except that
times are integer UTC microseconds (``None``: an unknown start, an open end,
a version still believed) and vectors are float32 little-endian bytes;
:data:`TIME_FIELDS` says which fields hold times, for a text codec. Fact,
episode and operation ids stay as in the source; store-local integer ids
become entity keys, ``(fact id, version)`` pairs and model names.

:class:`~chronomem.service.transfer.restore.Restorer` writes records into
one write transaction. What is derived is not carried but rebuilt the way
ingest builds it: each episode's lexical index row (its text, speaker, date
words and captions, and the text of its session neighbours) and the episode
generation. Not carried: the erasure log (counts of physical deletions, which
no read returns).
"""

from __future__ import annotations

import json
import sys
from array import array
from typing import Any, Iterator, cast

from ...core.quantize import dequantize
from ...core.time import MAX_US, MIN_US, Precision
from ...errors import InvalidInputError
from ...store.protocol import EpisodeStore, Row, Store
from ..identity import portable_merge_payload

__all__ = ["MENTION_TIME_FIELDS", "RECORD_TYPES", "Record", "STATED_OPEN", "TIME_FIELDS", "namespace_is_empty",
           "namespace_records"]

Record = dict[str, Any]

RECORD_TYPES = ("predicate", "entity", "fact", "source", "operation", "embedding_model", "episode", "import_key")

#: The fields of each record type that hold times. An episode's
#: ``mentions`` hold ``start`` / ``end`` times too, and its ``vectors`` map
#: model names to float32 bytes.
TIME_FIELDS: dict[str, tuple[str, ...]] = {
    "entity": ("created_at",),
    "fact": ("valid_from", "valid_to", "system_from", "system_to"),
    "source": ("recorded_at",),
    "operation": ("at", "undone_at"),
    "episode": ("occurred_at", "recorded_at", "superseded_at", "superseded_recorded_at", "erased_at"),
}
MENTION_TIME_FIELDS = ("start", "end")
#: a fact record's ``stated_end`` for an open end (else a time, or ``None``: none recorded)
STATED_OPEN = "open"

_SOURCE_BATCH = 500
_EPISODE_BATCH = 1000


# -- shared helpers ---------------------------------------------------------------
def _prec_label(prec: int | None) -> str | None:
    return Precision(prec).label if prec else None


def _stated_end(r: Row) -> dict[str, Any]:
    """The end a version was given before another value cut it, where no
    closed version records it (``Row.stated_to``): ``stated_end`` a time,
    ``"open"`` or ``None`` (none recorded), with its precision."""
    if r.stated_to is None:
        return {"stated_end": None, "stated_end_precision": None}
    if r.stated_to == MAX_US:
        return {"stated_end": STATED_OPEN, "stated_end_precision": None}
    return {"stated_end": r.stated_to, "stated_end_precision": _prec_label(r.stated_to_prec)}


def _props(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _little_endian(blob: bytes) -> bytes:
    """float32 bytes in little-endian order (the store's native order is
    little-endian everywhere chronomem runs; this keeps a file portable)."""
    if sys.byteorder == "little":
        return blob
    a = array("f", blob)
    a.byteswap()
    return a.tobytes()


def _has_episodes(store: Store) -> bool:
    return store.capabilities.episodes


def namespace_is_empty(store: Store, ns_id: int) -> bool:
    """No entity, predicate or episode (not even a tombstone) in the namespace."""
    if store.entities(ns_id) or store.predicates(ns_id):
        return False
    return not (_has_episodes(store) and cast(EpisodeStore, store).episode_rows(ns_id, 0, 1))


# -- records of a namespace -----------------------------------------------------------
def namespace_records(store: Store, ns_id: int) -> Iterator[Record]:
    """Every record of namespace ``ns_id``; run it inside ``store.read()`` so
    they are one consistent snapshot."""
    predicates = store.predicates(ns_id)
    for p in predicates:
        yield {
            "type": "predicate", "key": p.key, "name": p.name, "cardinality": p.cardinality,
            "inverse": p.inverse, "description": p.description, "declared": p.declared, "aliases": list(p.aliases),
        }
    keys_by_entity: dict[int, list[dict[str, str | None]]] = {}
    for key, eid, alias_name in store.entity_keys(ns_id):
        keys_by_entity.setdefault(eid, []).append({"key": key, "alias": alias_name})
    entity_key: dict[int, str] = {}
    for e in store.entities(ns_id):
        entity_key[e.id] = e.key
        yield {
            "type": "entity", "key": e.key, "name": e.name, "entity_type": e.type,
            "properties": _props(e.properties), "created_at": e.created_at, "aliases": list(e.aliases),
            "keys": keys_by_entity.get(e.id, []),
        }
    pred_key = {p.id: p.key for p in predicates}
    operations = store.operations(ns_id)
    op_ids = {op[0] for op in operations}
    closed_version: dict[int, tuple[str, int]] = {}  # rowid -> (fact id, version), of merged-away versions
    fact_ids: dict[str, None] = {}
    for r in store.iter_rows(ns_id):
        fact_ids.setdefault(r.fact_id, None)
        if r.closed_by in op_ids and r.rowid is not None:
            closed_version[r.rowid] = (r.fact_id, r.version)
        yield {
            "type": "fact", "id": r.fact_id, "version": r.version,
            "subject": entity_key[r.subject_id], "predicate": pred_key[r.predicate_id],
            "object": entity_key[r.object_id] if r.object_id is not None else None,
            "object_literal": r.object_lit,
            "valid_from": None if r.valid_from == MIN_US else r.valid_from,
            "valid_from_precision": _prec_label(r.valid_from_prec),
            "valid_to": None if r.valid_to == MAX_US else r.valid_to,
            "valid_to_precision": _prec_label(r.valid_to_prec),
            "system_from": r.system_from, "system_to": None if r.system_to == MAX_US else r.system_to,
            "confidence": r.confidence, "source": r.source, "episode_id": r.episode_id,
            "properties": _props(r.properties), "invalidated_by": r.invalidated_by,
            "close_kind": r.close_kind, "closed_by": r.closed_by,
            "end_kind": r.end_kind, "end_reason": r.end_reason,
            **_stated_end(r), "recorded_by": r.recorded_by,
        }
    ids = list(fact_ids)
    for i in range(0, len(ids), _SOURCE_BATCH):
        for fid, src, ep, at in store.sources(ids[i:i + _SOURCE_BATCH]):
            yield {"type": "source", "fact_id": fid, "source": src, "episode_id": ep, "recorded_at": at}
    for op_id, kind, at, payload, undone_at in operations:
        if kind != "merge":  # the only kind there is; a newer one would need its own mapping
            raise InvalidInputError(f"cannot carry operation {op_id} of unknown kind {kind!r}")
        yield {
            "type": "operation", "id": op_id, "kind": kind, "at": at, "undone_at": undone_at,
            "payload": portable_merge_payload(payload, entity_key, closed_version),
        }
    if _has_episodes(store):
        yield from _episode_records(cast(EpisodeStore, store), ns_id)


def _episode_records(store: EpisodeStore, ns_id: int) -> Iterator[Record]:
    models = store.embedding_models()
    for _id, name, dim in models:
        yield {"type": "embedding_model", "name": name, "dim": dim}
    last = 0
    while True:
        batch = store.episode_rows(ns_id, last, _EPISODE_BATCH)
        if not batch:
            break
        first, last = batch[0].rowid, batch[-1].rowid
        mentions: dict[int, list[dict[str, Any]]] = {}
        for rowid, start, end, phrase, prec in store.episode_times([r.rowid for r in batch]):
            mentions.setdefault(rowid, []).append(
                {"phrase": phrase, "start": start, "end": end, "precision": Precision(prec).label})
        # the batch is every episode of the namespace with a rowid in
        # [first, last], so its vectors are the first len(batch) at or after first
        vectors: dict[int, dict[str, bytes]] = {}
        for model_id, name, _dim in models:
            for rowid, q, scale, *_ in store.load_vectors(ns_id, model_id, first - 1, len(batch)):
                if rowid <= last:
                    # the format stays float32: the values the store holds (int8 times scale), exactly
                    vectors.setdefault(rowid, {})[name] = _little_endian(dequantize(q, scale))
        for r in batch:
            yield {
                "type": "episode", "id": r.id, "text": r.text,
                "occurred_at": r.occurred_at, "occurred_precision": _prec_label(r.occurred_prec),
                "recorded_at": r.recorded_at, "source": r.source, "session": r.session, "speaker": r.speaker,
                "metadata": _props(r.metadata), "superseded_by": r.superseded_by, "superseded_at": r.superseded_at,
                "superseded_recorded_at": r.superseded_recorded_at,
                "erased_at": r.erased_at, "mentions": mentions.get(r.rowid, []), "vectors": vectors.get(r.rowid, {}),
                "recorded_by": r.recorded_by,
            }
    for key, episode_id, digest in store.all_import_keys(ns_id):
        yield {"type": "import_key", "key": key, "episode_id": episode_id, "digest": digest}
