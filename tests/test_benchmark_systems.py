"""The MemPalace and naive adapters of the temporal benchmark, on small inline scenarios.

Each scenario is first run on chronomem (which must pass every supported
question), so a "failed" below is the adapted system being wrong, not a wrong
expectation; "unsupported" must stay distinct from "failed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chronomem.adapters.benchmark.runner import SystemRun, run_system
from chronomem.adapters.benchmark.scenario import Scenario, parse_scenarios
from chronomem.adapters.benchmark.systems.base import System, Unsupported
from chronomem.adapters.benchmark.systems.chronomem_system import ChronomemSystem
from chronomem.adapters.benchmark.systems.naive import NaiveSystem
from chronomem.errors import MissingExtraError


def _op(kind: str, at: str, **args: Any) -> dict[str, Any]:
    return {"op": kind, "at": f"2025-01-01T00:00:{at}Z", **args}


def _q(ask: str, rule: str, expect: list[Any], **args: Any) -> dict[str, Any]:
    return {"ask": ask, "rule": rule, "expect": expect, **args}


CEO_OPS = [
    _op("define", "00", predicate="ceo", cardinality="one"),
    _op("assert", "01", ref="a", subject="Acme", predicate="ceo", object="Alice", valid_from="2015"),
    _op("assert", "02", ref="b", subject="Acme", predicate="ceo", object="Bob", valid_from="2022"),
]

#: id -> (ops, questions); each question's id is its place in the list
SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "ceo": (CEO_OPS, [
        _q("values", "supersession", ["Bob"], subject="Acme", predicate="ceo", as_of="2024"),
        _q("values", "supersession", ["Alice"], subject="Acme", predicate="ceo", as_of="2021-06"),
        _q("values", "valid-boundary", ["Bob"], subject="Acme", predicate="ceo", as_of="2022"),
        _q("values", "valid-boundary", ["Alice"], subject="Acme", predicate="ceo", as_of="2021-12-31T23:59:59Z"),
        _q("values", "known-at-replay", ["Alice"], subject="Acme", predicate="ceo", as_of="2024",
           known_at="2025-01-01T00:00:01Z"),
    ]),
    "backfill": (CEO_OPS + [
        _op("assert", "03", ref="c", subject="Acme", predicate="ceo", object="Carla", valid_from="2020"),
    ], [
        _q("values", "backfill", ["Carla"], subject="Acme", predicate="ceo", as_of="2021-06"),
    ]),
    "dup": ([
        _op("assert", "00", ref="a", subject="Ann", predicate="member of", object="Club", valid_from="2023"),
        _op("assert", "01", ref="b", subject="Ann", predicate="member of", object="Club", valid_from="2020"),
        _op("assert", "02", ref="c", subject="Ann", predicate="member of", object="Club", valid_from="2018",
            valid_to="2019"),
    ], [
        _q("values", "duplicates", ["Club"], subject="Ann", predicate="member of", as_of="2021"),
        _q("values", "duplicates", ["Club"], subject="Ann", predicate="member of", as_of="2024"),
        _q("values", "duplicates", ["Club"], subject="Ann", predicate="member of", as_of="2018-06"),
        _q("values", "valid-boundary", [], subject="Ann", predicate="member of", as_of="2019-12-31T23:59:59.999999Z"),
    ]),
    "end": ([
        _op("assert", "00", ref="a", subject="Dana", predicate="works at", object="Acme", valid_from="2019-01"),
        _op("end", "01", ref="a", ended="2024-03-05"),
    ], [
        _q("values", "valid-boundary", ["Acme"], subject="Dana", predicate="works at", as_of="2024-03-04T23:59:59Z"),
        _q("values", "valid-boundary", [], subject="Dana", predicate="works at", as_of="2024-03-05T12:00:00Z"),
        _q("values", "open-end", [], subject="Dana", predicate="works at", as_of="2030"),
    ]),
    "correct": ([
        _op("define", "00", predicate="queue", cardinality="one"),
        _op("assert", "01", ref="k", subject="Payments", predicate="queue", object="Kafka", valid_from="2023-04"),
        _op("correct", "02", ref="k", set={"object": "Amazon SQS"}),
    ], [
        _q("values", "correction-vs-change", ["Amazon SQS"], subject="Payments", predicate="queue", as_of="2023-06"),
    ]),
    "retract": ([
        _op("define", "00", predicate="lives in", cardinality="one"),
        _op("assert", "01", ref="b", subject="Dana", predicate="lives in", object="Berlin", valid_from="2021-05"),
        _op("assert", "02", ref="p", subject="Dana", predicate="lives in", object="Paris", valid_from="2023-02"),
        _op("retract", "03", ref="p"),
    ], [
        _q("values", "retraction", ["Berlin"], subject="Dana", predicate="lives in", as_of="2024"),
    ]),
    "notes": ([
        _op("episode", "00", ref="e1", text="Dana moved to Berlin.", occurred_at="2024-05-10"),
        _op("episode", "01", ref="e2", text="Dana lives in Paris now.", occurred_at="2024-09-01"),
        _op("supersede", "02", old="e1", new="e2"),
        _op("assert", "03", ref="f", subject="Dana", predicate="lives in", object="Paris", valid_from="2024-09"),
    ], [
        _q("evidence", "evidence-supersession", ["e1", "e2"], query="dana", view="raw", at="2025"),
        _q("evidence", "evidence-views", ["e2"], query="PARIS", view="raw", at="2025"),
        _q("evidence", "evidence-views", [], query="Berlin", view="as_world", at="2024-05-09"),
        _q("values", "open-end", ["Paris"], subject="Dana", predicate="lives in", as_of="2025"),
    ]),
}


def _scenarios(*ids: str) -> list[Scenario]:
    lines = [json.dumps({"id": i, "title": i, "ops": SCENARIOS[i][0], "questions": SCENARIOS[i][1]}) for i in ids]
    return list(parse_scenarios(lines, "<inline>"))


def _statuses(system: System, *ids: str) -> dict[tuple[str, int], str]:
    run = run_system(system, _scenarios(*ids))
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], str] = {}
    for o in run.outcomes:
        n = seen[o.scenario] = seen.get(o.scenario, -1) + 1
        out[(o.scenario, n)] = o.status
    return out


def _run(system: System, *ids: str) -> SystemRun:
    return run_system(system, _scenarios(*ids))


def test_chronomem_passes_every_inline_question() -> None:
    # the expectations are right: chronomem passes all of them
    statuses = _statuses(ChronomemSystem(), *SCENARIOS)
    assert set(statuses.values()) == {"passed"}, statuses


# ---------------------------------------------------------------- naive


def test_naive_answers_now_whatever_as_of_says() -> None:
    s = _statuses(NaiveSystem(), "ceo", "end", "correct", "retract")
    assert s[("ceo", 0)] == "passed"  # as of 2024 the latest value is right
    assert s[("ceo", 1)] == "failed"  # as of 2021-06 it still says Bob
    assert s[("ceo", 4)] == "unsupported"  # known_at: reported, not failed
    assert s[("end", 0)] == "failed"  # ended: gone at every instant, even before the end
    assert s[("end", 2)] == "passed"
    assert s[("correct", 0)] == "passed"
    assert s[("retract", 0)] == "failed"  # the retracted value is removed, and Berlin is not restored


def test_naive_evidence_raw_only() -> None:
    s = _statuses(NaiveSystem(), "notes")
    assert s[("notes", 0)] == "failed"  # the raw view keeps a superseded note; the naive list dropped it
    assert s[("notes", 1)] == "passed"  # whole words, any case
    assert s[("notes", 2)] == "unsupported"  # as_world
    assert s[("notes", 3)] == "passed"


def test_naive_intervals_have_no_bounds() -> None:
    naive = NaiveSystem()
    scenario = _scenarios("ceo")[0]
    naive.start(scenario)
    for op in scenario.ops:
        naive.apply(op)
    question = next(iter(parse_scenarios([json.dumps({"id": "x", "ops": [], "questions": [
        _q("intervals", "supersession", [], subject="Acme", predicate="ceo")]})])))
    assert naive.ask(question.questions[0]) == [["Bob", None, None]]


# ---------------------------------------------------------------- MemPalace


@pytest.fixture()
def mempalace() -> System:
    pytest.importorskip("mempalace.knowledge_graph", reason="mempalace is not installed (pip install --no-deps "
                        "mempalace==3.11.0)")
    from chronomem.adapters.benchmark.systems.mempalace_system import MempalaceSystem

    return MempalaceSystem()


def test_mempalace_version(mempalace: System) -> None:
    assert mempalace.version().startswith("mempalace ") and mempalace.version().endswith("(KnowledgeGraph)")
    mempalace.close()


def test_mempalace_supersession_and_half_open_bounds(mempalace: System) -> None:
    s = _statuses(mempalace, "ceo", "end")
    assert [s[("ceo", i)] for i in range(4)] == ["passed"] * 4
    assert s[("ceo", 4)] == "unsupported"  # known_at
    # the end is written as an instant: a date-only valid_to would hold all of 2024-03-05
    assert [s[("end", i)] for i in range(3)] == ["passed"] * 3


def test_mempalace_wrong_on_backfill_and_on_an_earlier_reassertion(mempalace: System) -> None:
    run = _run(mempalace, "backfill", "dup")
    got = {(o.scenario, o.expected[0] if o.expected else None, o.status, tuple(o.got or ())) for o in run.outcomes}
    # Carla from 2020 arrives after Bob: supersede would refuse it, add_triple leaves Alice open until 2022
    assert ("backfill", "Carla", "failed", ("Alice", "Carla")) in got
    # add_triple returns the open (Ann, member of, Club) triple: the earlier start is dropped, and so is
    # a disjoint past term [2018, 2019) of the same triple
    statuses = [o.status for o in run.outcomes if o.scenario == "dup"]
    assert statuses == ["failed", "passed", "failed", "passed"]


def test_mempalace_correction_retraction_and_evidence_are_unsupported(mempalace: System) -> None:
    run = _run(mempalace, "correct", "retract", "notes")
    want = [("correct", "unsupported"), ("retract", "unsupported")] + [("notes", "unsupported")] * 3
    want.append(("notes", "passed"))  # skipped episodes do not hide the fact questions
    assert [(o.scenario, o.status) for o in run.outcomes] == want
    assert "op 'correct' unsupported" in (run.outcomes[0].note or "")
    assert run.totals()["failed"] == 0


def test_mempalace_time_forms() -> None:
    pytest.importorskip("mempalace.knowledge_graph")
    from mempalace.config import sanitize_iso_temporal

    from chronomem.adapters.benchmark.systems.mempalace_system import mempalace_time

    cases = {("2024", False): "2024-01-01", ("2024", True): "2024-01-01T00:00:00Z",
             ("2024-03-05", False): "2024-03-05", ("2024-03-05T10:30+01:00", False): "2024-03-05T09:30:00Z",
             ("2024-03-05T10", True): "2024-03-05T10:00:00Z"}
    for (value, end), want in cases.items():
        got = mempalace_time(value, "t", end=end)
        assert got == want and sanitize_iso_temporal(got) == got  # MemPalace accepts it unchanged
    with pytest.raises(Unsupported, match="whole seconds"):
        mempalace_time("2024-03-05T10:30:15.5Z", "valid_from")
    # a read just before a boundary: its second gives the same answer (every stored bound is a whole second)
    assert mempalace_time("2019-12-31T23:59:59.999999Z", "as_of", read=True) == "2019-12-31T23:59:59Z"


def test_mempalace_missing_raises_missing_extra_error() -> None:
    code = (
        "import sys; sys.modules['mempalace'] = None\n"
        "from chronomem.adapters.benchmark.systems.mempalace_system import MempalaceSystem\n"
        "from chronomem.errors import MissingExtraError\n"
        "try:\n    MempalaceSystem()\n"
        "except MissingExtraError as exc:\n    print('MISSING', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("MISSING mempalace is not installed"), out
    assert "pip install --no-deps mempalace==3.11.0" in out.stdout
    assert issubclass(MissingExtraError, ImportError)


def test_mempalace_import_keeps_pythonpath(tmp_path: Path) -> None:
    # importing mempalace drops PYTHONPATH entries from sys.path; the adapter puts them back
    pytest.importorskip("mempalace.knowledge_graph")
    (tmp_path / "my_bench_adapter.py").write_text("X = 1\n", encoding="utf-8")
    code = (
        "from chronomem.adapters.benchmark.systems.mempalace_system import MempalaceSystem\n"
        "MempalaceSystem().close()\n"
        "import my_bench_adapter\n"
        "print('OK', my_bench_adapter.X)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.strip() == "OK 1", out.stderr
