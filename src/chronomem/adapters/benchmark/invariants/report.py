"""What the invariant checker found: counts, and the anomalies by kind, each with examples."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ANOMALIES", "Anomaly", "InvariantReport"]

#: anomaly kind -> the invariant it breaks
ANOMALIES: dict[str, str] = {
    "lost-write": "an acknowledged write is not in the final store's history",
    "phantom-write": "a version in the store that no invoked op explains (or that an op refused with an error made)",
    "read-mismatch": "a read answered differently from the sequential model at the read's basis",
    "double-value": "a single-valued key with two believed values at one instant",
    "known-at-changed": "an as-known-at answer differs when asked again after the workload",
    "order": "system times of one key's writes not strictly increasing in real-time (commit) order",
    "state-mismatch": "the store's believed intervals of a key differ from the model's at a system time",
    "refused-by-model": "a write the store applied is one the sequential model refuses",
}

#: examples kept per kind (the count is exact; the list is for a human)
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Anomaly:
    kind: str
    message: str
    example: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "example": dict(self.example)}


@dataclass
class InvariantReport:
    """Counts of the operations by outcome, reads checked, and the anomalies found."""

    target: str
    processes: int = 0
    killed: int = 0
    invoked: int = 0
    ok: int = 0
    failed: int = 0
    info: int = 0
    indeterminate_applied: int = 0
    indeterminate_not_applied: int = 0
    writes_applied: int = 0
    noop: int = 0
    reads_checked: int = 0
    states_checked: int = 0
    seconds: float = 0.0
    workload_seconds: float = 0.0
    crashed: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    examples: dict[str, list[Anomaly]] = field(default_factory=dict)

    def add(self, kind: str, message: str, **example: Any) -> None:
        if kind not in ANOMALIES:  # pragma: no cover - a checker bug
            raise AssertionError(f"unknown anomaly kind {kind!r}")
        self.counts[kind] += 1
        kept = self.examples.setdefault(kind, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(Anomaly(kind, message, example))

    @property
    def anomalies(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "processes": self.processes, "killed": self.killed,
            "operations": self.invoked, "ok": self.ok, "failed": self.failed, "info": self.info,
            "indeterminate_applied": self.indeterminate_applied,
            "indeterminate_not_applied": self.indeterminate_not_applied,
            "writes_applied": self.writes_applied, "noop_corrections": self.noop, "reads": self.reads_checked,
            "states_checked": self.states_checked, "seconds": round(self.seconds, 3),
            "workload_seconds": round(self.workload_seconds, 3), "crashed": list(self.crashed),
            "anomalies": dict(self.counts),
            "examples": {k: [a.to_dict() for a in v] for k, v in sorted(self.examples.items())},
        }

    def render(self) -> str:
        lines = [
            f"invariant check of {self.target}",
            f"  processes {self.processes} ({self.killed} killed)",
            f"  operations {self.invoked}: ok {self.ok}, failed {self.failed}, info {self.info}, "
            f"indeterminate applied {self.indeterminate_applied}, not applied {self.indeterminate_not_applied}",
            f"  writes applied {self.writes_applied} (+{self.noop} no-op corrections), "
            f"reads checked {self.reads_checked}, store states checked {self.states_checked} ({self.seconds:.1f} s)",
            f"  anomalies {self.anomalies}" + ("" if self.anomalies else " (none)"),
        ]
        if self.workload_seconds:
            lines.insert(1, f"  workload {self.workload_seconds:.1f} s")
        for crash in self.crashed:
            lines.append(f"  a worker crashed: {crash.splitlines()[0] if crash else ''}")
        for kind, n in self.counts.items():
            if n:
                lines.append(f"    {kind}: {n} ({ANOMALIES[kind]})")
                for a in self.examples.get(kind, [])[:1]:
                    lines.append(f"      e.g. {a.message}: {dict(a.example)}")
        return "\n".join(lines)
