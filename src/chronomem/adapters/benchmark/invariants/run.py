"""Workload then check, on a throwaway store: what ``chronomem bench temporal`` calls per backend.

A SQLite run uses a file in a temporary folder; a PostgreSQL run a fresh schema of
``pg_url``, dropped afterwards. The histories go to ``out_dir`` when given (kept, for a
human to read), else to the temporary folder (removed).
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from .check import check
from .report import InvariantReport
from .workload import run_workload

__all__ = ["run_and_check", "system_invariants"]


def run_and_check(pg_url: str | None = None, *, processes: int = 4, ops_per_process: int = 200, kills: int = 2,
                  seed: int = 19, revise_one: bool = True, out_dir: str | Path | None = None) -> InvariantReport:
    """Run the workload on a fresh SQLite file (``pg_url=None``) or PostgreSQL schema, and check it."""
    tmp = Path(tempfile.mkdtemp(prefix="chronomem-inv-"))
    schema = None
    try:
        if pg_url is None:
            target = str(tmp / "inv.db")
        else:
            schema = f"cminv_{uuid.uuid4().hex[:12]}"
            target = f"{pg_url}{'&' if '?' in pg_url else '?'}schema={schema}"
        out = Path(out_dir) if out_dir is not None else tmp / "histories"
        result = run_workload(target, processes=processes, ops_per_process=ops_per_process, kills=kills, seed=seed,
                              out_dir=out, revise_one=revise_one)
        report = check(target, result.histories)
        report.workload_seconds = result.seconds
        report.crashed = list(result.crashed)
        return report
    finally:
        if schema is not None and pg_url is not None:
            psycopg = importlib.import_module("psycopg")
            with psycopg.connect(pg_url, autocommit=True) as con:
                con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        shutil.rmtree(tmp, ignore_errors=True)


def system_invariants(system: str, *, pg_url: str | None = None, **options: Any) -> dict[str, Any]:
    """The ``invariants`` callback of :func:`~chronomem.adapters.benchmark.suite.run_benchmark`:
    ``chronomem`` runs on SQLite, ``chronomem-postgres`` on ``pg_url``; the report as a dict
    (``{"error": ...}`` when PostgreSQL is wanted but no URL is given)."""
    if system.endswith("postgres"):
        if not pg_url:
            return {"error": "no PostgreSQL URL given"}
        return run_and_check(pg_url, **options).to_dict()
    return run_and_check(None, **options).to_dict()
