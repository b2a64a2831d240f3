"""What :meth:`Memory.doctor` returns (:class:`DoctorReport`, its
:class:`Problem` entries), apart from the checks in
:mod:`chronomem.service.doctor` so that ``chronomem`` can export the type
without importing the checker (it loads on the first ``doctor()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DoctorReport", "Problem"]


@dataclass(frozen=True)
class Problem:
    """One kind of damage: how many places have it, a few of them, and the
    command that fixes it. ``repairable``: ``doctor --repair`` fixes it
    without losing data."""

    check: str
    code: str
    count: int
    message: str
    examples: tuple[str, ...]
    fix: str
    repairable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "code": self.code, "count": self.count, "message": self.message,
                "examples": list(self.examples), "fix": self.fix, "repairable": self.repairable}


@dataclass(frozen=True)
class DoctorReport:
    """What :meth:`Memory.doctor` found. With ``repair``, ``problems`` is what
    is left after the repairs, ``repaired`` what was done and ``refused``
    the fixes not made because they would lose data (what they would do)."""

    url: str
    namespace: str
    checks: dict[str, str]
    problems: tuple[Problem, ...]
    repaired: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "namespace": self.namespace, "ok": self.ok, "checks": dict(self.checks),
                "problems": [p.to_dict() for p in self.problems], "repaired": list(self.repaired),
                "refused": list(self.refused)}
