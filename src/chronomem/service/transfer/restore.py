"""The restore of portable records (:mod:`chronomem.service.transfer.portable`)
into an empty namespace of any store, inside one write transaction: the
second half of ``chronomem import`` of an export and of ``chronomem copy``.

Every record is checked before it is written. What is derived is not carried
but rebuilt the way ingest builds it: each episode's lexical index row (its
text, speaker, date words and captions, and the text of its session
neighbours) and the episode generation.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from typing import Any, Callable, Mapping, TypeGuard, cast

from ...core.codec import decode_literal
from ...core.limits import MAX_AGENT_CHARS, check_text
from ...core.names import normalize_key
from ...core.time import FIRST_US, LAST_US, MAX_US, MIN_US, Precision
from ...core.version import CLOSE_KINDS, END_KINDS, CloseKind, legacy_end_cause
from ...errors import ConflictError, InvalidInputError, InvalidIntervalError, StoreError
from ...store.protocol import EpisodeRecord, EpisodeWriteTx, Row, WriteTx
from ..identity import restore_merge
from .portable import _EPISODE_BATCH, STATED_OPEN, _little_endian

__all__ = ["Restorer"]

_ROW_BATCH = 10_000

_native = _little_endian  # the swap is its own inverse


# -- checks of one record's fields ----------------------------------------------------------
def _us(rec: Mapping[str, Any], name: str, *, optional: bool) -> int | None:
    value = rec.get(name)
    if value is None:
        if optional:
            return None
        raise InvalidInputError(f"{name} is missing")
    if isinstance(value, bool) or not isinstance(value, int) or not FIRST_US <= value <= LAST_US:
        raise InvalidInputError(f"{name} must be a time in years 1-9999 (microseconds since 1970, UTC)")
    return value


_HEX64 = re.compile(r"[0-9a-f]{64}")

def _prec(rec: Mapping[str, Any], name: str) -> int:
    value = rec.get(name)
    if value is None:
        return 0
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a precision name such as 'year'")
    return int(Precision.from_label(value))


def _stated_end(rec: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """``stated_to, stated_to_prec`` of a fact record (``None, None`` without
    one: files before export format 6 recorded none)."""
    value = rec.get("stated_end")
    if value is None:
        return None, None
    if value == STATED_OPEN:
        return MAX_US, 0
    at = _us(rec, "stated_end", optional=False)
    return at, _prec(rec, "stated_end_precision")


def _writer(rec: Mapping[str, Any]) -> str | None:
    """A record's ``recorded_by``: who wrote it, kept as exported (``None``:
    not recorded, or a file before export format 7)."""
    value = rec.get("recorded_by")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInputError("recorded_by must be a non-empty string or null")
    return check_text(value, "recorded_by", MAX_AGENT_CHARS)


def _opt_str(rec: Mapping[str, Any], name: str) -> str | None:
    value = rec.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string or null")
    return value


def _dump_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def _text(rec: Mapping[str, Any], name: str, missing: str) -> str:
    """The non-empty string ``rec[name]``; else an error saying ``missing``."""
    value = rec.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidInputError(missing)
    return value


def _is_positive_int(value: Any) -> TypeGuard[int]:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _new_key(rec: Mapping[str, Any], seen: Mapping[str, int], article: str, kind: str) -> tuple[str, str]:
    """The ``key`` and ``name`` of a predicate or entity record whose key is not in ``seen`` yet."""
    key = rec.get("key")
    name = rec.get("name")
    if not isinstance(key, str) or not isinstance(name, str) or not key:
        raise InvalidInputError(f"{article} {kind} needs 'key' and 'name'")
    if key in seen:
        raise InvalidInputError(f"{kind} {key!r} appears twice")
    return key, name


def _located(exc: InvalidInputError, where: str | None) -> InvalidInputError:
    """``exc`` with ``where`` (``"line 12"``) in front of its message; its type is kept."""
    if where is not None and not str(exc).startswith(where + ":"):
        exc.args = (f"{where}: {exc}",)
    return exc


class Restorer:
    """Writes the records of one namespace into its empty counterpart,
    inside the caller's write transaction ``tx``.

    Feed records with :meth:`add` in the order :func:`namespace_records`
    yields them (predicates and entities before the facts naming them,
    models before the vectors), then call :meth:`finish`. Every record is
    checked; an invalid one raises :class:`InvalidInputError` (prefixed with
    ``where``) and the caller's transaction rolls back. ``elsewhere`` ends the
    message of a :class:`ConflictError` for an id the store already holds.
    Episodes' lexical index rows are built here as ingest builds them, with
    date words in ``tz``.
    """

    def __init__(self, tx: WriteTx, ns_id: int, tz: _dt.tzinfo, *, elsewhere: str) -> None:
        self.tx = tx
        self.ns = ns_id
        self.tz = tz
        self.elsewhere = elsewhere
        self.entities: dict[str, int] = {}
        self.predicates: dict[str, int] = {}
        self.predicate_keys: set[str] = set()
        self.entity_keys: set[str] = set()
        self.versions: set[tuple[str, int]] = set()
        self.fact_ids: set[str] = set()
        self.source_count = 0
        self.max_time = MIN_US
        # where, id, at, undone_at, portable payload: written once the versions they closed are
        self.operations: list[tuple[str | None, str, int, int | None, dict[str, Any]]] = []
        self.operation_ids: set[str] = set()
        self.models: dict[str, tuple[int, int]] = {}  # name -> (this store's id, dim)
        self.episode_ids: set[str] = set()
        self.episode_count = 0
        self.tombstones = 0
        self.vector_count = 0
        self.import_keys: list[tuple[int, str, str, str]] = []
        self._rows: list[Row] = []
        self._new_fact_ids: list[str] = []  # not yet checked against the store (see _flush)
        self._sources: list[tuple[str, str | None, str | None, int]] = []
        self._times: list[tuple[int, int, int, str, int]] = []
        self._vectors: dict[int, list[tuple[int, int, bytes]]] = {}  # model id -> (rowid, ns, bytes)
        self._queued_vectors = 0
        # per session: its last live episode so far and the one before it (its
        # index row waits for the next turn, which is one of its neighbours)
        self._open_turns: dict[str, tuple[EpisodeRecord, EpisodeRecord | None]] = {}
        # supersessions carried without superseded_recorded_at (files written
        # before schema 6): (rowid, superseding id, the carried superseded_at)
        self._old_supersessions: list[tuple[int, str, int]] = []
        self._index_parts: Callable[..., tuple[str, str, str, str]] | None = None
        self._handlers: dict[str, Callable[[Mapping[str, Any]], None]] = {
            "predicate": self._predicate, "entity": self._entity, "fact": self._fact, "source": self._source,
            "operation": self._operation, "embedding_model": self._embedding_model, "episode": self._episode,
            "import_key": self._import_key,
        }

    # -- driving ------------------------------------------------------------------------
    def add(self, rec: Mapping[str, Any], where: str | None = None) -> None:
        """Check and write (or queue) one record."""
        kind = rec.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        try:
            if handler is None:
                raise InvalidInputError(f"unknown record type {kind!r}")
            if kind == "operation":
                self._operation(rec, where)  # its errors may surface in finish(): keep where
            else:
                handler(rec)
        except InvalidInputError as exc:
            raise _located(exc, where) from None

    def counts(self) -> dict[str, int]:
        """What was restored, by the field names of the import and copy results."""
        return {
            "entities": len(self.entities), "predicates": len(self.predicates), "versions": len(self.versions),
            "facts": len(self.fact_ids), "sources": self.source_count, "operations": len(self.operations),
            "episodes": self.episode_count, "tombstones": self.tombstones, "vectors": self.vector_count,
            "import_keys": len(self.import_keys),
        }

    def finish(self) -> None:
        """Write what is still queued, the merges, the last index rows; move
        the store's clock past every carried system time."""
        self._flush()
        for last, before in self._open_turns.values():
            self._index(last, before, None)
        self._open_turns.clear()
        self._restate_old_supersessions()
        if self.import_keys:
            self._etx().put_import_keys(self.import_keys)
        for where, op_id, at, undone, payload in self.operations:
            try:
                restore_merge(self.tx, self.ns, op_id, at, undone, payload, self.entities)
            except InvalidInputError as exc:
                raise _located(InvalidInputError(f"operation {op_id}: {exc}"), where) from None
        if self.episode_count or self.tombstones:
            self._etx().bump_episode_generation()
        if self.max_time > MIN_US:
            self.tx.note_system_time(self.max_time)

    def _restate_old_supersessions(self) -> None:
        """A file from before schema 6 gives ``superseded_at`` as the
        recording time (then ``max(recorded_at)`` of the two episodes): it
        becomes ``superseded_recorded_at``, and ``superseded_at`` the
        superseding episode's ``coalesce(occurred_at, recorded_at)``, as
        migration 0006 restates a stored one (kept when that episode is not
        in the file)."""
        etx = self._etx() if self._old_supersessions else None
        for rowid, by, carried in self._old_supersessions:
            assert etx is not None
            newer = etx.episode_by_id(by)
            takes_effect = carried if newer is None else (
                newer.occurred_at if newer.occurred_at is not None else newer.recorded_at)
            etx.supersede_episode(rowid, by, takes_effect, carried)
        self._old_supersessions = []

    def _seen(self, *times: int | None) -> None:
        for t in times:
            if t is not None and t != MAX_US and t > self.max_time:
                self.max_time = t

    def _taken(self, what: str) -> ConflictError:
        return ConflictError(f"{what} already exists in this database; {self.elsewhere}")

    def _flush(self) -> None:
        if self._new_fact_ids:
            taken = self.tx.existing_fact_ids(self._new_fact_ids)
            if taken:
                raise self._taken(f"fact {next(f for f in self._new_fact_ids if f in taken)}")
            self._new_fact_ids = []
        if self._rows:
            self.tx.insert_rows(self._rows)
            self._rows = []
        if self._sources:
            self.tx.insert_sources(self._sources)
            self._sources = []
        if self._times:
            self._etx().insert_episode_times(self._times)
            self._times = []
        for model_id, items in self._vectors.items():
            self._etx().put_episode_vectors(model_id, items)
        self._vectors = {}
        self._queued_vectors = 0

    @staticmethod
    def _ref(table: Mapping[str, int], key: object, what: str) -> int:
        if not isinstance(key, str) or key not in table:
            raise InvalidInputError(f"{what} {key!r} is not defined earlier in the file")
        return table[key]

    # -- the fact side ----------------------------------------------------------------------
    def _predicate(self, rec: Mapping[str, Any]) -> None:
        key, name = _new_key(rec, self.predicates, "a", "predicate")
        cardinality = rec.get("cardinality", "many")
        if cardinality not in ("one", "many"):
            raise InvalidInputError(f"cardinality must be 'one' or 'many', not {cardinality!r}")
        aliases = rec.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InvalidInputError("aliases must be a list of strings")
        keys = [key] + [normalize_key(a, "predicate alias") for a in aliases]
        taken = [k for k in keys if k in self.predicate_keys]
        if taken or len(set(keys)) != len(keys):
            raise InvalidInputError(f"predicate name {(taken or keys)[0]!r} is used twice")
        self.predicate_keys.update(keys)
        if rec.get("declared") or aliases:
            p = self.tx.define_predicate(
                self.ns, key, name, cardinality, _opt_str(rec, "inverse"), _opt_str(rec, "description"),
                [(normalize_key(a, "predicate alias"), a) for a in aliases],
            )
        else:
            p = self.tx.create_predicate(self.ns, key, name)
        self.predicates[key] = p.id

    def _entity(self, rec: Mapping[str, Any]) -> None:
        key, name = _new_key(rec, self.entities, "an", "entity")
        created = _us(rec, "created_at", optional=False)
        assert created is not None
        self._seen(created)
        eid = int(self.tx.insert_entity(
            self.ns, key, name, _opt_str(rec, "entity_type"), _dump_json(rec.get("properties")), created
        ))
        self.entities[key] = eid
        keys = rec.get("keys")
        if keys is None:  # hand-written: own key plus aliases
            keys = [{"key": key, "alias": None}] + [
                {"key": normalize_key(a, "alias"), "alias": a} for a in rec.get("aliases") or []
            ]
        if not isinstance(keys, list):
            raise InvalidInputError("keys must be a list")
        for k in keys:
            if not isinstance(k, dict) or not isinstance(k.get("key"), str) or not k["key"]:
                raise InvalidInputError("each key needs a 'key' string")
            if k["key"] in self.entity_keys:
                raise InvalidInputError(f"entity name key {k['key']!r} is used twice")
            self.entity_keys.add(k["key"])
            self.tx.add_entity_key(self.ns, k["key"], eid, _opt_str(k, "alias"))

    def _fact(self, rec: Mapping[str, Any]) -> None:
        fid = _text(rec, "id", "a fact needs an 'id'")
        version = rec.get("version")
        if not _is_positive_int(version):
            raise InvalidInputError("version must be a positive integer")
        if (fid, version) in self.versions:
            raise InvalidInputError(f"fact {fid} version {version} appears twice")
        if fid not in self.fact_ids:
            self.fact_ids.add(fid)
            self._new_fact_ids.append(fid)  # checked against the store at the flush
        self.versions.add((fid, version))
        subject = self._ref(self.entities, rec.get("subject"), "subject")
        predicate = self._ref(self.predicates, rec.get("predicate"), "predicate")
        obj_key = rec.get("object")
        literal = _opt_str(rec, "object_literal")
        object_id = self._ref(self.entities, obj_key, "object") if obj_key is not None else None
        if (object_id is None) == (literal is None):
            raise InvalidInputError("a fact needs exactly one of 'object' and 'object_literal'")
        if literal is not None:
            try:
                decode_literal(literal)
            except ValueError:
                raise InvalidInputError(f"{literal!r} is not an encoded literal") from None
        props = rec.get("properties")
        if props is not None and not isinstance(props, dict):
            raise InvalidInputError("properties must be an object or null")
        vf = _us(rec, "valid_from", optional=True)
        vt = _us(rec, "valid_to", optional=True)
        sf = _us(rec, "system_from", optional=False)
        st = _us(rec, "system_to", optional=True)
        assert sf is not None
        vf_us = MIN_US if vf is None else vf
        vt_us = MAX_US if vt is None else vt
        st_us = MAX_US if st is None else st
        if vt_us <= vf_us or st_us <= sf:
            raise InvalidIntervalError(f"fact {fid} has an empty valid or system interval")
        stated = _stated_end(rec)
        if stated[0] is not None and stated[0] <= vf_us:
            raise InvalidIntervalError(f"fact {fid} has a stated_end at or before its valid_from")
        conf = rec.get("confidence", 1.0)
        if isinstance(conf, bool) or not isinstance(conf, (int, float)):
            raise InvalidInputError("confidence must be a number")
        self._seen(sf, st)
        self._rows.append(Row(
            None, fid, version, self.ns, subject, predicate, object_id, literal,
            vf_us, _prec(rec, "valid_from_precision") if vf is not None else 0,
            vt_us, _prec(rec, "valid_to_precision") if vt is not None else 0,
            sf, st_us, float(conf), _opt_str(rec, "source"), _opt_str(rec, "episode_id"),
            _dump_json(props), *self._end_cause(rec), stated_to=stated[0], stated_to_prec=stated[1],
            recorded_by=_writer(rec),
        ))
        if len(self._rows) >= _ROW_BATCH:
            self._flush()

    def _end_cause(self, rec: Mapping[str, Any]) -> tuple[str | None, str | None, str | None, str | None, str | None]:
        """``invalidated_by, close_kind, closed_by, end_kind, end_reason`` of a
        fact record. A record without ``end_kind`` (export format 3 and
        older) had the end reason in ``invalidated_by``: moved as migration
        0005 moves it."""
        close_kind = _opt_str(rec, "close_kind")
        if close_kind is not None and close_kind not in CLOSE_KINDS:
            raise InvalidInputError(f"close_kind {close_kind!r} is not one of {', '.join(CLOSE_KINDS)}")
        by, closed_by = _opt_str(rec, "invalidated_by"), _opt_str(rec, "closed_by")
        if "end_kind" not in rec:
            kind, by, reason, closed_by = legacy_end_cause(by, close_kind, closed_by, self.fact_ids.__contains__)
            return by, close_kind, closed_by, kind, reason
        kind, reason = _opt_str(rec, "end_kind"), _opt_str(rec, "end_reason")
        if kind is not None and kind not in END_KINDS:
            raise InvalidInputError(f"end_kind {kind!r} is not one of {', '.join(sorted(END_KINDS))}")
        if by is not None and kind != CloseKind.SUPERSEDED.value:
            raise InvalidInputError("invalidated_by names the superseding fact: it needs end_kind 'superseded'")
        return by, close_kind, closed_by, kind, reason

    def _source(self, rec: Mapping[str, Any]) -> None:
        fid = rec.get("fact_id")
        if not isinstance(fid, str) or fid not in self.fact_ids:
            raise InvalidInputError(f"source for unknown fact {fid!r}")
        at = _us(rec, "recorded_at", optional=False)
        assert at is not None
        self._seen(at)
        self._sources.append((fid, _opt_str(rec, "source"), _opt_str(rec, "episode_id"), at))
        self.source_count += 1
        if len(self._sources) >= _ROW_BATCH:
            self._flush()

    def _operation(self, rec: Mapping[str, Any], where: str | None = None) -> None:
        """Check a merge and queue it: it is written (in :meth:`finish`) after
        the versions it closed."""
        op_id = _text(rec, "id", "an operation needs an 'id'")
        if op_id in self.operation_ids:
            raise InvalidInputError(f"operation {op_id} appears twice")
        if rec.get("kind") != "merge":
            raise InvalidInputError(f"unknown operation kind {rec.get('kind')!r}")
        if self.tx.operation(op_id) is not None:
            raise self._taken(f"operation {op_id}")
        at = _us(rec, "at", optional=False)
        undone = _us(rec, "undone_at", optional=True)
        assert at is not None
        if undone is not None and undone <= at:
            raise InvalidIntervalError(f"operation {op_id} is undone before it was made")
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            raise InvalidInputError("an operation needs a 'payload' object")
        self._seen(at, undone)
        self.operation_ids.add(op_id)
        self.operations.append((where, op_id, at, undone, payload))

    # -- the episode side ---------------------------------------------------------------------
    def _etx(self) -> EpisodeWriteTx:
        if not self.tx.capabilities.episodes:
            raise StoreError(f"the {type(self.tx).__name__} backend does not store episodes")
        return cast(EpisodeWriteTx, self.tx)

    def _import_key(self, rec: Mapping[str, Any]) -> None:
        """A transcript import's key: hashes only (``service/ingest/run.py``),
        for an episode carried earlier in the same file."""
        key = rec.get("key")
        digest = rec.get("digest")
        episode_id = rec.get("episode_id")
        if not isinstance(key, str) or not _HEX64.fullmatch(key):
            raise InvalidInputError("an import_key's key must be 64 hex digits")
        if not isinstance(digest, str) or not (digest == "" or _HEX64.fullmatch(digest)):
            raise InvalidInputError("an import_key's digest must be 64 hex digits or empty (erased)")
        if not isinstance(episode_id, str) or episode_id not in self.episode_ids:
            raise InvalidInputError(f"import_key {key[:12]}…: episode {episode_id!r} is not in the file before it")
        if not self.tx.capabilities.episodes:
            return
        self.import_keys.append((self.ns, key, episode_id, digest))

    def _embedding_model(self, rec: Mapping[str, Any]) -> None:
        name = _text(rec, "name", "an embedding model needs a 'name'")
        dim = rec.get("dim")
        if not _is_positive_int(dim):
            raise InvalidInputError("an embedding model's dim must be a positive integer")
        if name in self.models:
            raise InvalidInputError(f"embedding model {name!r} appears twice")
        if not self.tx.capabilities.episodes:
            return  # a store without episodes has nothing to embed; a model alone carries nothing
        self.models[name] = (self._etx().embedding_model_id(name, dim), dim)

    def _episode(self, rec: Mapping[str, Any]) -> None:
        etx = self._etx()
        eid = _text(rec, "id", "an episode needs an 'id'")
        if eid in self.episode_ids:
            raise InvalidInputError(f"episode {eid} appears twice")
        text = rec.get("text")
        if not isinstance(text, str):
            raise InvalidInputError("an episode's text must be a string")
        erased = _us(rec, "erased_at", optional=True)
        mentions = rec.get("mentions") or []
        vectors = rec.get("vectors") or {}
        if not isinstance(mentions, list) or not isinstance(vectors, dict):
            raise InvalidInputError("mentions must be a list and vectors an object")
        if erased is None and not text.strip():
            raise InvalidInputError(f"episode {eid} has no text")
        if erased is not None and (text or mentions or vectors):
            raise InvalidInputError(f"episode {eid} is erased: it carries no text, mentions or vectors")
        occurred = _us(rec, "occurred_at", optional=True)
        recorded = _us(rec, "recorded_at", optional=False)
        superseded_by = _opt_str(rec, "superseded_by")
        superseded_at = _us(rec, "superseded_at", optional=True)
        superseded_recorded = _us(rec, "superseded_recorded_at", optional=True)
        if (superseded_by is None) != (superseded_at is None):
            raise InvalidInputError("superseded_by and superseded_at go together")
        if superseded_recorded is not None and superseded_by is None:
            raise InvalidInputError("superseded_recorded_at needs superseded_by")
        metadata = rec.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be an object or null")
        assert recorded is not None
        if etx.episode_by_id(eid) is not None:
            raise self._taken(f"episode {eid}")
        times: list[tuple[int, int, str, int]] = []
        for m in mentions:
            if not isinstance(m, dict) or not isinstance(m.get("phrase"), str):
                raise InvalidInputError("each mention needs a 'phrase'")
            start, end = _us(m, "start", optional=False), _us(m, "end", optional=False)
            assert start is not None and end is not None
            if end <= start:
                raise InvalidIntervalError(f"the mention {m['phrase']!r} has an empty interval")
            prec = _prec(m, "precision")
            if not prec:
                raise InvalidInputError(f"the mention {m['phrase']!r} needs a precision")
            times.append((start, end, m["phrase"], prec))
        blobs: list[tuple[int, bytes]] = []
        for model, blob in vectors.items():
            if model not in self.models:
                raise InvalidInputError(f"embedding model {model!r} is not defined earlier in the file")
            model_id, dim = self.models[model]
            if not isinstance(blob, bytes) or len(blob) != 4 * dim:
                raise InvalidInputError(f"the {model} vector of episode {eid} is not {dim} float32 values")
            blobs.append((model_id, _native(blob)))
        stored = EpisodeRecord(
            0, eid, self.ns, text, occurred, _prec(rec, "occurred_precision") or None, recorded,
            _opt_str(rec, "source"), _opt_str(rec, "session"), _opt_str(rec, "speaker"),
            # as add_episode stores it (an empty dict: none)
            json.dumps(metadata, sort_keys=True, ensure_ascii=False) if metadata else None,
            superseded_by, superseded_at, erased, superseded_recorded, _writer(rec),
        )
        rowid = etx.restore_episode(stored)
        self.episode_ids.add(eid)
        if superseded_by is not None and superseded_recorded is None:
            assert superseded_at is not None
            self._old_supersessions.append((rowid, superseded_by, superseded_at))
        # erased_at and superseded_recorded_at are the source clock's;
        # recorded_at may be given by the caller and never moved the source's
        # clock, and superseded_at is a valid time
        self._seen(erased, superseded_recorded)
        if erased is not None:
            self.tombstones += 1
            return
        self.episode_count += 1
        self._times.extend((rowid, a, b, phrase, prec) for a, b, phrase, prec in times)
        for model_id, blob in blobs:
            self._vectors.setdefault(model_id, []).append((rowid, self.ns, blob))
        self.vector_count += len(blobs)
        self._queued_vectors += len(blobs)
        self._turn(dataclasses.replace(stored, rowid=rowid))
        if len(self._times) >= _ROW_BATCH or self._queued_vectors >= _EPISODE_BATCH:
            self._flush()

    def _turn(self, rec: EpisodeRecord) -> None:
        """Index a live episode once both its session neighbours are known:
        those of ingest's index (the live turns just before and after it in
        its session, by rowid, which keeps the source's order)."""
        if rec.session is None:
            self._index(rec, None, None)
            return
        held = self._open_turns.get(rec.session)
        if held is not None:
            self._index(held[0], held[1], rec)
        self._open_turns[rec.session] = (rec, held[0] if held is not None else None)

    def _index(self, rec: EpisodeRecord, prev: EpisodeRecord | None, nxt: EpisodeRecord | None) -> None:
        if self._index_parts is None:
            from ..evidence.episodes import index_parts  # the evidence package loads on first episode only

            self._index_parts = index_parts
        self._etx().replace_episode_index(rec.rowid, self._index_parts(rec, prev, nxt, self.tz), new=True)
