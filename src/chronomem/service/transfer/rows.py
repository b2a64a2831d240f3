"""Validation and batching shared by the line-oriented imports (plain JSON
lines in :mod:`chronomem.service.transfer.jsonl`, CSV/TSV tables in :mod:`chronomem.service.transfer.table`):
numbered lines of a text or binary file, the check of one ``add_fact`` item,
and the batched hand-over to :meth:`Memory.add_facts`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator, cast

from ...core.codec import encode_literal
from ...core.ids import new_id
from ...core.limits import MAX_ID_CHARS, MAX_SOURCE_CHARS, check_bool, check_json, check_text
from ...core.names import normalize_key
from ...errors import InvalidInputError, InvalidIntervalError
from .target import MemoryLike

__all__ = ["ITEM_KEYS", "REQUIRED", "ImportResult", "Progress", "add_batches", "checked_item", "more_errors",
           "read_lines"]

log = logging.getLogger("chronomem.io")

REQUIRED = ("subject", "predicate", "object")
ITEM_KEYS = frozenset({"subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source",
                       "episode_id", "properties", "supersede", "literal"})
MAX_ERRORS = 20

#: ``progress(done_bytes, done_rows)``, called every few thousand rows.
Progress = Callable[[int, int], None]


@dataclass
class ImportResult:
    """What an import did. ``rows`` counts records read: each was ``added``
    (it became a new fact), ``present`` (its fact was already there, in the
    store or from an earlier row of the file: an identical or contained
    fact, or an overlapping one it was joined to) or ``skipped`` (invalid;
    the first messages are in ``errors``). ``facts`` counts the distinct
    facts the valid rows became or matched. A restored export fills ``entities``,
    ``predicates``, ``versions``, ``sources``, ``operations``, ``episodes``
    (with their content), ``tombstones`` (erased episodes) and ``vectors``
    instead."""

    format: str
    rows: int = 0
    added: int = 0
    present: int = 0
    facts: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    entities: int = 0
    predicates: int = 0
    versions: int = 0
    sources: int = 0
    operations: int = 0
    episodes: int = 0
    tombstones: int = 0
    vectors: int = 0
    import_keys: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _skip(self, message: str) -> None:
        self.skipped += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)


def read_lines(fp: IO[str] | IO[bytes], counter: list[int]) -> Iterator[tuple[int, str]]:
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


def more_errors(skipped: int) -> str:
    return f" (and {skipped - 1} more invalid rows)" if skipped > 1 else ""


def checked_item(mem: MemoryLike, item: dict[str, Any], number: int,
                 ends: tuple[str, str] | None = None) -> dict[str, Any]:
    """Validate one add_fact item without touching the store; times become
    :class:`TimePoint` values so they are parsed once."""
    unknown = set(item) - ITEM_KEYS
    if unknown:
        raise InvalidInputError(f"line {number}: unknown fact field(s): {', '.join(sorted(unknown))}")
    for name in REQUIRED:
        if item.get(name) is None or item.get(name) == "":
            raise InvalidInputError(f"line {number}: {name} is missing")
    if not isinstance(item["object"], (str, int, float)):
        raise InvalidInputError(f"line {number}: object must be a string, number or boolean")
    for name, limit in (("source", MAX_SOURCE_CHARS), ("episode_id", MAX_ID_CHARS)):
        if item.get(name) is not None and not isinstance(item[name], str):
            raise InvalidInputError(f"line {number}: {name} must be a string")
        if item.get(name) is not None:
            check_text(item[name], name, limit)
    if item.get("properties") is not None and not isinstance(item["properties"], dict):
        raise InvalidInputError(f"line {number}: properties must be an object")
    if item.get("properties") is not None:
        check_json(item["properties"], "properties")
    if item.get("literal") is not None:
        check_bool(item["literal"], "literal")
    normalize_key(item["subject"], "subject")
    normalize_key(item["predicate"], "predicate")
    if isinstance(item["object"], str) and not item.get("literal"):
        normalize_key(item["object"], "object")
    else:
        encode_literal(item["object"], mem.tz)  # its size, range and text
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


def add_batches(
    mem: MemoryLike,
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
            # ids are made in increasing order in this process (core/ids.py): a
            # fact this batch creates has an id past the marker, a fact the
            # store already held one before it (or another form: an imported id)
            marker = new_id()
            try:
                ids = mem.add_facts(batch)
            except InvalidInputError as exc:
                handed = result.added + result.present
                done = f"; the {handed} rows before them were imported" if handed else ""
                # the same error, re-worded: its type and fields (InvalidTimeError.field, ...) stay
                exc.args = (f"lines {lines[0]}-{lines[-1]} (one batch, not imported): {exc}{done}",)
                raise exc from None
            for fid in ids:
                if fid not in fact_ids and fid > marker and len(fid) == len(marker):
                    result.added += 1
                else:
                    result.present += 1
                fact_ids.add(fid)
            result.facts = len(fact_ids)
            log.info("imported %d rows (%d new facts)", result.added + result.present, result.added)
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
