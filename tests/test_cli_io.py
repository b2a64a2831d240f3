"""`chronomem import` / `chronomem export` on real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import chronomem
from chronomem import FakeClock
from chronomem.adapters.cli import main
from test_io import answers, build_story


def run(db: Path, *args: str) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--db", str(db), *args], catch_exceptions=False)


def assert_error(result: Result, fragment: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert result.stdout == ""


def test_export_then_import_reproduces_both_time_axes(tmp_path: Path) -> None:
    src_db, dst_db, out = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / "backup.jsonl"
    clock = FakeClock("2025-01-01T00:00:00Z")
    src = chronomem.open(src_db, clock=clock)
    marks = build_story(src, clock)

    exported = run(src_db, "export", str(out), "--json")
    assert exported.exit_code == 0, exported.output
    summary = json.loads(exported.stdout)
    assert summary["versions"] == src.stats().versions
    assert out.read_text().count("\n") == 1 + sum(summary[k] for k in ("predicates", "entities", "versions",
                                                                         "sources", "operations"))
    imported = run(dst_db, "import", str(out), "--json")
    assert imported.exit_code == 0, imported.output
    result = json.loads(imported.stdout)
    assert (result["format"], result["versions"], result["entities"]) == ("export", summary["versions"],
                                                                          summary["entities"])
    dst = chronomem.open(dst_db)
    known: list[str | None] = [None, *marks]
    assert answers(dst, known) == answers(src, known)
    # the CLI's own reads agree too
    for t in ("2016", "2021-10", "2023"):
        a = json.loads(run(src_db, "facts", "--as-of", t, "--known-at", marks[1], "--json").stdout)
        b = json.loads(run(dst_db, "facts", "--as-of", t, "--known-at", marks[1], "--json").stdout)
        assert [dict(x, current=None) for x in a] == [dict(x, current=None) for x in b]
    # a second restore into the now non-empty namespace is refused, nothing changes
    before = dst.stats()
    assert_error(run(dst_db, "import", str(out)), "not empty")
    assert dst.stats() == before
    src.close()
    dst.close()


def test_export_to_stdout(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run(db, "add", "A", "p", "B", "--from", "2020").exit_code == 0
    result = run(db, "export", "-")
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["type"] == "chronomem-export" and lines[-1]["type"] == "fact"
    assert "exported 1 fact version" in result.stderr
    assert_error(run(db, "export", "-", "--json"), "stdout")
    assert_error(run(db, "export", str(tmp_path / "missing-dir" / "x.jsonl")), "No such file")


WIKI_LIKE = [
    ["subject_qid", "relation_pid", "relation_label", "object_qid", "start_year", "end_year"],
    ["Q1", "P39", "position held", "Q10", "1990", "1994"],
    ["Q1", "P39", "position held", "Q11", "1995", ""],
    ["Q2", "P54", "member of sports team", "Q20", "", "2001"],
    ["Q2", "P54", "member of sports team", "Q21", "2003", "2001"],  # end before start: skipped
]


def _table(path: Path, rows: list[list[str]], delimiter: str) -> Path:
    path.write_text("".join(delimiter.join(r) + "\n" for r in rows), encoding="utf-8")
    return path


MAP = "subject=subject_qid,predicate=relation_label,object=object_qid,valid_from=start_year,valid_to=end_year"


def test_import_tsv_with_mapping_and_inclusive_end(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    tsv = _table(tmp_path / "wiki.tsv", WIKI_LIKE, "\t")
    result = run(db, "import", str(tsv), "--map", MAP, "--inclusive-end")
    assert result.exit_code == 0, result.output
    assert "read 4 rows: 3 added as new facts, 0 already present, 1 skipped (invalid)" in result.stdout
    assert "skipped 1 invalid row" in result.stderr and "line 5" in result.stderr
    mem = chronomem.open(db)

    def held(subject: str, year: str) -> list[Any]:
        return [f.object for f in mem.facts(subject, as_of=year)]

    assert held("Q1", "1994-12-31") == ["Q10"]
    assert held("Q1", "1995") == ["Q11"]
    assert held("Q1", "2030") == ["Q11"]
    assert held("Q2", "1900") == ["Q20"] and held("Q2", "2001-12") == ["Q20"] and held("Q2", "2002") == []
    mem.close()


def test_import_csv_without_header_by_column_number(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    csv_path = _table(tmp_path / "rows.csv", [r[:1] + r[2:] for r in WIKI_LIKE[1:3]], ",")
    result = run(db, "import", str(csv_path), "--no-header", "--map", "subject=1,predicate=2",
                 "--map", "object=3,valid_from=4,valid_to=5", "--source", "rows.csv", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 2
    mem = chronomem.open(db)
    assert [(f.object, f.valid_to_text, f.source) for f in mem.facts("Q1")] == [("Q10", "1994", "rows.csv"),
                                                                              ("Q11", None, "rows.csv")]
    mem.close()


def test_import_plain_jsonl_and_format_option(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    data = tmp_path / "facts.txt"
    data.write_text(json.dumps({"subject": "A", "predicate": "p", "object": "B", "valid_from": "2020"}) + "\n")
    assert_error(run(db, "import", str(data)), "--format")
    result = run(db, "import", str(data), "--format", "jsonl", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["added"] == 1
    assert_error(run(db, "import", str(data), "--format", "jsonl", "--inclusive-end"), "CSV/TSV")


def test_progress_bar_only_without_json(tmp_path: Path) -> None:
    rows = [["subject", "predicate", "object", "valid_from"]]
    rows += [[f"e{i}", "p", f"o{i}", "2020"] for i in range(5000)]
    csv_path = _table(tmp_path / "big.csv", rows, ",")
    shown = run(tmp_path / "a.db", "import", str(csv_path), "--progress")
    assert shown.exit_code == 0
    assert "importing" in shown.stderr and "5,000 rows" in shown.stderr
    # a long list is printed as tab-separated lines, not a table
    listed = run(tmp_path / "a.db", "facts").stdout.splitlines()
    assert len(listed) == 5000 and all(line.count("\t") == 3 for line in listed)
    assert listed[0].startswith("e0 -p-> o0\t[2020, …)\tvalid now\t")
    silent = run(tmp_path / "b.db", "import", str(csv_path), "--progress", "--json")
    assert silent.exit_code == 0
    assert silent.stderr == ""
    assert json.loads(silent.stdout)["added"] == 5000
    default = run(tmp_path / "c.db", "import", str(csv_path))  # not a terminal: no bar
    assert default.exit_code == 0 and default.stderr == ""


@pytest.mark.parametrize("args, fragment", [
    (["--map", "subject=who,predicate=relation_label,object=object_qid"], "no column 'who'"),
    (["--map", "subject=subject_qid,predicate=relation_label,object=object_qid,colour=x"], "unknown field"),
    (["--map", "subject=subject_qid"], "needs predicate, object"),
    (["--map", MAP, "--strict"], "nothing was imported"),
])
def test_import_errors_write_nothing(tmp_path: Path, args: list[str], fragment: str) -> None:
    db = tmp_path / "m.db"
    tsv = _table(tmp_path / "wiki.tsv", WIKI_LIKE, "\t")
    assert_error(run(db, "import", str(tsv), *args), fragment)
    mem = chronomem.open(db)
    assert mem.stats().versions == 0
    mem.close()


def test_import_usage_errors(tmp_path: Path) -> None:
    tsv = _table(tmp_path / "wiki.tsv", WIKI_LIKE, "\t")
    assert run(tmp_path / "m.db", "import", str(tsv), "--map", "subject").exit_code == 2
    assert run(tmp_path / "m.db", "import", str(tmp_path / "missing.csv")).exit_code == 2
    assert run(tmp_path / "m.db", "import", str(tsv), "--batch-size", "0").exit_code == 2
