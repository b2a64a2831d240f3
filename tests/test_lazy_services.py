"""The services a read-only recall does not use (writes, identity, analyses,
doctor, importer) are imported and made on first use (``memory.py``), so the
Claude Code hook's cold ``import`` + ``open`` + ``recall`` does not pay for
them; on first use they behave as before, one per memory even when two
threads race, and a memory that crossed a fork still refuses the child."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.memory import _LazyService
from chronomem.service.analyses import Analyses
from chronomem.service.doctor import Doctor
from chronomem.service.facts import FactWrites
from chronomem.service.identity import Identity
from chronomem.service.ingest.run import Importer
from test_fork import in_child, outcome

#: modules only the lazy services (and the decay read) import
LAZY_MODULES = ["chronomem.service.analyses", "chronomem.service.doctor", "chronomem.service.ingest.run",
                "chronomem.service.facts", "chronomem.service.identity", "chronomem.core.analysis"]

_COLD = r"""
import json, sys
import chronomem

lazy = json.loads(sys.argv[2])
out = {}
mem = chronomem.open(sys.argv[1], embedder=None)
recall = mem.recall("what did Alice plan with the walrus team?")
out["recalled"] = [item.text for item in recall.items][:3]
out["hits"] = [h.episode.text for h in mem.search("walrus", k=2)]
out["facts"] = sorted(f.object for f in mem.facts("Acme"))
out["loaded_after_reads"] = [m for m in lazy if m in sys.modules]

# first use of each lazy service in this cold process
d = mem.diff("2019", "2021", subject="Acme")
out["diff_added"] = [f.object for f in d.added]
out["diff_removed"] = [f.object for f in d.removed]
report = mem.doctor()
out["doctor"] = [type(report).__name__, report.ok, type(report) is chronomem.DoctorReport]
summary = mem.import_source(sys.argv[3], "markdown")
out["imported"] = summary.added
out["entity"] = mem.entity("Acme").name
out["written"] = mem.add_fact("Acme", "cfo", "Carol", valid_from="2022").object
out["loaded_after_use"] = [m for m in lazy if m in sys.modules]
mem.close()
print(json.dumps(out))
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lazy.db"
    with chronomem.open(str(path), embedder=None, clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0)) as mem:
        mem.add_fact("Acme", "ceo", "Alice", valid_from="2015")
        mem.add_fact("Acme", "ceo", "Bob", valid_from="2020")
        mem.add_episode("Alice planned the budget review with the walrus team", occurred_at="2024-05-01")
        mem.add_episode("lunch with the okapi people", occurred_at="2024-05-02")
    return path


def _cold(*args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _COLD, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CHRONOMEM_EMBEDDER": "none"})
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_a_cold_recall_imports_none_of_the_lazy_services_and_each_works_on_first_use(
        db: Path, tmp_path: Path) -> None:
    with chronomem.open(str(db), embedder=None) as mem:  # what this (warm) process answers
        recalled = [item.text for item in mem.recall("what did Alice plan with the walrus team?").items][:3]
        d = mem.diff("2019", "2021", subject="Acme")
        expected_diff = ([f.object for f in d.added], [f.object for f in d.removed])
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("# Plan\n\nThe zebra launch moves to June.\n", encoding="utf-8")
    out = _cold(str(db), json.dumps(LAZY_MODULES), str(notes))
    assert out["loaded_after_reads"] == []
    assert out["recalled"] == recalled and any("walrus" in text for text in recalled), recalled
    assert out["hits"][0] == "Alice planned the budget review with the walrus team"
    assert out["facts"] == ["Alice", "Bob"]
    assert (out["diff_added"], out["diff_removed"]) == expected_diff and "Bob" in expected_diff[0]
    assert out["doctor"] == ["DoctorReport", True, True]
    assert out["imported"] == 1
    assert out["entity"] == "Acme" and out["written"] == "Carol"
    assert out["loaded_after_use"] == LAZY_MODULES


def test_the_class_attribute_is_the_services_function_from_a_cold_process() -> None:
    code = ("import inspect, sys, chronomem\n"
            "assert 'chronomem.service.analyses' not in sys.modules\n"
            "fn = chronomem.Memory.diff\n"
            "from chronomem.service.analyses import Analyses\n"
            "assert fn is Analyses.diff, fn\n"
            "print(list(inspect.signature(fn).parameters))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.replace("'", '"')) == list(inspect.signature(Analyses.diff).parameters)


@pytest.mark.parametrize(("name", "cls"), [("diff", Analyses), ("timeline", Analyses), ("doctor", Doctor),
                                           ("import_source", Importer), ("add_fact", FactWrites),
                                           ("erase", FactWrites), ("entity", Identity), ("merge", Identity)])
def test_lazy_methods_on_the_class_are_the_real_functions(name: str, cls: type) -> None:
    member = getattr(Memory, name)
    assert member is getattr(cls, name)
    assert inspect.signature(member) == inspect.signature(getattr(cls, name))
    assert inspect.getdoc(member) and inspect.getdoc(member) == inspect.getdoc(getattr(cls, name))


def test_a_lazy_service_of_another_name_is_refused_on_first_access() -> None:
    class Wrong:
        diff = _LazyService("_analyses", lambda: Analyses.timeline)

    with pytest.raises(TypeError, match="Memory.diff must delegate to a method of the same name, not timeline"):
        _ = Wrong.diff


def test_lazy_services_share_the_memorys_scope_and_services() -> None:
    mem = chronomem.open(":memory:", embedder=None)
    try:
        assert "_analyses" not in vars(mem) and "_doctor" not in vars(mem)
        mem.add_fact("Acme", "ceo", "Alice", valid_from="2015")
        analyses, doctor, importer, writes, identity = (mem._analyses, mem._doctor, mem._importer, mem._writes,
                                                        mem._identity)
        assert analyses._scope is mem._scope and analyses._reads is mem._reads and analyses._identity is identity
        assert doctor._scope is mem._scope and doctor._episodes is mem._episodes
        assert doctor._embedding is mem._embedding
        assert importer._scope is mem._scope and importer._episodes is mem._episodes
        assert writes._scope is mem._scope and writes._reads is mem._reads
        assert identity._scope is mem._scope
        # made once: later lookups and calls use the same objects
        bound = mem.diff
        assert isinstance(bound, types.MethodType)
        assert mem._analyses is analyses and bound.__self__ is analyses
        assert mem.timeline("Acme")[0].fact is not None
    finally:
        mem.close()


def _race_on_the_first_call(mem: Memory) -> list[object]:
    """Two threads released together call ``mem.diff`` for the first time;
    the service each one's bound method belongs to."""
    gate = threading.Barrier(2)
    used: list[object] = []
    errors: list[BaseException] = []

    def first_call() -> None:
        try:
            gate.wait(10)
            bound = mem.diff
            bound("2019", "2021")
            assert isinstance(bound, types.MethodType)
            used.append(bound.__self__)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    return used


def test_two_threads_racing_on_the_first_call_use_one_service() -> None:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to make the race likely
    try:
        for _ in range(100):
            mem = chronomem.open(":memory:", embedder=None)
            try:
                used = _race_on_the_first_call(mem)
                assert len(used) == 2 and used[0] is used[1] is mem._analyses
            finally:
                mem.close()
    finally:
        sys.setswitchinterval(old)


def _first_use_in_child(mem: Memory, out: Any) -> None:
    got: list[str] = []
    for call in (lambda: mem.diff("2019", "2021"), lambda: mem.entity("Acme"),
                 lambda: mem.add_fact("child", "wrote", "z")):
        got.append(outcome(call))
    # doctor reports what it cannot read rather than raising (as it did before it was lazy)
    report = mem.doctor()
    got.append(json.dumps([report.ok, sorted({p.code for p in report.problems}),
                           all(str(os.getppid()) in " ".join(p.examples + (p.message,)) for p in report.problems)]))
    out.put(got)


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="fork() is POSIX-only")
def test_a_service_first_used_after_a_fork_refuses_the_parents_memory(db: Path) -> None:
    mem = chronomem.open(str(db), embedder=None)
    try:
        mem.recall("walrus")  # the lazy services are still unmade when the parent forks
        got = in_child(_first_use_in_child, mem)
        want = f"this memory was opened in process {os.getpid()}; open it again in this process"
        assert len(got) == 4 and all(want in g for g in got[:3]), got
        assert json.loads(got[3]) == [False, ["unreadable"], True], got[3]
        # the parent makes its own on first use, and they work
        assert [f.object for f in mem.diff("2019", "2021", subject="Acme").added] == ["Bob"]
        assert mem.doctor().ok
    finally:
        mem.close()
