"""The interval-data converter of the temporal benchmark (``adapters/benchmark/intervals.py``).

The fixture ``tests/data/benchmark/intervals_small.tsv`` is hand-made: the
expected questions of a few keys below are worked out by hand from its rows
(inclusive and exclusive ends, unknown starts, open ends, touching and
overlapping intervals of one object, two written forms of one name, bad rows).
Every converted question is then asked of chronomem on a real SQLite file (and
a PostgreSQL schema), and the real Wikidata12k file, when ../shared is beside
the project, converts and passes too.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from chronomem.adapters.benchmark.intervals import convert_intervals, parse_columns, read_intervals
from chronomem.adapters.benchmark.runner import SystemRun, run_system
from chronomem.adapters.benchmark.scenario import Scenario, dump_scenarios, instant, load_scenarios
from chronomem.adapters.benchmark.systems.chronomem_system import ChronomemSystem
from chronomem.core.names import normalize_key
from chronomem.errors import InvalidInputError, ScenarioFormatError
from conftest import pg_test_url

FIXTURE = Path(__file__).resolve().parent / "data" / "benchmark" / "intervals_small.tsv"
COLUMNS = {"subject": "who", "object": "what", "start": "from", "end": "until"}  # "relation" keeps its name
WIKIDATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tkg" / "wikidata12k_named.tsv"
WIKIDATA_COLUMNS = "subject=subject_qid,relation=relation_label,object=object_qid,start=start_year,end=end_year"
BEFORE_2000 = "1999-12-31T23:59:59.999999Z"


def _convert(inclusive: bool, **kw: Any) -> list[Scenario]:
    kw.setdefault("max_keys", None)
    kw.setdefault("max_questions", None)
    return convert_intervals(FIXTURE, inclusive_end=inclusive, columns=COLUMNS, **kw).scenarios


def _as_of(scenarios: list[Scenario], subject: str, predicate: str) -> list[tuple[str, list[str]]]:
    """The (as_of, expected objects) of one key's ``intervals-as-of`` questions, in time order."""
    got = [(q.get("as_of"), q.expect) for s in scenarios for q in s.questions
           if q.rule == "intervals-as-of" and q.get("subject") == subject and q.get("predicate") == predicate]
    return sorted(got, key=lambda t: instant(t[0]))


def _assert_passes(run: SystemRun, questions: int) -> None:
    bad = [o for o in run.outcomes if o.status != "passed"]
    assert not bad, bad[:5]
    assert len(run.outcomes) == questions


# --- the converted questions, checked by hand --------------------------------------------------------------------

def test_inclusive_ends_touching_rows_of_one_object_merge() -> None:
    # lines 2-3: Chess Club 2000-2004 and 2005-2009, inclusive: [2000, 2005) + [2005, 2010) = [2000, 2010)
    assert _as_of(_convert(True), "Ada", "member of") == [
        (BEFORE_2000, []), ("2000", ["Chess Club"]), ("2004-12-31T23:59:59.999999Z", ["Chess Club"]),
        ("2005", ["Chess Club"]), ("2009-12-31T23:59:59.999999Z", ["Chess Club"]), ("2010", []),
    ]


def test_exclusive_ends_leave_the_gap() -> None:
    # the same rows read as exclusive ends: [2000, 2004) and [2005, 2009), not valid during 2004
    assert _as_of(_convert(False), "Ada", "member of") == [
        (BEFORE_2000, []), ("2000", ["Chess Club"]), ("2003-12-31T23:59:59.999999Z", ["Chess Club"]),
        ("2004", []), ("2005", ["Chess Club"]), ("2008-12-31T23:59:59.999999Z", ["Chess Club"]), ("2009", []),
    ]


def test_overlapping_rows_bridge_a_gap() -> None:
    # lines 32-34, exclusive: [2010, 2012), [2013, 2015) and [2011, 2014) cover [2010, 2015) without a gap
    lea = dict(_as_of(_convert(False), "Lea", "role"))
    assert lea["2009-12-31T23:59:59.999999Z"] == [] and lea["2015"] == []
    assert all(lea[t] == ["Chair"] for t in ("2010", "2011", "2012", "2013", "2014-12-31T23:59:59.999999Z"))


def test_unknown_start_and_open_end() -> None:
    # lines 6-8, inclusive: Paris [.., 2000), Rome [1999, ..), Oslo [.., ..)
    assert _as_of(_convert(True), "Bob", "lives in") == [
        ("0001", ["Oslo", "Paris"]), ("1998-12-31T23:59:59.999999Z", ["Oslo", "Paris"]),
        ("1999", ["Oslo", "Paris", "Rome"]), (BEFORE_2000, ["Oslo", "Paris", "Rome"]), ("2000", ["Oslo", "Rome"]),
    ]


def test_one_day_events_and_mixed_precision() -> None:
    # lines 12-13, inclusive days: [03-05, 03-06) + [03-06, 03-08) merge
    assert _as_of(_convert(True), "Eve", "visited") == [
        ("2014-03-04T23:59:59.999999Z", []), ("2014-03-05", ["Berlin"]), ("2014-03-05T23:59:59.999999Z", ["Berlin"]),
        ("2014-03-06", ["Berlin"]), ("2014-03-07T23:59:59.999999Z", ["Berlin"]), ("2014-03-08", []),
    ]
    # lines 19-20: Acme [2020-06, 2022), Beta [2021-01-15T09:30Z, 2021-04)
    hal = dict(_as_of(_convert(True), "Hal", "works at"))
    assert hal["2021-01-15T09:30Z"] == ["Acme", "Beta"] and hal["2021-04"] == ["Acme"] and hal["2022"] == []
    # line 18: a three-digit year is the year 0986
    assert dict(_as_of(_convert(True), "Gus", "ruled"))["0986"] == ["Kingdom"]


def test_bad_rows_are_skipped_and_counted() -> None:
    inclusive = convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, max_keys=None, max_questions=None)
    # lines 9 and 38 end before they start; line 16 has no subject
    assert inclusive.skipped == {"end-before-start": 2, "bad-name": 1}
    assert inclusive.table.lines == 36 and len(inclusive.table.rows) == 33
    assert any(", line 9, column 'until': end 1985 (inclusive) is not after start 1990" in p
               for p in inclusive.table.problems)
    assert any(", line 16, column 'who':" in p for p in inclusive.table.problems)
    assert not any(q.get("subject") in ("Cy", "Ned") for s in inclusive.scenarios for q in s.questions)
    # read as exclusive, a row from 2011 to 2011 (and each one-day event) is empty: 7 more
    exclusive = convert_intervals(FIXTURE, inclusive_end=False, columns=COLUMNS, max_keys=None, max_questions=None)
    assert exclusive.skipped == {"end-before-start": 9, "bad-name": 1}
    with pytest.raises(ScenarioFormatError, match=r"intervals_small\.tsv, line 9, column 'until'"):
        convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, strict=True)


def test_two_written_forms_of_one_name_are_one_entity() -> None:
    conv = convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, max_keys=None, max_questions=None)
    assert conv.table.merged_names == {"kim_jong_un": ("Kim Jong Un", "Kim Jong-Un")}
    (scenario,) = conv.scenarios
    # the answer carries the form the scenario asserted first (as subject or object)
    first = next(name for op in scenario.ops if op.kind == "assert" for name in (op.get("subject"), op.get("object"))
                 if normalize_key(name) == "kim_jong_un")
    dee = dict(_as_of(conv.scenarios, "Dee", "knows"))
    # lines 10-11: [2010, 2013) + [2013, 2015) of the same entity touch and merge
    assert dee["2010"] == dee["2013"] == dee["2014-12-31T23:59:59.999999Z"] == [first] and dee["2015"] == []


def test_known_at_counts_only_the_rows_loaded_by_then() -> None:
    """Every known-at answer against a second, plain oracle: a row holds at as_of if it was asserted by
    known_at and its interval contains as_of (touching rows change nothing for one instant)."""
    for inclusive in (True, False):
        (scenario,) = _convert(inclusive, batches=4)
        known = sorted({q.get("known_at") for q in scenario.questions if q.rule == "intervals-known-at"},
                       key=instant)
        assert len(known) == 5  # before the first batch, then after each of the 4
        asserts = [op for op in scenario.ops if op.kind == "assert"]
        assert len({op.at for op in asserts}) == len(asserts)
        batch_of = [sum(instant(k) < instant(op.at) for k in known) for op in asserts]
        assert batch_of == sorted(batch_of) and set(batch_of) == {1, 2, 3, 4}
        checked = 0
        for q in scenario.questions:
            if q.rule != "intervals-known-at":
                continue
            t, k = instant(q.get("as_of")), instant(q.get("known_at"))
            want = set()
            for op in asserts:
                if (instant(op.at) <= k and normalize_key(op.get("subject")) == normalize_key(q.get("subject"))
                        and normalize_key(op.get("predicate")) == normalize_key(q.get("predicate"))
                        and instant(op.get("valid_from")) <= t < instant(op.get("valid_to"), end=True)):
                    want.add(normalize_key(op.get("object")))
            assert {normalize_key(o) for o in q.expect} == want, q
            checked += 1
        assert checked >= 80
        assert all(q.expect == [] for q in scenario.questions if q.get("known_at") == known[0])


def test_same_seed_same_scenarios(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    dump_scenarios(_convert(True, max_questions=60, keys_per_scenario=5, seed=7), a)
    dump_scenarios(_convert(True, max_questions=60, keys_per_scenario=5, seed=7), b)
    dump_scenarios(_convert(True, max_questions=60, keys_per_scenario=5, seed=8), c)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    scenarios = load_scenarios(a)  # the dumped file is a valid scenario file
    assert len(scenarios) == 3 and sum(len(s.questions) for s in scenarios) == 60
    assert {q.rule for s in scenarios for q in s.questions} == {"intervals-as-of", "intervals-known-at"}


def test_key_sample_and_scenario_size() -> None:
    conv = convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, max_keys=5, max_questions=None,
                             keys_per_scenario=2)
    assert conv.keys == 14 and conv.keys_used == 5 and [len(s.title) > 0 for s in conv.scenarios] == [True] * 3
    for s in conv.scenarios:
        assert len({(q.get("subject"), q.get("predicate")) for q in s.questions}) <= 2


# --- bad input ---------------------------------------------------------------------------------------------------

def _write(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "in.tsv"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


HEADER = "subject\trelation\tobject\tstart\tend\n"


@pytest.mark.parametrize(("text", "match"), [
    ("subject\trelation\tobject\tstart\n", r"in\.tsv, line 1: no column 'end' \(for end\)"),
    (HEADER + "a\tr\tb\t2001\t2002\na\tr\tb\t20x1\t2002\n", r"in\.tsv, line 3, column 'start': invalid time"),
    (HEADER + "a\tr\tb\t2001\n", r"in\.tsv, line 2, column 'end': missing"),
    ("", r"in\.tsv, line 1: the file is empty"),
], ids=["missing-column", "unreadable-time", "short-row", "empty-file"])
def test_fatal_input(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ScenarioFormatError, match=match):
        convert_intervals(_write(tmp_path, text), inclusive_end=True)


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    p = _write(tmp_path, HEADER.encode() + b"a\tr\tb\t2001\t2002\nM\xfcller\tr\tb\t2001\t2002\n")
    with pytest.raises(ScenarioFormatError, match=r"in\.tsv, line 3: not UTF-8 text \(byte 2 of the line\)"):
        convert_intervals(p, inclusive_end=True)
    with pytest.raises(ScenarioFormatError, match="cannot read interval file"):
        convert_intervals(tmp_path / "absent.tsv", inclusive_end=True)


def test_end_before_start_strict_or_counted(tmp_path: Path) -> None:
    p = _write(tmp_path, HEADER + "a\tr\tb\t2001\t2000\na\tr\tc\t2001\t\n")
    table = read_intervals(p, inclusive_end=False)
    assert table.skipped["end-before-start"] == 1 and [r.object for r in table.rows] == ["c"]
    with pytest.raises(ScenarioFormatError, match=r"line 2, column 'end': end 2000 is not after start 2001"):
        read_intervals(p, inclusive_end=False, strict=True)


def test_one_day_events_read_from_one_date_column(tmp_path: Path) -> None:
    p = _write(tmp_path, "subject\trelation\tobject\tdate\tsource\nA\tmeet\tB\t2014-01-31\tx\n")
    (row,) = read_intervals(p, inclusive_end=True, columns=parse_columns("start=date,end=date")).rows
    assert (str(row.start), str(row.end)) == ("2014-01-31", "2014-02-01")


def test_parse_columns() -> None:
    assert parse_columns(" start = start_year ,end=end_year") == {"start": "start_year", "end": "end_year"}
    assert parse_columns(WIKIDATA_COLUMNS)["relation"] == "relation_label"


@pytest.mark.parametrize(("text", "match"), [
    ("", "--columns is empty"),
    ("start", r"--columns: 'start' is not NAME=COLUMN"),
    ("begin=start_year", "--columns: unknown name 'begin'"),
    ("start=", "--columns: start= names no column"),
    ("start=a,start=b", "--columns: start is given twice"),
])
def test_parse_columns_errors(text: str, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_columns(text)


def test_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="batches must be an integer >= 1"):
        convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, batches=0)
    with pytest.raises(InvalidInputError, match="unknown column name"):
        convert_intervals(FIXTURE, inclusive_end=True, columns={"predicate": "relation"})


# --- chronomem answers every converted question ------------------------------------------------------------------

@pytest.mark.parametrize("inclusive", [True, False])
@pytest.mark.parametrize("batches", [1, 4])
def test_chronomem_sqlite_passes_the_fixture(inclusive: bool, batches: int) -> None:
    scenarios = _convert(inclusive, batches=batches, seed=batches)
    _assert_passes(run_system(ChronomemSystem(), scenarios), sum(len(s.questions) for s in scenarios))


def test_chronomem_postgres_passes_the_fixture() -> None:
    scenarios = _convert(True)
    _assert_passes(run_system(ChronomemSystem(pg_test_url()), scenarios), sum(len(s.questions) for s in scenarios))


def test_real_wikidata_sample_passes_on_sqlite() -> None:
    if not WIKIDATA.is_file():
        pytest.skip(f"shared data set not found: {WIKIDATA} (see ../shared/README.md)")
    with WIKIDATA.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    reversed_rows = sum(1 for r in rows
                        if r["start_year"] and r["end_year"] and int(r["end_year"]) < int(r["start_year"]))
    conv = convert_intervals(WIKIDATA, inclusive_end=True, columns=parse_columns(WIKIDATA_COLUMNS),
                             max_keys=150, max_questions=600)
    assert conv.table.lines == len(rows)
    assert conv.skipped == {"end-before-start": reversed_rows, "bad-name": 0}
    assert conv.keys_used == 150 and sum(len(s.questions) for s in conv.scenarios) == 600
    _assert_passes(run_system(ChronomemSystem(), conv.scenarios), 600)


def test_figures_for_the_cli() -> None:
    conv = convert_intervals(FIXTURE, inclusive_end=True, columns=COLUMNS, max_keys=None, max_questions=None)
    n = sum(len(s.questions) for s in conv.scenarios)
    assert conv.describe() == f"14 of 14 keys, {n} questions; skipped 2 end-before-start, 1 bad-name"
    d = conv.to_dict()
    assert (d["rows"], d["accepted"], d["rows_used"], d["scenarios"]) == (36, 33, 33, 1)
    assert d["merged_names"] == {"kim_jong_un": ["Kim Jong Un", "Kim Jong-Un"]}
    assert "36 rows, 33 accepted (skipped: 2 end-before-start, 1 bad-name)" in conv.summary()
