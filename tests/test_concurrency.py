"""Several processes writing one store at once (multiprocessing, spawn).

Writers serialize on the store's write lock: nothing is lost, and a
single-valued (subject, predicate) never ends up with two values valid at once,
in the final state or in any past state readable with ``known_at``.
"""

from __future__ import annotations

import datetime as _dt
import multiprocessing as mp
import random
import traceback
from typing import Any

import pytest

import chronomem
from chronomem import Memory

pytestmark = pytest.mark.slow

PROCESSES = 4
WRITES = 40
US = _dt.timedelta(microseconds=1)


def _run(target: str, worker: int, kind: str, start: Any, results: Any) -> None:
    """Child process body: wait for the start signal, write, report."""
    try:
        mem = chronomem.open(target, busy_timeout=60.0)
        start.wait(60)  # a barrier: every process is ready before any writes
        if kind == "distinct":
            for i in range(WRITES):
                mem.add_fact(f"w{worker}", "wrote", f"item-{worker}-{i}", valid_from=f"{2000 + i % 20}")
            mem.add_facts([(f"batch{worker}", "wrote", f"b-{worker}-{i}", "2020") for i in range(WRITES)])
            mem.add_fact("shared", "counter", worker)  # every process touches one shared subject too
        else:
            rng = random.Random(worker)
            mine: list[str] = []
            for i in range(WRITES):
                roll = rng.random()
                if roll < 0.7 or not mine:
                    f = mem.add_fact("Acme", "ceo", f"ceo-{worker}-{i % 5}", valid_from=f"{rng.randint(2000, 2019)}",
                                     valid_to=rng.choice([None, None, f"{rng.randint(2020, 2030)}"]))
                    mine.append(f.id)
                elif roll < 0.85:
                    try:
                        mem.retract(rng.choice(mine))
                    except chronomem.FactNotFoundError:
                        pass  # already retracted, or closed by another writer
                else:
                    try:
                        mem.correct(rng.choice(mine), valid_from=f"{rng.randint(2000, 2019)}")
                    except (chronomem.FactNotFoundError, chronomem.InvalidIntervalError):
                        pass
        mem.close()
        results.put((worker, "ok"))
    except BaseException:  # report everything to the parent
        results.put((worker, traceback.format_exc()))


def run_writers(target: str, kind: str) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_run, args=(target, w, kind, start, results)) for w in range(PROCESSES)]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    failures = {w: msg for w, msg in outcomes.items() if msg != "ok"}
    assert not failures, failures


def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    setup = chronomem.open(store_url)  # create the schema before the race
    setup.close()
    run_writers(store_url, "distinct")
    mem = chronomem.open(store_url)
    try:
        for w in range(PROCESSES):
            assert sorted(str(f.object) for f in mem.facts(f"w{w}")) == sorted(
                f"item-{w}-{i}" for i in range(WRITES))
            assert len(mem.facts(f"batch{w}")) == WRITES
        assert sorted(f.object for f in mem.facts("shared", "counter")) == list(range(PROCESSES))
        stats = mem.stats()
        assert stats.facts == PROCESSES * (2 * WRITES + 1)
        assert stats.versions == stats.facts
        # one entity per distinct name, even though processes created names concurrently
        assert stats.entities == len({e.key for e in mem.entities()})
        assert stats.entities == PROCESSES * (2 + 2 * WRITES) + 1
        times = [f.system_from for f in mem.facts()]
        assert len(set(times)) == PROCESSES * (WRITES + 2)  # one system time per transaction
    finally:
        mem.close()


def _assert_single_valued(mem: Memory, known_at: _dt.datetime | None) -> None:
    facts = mem.facts("Acme", "ceo", known_at=known_at)
    points = {t for f in facts for t in (f.valid_from, f.valid_to) if t is not None}
    for t in sorted(points | {p - US for p in points}):
        valid = [f.object for f in mem.facts("Acme", "ceo", as_of=t, known_at=known_at)]
        assert len(valid) <= 1, f"two CEOs at {t} (known_at={known_at}): {valid}"


def test_concurrent_writers_keep_a_single_valued_predicate_single(store_url: str) -> None:
    setup = chronomem.open(store_url)
    setup.define_predicate("ceo", cardinality="one")
    setup.close()
    run_writers(store_url, "ceo")
    mem = chronomem.open(store_url)
    try:
        assert mem.facts("Acme", "ceo"), "the writers wrote nothing"
        _assert_single_valued(mem, None)
        assert [c for c in mem.conflicts() if c.kind == "cardinality"] == []
        # every past state readable with known_at obeyed the rule as well
        versions = mem.history("Acme", "ceo")
        system_times = sorted({v.system_from for v in versions})
        assert len(system_times) > PROCESSES
        for t in system_times[:: max(1, len(system_times) // 25)] + [system_times[-1]]:
            _assert_single_valued(mem, t)
        for v in versions:
            assert v.system_to is None or v.system_to > v.system_from
    finally:
        mem.close()
