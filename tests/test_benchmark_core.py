"""The temporal benchmark's scenario format, scoring and command (``docs/benchmark.md``).

The scenario files themselves, the model, the adapters and the invariant
checker have their own tests (``test_benchmark_*.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chronomem.adapters.benchmark.runner import run_system
from chronomem.adapters.benchmark.scenario import (
    Op,
    Question,
    Scenario,
    canonical_answer,
    dump_scenarios,
    load_scenarios,
    parse_scenarios,
)
from chronomem.adapters.benchmark.systems import make_system
from chronomem.adapters.benchmark.systems.base import System, Unsupported
from chronomem.adapters.benchmark.systems.chronomem_system import ChronomemSystem
from chronomem.adapters.cli import main
from chronomem.errors import InvalidInputError, ScenarioFormatError
from conftest import pg_test_url

CHRONOMEM = Path(sys.executable).with_name("chronomem")


def _scenario(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "ceo", "title": "Acme's CEOs, Carla learned late",
        "ops": [
            {"op": "define", "at": "2025-01-01T00:00:00Z", "predicate": "ceo", "cardinality": "one"},
            {"op": "assert", "at": "2025-01-01T00:00:01Z", "ref": "alice", "subject": "Acme", "predicate": "ceo",
             "object": "Alice", "valid_from": "2015"},
            {"op": "assert", "at": "2025-01-02T00:00:00Z", "ref": "bob", "subject": "Acme", "predicate": "ceo",
             "object": "Bob", "valid_from": "2022"},
            {"op": "assert", "at": "2025-01-03T00:00:00Z", "ref": "carla", "subject": "Acme", "predicate": "ceo",
             "object": "Carla", "valid_from": "2020"},
            {"op": "episode", "at": "2025-01-04T00:00:00Z", "ref": "e1", "text": "Carla took over the Acme board.",
             "occurred_at": "2020-01-15"},
        ],
        "questions": [
            {"ask": "values", "rule": "backfill", "subject": "Acme", "predicate": "ceo", "as_of": "2021-06",
             "expect": ["Carla"], "why": "Carla [2020, 2022) is spliced between Alice and Bob"},
            {"ask": "values", "rule": "known-at-replay", "subject": "Acme", "predicate": "ceo", "as_of": "2021-06",
             "known_at": "2025-01-02T12:00:00Z", "expect": ["Alice"], "why": "before Carla was recorded"},
            {"ask": "intervals", "rule": "backfill", "subject": "Acme", "predicate": "ceo",
             "expect": [["Bob", "2022", None], ["Alice", "2015", "2020"], ["Carla", "2020", "2022"]]},
            {"ask": "evidence", "rule": "evidence-views", "query": "Acme board", "view": "as_recorded",
             "at": "2025-01-03T12:00:00Z", "expect": []},
            {"ask": "evidence", "rule": "evidence-views", "query": "Acme board", "view": "as_world",
             "at": "2020-02", "expect": ["e1"]},
        ],
    }
    base.update(over)
    return base


def _lines(*scenarios: dict[str, Any]) -> list[str]:
    return [json.dumps(s) for s in scenarios]


def _load(*scenarios: dict[str, Any]) -> list[Scenario]:
    return list(parse_scenarios(_lines(*scenarios), "t.jsonl"))


# -- the format ----------------------------------------------------------------

def test_a_scenario_loads_and_round_trips_byte_stable(tmp_path: Path) -> None:
    [s] = _load(_scenario())
    assert [o.kind for o in s.ops] == ["define", "assert", "assert", "assert", "episode"]
    assert s.rules == {"backfill", "known-at-replay", "evidence-views"}
    one, two = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    dump_scenarios([s], one)
    dump_scenarios(load_scenarios(one), two)
    assert one.read_bytes() == two.read_bytes()
    assert load_scenarios(two) == [s]


def _broken(path: str, value: Any) -> dict[str, Any]:
    s = json.loads(json.dumps(_scenario()))
    where: Any = s
    keys = path.split(".")
    for k in keys[:-1]:
        where = where[int(k)] if k.isdigit() else where[k]
    last = keys[-1]
    if value is KeyError:
        del where[last]
    else:
        where[int(last) if last.isdigit() else last] = value
    return s


@pytest.mark.parametrize(("path", "value", "says"), [
    ("ops.1.op", "upsert", "ops[1].op: must be one of"),
    ("ops.1.subject", KeyError, "ops[1]: missing field(s) subject"),
    ("ops.1.colour", "red", "ops[1]: unknown field(s) colour"),
    ("ops.1.valid_from", "March 2015", "ops[1].valid_from: invalid time"),
    ("ops.1.valid_from", 2015, "ops[1].valid_from: a time must be an ISO-8601 string"),
    ("ops.2.at", "2024-12-31", "ops[2].at: system times must strictly increase"),
    ("ops.0.cardinality", "two", "ops[0].cardinality: must be 'one' or 'many'"),
    ("ops.3.ref", "bob", "ops[3].ref: ref 'bob' is used twice"),
    ("questions.0.rule", "vibes", "questions[0].rule: unknown rule 'vibes'"),
    ("questions.3.view", "as_wished", "questions[3].view: must be one of"),
    ("questions.4.expect", ["e9"], "questions[4]: names no episode of the scenario: 'e9'"),
    ("questions.0.expect", "Carla", "questions[0].expect: an answer to 'values' must be a list"),
    ("questions.2.expect", [["Bob", "2022"]], "questions[2].expect: an 'intervals' answer"),
    ("questions.0.as_of", None, "questions[0].as_of: a 'values' question names its instant"),
    ("questions.1.known_at", "someday", "questions[1].known_at: invalid time"),
    ("questions.0.ask", "guess", "questions[0].ask: must be one of"),
])
def test_a_bad_scenario_is_refused_naming_line_and_field(path: str, value: Any, says: str) -> None:
    lines = ["// a comment line", "", *_lines(_broken(path, value))]
    with pytest.raises(ScenarioFormatError) as exc:
        list(parse_scenarios(lines, "t.jsonl"))
    assert str(exc.value).startswith("t.jsonl, line 3: "), str(exc.value)
    assert says in str(exc.value)


def test_references_and_ids_are_checked() -> None:
    ended = _scenario()
    ended["ops"].append({"op": "end", "at": "2025-02-01T00:00:00Z", "ref": "dave", "ended": "2023"})
    with pytest.raises(ScenarioFormatError, match=r"ops\[5\].ref: names no earlier op: 'dave'"):
        _load(ended)
    with pytest.raises(ScenarioFormatError, match="line 2: id: scenario id 'ceo' is used twice"):
        _load(_scenario(), _scenario())
    with pytest.raises(ScenarioFormatError, match="line 1: json: "):
        list(parse_scenarios(["{not json"], "t.jsonl"))
    with pytest.raises(ScenarioFormatError, match="scenario: must be a JSON object"):
        list(parse_scenarios(["[1, 2]"], "t.jsonl"))


def test_unreadable_files_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFormatError, match="cannot read scenario file"):
        load_scenarios(tmp_path / "absent.jsonl")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(ScenarioFormatError, match="is not UTF-8 text"):
        load_scenarios(latin)


def test_answers_compare_in_one_form() -> None:
    # a time compares at the precision it is written with: "2015-01-01T00:00Z" is not "2015"
    assert canonical_answer("intervals", [["A", "2015", None]]) == [["A", "2015", None]]
    assert canonical_answer("intervals", [["A", "2015-01-01T00:00:00+00:00", None]]) != [["A", "2015", None]]
    assert canonical_answer("intervals", [["B", "2020", "2022"], ["A", None, "2020"]]) == [
        ["A", None, "2020"], ["B", "2020", "2022"]]
    assert canonical_answer("values", ["b", "a"]) == ["a", "b"]
    assert canonical_answer("mentions", [["2024-03", "2024-04"]]) == [["2024-03", "2024-04"]]
    with pytest.raises(InvalidInputError):
        canonical_answer("values", [1])


# -- scoring ---------------------------------------------------------------------

class _Scripted(System):
    """A system whose behaviour each test states: what the runner must make of it."""

    name = "scripted"

    def __init__(self, answers: dict[str, Any], refuse_op: str | None = None, break_op: str | None = None) -> None:
        self.answers, self.refuse_op, self.break_op = answers, refuse_op, break_op
        self.started = self.finished = self.closed = 0

    def version(self) -> str:
        return "scripted 1"

    def start(self, scenario: Scenario) -> None:
        self.started += 1

    def apply(self, op: Op) -> None:
        if op.kind == self.refuse_op:
            raise Unsupported(f"no {op.kind}")
        if op.kind == self.break_op:
            raise RuntimeError("disk on fire")

    def ask(self, question: Question) -> Any:
        answer = self.answers.get(question.rule)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def finish(self) -> None:
        self.finished += 1

    def close(self) -> None:
        self.closed += 1


def test_the_runner_scores_passed_failed_and_unsupported() -> None:
    scenarios = _load(_scenario())
    system = _Scripted({"backfill": ["Carla"], "known-at-replay": Unsupported("no system time"),
                        "evidence-views": ValueError("index gone")})
    run = run_system(system, scenarios)
    assert [o.status for o in run.outcomes] == ["passed", "unsupported", "failed", "failed", "failed"]
    # the intervals question got a list of names: an unreadable answer is a failure, with the reason
    assert run.outcomes[2].note == ("unreadable answer: InvalidInputError: an 'intervals' answer is a list of "
                                    "[object, valid_from, valid_to]")
    assert run.outcomes[3].note == "ValueError: index gone"
    assert run.rules()["backfill"] == {"passed": 1, "failed": 1, "unsupported": 0}
    assert (system.started, system.finished, system.closed) == (1, 1, 1)
    d = run.to_dict()
    assert d["totals"] == {"passed": 1, "failed": 3, "unsupported": 1} and d["questions"] == 5


def test_an_unsupported_op_makes_its_scenario_unsupported_and_a_broken_one_is_noted() -> None:
    scenarios = _load(_scenario())
    refused = run_system(_Scripted({}, refuse_op="define"), scenarios)
    assert {o.status for o in refused.outcomes} == {"unsupported"}
    assert refused.outcomes[0].note == "op 'define' unsupported: no define"
    broken = run_system(_Scripted({"backfill": ["Alice"]}, break_op="episode"), scenarios)
    assert broken.outcomes[0].status == "failed"
    assert broken.outcomes[0].note is not None and "op 'episode' at 2025-01-04T00:00:00Z failed: RuntimeError" in \
        broken.outcomes[0].note


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_chronomem_answers_the_example(backend: str) -> None:
    system = ChronomemSystem(pg_test_url() if backend == "postgres" else None)
    run = run_system(system, _load(_scenario()))
    assert [(o.status, o.got) for o in run.outcomes if o.status != "passed"] == []
    assert run.totals()["passed"] == 5


def test_systems_are_named_and_checked() -> None:
    with pytest.raises(InvalidInputError, match="unknown system 'sqlite3' for systems"):
        make_system("sqlite3")
    with pytest.raises(InvalidInputError, match="needs --pg URL"):
        make_system("chronomem-postgres")
    with pytest.raises(InvalidInputError, match="--pg must be a postgresql:// URL"):
        make_system("chronomem-postgres", pg_url="mysql://x")


# -- the command -----------------------------------------------------------------

def _file(tmp_path: Path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text("\n".join(_lines(_scenario())) + "\n", encoding="utf-8")
    return path


def test_the_command_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = subprocess.run([str(CHRONOMEM), "bench", "temporal", "--scenarios", str(_file(tmp_path)),
                           "--systems", "chronomem", "--no-invariants", "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "| rule | chronomem |" in done.stdout and "| backfill | 2 / 0 / 0 |" in done.stdout
    data = json.loads(out.read_text())
    assert data["systems"]["chronomem"]["rules"]["backfill"] == {"passed": 2, "failed": 0, "unsupported": 0}
    assert isinstance(data["systems"]["chronomem"]["seconds"], float)
    assert data["invariants"] == {} and data["scenarios"]["questions"] == 5


def test_the_command_prints_json_to_stdout(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["bench", "temporal", "--scenarios", str(_file(tmp_path)), "--systems",
                                       "chronomem", "--no-invariants", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["systems"]["chronomem"]["totals"]["passed"] == 5


@pytest.mark.parametrize(("args", "says"), [
    (["--systems", "chronomem,sqlite3"], "unknown system(s) for --systems: sqlite3"),
    (["--systems", "chronomem-postgres"], "needs --pg URL"),
    (["--columns", "start=year"], "--columns needs --intervals FILE"),
])
def test_the_command_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = subprocess.run([str(CHRONOMEM), "bench", "temporal", "--scenarios", str(_file(tmp_path)),
                           "--no-invariants", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: ") and says in done.stderr and "Traceback" not in done.stderr


def test_the_command_names_the_line_of_a_bad_scenario_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_broken("ops.2.at", "2024")) + "\n", encoding="utf-8")
    done = subprocess.run([str(CHRONOMEM), "bench", "temporal", "--scenarios", str(bad), "--systems", "chronomem",
                           "--no-invariants"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"{bad}, line 1: ops[2].at: system times must strictly increase" in done.stderr


_ADAPTER = '''
"""A system of one's own, in one file: intervals per key, no system time, no evidence."""
from chronomem.adapters.benchmark.scenario import instant
from chronomem.adapters.benchmark.systems.base import System, Unsupported


class Intervals(System):
    name = "intervals"

    def version(self):
        return "intervals 1"

    def start(self, scenario):
        self.rows = []

    def apply(self, op):
        if op.kind == "define":
            raise Unsupported("every predicate is many-valued here")
        if op.kind != "assert":
            raise Unsupported(op.kind)
        a = op.args
        self.rows.append((a["subject"], a["predicate"], a["object"], a.get("valid_from"), a.get("valid_to")))

    def ask(self, q):
        if q.get("known_at") is not None or q.ask != "values":
            raise Unsupported("only values, now")
        t = instant(q.get("as_of"))
        return sorted({o for s, p, o, f, e in self.rows if (s, p) == (q.get("subject"), q.get("predicate"))
                       and instant(f) <= t < instant(e, end=True)})
'''


def test_an_adapter_in_a_file_of_its_own_runs_by_module_and_class(tmp_path: Path) -> None:
    (tmp_path / "my_adapter.py").write_text(_ADAPTER, encoding="utf-8")
    plain = _scenario(id="plain", ops=[o for o in _scenario()["ops"] if o["op"] == "assert"][:2],
                      questions=[{"ask": "values", "rule": "valid-boundary", "subject": "Acme", "predicate": "ceo",
                                  "as_of": "2015", "expect": ["Alice"]},
                                 {"ask": "values", "rule": "open-end", "subject": "Acme", "predicate": "ceo",
                                  "as_of": "2030", "expect": ["Bob"]},
                                 {"ask": "values", "rule": "known-at-replay", "subject": "Acme",
                                  "predicate": "ceo", "as_of": "2030", "known_at": "2025-01-01T12:00:00Z",
                                  "expect": ["Alice"]}])
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(_lines(_scenario(), plain)) + "\n", encoding="utf-8")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([str(CHRONOMEM), "bench", "temporal", "--scenarios", str(path), "--systems",
                           "my_adapter:Intervals,mempalace", "--no-invariants", "--json"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    mine = json.loads(done.stdout)["systems"]["intervals"]
    # the ceo scenario declares a predicate: unsupported; the plain one: Alice and Bob are both open
    # ([2015, …) and [2022, …): many-valued here), so 2030 answers both (wrong), 2015 Alice (right)
    assert mine["rules"]["valid-boundary"] == {"passed": 1, "failed": 0, "unsupported": 0}
    assert mine["rules"]["open-end"] == {"passed": 0, "failed": 1, "unsupported": 0}
    assert mine["rules"]["known-at-replay"] == {"passed": 0, "failed": 0, "unsupported": 2}
    assert mine["rules"]["backfill"] == {"passed": 0, "failed": 0, "unsupported": 2}


@pytest.mark.parametrize(("spec", "says"), [
    ("no_such_module_x:Thing", "cannot import system module 'no_such_module_x'"),
    ("json:JSONDecoder", "'json:JSONDecoder' is not a System subclass"),
    ("json:", "needs both parts"),
])
def test_a_bad_module_and_class_is_refused(spec: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        make_system(spec)


_FIXTURE = Path(__file__).parent / "data" / "benchmark" / "intervals_small.tsv"
_MAP = "subject=who,object=what,start=from,end=until"


def test_the_command_turns_interval_files_into_questions(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "bench", "temporal", "--scenarios", str(_file(tmp_path)), "--systems", "chronomem", "--no-invariants",
        "--intervals", str(_FIXTURE), "--intervals", str(_FIXTURE), "--inclusive-end",
        "--columns", _MAP, "--columns", _MAP, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rules = data["systems"]["chronomem"]["rules"]
    assert rules["intervals-as-of"]["passed"] > 0 and rules["intervals-known-at"]["passed"] > 0
    assert rules["intervals-as-of"]["failed"] == rules["intervals-known-at"]["failed"] == 0
    assert [s.split(" ")[0] for s in data["scenarios"]["sources"]] == ["one.jsonl", _FIXTURE.name, _FIXTURE.name]


def test_columns_pair_with_interval_files(tmp_path: Path) -> None:
    done = subprocess.run([str(CHRONOMEM), "bench", "temporal", "--scenarios", str(_file(tmp_path)),
                           "--no-invariants", "--systems", "chronomem", "--intervals", str(_FIXTURE),
                           "--columns", _MAP, "--columns", _MAP, "--columns", _MAP],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "3 --columns for 1 --intervals files: give one for all, or one per file" in done.stderr
