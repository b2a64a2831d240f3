"""The Jepsen-style invariant checker: it finds injected anomalies, and none on real runs.

(a) a hand-made history against a store prepared so that each anomaly kind occurs exactly
once; (b) a real run of worker subprocesses on SQLite, one SIGKILLed; (c) the same on the
real PostgreSQL, in a fresh schema dropped afterwards.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem.adapters.benchmark.invariants import ANOMALIES, check, run_workload
from chronomem.adapters.benchmark.invariants.history import read_history
from chronomem.core.time import to_us
from chronomem.errors import InvalidInputError

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class _History:
    """Hand-made history lines with increasing monotonic times."""

    def __init__(self, path: Path, process: str) -> None:
        self.path, self.process, self.t = path, process, 1000
        self.lines: list[dict[str, Any]] = [{"type": "start", "process": process, "t": self.tick()}]

    def tick(self) -> int:
        self.t += 10
        return self.t

    def op(self, op: str, f: str, args: dict[str, Any], value: dict[str, Any] | None,
           t: tuple[int, int] | None = None) -> None:
        t_inv, t_ok = t if t is not None else (self.tick(), self.tick())
        self.lines.append({"type": "invoke", "process": self.process, "t": t_inv, "op": op, "f": f, "args": args})
        if value is not None:
            self.lines.append({"type": "ok", "process": self.process, "t": t_ok, "op": op, "f": f, "value": value})

    def save(self, done: bool = True) -> Path:
        if done:
            self.lines.append({"type": "done", "process": self.process, "t": self.tick()})
        self.path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return self.path


def _assert(h: _History, mem: chronomem.Memory, op: str, s: str, p: str, o: str, start: str,
            t: tuple[int, int] | None = None) -> int:
    fact = mem.add_fact(s, p, o, start, source=op)
    sys_us = to_us(fact.system_from)
    h.op(op, "assert", {"subject": s, "predicate": p, "object": o, "valid_from": start, "valid_to": None,
                        "source": op}, {"fact_id": fact.id, "system_us": sys_us}, t)
    return sys_us


def test_injected_anomalies_are_each_found_once(tmp_path: Path) -> None:
    db = str(tmp_path / "broken.db")
    h = _History(tmp_path / "p0.jsonl", "p0")
    mem = chronomem.open(db, "inv", embedder=None)
    try:
        # double-value: two overlapping values written before "holds" is declared single-valued
        # (declaring does not rewrite what is stored); the history has no define, so the
        # model reads the key as many-valued, as it was written
        _assert(h, mem, "p0.1", "a", "holds", "x1", "2000")
        _assert(h, mem, "p0.2", "a", "holds", "x2", "2001")
        mem.define_predicate("holds", "one")
        # lost-write: acknowledged, never stored
        h.op("p0.3", "assert", {"subject": "b", "predicate": "tagged", "object": "lost1", "valid_from": "2000",
                                "valid_to": None, "source": "p0.3"},
             {"fact_id": "01a00000-0000-7000-8000-000000000000", "system_us": to_us(mem.now())})
        # phantom-write: a version nobody invoked; then two reads at a basis after it: one
        # recorded as the store answers (not as the model does: read-mismatch), one as the
        # model answers (not as the store answers now: known-at-changed)
        _assert(h, mem, "p0.4", "c", "tagged", "y1", "2000")
        phantom = mem.add_fact("c", "tagged", "ph", "2000")
        basis = to_us(phantom.system_from)
        read = {"subject": "c", "predicate": "tagged", "as_of": "2005", "known_at_us": basis, "basis": "ack"}
        h.op("p0.5", "read", read, {"values": ["ph", "y1"]})
        h.op("p0.6", "read", read, {"values": ["y1"]})
        # order: e2's ack is recorded before e1 was invoked, yet e1 has the earlier system time
        _assert(h, mem, "p0.7", "e", "tagged", "e1", "2000", t=(5000, 5010))
        _assert(h, mem, "p0.8", "e", "tagged", "e2", "2000", t=(4000, 4010))
    finally:
        mem.close()
    report = check(db, [h.save()])
    counts = report.counts
    for kind in ("lost-write", "phantom-write", "read-mismatch", "double-value", "known-at-changed", "order"):
        assert counts[kind] == 1, (kind, report.render())
    # the lost write (key b) and the phantom (key c) also part the store from the model, once per key
    assert counts["state-mismatch"] == 2, report.render()
    assert counts["refused-by-model"] == 0, report.render()
    assert report.anomalies == 8
    ex = {k: v[0].example for k, v in report.examples.items()}
    assert ex["lost-write"]["op"] == "p0.3"
    assert ex["phantom-write"]["version"]["object"] == "ph"
    assert ex["read-mismatch"]["op"] == "p0.5" and ex["read-mismatch"]["model"] == ["y1"]
    assert ex["known-at-changed"]["op"] == "p0.6" and ex["known-at-changed"]["now"] == ["ph", "y1"]
    assert ex["double-value"]["key"] == ["a", "holds"] and len(ex["double-value"]["facts"]) == 2
    assert (ex["order"]["earlier"], ex["order"]["later"]) == ("p0.8", "p0.7")
    assert {s["key"][0] for s in (a.example for a in report.examples["state-mismatch"])} == {"b", "c"}
    d = report.to_dict()
    assert d["operations"] == 8 and d["ok"] == 8 and d["reads"] == 2 and d["killed"] == 0
    assert d["anomalies"]["lost-write"] == 1 and set(d["anomalies"]) == set(ANOMALIES)
    text = report.render()
    assert "lost-write: 1" in text and "anomalies 8" in text


def test_a_clean_history_has_no_anomaly_and_an_unfinished_one_counts_as_killed(tmp_path: Path) -> None:
    db = str(tmp_path / "clean.db")
    h = _History(tmp_path / "p0.jsonl", "p0")
    mem = chronomem.open(db, "inv", embedder=None)
    try:
        t1 = _assert(h, mem, "p0.1", "a", "tagged", "x1", "2000")
        h.op("p0.2", "read", {"subject": "a", "predicate": "tagged", "as_of": "2001", "known_at_us": t1 - 1,
                              "basis": "before-ack"}, {"values": []})
        h.op("p0.3", "scan", {"subject": "a", "predicate": "tagged", "as_of": None, "known_at_us": t1,
                              "basis": "ack"}, {"intervals": [["x1", "2000", None]]})
        # a correction to what the fact already says: acknowledged with the fact unchanged, no version
        fact = mem.correct(mem.facts("a", "tagged")[0].id, valid_from="2000", reason="p0.5")
        h.op("p0.5", "correct", {"subject": "a", "predicate": "tagged", "fact_id": fact.id, "ref": "p0.1",
                                 "set": {"valid_from": "2000"}, "reason": "p0.5"},
             {"fact_id": fact.id, "system_us": to_us(fact.system_from), "valid_from": fact.valid_from_text,
              "valid_to": fact.valid_to_text, "object": fact.object_text})
        # killed mid-call: indeterminate; its tag is not in the store, so it was not applied
        h.op("p0.4", "assert", {"subject": "a", "predicate": "tagged", "object": "x9", "valid_from": "2003",
                                "valid_to": None, "source": "p0.4"}, None)
    finally:
        mem.close()
    report = check(db, [h.save(done=False)])
    assert report.anomalies == 0, report.render()
    assert (report.reads_checked, report.killed, report.indeterminate_not_applied, report.noop) == (2, 1, 1, 1)


def test_bad_history_lines_are_typed_errors_naming_the_line_and_field(tmp_path: Path) -> None:
    chronomem.open(str(tmp_path / "clean.db"), "inv", embedder=None).close()
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "start", "process": "p", "t": 1}\n{"type": "ok", "process": "p", "t": 2}\n'
                    '{"type": "done", "process": "p", "t": 3}\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"line 2: op"):
        read_history(path)
    path.write_text('{"type": "start", "process": "p", "t": 1}\n{"type": "invoke", "pro', encoding="utf-8")
    assert [r.type for r in read_history(path)] == ["start"]  # the torn last line of a killed process
    path.write_text('{"type": "invoke", "pro\n{"type": "start", "process": "p", "t": 1}\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"line 1: json"):
        read_history(path)
    path.write_text('{"type": "invoke", "process": "p", "t": 1, "op": "p.1", "f": "read", "args": {"subject": "a"}}\n',
                    encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"op 'p.1' \(read\): args lack predicate, as_of, known_at_us"):
        check(str(tmp_path / "clean.db"), [path])
    with pytest.raises(InvalidInputError, match="no SQLite store there"):
        check(str(tmp_path / "missing.db"), [path])
    with pytest.raises(InvalidInputError, match="processes"):
        run_workload(str(tmp_path / "x.db"), processes=0, out_dir=tmp_path / "out")


def _real_run(target: str, out: Path) -> None:
    # the full mix: corrections and retractions on the single-valued key too
    result = run_workload(target, processes=3, ops_per_process=60, kills=1, seed=19, out_dir=out,
                          revise_one=True)
    assert result.crashed == []
    assert (result.killed, result.started >= 4) == (1, True), result
    report = check(target, result.histories)
    assert report.anomalies == 0, report.render()
    assert report.killed == 1 and report.processes == result.started
    assert report.reads_checked > 20 and report.writes_applied > 30 and report.states_checked > 0
    assert report.invoked == 3 * 60  # the replacement invokes the ops its victim had not
    assert report.ok > report.invoked // 2


def test_real_run_on_sqlite_finds_no_anomaly(tmp_path: Path) -> None:
    _real_run(str(tmp_path / "inv.db"), tmp_path / "hist")


@pytest.fixture
def pg_target() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL at {PG_URL} is not reachable: {exc}")
    schema = f"inv_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_real_run_on_postgres_finds_no_anomaly(pg_target: str, tmp_path: Path) -> None:
    _real_run(pg_target, tmp_path / "hist")


def test_system_invariants_runs_on_a_throwaway_sqlite_store_and_reports_a_dict() -> None:
    from chronomem.adapters.benchmark.invariants import system_invariants

    assert system_invariants("chronomem-postgres") == {"error": "no PostgreSQL URL given"}
    rep = system_invariants("chronomem", processes=2, ops_per_process=40, kills=1, revise_one=True)
    assert (rep["operations"], rep["killed"], rep["crashed"]) == (80, 1, []), rep
    assert rep["reads"] > 0 and sum(rep["anomalies"].values()) == 0, rep
