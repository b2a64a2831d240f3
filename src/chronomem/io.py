"""Import and export: JSONL (lossless backup of one namespace, or plain fact
lines) and CSV/TSV tables with a column mapping.

The CLI's ``import`` / ``export`` commands are thin wrappers over these
functions. CSV/TSV tables are read by :mod:`chronomem.io_table`
(:func:`import_table`, re-exported here).

* :func:`export_jsonl` writes one namespace as JSON lines: a header, the
  predicates, the entities (with every name key), every fact *version* with
  both time axes, the extra evidence rows and the merge operations (with
  their undo records). :func:`import_jsonl` restores such a file into an
  empty namespace so that ``facts(as_of=..., known_at=...)`` and ``history``
  answer exactly as in the source (by every name, also a name a merge moved),
  and ``unmerge`` undoes a restored merge by its original operation id.
* :func:`import_jsonl` also reads plain JSON lines, one :meth:`Memory.add_fact`
  parameter dict per line, and :func:`import_table` reads CSV/TSV files; both
  stream rows into :meth:`Memory.add_facts` in batches.

Line-oriented imports validate every row before writing it. By default an
invalid row is skipped and reported (``ImportResult.errors``); with
``strict=True`` the whole file is validated first and nothing is written if any
row is invalid. Each batch is one transaction; re-running an import is safe
because adds never duplicate facts.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from itertools import chain
from typing import IO, TYPE_CHECKING, Any, Iterator, Mapping

from ._codec import decode_literal
from ._gc import paused_gc
from ._identity import portable_merge_payload, restore_merge
from ._jsonobj import load_object
from ._import_rows import ImportResult, Progress, add_batches, checked_item, more_errors, read_lines
from .errors import ConflictError, InvalidInputError, InvalidIntervalError
from .io_table import TABLE_FIELDS, import_table
from .normalize import normalize_key
from .store.base import Row, WriteTx
from .timeutil import MAX_US, MIN_US, Precision, format_us, parse_time, to_us

if TYPE_CHECKING:
    from .memory import Memory

__all__ = [
    "EXPORT_FORMAT",
    "ExportResult",
    "ImportResult",
    "TABLE_FIELDS",
    "export_jsonl",
    "import_jsonl",
    "import_table",
]

log = logging.getLogger("chronomem.io")

EXPORT_FORMAT = "chronomem-export"
#: Version 2 added the ``operation`` lines (merges); version 1 files still restore.
EXPORT_VERSION = 2
_READS_VERSIONS = (1, 2)
_ROW_BATCH = 10_000
_SOURCE_BATCH = 500


@dataclass
class ExportResult:
    namespace: str
    predicates: int = 0
    entities: int = 0
    versions: int = 0
    sources: int = 0
    operations: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- time values in the export --------------------------------------------
def _iso(us: int) -> str:
    return format_us(us, Precision.MICROSECOND)


def _iso_or_none(us: int, sentinel: int) -> str | None:
    return None if us == sentinel else _iso(us)


def _prec_label(prec: int) -> str | None:
    return Precision(prec).label if prec else None


# -- export ---------------------------------------------------------------
def _dump(fp: IO[str], obj: Mapping[str, Any]) -> None:
    fp.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


def _props(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def export_jsonl(mem: "Memory", fp: IO[str]) -> ExportResult:
    """Write the whole namespace of ``mem`` to ``fp`` as JSON lines (a
    consistent snapshot). See ``docs/cli.md`` for the line format."""
    store = mem.store
    ns = mem._ns
    result = ExportResult(mem.namespace)
    with store.read():
        _dump(fp, {
            "type": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "namespace": mem.namespace,
            "exported_at": _iso(to_us(mem.now())),
        })
        for p in store.predicates(ns):
            _dump(fp, {
                "type": "predicate", "key": p.key, "name": p.name, "cardinality": p.cardinality,
                "inverse": p.inverse, "description": p.description, "declared": p.declared,
                "aliases": list(p.aliases),
            })
            result.predicates += 1
        keys_by_entity: dict[int, list[dict[str, str | None]]] = {}
        for key, eid, alias_name in store.entity_keys(ns):
            keys_by_entity.setdefault(eid, []).append({"key": key, "alias": alias_name})
        entity_key: dict[int, str] = {}
        for e in store.entities(ns):
            entity_key[e.id] = e.key
            _dump(fp, {
                "type": "entity", "key": e.key, "name": e.name, "entity_type": e.type,
                "properties": _props(e.properties), "created_at": _iso(e.created_at),
                "aliases": list(e.aliases), "keys": keys_by_entity.get(e.id, []),
            })
            result.entities += 1
        pred_key = {p.id: p.key for p in store.predicates(ns)}
        operations = store.operations(ns)
        op_ids = {op[0] for op in operations}
        closed_version: dict[int, tuple[str, int]] = {}  # rowid -> (fact id, version), of merged-away versions
        fact_ids: dict[str, None] = {}
        for r in store.iter_rows(ns):
            fact_ids.setdefault(r.fact_id, None)
            if r.closed_by in op_ids and r.rowid is not None:
                closed_version[r.rowid] = (r.fact_id, r.version)
            _dump(fp, {
                "type": "fact", "id": r.fact_id, "version": r.version,
                "subject": entity_key[r.subject_id], "predicate": pred_key[r.predicate_id],
                "object": entity_key[r.object_id] if r.object_id is not None else None,
                "object_literal": r.object_lit,
                "valid_from": _iso_or_none(r.vf, MIN_US), "valid_from_precision": _prec_label(r.vf_prec),
                "valid_to": _iso_or_none(r.vt, MAX_US), "valid_to_precision": _prec_label(r.vt_prec),
                "system_from": _iso(r.sf), "system_to": _iso_or_none(r.st, MAX_US),
                "confidence": r.confidence, "source": r.source, "episode_id": r.episode_id,
                "properties": _props(r.properties), "invalidated_by": r.invalidated_by,
                "close_kind": r.close_kind, "closed_by": r.closed_by,
            })
            result.versions += 1
        ids = list(fact_ids)
        for i in range(0, len(ids), _SOURCE_BATCH):
            for fid, src, ep, at in store.sources(ids[i:i + _SOURCE_BATCH]):
                _dump(fp, {"type": "source", "fact_id": fid, "source": src, "episode_id": ep,
                           "recorded_at": _iso(at)})
                result.sources += 1
        for op_id, kind, at, payload, undone_at in operations:
            if kind != "merge":  # the only kind there is; a newer one would need its own mapping
                raise InvalidInputError(f"cannot export operation {op_id} of unknown kind {kind!r}")
            _dump(fp, {
                "type": "operation", "id": op_id, "kind": kind, "at": _iso(at),
                "undone_at": None if undone_at is None else _iso(undone_at),
                "payload": portable_merge_payload(payload, entity_key, closed_version),
            })
            result.operations += 1
    log.info("exported namespace %s: %s", mem.namespace, result)
    return result


# -- JSONL import ---------------------------------------------------------
def _json_line(number: int, text: str) -> dict[str, Any]:
    return load_object(text, f"line {number}:", invalid="not valid JSON",
                       not_object="expected a JSON object, not {type}")


def import_jsonl(
    mem: "Memory",
    fp: IO[str] | IO[bytes],
    *,
    strict: bool = False,
    batch_size: int = 50_000,
    progress: Progress | None = None,
) -> ImportResult:
    """Import JSON lines from ``fp`` (text or binary).

    A file written by :func:`export_jsonl` is restored exactly (every version,
    both time axes) into the namespace of ``mem``, which must be empty; the
    restore is one transaction. Any other file is read as plain fact lines,
    each an object of :meth:`Memory.add_fact` parameters
    (``{"subject": ..., "predicate": ..., "object": ..., "valid_from": ...}``).
    """
    start = fp.tell() if strict and fp.seekable() else None
    counter = [0]
    lines = ((n, t) for n, t in read_lines(fp, counter) if t.strip())
    first = next(lines, None)
    if first is None:
        return ImportResult("jsonl")
    head = _json_line(*first)
    if head.get("type") == EXPORT_FORMAT:
        return _restore(mem, head, lines, counter, progress)
    if strict:
        # validate everything first so that nothing is written on a bad row
        if start is None:
            raise InvalidInputError("strict import of plain JSON lines needs a seekable file")
        check = ImportResult("jsonl")
        for number, text in chain([first], lines):
            _plain_item(mem, number, text, check)
        if check.skipped:
            raise InvalidInputError(check.errors[0] + more_errors(check.skipped))
        fp.seek(start)
        counter[0] = 0
        lines = ((n, t) for n, t in read_lines(fp, counter) if t.strip())
        first = next(lines)
    result = ImportResult("jsonl")
    items = ((n, _plain_item(mem, n, t, result)) for n, t in chain([first], lines))
    add_batches(mem, items, result, batch_size, progress, counter)
    return result


def _plain_item(mem: "Memory", number: int, text: str, result: ImportResult) -> dict[str, Any] | None:
    result.rows += 1
    try:
        return checked_item(mem, _json_line(number, text), number)
    except InvalidInputError as exc:
        msg = str(exc) if str(exc).startswith("line ") else f"line {number}: {exc}"
        result._skip(msg)
        return None


# -- restore of an export -------------------------------------------------
def _time(obj: Mapping[str, Any], name: str, number: int, *, optional: bool) -> int | None:
    value = obj.get(name)
    if value is None:
        if optional:
            return None
        raise InvalidInputError(f"line {number}: {name} is missing")
    return parse_time(value, name).us


def _prec(obj: Mapping[str, Any], name: str, number: int) -> int:
    value = obj.get(name)
    if value is None:
        return 0
    if not isinstance(value, str):
        raise InvalidInputError(f"line {number}: {name} must be a precision name such as 'year'")
    return int(Precision.from_label(value))


def _opt_str(obj: Mapping[str, Any], name: str, number: int) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"line {number}: {name} must be a string or null")
    return value


def _dump_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


class _Restorer:
    """State of one restore transaction."""

    def __init__(self, mem: "Memory", tx: WriteTx) -> None:
        self.mem = mem
        self.tx = tx
        self.ns = mem._ns
        self.entities: dict[str, int] = {}
        self.predicates: dict[str, int] = {}
        self.predicate_keys: set[str] = set()
        self.entity_keys: set[str] = set()
        self.versions: set[tuple[str, int]] = set()
        self.fact_ids: set[str] = set()
        self.rows: list[Row] = []
        self.sources: list[tuple[str, str | None, str | None, int]] = []
        self.max_time = MIN_US
        self.source_count = 0
        # line number, id, kind, at, undone_at, portable payload
        self.operations: list[tuple[int, str, str, int, int | None, dict[str, Any]]] = []
        self.operation_ids: set[str] = set()

    def seen(self, *times: int | None) -> None:
        for t in times:
            if t is not None and t != MAX_US and t > self.max_time:
                self.max_time = t

    def predicate(self, obj: Mapping[str, Any], number: int) -> None:
        key = obj.get("key")
        name = obj.get("name")
        if not isinstance(key, str) or not isinstance(name, str) or not key:
            raise InvalidInputError(f"line {number}: a predicate needs 'key' and 'name'")
        if key in self.predicates:
            raise InvalidInputError(f"line {number}: predicate {key!r} appears twice")
        cardinality = obj.get("cardinality", "many")
        if cardinality not in ("one", "many"):
            raise InvalidInputError(f"line {number}: cardinality must be 'one' or 'many', not {cardinality!r}")
        aliases = obj.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InvalidInputError(f"line {number}: aliases must be a list of strings")
        keys = [key] + [normalize_key(a, "predicate alias") for a in aliases]
        taken = [k for k in keys if k in self.predicate_keys]
        if taken or len(set(keys)) != len(keys):
            raise InvalidInputError(f"line {number}: predicate name {(taken or keys)[0]!r} is used twice")
        self.predicate_keys.update(keys)
        if obj.get("declared") or aliases:
            rec = self.tx.define_predicate(
                self.ns, key, name, cardinality, _opt_str(obj, "inverse", number),
                _opt_str(obj, "description", number), [(normalize_key(a, "predicate alias"), a) for a in aliases],
            )
        else:
            rec = self.tx.create_predicate(self.ns, key, name)
        self.predicates[key] = rec.id

    def entity(self, obj: Mapping[str, Any], number: int) -> None:
        key = obj.get("key")
        name = obj.get("name")
        if not isinstance(key, str) or not isinstance(name, str) or not key:
            raise InvalidInputError(f"line {number}: an entity needs 'key' and 'name'")
        if key in self.entities:
            raise InvalidInputError(f"line {number}: entity {key!r} appears twice")
        created = _time(obj, "created_at", number, optional=False)
        assert created is not None
        self.seen(created)
        eid = int(self.tx.insert_entity(
            self.ns, key, name, _opt_str(obj, "entity_type", number), _dump_json(obj.get("properties")), created
        ))
        self.entities[key] = eid
        keys = obj.get("keys")
        if keys is None:  # hand-written: own key plus aliases
            keys = [{"key": key, "alias": None}] + [
                {"key": normalize_key(a, "alias"), "alias": a} for a in obj.get("aliases") or []
            ]
        if not isinstance(keys, list):
            raise InvalidInputError(f"line {number}: keys must be a list")
        for k in keys:
            if not isinstance(k, dict) or not isinstance(k.get("key"), str) or not k["key"]:
                raise InvalidInputError(f"line {number}: each key needs a 'key' string")
            if k["key"] in self.entity_keys:
                raise InvalidInputError(f"line {number}: entity name key {k['key']!r} is used twice")
            self.entity_keys.add(k["key"])
            self.tx.add_entity_key(self.ns, k["key"], eid, _opt_str(k, "alias", number))

    def fact(self, obj: Mapping[str, Any], number: int) -> None:
        fid = obj.get("id")
        version = obj.get("version")
        if not isinstance(fid, str) or not fid:
            raise InvalidInputError(f"line {number}: a fact needs an 'id'")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidInputError(f"line {number}: version must be a positive integer")
        if (fid, version) in self.versions:
            raise InvalidInputError(f"line {number}: fact {fid} version {version} appears twice")
        if fid not in self.fact_ids:
            if self.tx.rows_of_fact(fid):
                raise ConflictError(
                    f"fact {fid} already exists in this database; restore the export into another database file"
                )
            self.fact_ids.add(fid)
        self.versions.add((fid, version))
        subject = self._ref(self.entities, obj.get("subject"), "subject", number)
        predicate = self._ref(self.predicates, obj.get("predicate"), "predicate", number)
        obj_key = obj.get("object")
        literal = _opt_str(obj, "object_literal", number)
        object_id = self._ref(self.entities, obj_key, "object", number) if obj_key is not None else None
        if (object_id is None) == (literal is None):
            raise InvalidInputError(f"line {number}: a fact needs exactly one of 'object' and 'object_literal'")
        if literal is not None:
            try:
                decode_literal(literal)
            except ValueError:
                raise InvalidInputError(f"line {number}: {literal!r} is not an encoded literal") from None
        props = obj.get("properties")
        if props is not None and not isinstance(props, dict):
            raise InvalidInputError(f"line {number}: properties must be an object or null")
        vf = _time(obj, "valid_from", number, optional=True)
        vt = _time(obj, "valid_to", number, optional=True)
        sf = _time(obj, "system_from", number, optional=False)
        st = _time(obj, "system_to", number, optional=True)
        assert sf is not None
        vf_us = MIN_US if vf is None else vf
        vt_us = MAX_US if vt is None else vt
        st_us = MAX_US if st is None else st
        if vt_us <= vf_us or st_us <= sf:
            raise InvalidIntervalError(f"line {number}: fact {fid} has an empty valid or system interval")
        conf = obj.get("confidence", 1.0)
        if isinstance(conf, bool) or not isinstance(conf, (int, float)):
            raise InvalidInputError(f"line {number}: confidence must be a number")
        self.seen(sf, st)
        self.rows.append(Row(
            None, fid, version, self.ns, subject, predicate, object_id, literal,
            vf_us, _prec(obj, "valid_from_precision", number) if vf is not None else 0,
            vt_us, _prec(obj, "valid_to_precision", number) if vt is not None else 0,
            sf, st_us, float(conf), _opt_str(obj, "source", number), _opt_str(obj, "episode_id", number),
            _dump_json(props), _opt_str(obj, "invalidated_by", number),
            _opt_str(obj, "close_kind", number), _opt_str(obj, "closed_by", number),
        ))
        if len(self.rows) >= _ROW_BATCH:
            self.flush()

    def source(self, obj: Mapping[str, Any], number: int) -> None:
        fid = obj.get("fact_id")
        if fid not in self.fact_ids:
            raise InvalidInputError(f"line {number}: source for unknown fact {fid!r}")
        at = _time(obj, "recorded_at", number, optional=False)
        assert at is not None and isinstance(fid, str)
        self.seen(at)
        self.sources.append((fid, _opt_str(obj, "source", number), _opt_str(obj, "episode_id", number), at))
        self.source_count += 1

    def operation(self, obj: Mapping[str, Any], number: int) -> None:
        """Collect a merge; it is written after the versions it closed (see
        :meth:`insert_operations`)."""
        op_id = obj.get("id")
        if not isinstance(op_id, str) or not op_id:
            raise InvalidInputError(f"line {number}: an operation needs an 'id'")
        if op_id in self.operation_ids:
            raise InvalidInputError(f"line {number}: operation {op_id} appears twice")
        if obj.get("kind") != "merge":
            raise InvalidInputError(f"line {number}: unknown operation kind {obj.get('kind')!r}")
        if self.tx.operation(op_id) is not None:
            raise ConflictError(
                f"operation {op_id} already exists in this database; restore the export into another database file"
            )
        at = _time(obj, "at", number, optional=False)
        undone = _time(obj, "undone_at", number, optional=True)
        assert at is not None
        if undone is not None and undone <= at:
            raise InvalidIntervalError(f"line {number}: operation {op_id} is undone before it was made")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            raise InvalidInputError(f"line {number}: an operation needs a 'payload' object")
        self.seen(at, undone)
        self.operation_ids.add(op_id)
        self.operations.append((number, op_id, "merge", at, undone, payload))

    def insert_operations(self) -> None:
        """Write the collected merges with their payloads' entity keys and
        (fact id, version) pairs turned into this store's ids."""
        for number, op_id, _kind, at, undone, payload in self.operations:
            try:
                restore_merge(self.tx, self.ns, op_id, at, undone, payload, self.entities)
            except InvalidInputError as exc:
                raise InvalidInputError(f"line {number}: operation {op_id}: {exc}") from None

    @staticmethod
    def _ref(table: Mapping[str, int], key: object, what: str, number: int) -> int:
        if not isinstance(key, str) or key not in table:
            raise InvalidInputError(f"line {number}: {what} {key!r} is not defined earlier in the file")
        return table[key]

    def flush(self) -> None:
        if self.rows:
            self.tx.insert_rows(self.rows)
            self.rows = []
        if self.sources:
            self.tx.insert_sources(self.sources)
            self.sources = []


def _restore(
    mem: "Memory",
    head: Mapping[str, Any],
    lines: Iterator[tuple[int, str]],
    counter: list[int],
    progress: Progress | None,
) -> ImportResult:
    version = head.get("format_version")
    if version not in _READS_VERSIONS or isinstance(version, bool):
        raise InvalidInputError(
            f"unsupported export format version {version!r} (this chronomem reads versions "
            f"{', '.join(map(str, _READS_VERSIONS))})"
        )
    store = mem.store
    if store.entities(mem._ns) or store.predicates(mem._ns):
        raise ConflictError(
            f"namespace {mem.namespace!r} is not empty; restore an export into an empty namespace "
            "(choose another one with --namespace)"
        )
    result = ImportResult("export")
    with paused_gc(), store.write() as tx:
        r = _Restorer(mem, tx)
        for number, text in lines:
            obj = _json_line(number, text)
            kind = obj.get("type")
            if kind not in ("predicate", "entity", "fact", "source", "operation"):
                raise InvalidInputError(f"line {number}: unknown line type {kind!r}")
            try:
                getattr(r, kind)(obj, number)
            except InvalidInputError as exc:
                if str(exc).startswith("line "):
                    raise
                raise InvalidInputError(f"line {number}: {exc}") from None
            result.rows += 1
            if progress is not None and result.rows % 2000 == 0:
                progress(counter[0], result.rows)
        r.flush()
        r.insert_operations()
        if r.max_time > MIN_US:
            tx.note_system_time(r.max_time)
    result.entities = len(r.entities)
    result.predicates = len(r.predicates)
    result.versions = len(r.versions)
    result.facts = len(r.fact_ids)
    result.sources = r.source_count
    result.operations = len(r.operations)
    if progress is not None:
        progress(counter[0], result.rows)
    log.info("restored export into namespace %s: %s", mem.namespace, result)
    return result
