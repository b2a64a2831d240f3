"""One benchmark run: the scenarios, every selected system, the invariant checker, one table."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from .runner import SystemRun, run_system
from .scenario import RULES, Scenario, load_scenarios
from .systems import System, make_system

__all__ = ["BUILTIN_FILES", "BenchmarkResult", "build_systems", "builtin_scenarios", "render_table", "run_benchmark"]

#: the scenario files shipped in ``data/``: written by hand (each answer justified), and generated
BUILTIN_FILES = ("handwritten.jsonl", "generated.jsonl")


def builtin_scenarios() -> list[Scenario]:
    """The shipped scenarios, hand-written first."""
    out: list[Scenario] = []
    base = resources.files(__package__) / "data"
    for name in BUILTIN_FILES:
        with resources.as_file(base / name) as path:
            out.extend(load_scenarios(path))
    return out


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"python": platform.python_version(), "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(), "processor": platform.machine()}


@dataclass
class BenchmarkResult:
    runs: list[SystemRun]
    scenarios: int
    questions: int
    invariants: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "systems": {r.name: r.to_dict() for r in self.runs},
            "invariants": self.invariants,
            "scenarios": {"count": self.scenarios, "questions": self.questions, "sources": self.sources},
            "machine": machine(),
            "seconds": round(self.seconds, 3),
        }

    def table(self) -> str:
        return render_table(self)


def _cell(counts: dict[str, int] | None) -> str:
    if not counts:
        return "–"
    return f"{counts['passed']} / {counts['failed']} / {counts['unsupported']}"


def render_table(result: BenchmarkResult) -> str:
    """A Markdown table (it reads in a terminal and pastes into docs): per rule, per system,
    questions passed / failed / unsupported; then totals and time."""
    runs = result.runs
    head = ["rule", *(r.name for r in runs)]
    rows = [head, ["---"] * len(head)]
    per = [r.rules() for r in runs]
    for rule in RULES:
        if any(rule in p for p in per):
            rows.append([rule, *(_cell(p.get(rule)) for p in per)])
    rows.append(["**total**", *(f"**{_cell(r.totals())}**" for r in runs)])
    rows.append(["seconds", *(f"{r.seconds:.2f}" for r in runs)])
    rows.append(["ms per op / question", *(
        f"{d['latency_ms']['op'] or 0:.2f} / {d['latency_ms']['ask'] or 0:.2f}" for d in (r.to_dict() for r in runs))])
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    lines.append(f"Cells: questions passed / failed / unsupported. {result.scenarios} scenarios, "
                 f"{result.questions} questions ({', '.join(result.sources)}).")
    for r in runs:
        lines.append(f"- {r.name}: {r.version}")
    if result.invariants:
        lines.append("")
        lines.append("Invariant checker:")
        for name, rep in result.invariants.items():
            lines.append(f"- {name}: {_invariant_line(rep)}")
    return "\n".join(lines)


def _invariant_line(rep: dict[str, Any]) -> str:
    if "error" in rep:
        return f"not run: {rep['error']}"
    anomalies = rep.get("anomalies", {})
    total = sum(anomalies.values()) if isinstance(anomalies, dict) else len(anomalies)
    return (f"{rep.get('operations', 0)} operations, {rep.get('reads', 0)} reads checked, "
            f"{rep.get('killed', 0)} writers killed, {total} anomalies")


def build_systems(names: Sequence[str], *, pg_url: str | None = None) -> list[System]:
    """Every system named, built before any work: a bad name or a missing peer fails at once."""
    built: list[System] = []
    try:
        for name in names:
            built.append(make_system(name, pg_url=pg_url))
    except BaseException:
        for system in built:
            system.close()
        raise
    return built


def run_benchmark(systems: Sequence[System], scenarios: Sequence[Scenario], *, sources: Sequence[str] = (),
                  invariants: Callable[[str], dict[str, Any]] | None = None,
                  progress: Callable[[str, int, int], None] | None = None) -> BenchmarkResult:
    """Run ``scenarios`` on each of ``systems`` (see :func:`build_systems`); ``invariants(name)``,
    when given, runs the invariant checker for each chronomem system and returns its report.
    ``progress(system, done, total)`` is called per scenario."""
    begin = time.perf_counter()
    built = list(systems)
    runs: list[SystemRun] = []
    total = len(scenarios)
    for system in built:
        done = 0

        def step(n: int, name: str = system.name) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(name, done, total)

        runs.append(run_system(system, scenarios, progress=step))
    result = BenchmarkResult(runs, len(scenarios), sum(len(s.questions) for s in scenarios), sources=list(sources))
    if invariants is not None:
        for system in built:
            if system.name.startswith("chronomem"):
                result.invariants[system.name] = invariants(system.name)
    result.seconds = time.perf_counter() - begin
    return result
