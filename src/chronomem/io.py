"""Import and export: JSONL (lossless backup of one namespace, or plain fact
lines) and CSV/TSV tables with a column mapping.

The CLI's ``import`` / ``export`` commands are thin wrappers over these
functions.

* :func:`export_jsonl` writes one namespace as JSON lines: a header, the
  predicates, the entities (with every name key), every fact *version* with
  both time axes, and the extra evidence rows. :func:`import_jsonl` restores
  such a file into an empty namespace so that ``facts(as_of=..., known_at=...)``
  and ``history`` answer exactly as in the source.
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

import csv
from itertools import chain
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, cast

from ._codec import decode_literal
from .errors import ConflictError, InvalidInputError, InvalidIntervalError
from .normalize import normalize_key
from .store.base import Row, WriteTx
from .timeutil import MAX_US, MIN_US, Precision, format_us, parse_time, period_end, to_us

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
EXPORT_VERSION = 1
#: Fields a table column can be mapped to (``columns={field: column}``).
TABLE_FIELDS = ("subject", "predicate", "object", "valid_from", "valid_to", "source", "confidence", "episode_id")
_REQUIRED = ("subject", "predicate", "object")
_ITEM_KEYS = frozenset({"subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source",
                        "episode_id", "properties", "supersede", "literal"})
_MAX_ERRORS = 20
_ROW_BATCH = 10_000
_SOURCE_BATCH = 500

#: ``progress(done_bytes, done_rows)``, called every few thousand rows.
Progress = Callable[[int, int], None]


@dataclass
class ExportResult:
    namespace: str
    predicates: int = 0
    entities: int = 0
    versions: int = 0
    sources: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ImportResult:
    """What an import did. ``rows`` counts records read; ``added`` the rows
    handed to :meth:`Memory.add_facts`; ``facts`` the distinct facts they
    became (duplicates and overlaps coalesce); ``skipped`` invalid rows, whose
    first messages are in ``errors``. A restored export fills ``entities``,
    ``predicates``, ``versions`` and ``sources`` instead."""

    format: str
    rows: int = 0
    added: int = 0
    facts: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    entities: int = 0
    predicates: int = 0
    versions: int = 0
    sources: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _skip(self, message: str) -> None:
        self.skipped += 1
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append(message)


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
        fact_ids: dict[str, None] = {}
        for r in store.iter_rows(ns):
            fact_ids.setdefault(r.fact_id, None)
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
    log.info("exported namespace %s: %s", mem.namespace, result)
    return result


# -- JSONL import ---------------------------------------------------------
def _lines(fp: IO[str] | IO[bytes], counter: list[int]) -> Iterator[tuple[int, str]]:
    """Numbered, decoded lines of a text or binary file; counts bytes read."""
    source = cast(Iterable[str | bytes], fp)
    for number, raw in enumerate(source, 1):
        if isinstance(raw, bytes):
            counter[0] += len(raw)
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(f"line {number}: not UTF-8 text ({exc.reason})") from None
        else:
            counter[0] += len(raw)
            text = str(raw)
            if number == 1:
                text = text.lstrip("\ufeff")
        yield number, text


def _json_line(number: int, text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"line {number}: not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise InvalidInputError(f"line {number}: expected a JSON object, not {type(obj).__name__}")
    return obj


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
    lines = ((n, t) for n, t in _lines(fp, counter) if t.strip())
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
            raise InvalidInputError(check.errors[0] + _more(check.skipped))
        fp.seek(start)
        counter[0] = 0
        lines = ((n, t) for n, t in _lines(fp, counter) if t.strip())
        first = next(lines)
    result = ImportResult("jsonl")
    items = ((n, _plain_item(mem, n, t, result)) for n, t in chain([first], lines))
    _add_batches(mem, items, result, batch_size, progress, counter)
    return result


def _more(skipped: int) -> str:
    return f" (and {skipped - 1} more invalid rows)" if skipped > 1 else ""


def _plain_item(mem: "Memory", number: int, text: str, result: ImportResult) -> dict[str, Any] | None:
    result.rows += 1
    try:
        return _checked(mem, _json_line(number, text), number)
    except InvalidInputError as exc:
        msg = str(exc) if str(exc).startswith("line ") else f"line {number}: {exc}"
        result._skip(msg)
        return None


def _checked(mem: "Memory", item: dict[str, Any], number: int, ends: tuple[str, str] | None = None) -> dict[str, Any]:
    """Validate one add_fact item without touching the store; times become
    :class:`TimePoint` values so they are parsed once."""
    unknown = set(item) - _ITEM_KEYS
    if unknown:
        raise InvalidInputError(f"line {number}: unknown fact field(s): {', '.join(sorted(unknown))}")
    for name in _REQUIRED:
        if item.get(name) is None or item.get(name) == "":
            raise InvalidInputError(f"line {number}: {name} is missing")
    if not isinstance(item["object"], (str, int, float)):
        raise InvalidInputError(f"line {number}: object must be a string, number or boolean")
    for name in ("source", "episode_id"):
        if item.get(name) is not None and not isinstance(item[name], str):
            raise InvalidInputError(f"line {number}: {name} must be a string")
    if item.get("properties") is not None and not isinstance(item["properties"], dict):
        raise InvalidInputError(f"line {number}: properties must be an object")
    normalize_key(item["subject"], "subject")
    normalize_key(item["predicate"], "predicate")
    if isinstance(item["object"], str) and not item.get("literal"):
        normalize_key(item["object"], "object")
    vf = item.get("valid_from")
    vt = item.get("valid_to")
    if vf is not None:
        vf = item["valid_from"] = mem.parse_time(vf, "valid_from")
    if vt is not None:
        vt = item["valid_to"] = mem.parse_time(vt, "valid_to")
    if vf is not None and vt is not None and vt.us <= vf.us:
        start, end = ends if ends is not None else (str(vf), str(vt))
        raise InvalidIntervalError(f"line {number}: the end ({end}) is not after the start ({start})")
    conf = item.get("confidence")
    if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
        raise InvalidInputError(f"line {number}: confidence must be a number between 0 and 1, not {conf!r}")
    return item


def _add_batches(
    mem: "Memory",
    items: Iterable[tuple[int, dict[str, Any] | None]],
    result: ImportResult,
    batch_size: int,
    progress: Progress | None,
    counter: list[int],
) -> None:
    if batch_size < 1:
        raise InvalidInputError("batch_size must be at least 1")
    batch: list[dict[str, Any]] = []
    lines: list[int] = []
    fact_ids: set[str] = set()

    def flush() -> None:
        if batch:
            try:
                fact_ids.update(mem.add_facts(batch))
            except InvalidInputError as exc:
                done = f"; the {result.added} rows before them were imported" if result.added else ""
                raise type(exc)(f"lines {lines[0]}-{lines[-1]} (one batch, not imported): {exc}{done}") from None
            result.added += len(batch)
            result.facts = len(fact_ids)
            log.info("imported %d rows", result.added)
            batch.clear()
            lines.clear()

    for number, item in items:
        if item is not None:
            batch.append(item)
            lines.append(number)
            if len(batch) >= batch_size:
                flush()
        if progress is not None and result.rows % 2000 == 0:
            progress(counter[0], result.rows)
    flush()
    if progress is not None:
        progress(counter[0], result.rows)


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
    if version != EXPORT_VERSION:
        raise InvalidInputError(
            f"unsupported export format version {version!r} (this chronomem reads version {EXPORT_VERSION})"
        )
    store = mem.store
    if store.entities(mem._ns) or store.predicates(mem._ns):
        raise ConflictError(
            f"namespace {mem.namespace!r} is not empty; restore an export into an empty namespace "
            "(choose another one with --namespace)"
        )
    result = ImportResult("export")
    with store.write() as tx:
        r = _Restorer(mem, tx)
        for number, text in lines:
            obj = _json_line(number, text)
            kind = obj.get("type")
            if kind not in ("predicate", "entity", "fact", "source"):
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
        if r.max_time > MIN_US:
            tx.note_system_time(r.max_time)
    result.entities = len(r.entities)
    result.predicates = len(r.predicates)
    result.versions = len(r.versions)
    result.facts = len(r.fact_ids)
    result.sources = r.source_count
    if progress is not None:
        progress(counter[0], result.rows)
    log.info("restored export into namespace %s: %s", mem.namespace, result)
    return result


# -- CSV / TSV ------------------------------------------------------------
_DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}


def _column_index(value: str | int, header: Sequence[str] | None, fieldname: str) -> int:
    if isinstance(value, bool):
        raise InvalidInputError(f"column for {fieldname} must be a name or a number")
    if isinstance(value, str) and header is not None and value in header:
        return header.index(value)
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        index = int(value)
        if index < 1:
            raise InvalidInputError(f"column numbers start at 1 (got {index} for {fieldname})")
        return index - 1
    if header is None:
        raise InvalidInputError(
            f"column for {fieldname} must be a number (1 = first column) when the file has no header row"
        )
    raise InvalidInputError(
        f"no column {value!r} (for {fieldname}) in the header; columns are: {', '.join(header)}"
    )


def _resolve_columns(columns: Mapping[str, str | int] | None, header: Sequence[str] | None) -> dict[str, int]:
    if columns is None:
        if header is None:
            columns = {name: i + 1 for i, name in enumerate(TABLE_FIELDS[:5])}
        else:
            columns = {name: name for name in TABLE_FIELDS if name in header}
    unknown = set(columns) - set(TABLE_FIELDS)
    if unknown:
        raise InvalidInputError(
            f"unknown field(s) in the column mapping: {', '.join(sorted(unknown))}; "
            f"fields are: {', '.join(TABLE_FIELDS)}"
        )
    missing = [f for f in _REQUIRED if f not in columns]
    if missing:
        raise InvalidInputError(f"the column mapping needs {', '.join(missing)}")
    return {name: _column_index(value, header, name) for name, value in columns.items()}


def _cell(row: Sequence[str], index: int) -> str | None:
    value = row[index].strip()
    return value or None


def _time_text(text: str) -> str:
    # a bare year of 1-3 digits ("752") as ISO needs four
    return text.zfill(4) if text.isdigit() and len(text) < 4 else text


class _TableRows:
    """Turns table records into checked add_fact items."""

    def __init__(self, mem: "Memory", cols: Mapping[str, int], *, inclusive_end: bool, literal: bool,
                 source: str | None) -> None:
        self.mem = mem
        self.cols = cols
        self.need = max(cols.values()) + 1
        self.inclusive_end = inclusive_end
        self.literal = literal
        self.source = source
        self._ends: dict[str, Any] = {}

    def item(self, row: Sequence[str], number: int) -> dict[str, Any]:
        if len(row) < self.need:
            raise InvalidInputError(f"line {number}: has {len(row)} columns, the mapping needs {self.need}")
        cells = {name: _cell(row, i) for name, i in self.cols.items()}
        item: dict[str, Any] = {
            "subject": cells["subject"], "predicate": cells["predicate"], "object": cells["object"],
        }
        if self.literal:
            item["literal"] = True
        vf = cells.get("valid_from")
        vt = cells.get("valid_to")
        if vf is not None:
            item["valid_from"] = _time_text(vf)
        if vt is not None:
            item["valid_to"] = self._end(_time_text(vt), number)
        source = cells.get("source") or self.source
        if source is not None:
            item["source"] = source
        if cells.get("episode_id") is not None:
            item["episode_id"] = cells["episode_id"]
        conf = cells.get("confidence")
        if conf is not None:
            try:
                item["confidence"] = float(conf)
            except ValueError:
                raise InvalidInputError(f"line {number}: confidence {conf!r} is not a number") from None
        end_text = f"{vt}, inclusive" if self.inclusive_end else str(vt)
        return _checked(self.mem, item, number, (str(vf), end_text))

    def _end(self, text: str, number: int) -> Any:
        if not self.inclusive_end:
            return text
        end = self._ends.get(text)
        if end is None:
            try:
                end = period_end(text, self.mem.tz, "valid_to")
            except InvalidInputError as exc:
                raise InvalidInputError(f"line {number}: {exc}") from None
            self._ends[text] = end
        return end


def _table_records(
    path: Path, delimiter: str, counter: list[int]
) -> tuple[IO[bytes], Iterator[tuple[int, list[str]]]]:
    fb = path.open("rb")

    def text() -> Iterator[str]:
        for _number, line in _lines(fb, counter):
            yield line

    reader = csv.reader(text(), delimiter=delimiter)

    def records() -> Iterator[tuple[int, list[str]]]:
        try:
            for row in reader:
                if row and any(c.strip() for c in row):
                    yield reader.line_num, row
        except csv.Error as exc:
            raise InvalidInputError(f"line {reader.line_num}: {exc}") from None

    return fb, records()


def import_table(
    mem: "Memory",
    path: str | os.PathLike[str],
    *,
    delimiter: str | None = None,
    columns: Mapping[str, str | int] | None = None,
    header: bool = True,
    inclusive_end: bool = False,
    literal: bool = False,
    source: str | None = None,
    strict: bool = False,
    batch_size: int = 50_000,
    progress: Progress | None = None,
) -> ImportResult:
    """Stream a CSV/TSV file into :meth:`Memory.add_facts`.

    ``columns`` maps fact fields (:data:`TABLE_FIELDS`) to column names (when
    the file has a header row) or 1-based column numbers; by default columns
    named like the fields are used (or, without a header, the first five in
    the order subject, predicate, object, valid_from, valid_to). Empty cells
    are ``None``. ``inclusive_end=True`` reads an end as the last period of
    validity (``"2011"`` -> ``valid_to`` 2012-01-01). ``source`` is the source
    of rows without a source column value. Invalid rows are skipped and
    reported unless ``strict``.
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"no such file: {os.fspath(path)!r}")
    delim = delimiter if delimiter is not None else _DELIMITERS.get(p.suffix.lower(), "")
    if not delim:
        raise InvalidInputError(f"cannot tell the table format of {p.name!r} from its extension; use .csv or "
                                ".tsv or give the delimiter")
    if len(delim) != 1:
        raise InvalidInputError(f"the delimiter must be one character, not {delim!r}")
    fmt = "tsv" if delim == "\t" else "csv"

    def open_rows(result: ImportResult) -> tuple[IO[bytes], Iterator[tuple[int, dict[str, Any] | None]], list[int]]:
        counter = [0]
        fb, records = _table_records(p, delim, counter)
        head: list[str] | None = None
        if header:
            first = next(records, None)
            if first is None:  # an empty file: nothing to import
                return fb, iter(()), counter
            head = [c.strip() for c in first[1]]
        rows = _TableRows(mem, _resolve_columns(columns, head), inclusive_end=inclusive_end, literal=literal,
                          source=source)

        def items() -> Iterator[tuple[int, dict[str, Any] | None]]:
            for number, rec in records:
                result.rows += 1
                try:
                    yield number, rows.item(rec, number)
                except InvalidInputError as exc:
                    msg = str(exc) if str(exc).startswith("line ") else f"line {number}: {exc}"
                    result._skip(msg)
                    yield number, None

        return fb, items(), counter

    if strict:
        check = ImportResult(fmt)
        fb, items, _ = open_rows(check)
        with fb:
            for _ in items:
                pass
        if check.skipped:
            raise InvalidInputError(f"{p.name} {check.errors[0]}{_more(check.skipped)}; nothing was imported")
    result = ImportResult(fmt)
    fb, items, counter = open_rows(result)
    with fb:
        _add_batches(mem, items, result, batch_size, progress, counter)
    if result.skipped:
        log.info("skipped %d invalid rows of %s", result.skipped, p.name)
    return result
