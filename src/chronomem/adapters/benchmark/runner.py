"""Run scenarios against a system and score every answer (passed / failed / unsupported)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidInputError
from .scenario import RULES, Question, Scenario, canonical_answer
from .systems.base import System, Unsupported

__all__ = ["Outcome", "SystemRun", "run_system"]

log = logging.getLogger(__name__)

STATUSES = ("passed", "failed", "unsupported")
#: failed questions a result lists in full (the counts cover them all)
MAX_FAILURES = 50
_NOTE_CHARS = 300


@dataclass(frozen=True)
class Outcome:
    """One question's result. ``got`` is the canonical answer (``None`` when there is none)."""

    scenario: str
    rule: str
    ask: str
    status: str
    expected: Any
    got: Any = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "rule": self.rule, "ask": self.ask, "status": self.status,
                "expected": self.expected, "got": self.got, "note": self.note}


@dataclass
class SystemRun:
    """Everything one system did: outcomes, and time spent writing and answering."""

    name: str
    version: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    ops: int = 0
    op_seconds: float = 0.0
    asks: int = 0
    ask_seconds: float = 0.0

    def rules(self) -> dict[str, dict[str, int]]:
        """Per rule (in :data:`RULES` order, only those asked): counts per status."""
        out: dict[str, dict[str, int]] = {}
        for rule in RULES:
            mine = [o for o in self.outcomes if o.rule == rule]
            if mine:
                out[rule] = {s: sum(o.status == s for o in mine) for s in STATUSES}
        return out

    def totals(self) -> dict[str, int]:
        return {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version, "rules": self.rules(), "totals": self.totals(),
            "seconds": round(self.seconds, 3),
            "latency_ms": {"op": _mean_ms(self.op_seconds, self.ops), "ask": _mean_ms(self.ask_seconds, self.asks)},
            "ops": self.ops, "questions": self.asks,
            "failures": [o.to_dict() for o in self.outcomes if o.status == "failed"][:MAX_FAILURES],
        }


def _mean_ms(seconds: float, n: int) -> float | None:
    return round(seconds * 1000 / n, 3) if n else None


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _NOTE_CHARS else text[: _NOTE_CHARS - 1] + "…"


def _score(scenario: Scenario, q: Question, got: Any) -> Outcome:
    expected = canonical_answer(q.ask, q.expect)
    try:
        given = canonical_answer(q.ask, got)
    except (InvalidInputError, TypeError, ValueError) as exc:
        return Outcome(scenario.id, q.rule, q.ask, "failed", expected, None, f"unreadable answer: {_short(exc)}")
    return Outcome(scenario.id, q.rule, q.ask, "passed" if given == expected else "failed", expected, given)


def run_system(system: System, scenarios: Sequence[Scenario] | Iterable[Scenario], *,
               progress: Callable[[int], None] | None = None) -> SystemRun:
    """Run every scenario on ``system``: start, apply each op, ask each question, finish.

    An op the system cannot express (:class:`Unsupported`) makes every question of its
    scenario "unsupported"; any other error from an op is kept as a note and the questions
    are still asked (they usually fail); an error from a question fails that question."""
    run = SystemRun(system.name, system.version())
    begin = time.perf_counter()
    try:
        for scenario in scenarios:
            _run_one(system, scenario, run)
            if progress is not None:
                progress(1)
    finally:
        system.close()
    run.seconds = time.perf_counter() - begin
    return run


def _run_one(system: System, scenario: Scenario, run: SystemRun) -> None:
    system.start(scenario)
    try:
        unsupported: str | None = None
        op_error: str | None = None
        for op in scenario.ops:
            t0 = time.perf_counter()
            try:
                system.apply(op)
            except Unsupported as exc:
                unsupported = f"op {op.kind!r} unsupported: {exc}"
                break
            except Exception as exc:  # noqa: BLE001 - a system's failure is a result, not a crash
                op_error = op_error or f"op {op.kind!r} at {op.at} failed: {_short(exc)}"
                log.debug("%s: %s", system.name, op_error)
            finally:
                run.ops += 1
                run.op_seconds += time.perf_counter() - t0
        for q in scenario.questions:
            expected = canonical_answer(q.ask, q.expect)
            if unsupported is not None:
                run.outcomes.append(Outcome(scenario.id, q.rule, q.ask, "unsupported", expected, None, unsupported))
                continue
            t0 = time.perf_counter()
            try:
                got = system.ask(q)
            except Unsupported as exc:
                run.outcomes.append(Outcome(scenario.id, q.rule, q.ask, "unsupported", expected, None,
                                            f"question unsupported: {exc}"))
                continue
            except Exception as exc:  # noqa: BLE001
                run.outcomes.append(Outcome(scenario.id, q.rule, q.ask, "failed", expected, None, _short(exc)))
                continue
            finally:
                run.asks += 1
                run.ask_seconds += time.perf_counter() - t0
            outcome = _score(scenario, q, got)
            if outcome.status == "failed" and op_error is not None:
                outcome = Outcome(outcome.scenario, outcome.rule, outcome.ask, outcome.status, outcome.expected,
                                  outcome.got, op_error)
            run.outcomes.append(outcome)
    finally:
        system.finish()
