"""Import and export: JSONL (lossless backup of one namespace, or plain fact
lines) and CSV/TSV tables with a column mapping.

The CLI's ``import`` / ``export`` commands are thin wrappers over these
functions. CSV/TSV tables are read by :mod:`chronomem.service.transfer.table`
(:func:`import_table`, re-exported here).

* :func:`export_jsonl` writes one namespace as JSON lines: a header, then
  the portable records of :mod:`chronomem.service.transfer.portable` (the serializer
  ``chronomem copy`` uses too): the predicates, the entities (with every
  name key), every fact *version* with both time axes, the extra evidence
  rows, the merge operations (with their undo records), the embedding models
  and every episode (times, mentions, supersession, erasure tombstones, one
  vector per model). :func:`import_jsonl` restores such a file into an empty
  namespace so that fact reads at any ``as_of`` / ``known_at``, ``history``,
  ``episodes``, ``search`` in every view and ``recall`` answer as in the
  source (by every name, also a name a merge moved), and ``unmerge`` undoes
  a restored merge by its original operation id. Times are ISO-8601 strings
  in the file, vectors base64 float32 (little-endian).
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

import base64
import binascii
import json
import logging
from dataclasses import asdict, dataclass
from itertools import chain
from typing import IO, Any, Iterator, Mapping

from ...core.jsonobj import load_object
from ...core.limits import check_clean_tree
from ...core.time import Precision, format_us, parse_time, to_us
from ...errors import ConflictError, ExportVersionError, InvalidInputError
from ..gcpause import paused_gc
from .portable import (
    MENTION_TIME_FIELDS,
    RECORD_TYPES,
    STATED_OPEN,
    TIME_FIELDS,
    Record,
    namespace_is_empty,
    namespace_records,
)
from .restore import Restorer
from .rows import ImportResult, Progress, add_batches, checked_item, more_errors, read_lines
from .table import TABLE_FIELDS, import_table
from .target import MemoryLike, namespace_id

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ExportResult",
    "ImportResult",
    "TABLE_FIELDS",
    "export_jsonl",
    "import_jsonl",
    "import_table",
]

log = logging.getLogger("chronomem.io")

EXPORT_FORMAT = "chronomem-export"
#: Version 2 added the ``operation`` lines (merges), version 3 the
#: ``embedding_model`` and ``episode`` lines, version 4 a fact's typed end
#: cause (``end_kind``, ``end_reason``; ``invalidated_by`` only a fact id);
#: files of versions 1 to 3 still restore (a free-text ``invalidated_by``
#: becomes the ``end_reason``); version 5 the ``import_key`` lines (what
#: transcript imports stored, so a restored memory re-imports nothing);
#: version 6 a fact's ``stated_end`` (the end it was given before another
#: value cut it; files without it restore with none recorded); version 7
#: who recorded each fact version and episode (``recorded_by``; files
#: without it restore with ``null``: not recorded).
EXPORT_VERSION = 7
_READS_VERSIONS = (1, 2, 3, 4, 5, 6, 7)


@dataclass
class ExportResult:
    namespace: str
    predicates: int = 0
    entities: int = 0
    versions: int = 0
    sources: int = 0
    operations: int = 0
    episodes: int = 0
    tombstones: int = 0
    vectors: int = 0
    import_keys: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- records as JSON objects -------------------------------------------------
def _iso(us: int) -> str:
    return format_us(us, Precision.MICROSECOND)


def _to_json(rec: Record) -> dict[str, Any]:
    """A portable record as its JSON line: times as ISO strings, vectors base64."""
    out = dict(rec)
    for name in TIME_FIELDS.get(rec["type"], ()):
        if out.get(name) is not None:
            out[name] = _iso(out[name])
    if rec["type"] == "fact" and isinstance(rec.get("stated_end"), int):
        out["stated_end"] = _iso(rec["stated_end"])
    if rec["type"] == "episode":
        out["mentions"] = [{**m, **{f: _iso(m[f]) for f in MENTION_TIME_FIELDS}} for m in rec["mentions"]]
        out["vectors"] = {k: base64.b64encode(v).decode("ascii") for k, v in rec["vectors"].items()}
    return out


def _times_from_json(obj: dict[str, Any], names: tuple[str, ...]) -> None:
    for name in names:
        value = obj.get(name)
        if value is not None:
            obj[name] = parse_time(value, name).us


def _from_json(obj: Mapping[str, Any]) -> Record:
    """The inverse of :func:`_to_json` (the restorer checks the rest)."""
    out = dict(obj)
    _times_from_json(out, TIME_FIELDS.get(out["type"], ()))
    if out["type"] == "fact" and out.get("stated_end") not in (None, STATED_OPEN):
        _times_from_json(out, ("stated_end",))
    if out["type"] == "episode":
        mentions = out.get("mentions")
        if mentions is not None:
            if not isinstance(mentions, list) or not all(isinstance(m, dict) for m in mentions):
                raise InvalidInputError("mentions must be a list of objects")
            out["mentions"] = [dict(m) for m in mentions]
            for m in out["mentions"]:
                _times_from_json(m, MENTION_TIME_FIELDS)
        vectors = out.get("vectors")
        if vectors is not None:
            if not isinstance(vectors, dict) or not all(isinstance(v, str) for v in vectors.values()):
                raise InvalidInputError("vectors must be an object of base64 strings")
            try:
                out["vectors"] = {k: base64.b64decode(v, validate=True) for k, v in vectors.items()}
            except binascii.Error:
                raise InvalidInputError("a vector is not valid base64") from None
    return out


# -- export ---------------------------------------------------------------
def _dump(fp: IO[str], obj: Mapping[str, Any]) -> None:
    fp.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


_COUNTED = {"predicate": "predicates", "entity": "entities", "fact": "versions", "source": "sources",
            "operation": "operations", "import_key": "import_keys"}


def export_jsonl(mem: MemoryLike, fp: IO[str]) -> ExportResult:
    """Write the whole namespace of ``mem`` to ``fp`` as JSON lines (a
    consistent snapshot). See ``docs/cli.md`` for the line format."""
    store = mem.store
    result = ExportResult(mem.namespace)
    ns = namespace_id(mem)
    with store.read():
        _dump(fp, {
            "type": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "namespace": mem.namespace,
            "exported_at": _iso(to_us(mem.now())),
        })
        for rec in namespace_records(store, ns):
            _dump(fp, _to_json(rec))
            kind = rec["type"]
            if kind in _COUNTED:
                setattr(result, _COUNTED[kind], getattr(result, _COUNTED[kind]) + 1)
            elif kind == "episode":
                if rec["erased_at"] is None:
                    result.episodes += 1
                else:
                    result.tombstones += 1
                result.vectors += len(rec["vectors"])
    log.info("exported namespace %s: %s", mem.namespace, result)
    return result


# -- JSONL import ---------------------------------------------------------
def _json_line(number: int, text: str) -> dict[str, Any]:
    return load_object(text, f"line {number}:", invalid="not valid JSON",
                       not_object="expected a JSON object, not {type}")


def import_jsonl(
    mem: MemoryLike,
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


def _plain_item(mem: MemoryLike, number: int, text: str, result: ImportResult) -> dict[str, Any] | None:
    result.rows += 1
    try:
        return checked_item(mem, _json_line(number, text), number)
    except InvalidInputError as exc:
        msg = str(exc) if str(exc).startswith("line ") else f"line {number}: {exc}"
        result._skip(msg)
        return None


# -- restore of an export -------------------------------------------------
def _restore(
    mem: MemoryLike,
    head: Mapping[str, Any],
    lines: Iterator[tuple[int, str]],
    counter: list[int],
    progress: Progress | None,
) -> ImportResult:
    version = head.get("format_version")
    if version not in _READS_VERSIONS or isinstance(version, bool):
        raise ExportVersionError(version, _READS_VERSIONS)
    store = mem.store
    ns = namespace_id(mem)
    if not namespace_is_empty(store, ns):
        raise ConflictError(
            f"namespace {mem.namespace!r} is not empty; restore an export into an empty namespace "
            "(choose another one with --namespace)"
        )
    result = ImportResult("export")
    with paused_gc(), store.write() as tx:
        r = Restorer(tx, ns, mem.tz, elsewhere="restore the export into another database file")
        for number, text in lines:
            obj = _json_line(number, text)
            check_clean_tree(obj, f"line {number}")  # no NUL or lone surrogate reaches either backend
            kind = obj.get("type")
            if kind not in RECORD_TYPES:
                raise InvalidInputError(f"line {number}: unknown line type {kind!r}")
            where = f"line {number}"
            try:
                rec = _from_json(obj)
            except InvalidInputError as exc:
                exc.args = (f"{where}: {exc}",)
                raise
            r.add(rec, where)
            result.rows += 1
            if progress is not None and result.rows % 2000 == 0:
                progress(counter[0], result.rows)
        r.finish()
    for key, count in r.counts().items():
        setattr(result, key, count)
    if progress is not None:
        progress(counter[0], result.rows)
    log.info("restored export into namespace %s: %s", mem.namespace, result)
    return result
