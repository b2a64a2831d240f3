"""``chronomem bench temporal``: the temporal-memory benchmark (``docs/benchmark.md``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...errors import InvalidInputError
from ._common import console, state

__all__ = ["register"]

log = logging.getLogger(__name__)

DEFAULT_SYSTEMS = "chronomem,mempalace,naive"


@click.group("bench")
def bench_group() -> None:
    """Benchmarks that check what a memory answers (no LLM, no judge)."""


def _systems(text: str, explicit: bool) -> list[str]:
    from ..benchmark.systems import SYSTEMS

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InvalidInputError("--systems needs at least one system name")
    unknown = [n for n in names if n not in SYSTEMS and ":" not in n]
    if unknown:
        raise InvalidInputError(f"unknown system(s) for --systems: {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    if not explicit and "mempalace" in names:
        try:
            __import__("mempalace.knowledge_graph")
        except ImportError:
            click.echo("note: mempalace is not installed (pip install --no-deps mempalace==3.11.0); "
                       "running without it", err=True)
            names.remove("mempalace")
    return list(dict.fromkeys(names))


@bench_group.command("temporal")
@click.option("--systems", default=DEFAULT_SYSTEMS, show_default=True, metavar="NAMES",
              help="Comma-separated: chronomem, chronomem-postgres (needs --pg), mempalace, naive, "
                   "or module:Class for an adapter of your own (docs/benchmark.md).")
@click.option("--scenarios", "scenario_files", multiple=True, type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Scenario JSONL files to run instead of the shipped ones (repeatable).")
@click.option("--intervals", "interval_files", multiple=True, type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="A TSV of (subject, relation, object, start, end) intervals to turn into "
              "as-of and known-at questions (repeatable).")
@click.option("--inclusive-end", is_flag=True, help="Interval ends name the last period the fact held "
              "(a year end 2011 means through 2011); default: ends are exclusive.")
@click.option("--columns", "column_maps", multiple=True, metavar="MAP", help="Interval column names, e.g. "
              "'subject=subject_qid,relation=relation_label,start=start_year,end=end_year' (repeatable: the "
              "Nth applies to the Nth --intervals file; one applies to all).")
@click.option("--max-keys", type=click.IntRange(min=1), help="Interval data: at most this many "
              "(subject, relation) keys asked about per file (default 2000).")
@click.option("--pg", "pg_url", metavar="URL", help="PostgreSQL database for chronomem-postgres "
              "(a fresh schema per scenario, dropped afterwards; default $CHRONOMEM_BENCH_PG_URL).")
@click.option("--invariants/--no-invariants", default=True, show_default=True,
              help="Run the concurrent invariant checker on each chronomem system.")
@click.option("--processes", type=click.IntRange(1, 32), default=4, show_default=True,
              help="Invariant checker: concurrent writer processes.")
@click.option("--ops", "ops_per_process", type=click.IntRange(1, 100_000), default=200, show_default=True,
              help="Invariant checker: operations per process.")
@click.option("--kills", type=click.IntRange(0, 100), default=2, show_default=True,
              help="Invariant checker: writers killed with SIGKILL mid-run (and replaced).")
@click.option("--seed", type=int, default=19, show_default=True, help="Seed of the invariant workload and "
              "of the interval sampling.")
@click.option("--json", "json_file", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
              help="Write the result as JSON to FILE (or stdout without FILE).")
@click.option("--no-progress", is_flag=True, help="Do not draw progress bars on stderr.")
@click.pass_context
def temporal_cmd(ctx: click.Context, systems: str, scenario_files: tuple[Path, ...],
                 interval_files: tuple[Path, ...], inclusive_end: bool, column_maps: tuple[str, ...],
                 max_keys: int | None, pg_url: str | None, invariants: bool, processes: int,
                 ops_per_process: int, kills: int, seed: int, json_file: str | None, no_progress: bool) -> None:
    """Check the time semantics of memories with exact answers: per system, per
    rule, questions passed / failed / unsupported, plus latency; then the
    invariant checker's counts (concurrent writers, SIGKILLs, every read checked
    against the sequential model)."""
    from ..benchmark.scenario import load_scenarios
    from ..benchmark.suite import BUILTIN_FILES, build_systems, builtin_scenarios, run_benchmark

    explicit = ctx.get_parameter_source("systems") != click.core.ParameterSource.DEFAULT
    names = _systems(systems or DEFAULT_SYSTEMS, explicit)
    if scenario_files:
        scenarios = [s for f in scenario_files for s in load_scenarios(f)]
        sources = [f"{f.name}" for f in scenario_files]
    else:
        scenarios = builtin_scenarios()
        sources = list(BUILTIN_FILES)
    if column_maps and not interval_files:
        raise InvalidInputError("--columns needs --intervals FILE")
    if len(column_maps) > 1 and len(column_maps) != len(interval_files):
        raise InvalidInputError(f"{len(column_maps)} --columns for {len(interval_files)} --intervals files: "
                                "give one for all, or one per file")
    for i, f in enumerate(interval_files):
        columns = column_maps[i if len(column_maps) > 1 else 0] if column_maps else None
        from ..benchmark.intervals import DEFAULT_MAX_KEYS, convert_intervals, parse_columns

        converted = convert_intervals(f, inclusive_end=inclusive_end,
                                      columns=parse_columns(columns) if columns else None, seed=seed,
                                      max_keys=max_keys or DEFAULT_MAX_KEYS)
        scenarios.extend(converted.scenarios)
        sources.append(f"{f.name} ({converted.describe()})")

    to_stdout = json_file == "-"
    err = console(stderr=True)
    show = not (no_progress or to_stdout or state().json) and err.is_terminal
    built = build_systems(names, pg_url=pg_url)
    run_invariants = _invariant_runner(pg_url, processes, ops_per_process, kills, seed) if invariants else None
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=not show, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done)

        # the scenarios write what a store warns about on purpose (values kept beside each other
        # from before a declaration): those warnings are the benchmark's input, not news; -v shows them
        quiet = logging.getLogger("chronomem.store")
        level = quiet.level
        if not state().verbose:
            quiet.setLevel(logging.ERROR)
        try:
            result = run_benchmark(built, scenarios, sources=sources, invariants=run_invariants,
                                   progress=progress)
        finally:
            quiet.setLevel(level)
    data = result.to_dict()
    if to_stdout or state().json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    if json_file is not None:
        try:
            Path(json_file).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(f"cannot write --json file {json_file!r}: {exc.strerror}") from None
    click.echo(result.table())


def _invariant_runner(pg_url: str | None, processes: int, ops: int, kills: int, seed: int) -> Any:
    """``name -> report dict``: the invariant checker on a throwaway store of that system."""
    def run(name: str) -> dict[str, Any]:
        import os

        from ..benchmark.invariants import system_invariants
        from ..benchmark.systems import PG_URL_ENV

        return system_invariants(name, pg_url=pg_url or os.environ.get(PG_URL_ENV), processes=processes,
                                 ops_per_process=ops, kills=kills, seed=seed)

    return run


def register(main: click.Group) -> None:
    main.add_command(bench_group)
