"""The hand-written scenarios of the temporal benchmark (``adapters/benchmark/data/handwritten.jsonl``).

Their expected answers are the contract of ``docs/concepts/time.md`` (and, for
mentions, ``docs/evidence.md``), each justified by its ``why``; chronomem must
give every one of them on SQLite and on PostgreSQL. A question that fails
because of a reported chronomem bug is listed in :data:`KNOWN_BUGS` (strict:
once the bug is fixed the entry must go), never by weakening its answer.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import chronomem.adapters.benchmark as benchmark
from chronomem.adapters.benchmark.runner import Outcome, run_system
from chronomem.adapters.benchmark.scenario import RULES, dump_scenarios, load_scenarios
from chronomem.adapters.benchmark.systems.chronomem_system import ChronomemSystem
from chronomem.errors import ScenarioFormatError
from conftest import pg_test_url

DATA = Path(benchmark.__file__).parent / "data" / "handwritten.jsonl"
INTERVAL_RULES = frozenset({"intervals-as-of", "intervals-known-at"})  # from real data, not hand-written
MIN_PER_RULE = 4
BACKENDS = ("sqlite", "postgres")

#: (scenario id, question index) -> the chronomem bug that makes it fail.
#: Strict: a listed question that passes fails the test, so the list shrinks when a bug is fixed.
KNOWN_BUGS: dict[tuple[str, int], str] = {}

SCENARIOS = load_scenarios(DATA)
QUESTIONS = [(s.id, i) for s in SCENARIOS for i in range(len(s.questions))]
_RUNS: dict[str, dict[tuple[str, int], Outcome]] = {}


def _outcomes(backend: str) -> dict[tuple[str, int], Outcome]:
    """Run every scenario once per backend (cached for the module): outcome per question."""
    if backend not in _RUNS:
        system = ChronomemSystem() if backend == "sqlite" else ChronomemSystem(pg_test_url())
        run = run_system(system, SCENARIOS)
        keys = iter(QUESTIONS)
        by_key: dict[tuple[str, int], Outcome] = {}
        for outcome in run.outcomes:
            key = next(keys)
            assert outcome.scenario == key[0], "the runner answers questions in file order"
            by_key[key] = outcome
        assert len(by_key) == len(QUESTIONS)
        _RUNS[backend] = by_key
    return _RUNS[backend]


# -- (a) the file ------------------------------------------------------------------------------


def test_file_loads_and_is_canonical(tmp_path: Path) -> None:
    assert 30 <= len(SCENARIOS) <= 50
    again = tmp_path / "again.jsonl"
    dump_scenarios(SCENARIOS, again)
    assert again.read_bytes() == DATA.read_bytes(), "write the file with dump_scenarios (canonical form)"


def test_every_question_is_justified() -> None:
    missing = [f"{s.id}#{i}" for s in SCENARIOS for i, q in enumerate(s.questions)
               if not (q.why and q.why.strip())]
    assert missing == []


def test_every_rule_is_covered() -> None:
    counts = Counter(q.rule for s in SCENARIOS for q in s.questions)
    assert not INTERVAL_RULES & counts.keys(), "interval rules come from real data, not this file"
    thin = {rule: counts[rule] for rule in RULES if rule not in INTERVAL_RULES and counts[rule] < MIN_PER_RULE}
    assert thin == {}


def test_known_bugs_name_real_questions() -> None:
    assert set(KNOWN_BUGS) <= set(QUESTIONS)
    assert all(reason.strip() for reason in KNOWN_BUGS.values())


# -- (b) chronomem passes every question ------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("scenario", "index"), QUESTIONS, ids=[f"{s}#{i}" for s, i in QUESTIONS])
def test_chronomem_answers(backend: str, scenario: str, index: int, request: pytest.FixtureRequest) -> None:
    reason = KNOWN_BUGS.get((scenario, index))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    outcome = _outcomes(backend)[(scenario, index)]
    assert outcome.status == "passed", (
        f"{scenario}#{index} ({outcome.rule}): expected {outcome.expected}, got {outcome.got}"
        + (f" ({outcome.note})" if outcome.note else ""))


# -- (c) the loader rejects a corrupted copy ----------------------------------------------------


def _corrupt(tmp_path: Path, change: Any) -> tuple[Path, int, str]:
    """A copy of the file with the first scenario in its second half that ``change`` accepts
    altered (so the line number is not trivially 1); returns the copy, the altered line
    number and the field ``change`` says it broke."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if number <= len(lines) // 2:
            continue
        obj = json.loads(line)
        where = change(obj)
        if where is not None:
            lines[number - 1] = json.dumps(obj)
            path = tmp_path / "corrupt.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return path, number, where
    raise AssertionError("no scenario to corrupt")  # pragma: no cover


def _wrong_rule(obj: dict[str, Any]) -> str | None:
    obj["questions"][1]["rule"] = "valid-boundry"
    return "questions[1].rule"


def _time_backwards(obj: dict[str, Any]) -> str | None:
    if len(obj["ops"]) < 3:
        return None
    obj["ops"][2]["at"] = obj["ops"][0]["at"]
    return "ops[2].at"


def _dangling_ref(obj: dict[str, Any]) -> str | None:
    for i, op in enumerate(obj["ops"]):
        if op["op"] == "retract":
            op["ref"] = "nothing-by-this-name"
            return f"ops[{i}].ref"
    return None


def _dangling_episode(obj: dict[str, Any]) -> str | None:
    for i, q in enumerate(obj["questions"]):
        if q["ask"] == "evidence":
            q["expect"] = [*q["expect"], "no-such-episode"]
            return f"questions[{i}]"
    return None


@pytest.mark.parametrize("change", [_wrong_rule, _time_backwards, _dangling_ref, _dangling_episode],
                         ids=["wrong-rule", "time-backwards", "dangling-ref", "dangling-episode"])
def test_loader_rejects_a_corrupted_copy(tmp_path: Path, change: Any) -> None:
    path, number, where = _corrupt(tmp_path, change)
    with pytest.raises(ScenarioFormatError) as caught:
        load_scenarios(path)
    assert f"{path}, line {number}: {where}:" in str(caught.value)
