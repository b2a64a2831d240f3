"""chronomem.service.transfer.jsonl: JSONL export/restore (lossless), plain JSONL and CSV/TSV import."""

from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import ConflictError, FakeClock, InvalidInputError, Memory
from chronomem.service.transfer.jsonl import export_jsonl, import_jsonl, import_table

VALID_TIMES: list[str | None] = [None, "1999", "2015-06", "2019-02-15", "2021-05-15", "2022-01", "2024", "2030"]


def build_story(mem: Memory, clock: FakeClock) -> list[str]:
    """A namespace exercising every kind of version: supersession, out-of-order
    arrival, coalescing, extra evidence, correction, invalidation, retraction,
    literals, properties, aliases, merge and unmerge. Returns system times
    (ISO) between the steps, for known_at checks."""
    marks: list[str] = []

    def mark() -> None:
        marks.append(clock.peek().isoformat())
        clock.advance(10)

    mem.define_predicate("ceo", "one", aliases=["chief executive"], description="who runs it")
    mem.define_predicate("lives in", "one", inverse="home of")
    mem.set_entity("Acme Corp", type="company", properties={"founded": 1999, "tags": ["b2b"]})
    mem.add_fact("Acme Corp", "ceo", "Alice Ng", "2015-03", source="annual report", properties={"page": 4})
    mark()
    mem.add_fact("Acme Corp", "chief executive", "Bob Okafor", "2022-01", source="press")
    mem.add_fact("Acme Corp", "ceo", "Interim Ian", "2021-09", "2022-01")  # out of order
    mark()
    mem.add_fact("Dana Lee", "lives in", "Lisbon", "2018")
    mem.add_fact("Dana Lee", "lives in", "Berlin", "2021-05-15T09:30:00+02:00", episode_id="chat-7")
    mem.add_fact("Dana Lee", "works at", "Acme Corp", "2019-01", "2020-01", source="hr")
    mem.add_fact("Dana Lee", "works at", "Acme Corp", "2020-01", "2021", source="cv")  # touches: coalesces
    mem.add_fact("Dana Lee", "works at", "Acme Corp", "2019-06", "2020-06", source="linkedin")  # contained
    mark()
    wrong = mem.add_fact("Dana Lee", "works at", "Initech", "2016")
    mem.correct(wrong.id, valid_from="2017-04", confidence=0.7)
    mem.add_fact("Payments", "message queue", "RabbitMQ", "2019-02")
    mem.invalidate("Payments", "message queue", "RabbitMQ", "2023-06", reason="migrated")
    gone = mem.add_fact("Payments", "message queue", "ZeroMQ", "2020")
    mem.retract(gone.id, reason="never happened")
    mark()
    mem.add_fact("Dana Lee", "age", 41, literal=True)
    mem.add_fact("Dana Lee", "height", 1.72)
    mem.add_fact("Dana Lee", "remote", True)
    mem.add_fact("Dana Lee", "birthday", _dt.date(1984, 2, 29))
    mem.add_fact("Dana Lee", "nickname", "DL", literal=True, confidence=0.4)
    mem.alias("Dana Lee", "Dana")
    mem.add_fact("D. Lee", "speaks", "Portuguese", "2018")
    mark()
    op = mem.merge("Dana Lee", "D. Lee")
    mark()
    mem.add_fact("ACME", "based in", "Paris")
    mem.alias("ACME", "Acme SA")
    op2 = mem.merge("Acme Corp", "Acme SA")  # merge by an alias of the folded entity
    mark()
    mem.unmerge(op)
    mark()
    assert op2
    return marks


def answers(mem: Memory, known: list[str | None]) -> dict[str, Any]:
    """Every read the export promises to preserve, minus the read-time flag
    ``current`` (it depends on each store's own "now")."""

    def dicts(facts: list[chronomem.Fact]) -> list[dict[str, Any]]:
        return [{k: v for k, v in f.to_dict().items() if k != "current"} for f in facts]

    out: dict[str, Any] = {}
    for t in VALID_TIMES:
        for k in known:
            out[f"facts as_of={t} known_at={k}"] = dicts(mem.facts(as_of=t, known_at=k))
    for e in mem.entities():
        out[f"history {e.name}"] = dicts(mem.history(e.name, direction="both"))
        out[f"entity {e.name}"] = mem.entity(e.name).to_dict()
        for f in mem.history(e.name):
            out[f"evidence {f.id}"] = [p.to_dict() for p in mem.evidence(f.id)]
    out["aliases"] = {a: mem.entity(a).name for a in ("Dana", "D. Lee", "Acme SA", "ACME", "chief executive")
                      if a != "chief executive"}
    out["predicates"] = [p.to_dict() for p in mem.predicates()]
    out["ceo via alias"] = dicts(mem.facts("Acme Corp", "chief executive", as_of="2023"))
    return out


@pytest.fixture
def story(tmp_path: Path) -> tuple[Memory, list[str]]:
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = chronomem.open(tmp_path / "src.db", clock=clock)
    marks = build_story(mem, clock)
    yield mem, marks
    mem.close()


def test_export_restore_round_trip_is_lossless(story: tuple[Memory, list[str]], tmp_path: Path) -> None:
    src, marks = story
    buf = io.StringIO()
    exported = export_jsonl(src, buf)
    assert exported.versions == src.stats().versions
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert lines[0]["type"] == "chronomem-export"
    assert {line["type"] for line in lines[1:]} == {"predicate", "entity", "fact", "source", "operation"}

    dst = chronomem.open(tmp_path / "dst.db", clock=FakeClock("2040-01-01T00:00:00Z"))
    restored = import_jsonl(dst, io.BytesIO(buf.getvalue().encode()))
    assert (restored.versions, restored.entities, restored.sources) == (
        exported.versions, exported.entities, exported.sources)
    known: list[str | None] = [None, "2024-12-31T00:00:00Z", *marks]
    assert answers(dst, known) == answers(src, known)
    # exporting the copy gives the same file, apart from the export time
    again = io.StringIO()
    export_jsonl(dst, again)
    assert again.getvalue().splitlines()[1:] == buf.getvalue().splitlines()[1:]
    dst.close()


def test_restored_store_keeps_working_after_future_system_times(tmp_path: Path) -> None:
    """Restored versions may carry system times later than this machine's
    clock; later writes must still land after them."""
    src = chronomem.open(tmp_path / "src.db", clock=FakeClock("2090-01-01T00:00:00Z"))
    src.add_fact("Acme", "ceo", "Alice", "2020")
    buf = io.StringIO()
    export_jsonl(src, buf)
    dst = chronomem.open(tmp_path / "dst.db")  # the real clock, decades earlier
    import_jsonl(dst, io.StringIO(buf.getvalue()))
    dst.invalidate("Acme", "ceo", "Alice", "2024")
    (fact,) = dst.facts("Acme", "ceo")
    assert fact.valid_to_text == "2024"
    assert fact.system_from > src.facts("Acme")[0].system_from


def test_restore_refuses_non_empty_namespace_and_reused_ids(story: tuple[Memory, list[str]], tmp_path: Path) -> None:
    src, _ = story
    buf = io.StringIO()
    export_jsonl(src, buf)
    with pytest.raises(ConflictError, match="not empty"):
        import_jsonl(src, io.StringIO(buf.getvalue()))
    other_ns = chronomem.open(tmp_path / "src.db", namespace="copy")
    with pytest.raises(ConflictError, match="already exists"):
        import_jsonl(other_ns, io.StringIO(buf.getvalue()))
    assert other_ns.stats().versions == 0 and other_ns.entities() == []
    other_ns.close()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda ls: ls.__setitem__(0, {**ls[0], "format_version": 99}), "format version"),
        (lambda ls: ls.append({"type": "fact", "id": "x", "version": 1, "subject": "nobody", "predicate": "ceo",
                               "object": "alice_ng", "system_from": "2025-01-01T00:00:00Z"}), "not defined"),
        (lambda ls: ls.append({"type": "gossip"}), "unknown line type"),
        (lambda ls: next(x for x in ls if x["type"] == "fact").__setitem__("valid_to", "1000"), "empty valid"),
        (lambda ls: next(x for x in ls if x["type"] == "fact").__setitem__("system_from", "2025-13-45"),
         r"line \d+: invalid time for system_from"),
        (lambda ls: next(x for x in ls if x["type"] == "fact" and x["object_literal"]).__setitem__(
            "object_literal", "no tag"), "not an encoded literal"),
        (lambda ls: next(x for x in ls if x["type"] == "fact").__setitem__("valid_from_precision", "fortnight"),
         "unknown precision"),
        (lambda ls: ls.insert(-1, {**next(x for x in ls if x["type"] == "entity"), "key": "twin"}), "used twice"),
        (lambda ls: ls.insert(2, {"type": "predicate", "key": "boss", "name": "boss", "declared": True,
                                  "aliases": ["ceo"]}), "used twice"),
    ],
)
def test_corrupt_export_is_rejected_and_nothing_written(story: tuple[Memory, list[str]], tmp_path: Path,
                                                       mutate: Any, message: str) -> None:
    src, _ = story
    buf = io.StringIO()
    export_jsonl(src, buf)
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    mutate(lines)
    dst = chronomem.open(tmp_path / "dst.db")
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    with pytest.raises(InvalidInputError, match=message):
        import_jsonl(dst, io.StringIO(text))
    assert dst.stats().versions == 0 and dst.entities() == [] and dst.predicates() == []
    dst.close()


def test_plain_jsonl_lines_are_added(tmp_path: Path) -> None:
    mem = chronomem.open(tmp_path / "m.db")
    text = "\n".join([
        json.dumps({"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2015",
                    "valid_to": "2022"}),
        "",
        json.dumps({"subject": "Acme", "predicate": "ceo", "object": "Bob", "valid_from": "2022"}),
        json.dumps({"subject": "Bob", "predicate": "age", "object": 52}),
        json.dumps({"subject": "Acme", "predicate": "ceo", "object": "Eve", "valid_from": "2025-13-45"}),
        "not json",
    ]) + "\n"
    result = import_jsonl(mem, io.StringIO(text), batch_size=2)
    assert (result.rows, result.added, result.skipped) == (5, 3, 2)
    assert result.errors[0].startswith("line 5: invalid time for valid_from")
    assert result.errors[1].startswith("line 6: not valid JSON")
    assert [f.object for f in mem.facts("Acme", "ceo", as_of="2020")] == ["Alice"]
    assert [f.object for f in mem.facts("Bob", "age")] == [52]
    with pytest.raises(InvalidInputError, match="line 5"):
        import_jsonl(mem, io.BytesIO(text.encode()), strict=True)
    mem.close()


def test_strict_plain_jsonl_writes_nothing_on_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"subject": "A", "predicate": "p", "object": "B"}) + "\n"
                    + json.dumps({"subject": "A", "predicate": "p", "object": "C", "valid_to": "2020",
                                  "valid_from": "2021"}) + "\n")
    mem = chronomem.open(tmp_path / "m.db")
    with path.open("rb") as fp, pytest.raises(InvalidInputError, match="line 2: the end"):
        import_jsonl(mem, fp, strict=True)
    assert mem.stats().versions == 0
    mem.close()


def _write(path: Path, rows: list[list[str]], delimiter: str) -> Path:
    path.write_text("\n".join(delimiter.join(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_table_import_with_mapping_and_inclusive_end(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.csv", [
        ["who", "rel", "what", "start", "end", "src"],
        ["Acme", "ceo", "Alice", "2015", "2021", "wiki"],
        ["Acme", "ceo", "Bob", "2022", "", ""],
        ["Rome", "capital of", "Roman Empire", "27", "395", "wiki"],
        ["Acme", "ceo", "Carol", "2019", "2018", "wiki"],  # end before start: skipped
        ["", "ceo", "Dan", "2019", "", ""],  # no subject: skipped
        ["Acme", "ceo", "Eve", "2019-02-30", "", ""],  # bad date: skipped
    ], ",")
    mem = chronomem.open(tmp_path / "m.db")
    seen: list[tuple[int, int]] = []
    result = import_table(
        mem, path, columns={"subject": "who", "predicate": "rel", "object": "what", "valid_from": "start",
                            "valid_to": "end", "source": "src"},
        inclusive_end=True, progress=lambda b, r: seen.append((b, r)),
    )
    assert (result.format, result.rows, result.added, result.skipped) == ("csv", 6, 3, 3)
    assert [e.split(":")[0] for e in result.errors] == ["line 5", "line 6", "line 7"]
    assert "the end (2018, inclusive) is not after the start (2019)" in result.errors[0]
    assert [f.object for f in mem.facts("Acme", "ceo", as_of="2021-12-31")] == ["Alice"]
    assert [f.object for f in mem.facts("Acme", "ceo", as_of="2022-01-01")] == ["Bob"]
    (alice,) = mem.facts("Acme", "ceo", "Alice")
    assert (alice.valid_from_text, alice.valid_to_text, alice.source) == ("2015", "2022", "wiki")
    (bob,) = mem.facts("Acme", "ceo", "Bob")
    assert bob.valid_to is None and bob.source is None
    (rome,) = mem.facts("Rome")
    assert (rome.valid_from_text, rome.valid_to_text) == ("0027", "0396")
    assert seen and seen[-1] == (path.stat().st_size, 6)


def test_table_import_without_header_and_exclusive_end(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.tsv", [
        ["x", "Acme", "ceo", "Alice", "2015-03", "2022-01"],
        ["x", "Acme", "ceo", "Bob", "2022-01", ""],
    ], "\t")
    mem = chronomem.open(tmp_path / "m.db")
    result = import_table(mem, path, header=False,
                          columns={"subject": 2, "predicate": "3", "object": 4, "valid_from": 5, "valid_to": 6})
    assert (result.format, result.added) == ("tsv", 2)
    assert [f.object for f in mem.facts("Acme", as_of="2021-12-31T23:59:59Z")] == ["Alice"]
    assert [f.object for f in mem.facts("Acme", as_of="2022-01")] == ["Bob"]


def test_table_import_default_columns_batches_and_literals(tmp_path: Path) -> None:
    rows = [["subject", "predicate", "object", "valid_from", "confidence"]]
    rows += [[f"sensor{i % 7}", "reading", str(i), f"2024-01-{1 + i % 28:02d}", "0.5"] for i in range(100)]
    path = _write(tmp_path / "r.csv", rows, ",")
    one = chronomem.open(tmp_path / "one.db")
    many = chronomem.open(tmp_path / "many.db")
    r1 = import_table(one, path, literal=True, source="sensors.csv")
    r2 = import_table(many, path, literal=True, source="sensors.csv", batch_size=7)
    assert r1.added == r2.added == 100 and r1.facts == r2.facts

    def key(mem: Memory) -> list[tuple[Any, ...]]:
        return sorted((f.subject, f.object, f.valid_from_text, f.confidence, f.source, f.literal)
                      for f in mem.facts())

    assert key(one) == key(many)
    assert all(f.literal and f.source == "sensors.csv" and f.confidence == 0.5 for f in one.facts())
    # re-running the import adds nothing
    again = import_table(one, path, literal=True, source="sensors.csv")
    assert again.facts == r1.facts and one.stats().versions == r1.facts


def test_table_import_mapping_errors(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.csv", [["a", "b", "c"], ["x", "y", "z"]], ",")
    mem = chronomem.open(tmp_path / "m.db")
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        import_table(mem, path, columns={"subject": "a", "predicate": "b", "object": "nope"})
    with pytest.raises(InvalidInputError, match="unknown field"):
        import_table(mem, path, columns={"subject": "a", "predicate": "b", "object": "c", "colour": "a"})
    with pytest.raises(InvalidInputError, match="needs object"):
        import_table(mem, path, columns={"subject": "a", "predicate": "b"})
    with pytest.raises(InvalidInputError, match="must be a number"):
        import_table(mem, path, header=False, columns={"subject": "a", "predicate": "b", "object": "c"})
    with pytest.raises(InvalidInputError, match="start at 1"):
        import_table(mem, path, header=False, columns={"subject": 0, "predicate": 1, "object": 2})
    with pytest.raises(InvalidInputError, match="extension"):
        import_table(mem, _write(tmp_path / "t.txt", [["a"]], ","))
    with pytest.raises(InvalidInputError, match="nothing was imported"):
        import_table(mem, _write(tmp_path / "bad.csv", [["subject", "predicate", "object", "valid_from"],
                                                        ["A", "p", "B", "2020"], ["A", "p", "C", "20x0"]], ","),
                     strict=True)
    assert mem.stats().versions == 0


def test_plain_jsonl_checks_fields_and_reports_a_failing_batch(tmp_path: Path) -> None:
    mem = chronomem.open(tmp_path / "m.db")
    mem.define_predicate("ceo", "one")
    lines = [
        {"subject": "Acme", "predicate": "ceo", "object": "Alice", "colour": "red"},
        {"subject": "Acme", "predicate": "ceo", "object": ["a", "list"]},
        {"subject": "Acme", "predicate": "ceo", "object": "Alice", "properties": [1]},
        {"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2020"},
    ]
    result = import_jsonl(mem, io.StringIO("".join(json.dumps(x) + "\n" for x in lines)))
    assert (result.added, result.skipped) == (1, 3)
    assert "unknown fact field(s): colour" in result.errors[0]
    assert "object must be" in result.errors[1] and "properties must be" in result.errors[2]
    # a row the store itself refuses fails its whole batch, with the lines named
    bad = [{"subject": "Acme", "predicate": "ceo", "object": "Bob", "valid_from": "2022"},
           {"subject": "Acme", "predicate": "ceo", "object": "Carol", "supersede": False}]
    with pytest.raises(InvalidInputError, match=r"lines 1-2 \(one batch, not imported\)"):
        import_jsonl(mem, io.StringIO("".join(json.dumps(x) + "\n" for x in bad)))
    assert [f.object for f in mem.facts("Acme", "ceo")] == ["Alice"]
    mem.close()


def test_empty_files_import_nothing(tmp_path: Path) -> None:
    mem = chronomem.open(tmp_path / "m.db")
    (tmp_path / "empty.csv").write_text("")
    assert import_table(mem, tmp_path / "empty.csv").rows == 0
    assert import_jsonl(mem, io.StringIO("\n\n")).rows == 0
    (tmp_path / "latin1.csv").write_bytes("subject,predicate,object\nJos\xe9,p,x\n".encode("latin-1"))
    with pytest.raises(InvalidInputError, match="line 2: not UTF-8"):
        import_table(mem, tmp_path / "latin1.csv")
    assert mem.stats().versions == 0
    mem.close()
