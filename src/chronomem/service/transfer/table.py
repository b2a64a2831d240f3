"""CSV/TSV import: a table with a column mapping, streamed into
:meth:`Memory.add_facts` in batches (``chronomem import FILE.csv``).

Re-exported by :mod:`chronomem.service.transfer.jsonl`; invalid rows are skipped and reported, or
with ``strict=True`` the whole file is checked first and nothing is written
if any row is invalid.
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, Sequence

from ...core.time import period_end
from ...errors import InvalidInputError
from .rows import REQUIRED, ImportResult, Progress, add_batches, checked_item, more_errors, read_lines
from .target import MemoryLike

__all__ = ["TABLE_FIELDS", "import_table"]

log = logging.getLogger("chronomem.io")

#: Fields a table column can be mapped to (``columns={field: column}``).
TABLE_FIELDS = ("subject", "predicate", "object", "valid_from", "valid_to", "source", "confidence", "episode_id")
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
    missing = [f for f in REQUIRED if f not in columns]
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

    def __init__(self, mem: MemoryLike, cols: Mapping[str, int], *, inclusive_end: bool, literal: bool,
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
        return checked_item(self.mem, item, number, (str(vf), end_text))

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
        for _number, line in read_lines(fb, counter):
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
    mem: MemoryLike,
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
            raise InvalidInputError(f"{p.name} {check.errors[0]}{more_errors(check.skipped)}; nothing was imported")
    result = ImportResult(fmt)
    fb, items, counter = open_rows(result)
    with fb:
        add_batches(mem, items, result, batch_size, progress, counter)
    if result.skipped:
        log.info("skipped %d invalid rows of %s", result.skipped, p.name)
    return result
