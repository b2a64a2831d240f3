"""The worked example behind ``chronomem demo`` (and ``make demo``).

:func:`run_demo` records a small story of changing facts (``story.jsonl``: a
CEO succession, a team changing its message queue, a person moving city, with
an out-of-order arrival, a correction, a retraction and an invalidation) on the
real clock, then reads the store back and prints the answers: as-of questions
(valid time), known-at questions (system time, using the system times the store
gave the story's steps), a timeline of one entity and a diff between two dates.

If the memory's namespace already holds data (for instance a second run on the
same database), the story goes into a fresh ``demo-<time>`` namespace instead.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import sys

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...core.models import Diff, Fact
from ...memory import Memory
from ._story import (
    DIFF_RANGE,
    TIMELINE_ENTITY,
    Answer,
    DemoRun,
    interval,
    render_event_time,
    render_system,
    run_story,
)

__all__ = ["run_demo"]

log = logging.getLogger("chronomem.demo")


def run_demo(mem: Memory, console: Console, json_output: bool = False) -> int:
    """Record the demo story in ``mem`` and print what it answers; returns the exit code (0).

    With ``json_output`` the whole run is printed as one JSON document.
    """
    run = run_story(mem)
    log.info("demo story recorded in namespace %s of %s", run.mem.namespace, run.mem.url)
    if json_output:
        console.print_json(json.dumps(run.to_dict(), ensure_ascii=False), highlight=False)
        return 0
    _print_run(run, console)
    return 0


def _answer_text(answer: Answer, run: DemoRun) -> Text:
    if not answer.facts:
        return Text("(nothing)", style="dim")
    text = Text()
    for i, f in enumerate(answer.facts):
        if i:
            text.append("\n")
        text.append(str(f.object), style="bold green")
        text.append(f" {interval(f, run.mem.tz)}", style="dim")
    return text


def _statement(f: Fact, run: DemoRun) -> Text:
    text = Text(f"{f.subject} -{f.predicate}-> ")
    text.append(str(f.object), style="bold")
    text.append(f" {interval(f, run.mem.tz)}")
    return text


def _intro(run: DemoRun) -> Panel:
    lines = [
        Text.assemble("Store ", (run.mem.url, "bold"), ", namespace ", (run.mem.namespace, "bold"), "."),
    ]
    if run.moved_from is not None:
        lines.append(Text(
            f"Namespace {run.moved_from!r} already holds data, so the story was recorded in the fresh "
            f"namespace {run.mem.namespace!r}.", style="yellow",
        ))
    lines.append(Text(
        "Every fact has two times: valid time (when it was true in the world) and system time (when this "
        "store believed it). The story below was recorded just now, one step per transaction."
    ))
    lines.append(Text("Predicates declared: " + ", ".join(run.predicates), style="dim"))
    return Panel(Group(*lines), title="chronomem demo", border_style="cyan")


def _clock_time(when: str) -> str:
    """``2026-11-29T14:55:07.484427Z`` -> ``14:55:07.484427Z``: the time of day (titles give the date)."""
    return when.partition("T")[2] or when


def _steps_table(run: DemoRun) -> Table:
    first = next(iter(run.recorded.values()), None)
    day = render_system(first.system_time, run.mem.tz).partition("T")[0] if first else ""
    table = Table(title=f"1. The story, in the order it was recorded (system time, on {day})",
                  title_justify="left", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("recorded at", no_wrap=True)
    table.add_column("what happened → the version stored")
    for i, r in enumerate(run.recorded.values(), start=1):
        cell = Text(r.step.say)
        cell.append("\n→ ")
        cell.append_text(_statement(r.fact, run))
        if r.step.op == "retract":
            cell.append("  (retracted)", style="red")
        elif r.step.op == "correct":
            cell.append(f"  (version {r.fact.version})", style="magenta")
        table.add_row(str(i), _clock_time(render_system(r.system_time, run.mem.tz)), cell)
    return table


def _as_of_table(run: DemoRun) -> Table:
    table = Table(title="2. As-of questions: valid time, as the store believes now", title_justify="left")
    table.add_column("question")
    table.add_column("as of", no_wrap=True)
    table.add_column("answer")
    for a in run.as_of:
        table.add_row(a.question, a.as_of_text, _answer_text(a, run))
    return table


def _known_at_table(run: DemoRun) -> Table:
    table = Table(title="3. Known-at questions: what did the store believe, and when?", title_justify="left",
                  show_lines=True)
    table.add_column("question")
    table.add_column("as of", no_wrap=True)
    table.add_column("known at (system time)")
    table.add_column("answer")
    for a in run.known_at:
        when = Text(a.known_at_label)
        if a.known_at is not None:
            when.append(f"\n{_clock_time(render_system(a.known_at, run.mem.tz))}", style="dim")
        table.add_row(a.question, a.as_of_text, when, _answer_text(a, run))
    return table


def _timeline_table(run: DemoRun) -> Table:
    table = Table(title=f"4. Timeline of {TIMELINE_ENTITY} (valid-time events, then system-time records)",
                  title_justify="left")
    table.add_column("when", no_wrap=True)
    table.add_column("axis")
    table.add_column("event")
    names = {r.fact.id: str(r.fact.object) for r in run.recorded.values()}
    for e in run.timeline:
        text = e.text
        for fact_id, name in names.items():
            text = text.replace(f"(by {fact_id})", f"(by {name})")
        table.add_row(render_event_time(e, run.mem.tz), e.axis, Text(text))
    return table


def _diff_table(run: DemoRun, diff: Diff) -> Table:
    t1, t2 = DIFF_RANGE
    table = Table(title=f"5. What changed between {t1} and {t2} (valid time)", title_justify="left")
    table.add_column("change")
    table.add_column("subject")
    table.add_column("predicate")
    table.add_column(f"in {t1}")
    table.add_column(f"in {t2}")
    tz = run.mem.tz
    for c in diff.changed:
        table.add_row("changed", c.subject, c.predicate, Text(f"{c.old.object} {interval(c.old, tz)}"),
                      Text(f"{c.new.object} {interval(c.new, tz)}"))
    for f in diff.removed:
        table.add_row("removed", f.subject, f.predicate, Text(f"{f.object} {interval(f, tz)}"), "")
    for f in diff.added:
        table.add_row("added", f.subject, f.predicate, "", Text(f"{f.object} {interval(f, tz)}"))
    for f in diff.unchanged:
        table.add_row(Text("unchanged", style="dim"), f.subject, f.predicate, Text(str(f.object)),
                      Text(str(f.object)))
    return table


def _print_run(run: DemoRun, console: Console) -> None:
    console.print(_intro(run))
    console.print(_steps_table(run))
    console.print(_as_of_table(run))
    console.print(_known_at_table(run))
    console.print(_timeline_table(run))
    if run.diff is not None:
        console.print(_diff_table(run, run.diff))
    console.print(Text(
        "Valid intervals are half-open [from, to): '…' is an unknown start or a fact still true. "
        "Nothing was deleted: the retracted and corrected versions stay readable with known_at.",
        style="dim",
    ))
    hint = _explore_commands(run)
    if hint:
        console.print(Text("Explore the story yourself:", style="bold cyan"))
        for line in hint:
            console.print(Text(f"  {line}"), soft_wrap=True)


def invocation(argv0: str | None = None, path: str | None = None) -> tuple[str, str | None]:
    """How to run this chronomem again, copy-paste ready, and a note when that
    is not a bare ``chronomem``: ``chronomem`` when it is on ``PATH`` (``path``,
    default ``$PATH``) and is the script running now (``argv0``, default
    ``sys.argv[0]``), else that script's absolute path (with how to activate
    its virtual environment), else ``python -m chronomem`` with this Python."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    script = os.path.abspath(argv0) if argv0 else ""
    if os.path.basename(script) not in ("chronomem", "chronomem.exe") or not os.path.isfile(script):
        return f"{shlex.quote(sys.executable)} -m chronomem", None
    found = shutil.which("chronomem", path=path)
    if found is not None and os.path.realpath(found) == os.path.realpath(script):
        return "chronomem", None
    where = os.path.dirname(script)
    activate = os.path.join(where, "activate")
    note = f"chronomem is not on your PATH, so the commands name {script}"
    if os.path.isfile(activate):
        note += f"; after `source {shlex.quote(activate)}` plain `chronomem` works"
    return shlex.quote(script), note


def _explore_commands(run: DemoRun, argv0: str | None = None, path: str | None = None) -> list[str]:
    """CLI commands to explore the recorded story, when it lives in a file,
    as this shell can run them (:func:`invocation`); a note on ``PATH`` first
    when there is one."""
    url = run.mem.url
    if not url.startswith("sqlite:///") or url.endswith(":memory:"):
        return []
    command, note = invocation(argv0, path)
    base = f"{command} --db {shlex.quote(os.path.abspath(url[len('sqlite:///'):]))}"
    if run.mem.namespace != "default":
        base += f" --namespace {shlex.quote(run.mem.namespace)}"
    lines = [f"# {note}"] if note else []
    return lines + [
        f'{base} facts --subject "Acme Corp" --predicate ceo --as-of 2021-06',
        f'{base} history "Dana Lee"',
        f'{base} timeline "Payments team"',
        f"{base} diff 2020-01 2024-12 --json",
    ]
