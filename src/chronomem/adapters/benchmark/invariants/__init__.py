"""The Jepsen-style invariant checker of the temporal benchmark.

:func:`run_workload` starts N real processes on one chronomem store (SQLite file or
PostgreSQL schema), each writing and reading a small shared keyspace and logging every
op to its own history (``invoke`` before the call, ``ok`` / ``fail`` / ``info`` after),
and SIGKILLs some of them mid-run; :func:`check` then verifies the histories offline
against the final store and the sequential model (:mod:`..model`), and reports the
anomalies by kind (:class:`InvariantReport`).
"""

from __future__ import annotations

from .check import check
from .report import ANOMALIES, Anomaly, InvariantReport
from .run import run_and_check, system_invariants
from .workload import WorkloadResult, run_workload

__all__ = ["ANOMALIES", "Anomaly", "InvariantReport", "WorkloadResult", "check", "run_and_check", "run_workload",
           "system_invariants"]
