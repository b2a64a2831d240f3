"""Real data: the Wikidata12k temporal facts (shared/data/tkg) through
:func:`chronomem.service.transfer.jsonl.import_table`, checked against the file itself."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

import chronomem
from chronomem.service.transfer.jsonl import import_table

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tkg" / "wikidata12k_named.tsv"
COLUMNS = {"subject": "subject_qid", "predicate": "relation_label", "object": "object_qid",
           "valid_from": "start_year", "valid_to": "end_year"}

Interval = tuple[int | None, int | None]  # [start year, last year], None = unknown / open


def _year(cell: str) -> int | None:
    return int(cell) if cell.strip() else None


def _read_file() -> tuple[list[str], dict[tuple[str, str], dict[str, list[Interval]]], int]:
    """Header, intervals per (subject, relation) and object, and the number of
    rows whose end year is before the start year (the importer skips them)."""
    pairs: dict[tuple[str, str], dict[str, list[Interval]]] = defaultdict(lambda: defaultdict(list))
    reversed_rows = 0
    with DATA.open(encoding="utf-8", newline="") as fp:
        reader = csv.reader(fp, delimiter="\t")
        header = next(reader)
        for s, _pid, rel, o, start, end in reader:
            a, b = _year(start), _year(end)
            if a is not None and b is not None and b < a:
                reversed_rows += 1
                continue
            pairs[(s, rel)][o].append((a, b))
    return header, pairs, reversed_rows


def _holds(intervals: list[Interval], year: int) -> bool:
    return any((a is None or a <= year) and (b is None or year <= b) for a, b in intervals)


def test_wikidata12k_imports_and_answers_as_of(tmp_path: Path) -> None:
    if not DATA.is_file():
        pytest.skip(f"shared data set not found: {DATA} (see shared/README.md)")
    header, pairs, reversed_rows = _read_file()
    assert header == ["subject_qid", "relation_pid", "relation_label", "object_qid", "start_year", "end_year"]
    total_rows = sum(len(ivs) for objs in pairs.values() for ivs in objs.values()) + reversed_rows

    mem = chronomem.open(tmp_path / "wd.db")
    result = import_table(mem, DATA, columns=COLUMNS, inclusive_end=True)
    assert result.rows == total_rows
    assert result.skipped == reversed_rows
    assert all("is not after the start" in e for e in result.errors)
    # every valid row is stored once: new, or a repeat of one already read
    assert result.added + result.present == total_rows - reversed_rows
    assert result.added == result.facts

    # subject-relation pairs whose object changes over time: at least two
    # objects, every interval fully dated
    changing = sorted(
        key for key, objs in pairs.items()
        if len(objs) >= 2 and all(a is not None and b is not None for ivs in objs.values() for a, b in ivs)
    )
    assert len(changing) > 100
    step = len(changing) // 40
    checked = 0
    for subject, relation in changing[::step]:
        objs = pairs[(subject, relation)]
        years = sorted({y for ivs in objs.values() for a, b in ivs for y in (a, b) if y is not None})
        probes = set(years) | {y + 1 for y in years} | {years[0] - 1}
        for year in sorted(probes):
            expected = {o for o, ivs in objs.items() if _holds(ivs, year)}
            got = {f.object for f in mem.facts(subject, relation, as_of=f"{year:04d}-07-01")}
            assert got == expected, (subject, relation, year)
            checked += 1
    assert checked > 200
    mem.close()
