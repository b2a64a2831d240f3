"""Read commands: facts, current, history, timeline, diff, conflicts,
volatility, neighbors, path, entity, search, stats."""

from __future__ import annotations

from typing import Sequence

import click
from rich.console import Console
from rich.text import Text

from ...core.time import TimePoint
from ...errors import EntityNotFoundError
from ...memory import Memory
from ._common import (
    FOLD,
    console,
    emit,
    fact_dicts,
    fact_table,
    facts_out,
    fmt_time,
    interval,
    json_option,
    kv_table,
    nothing,
    obj_text,
    read_at,
    rows_out,
    state,
    statement,
)
from ._times import ReadTime

_DIRECTION = click.Choice(["out", "in", "both"])


def _known(mem: Memory, found: Sequence[object], name: str | None) -> None:
    """Nothing found about ``name``: if no entity has that name, say so on
    stderr with the close names it may mean. A filter that matches nothing
    is still an answer (``[]``, exit 0, as in Python, HTTP and MCP); the
    commands that need the entity (``timeline``, ``entity``, ...) fail instead."""
    if not found and name is not None:
        try:
            mem.entity(name)
        except EntityNotFoundError as exc:
            console(stderr=True).print(f"note: {exc}")


@click.command("facts")
@click.option("-s", "--subject", help="Only facts about this entity.")
@click.option("-p", "--predicate", help="Only this predicate (or an alias of it).")
@click.option("-o", "--object", "obj", help="Only this object.")
@click.option("--literal", is_flag=True, help="--object is a literal string value.")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"), help="Valid at this time (default: all of history).")
@click.option("--known-at", metavar="TIME", type=ReadTime("known_at"),
              help="As the memory believed at this time (default: now).")
@click.option("--direction", type=_DIRECTION, default="out", show_default=True,
              help="With --subject: outgoing, incoming or both.")
@click.option("--limit", type=click.IntRange(min=0), help="At most this many facts.")
@click.option("--recorded-by", metavar="NAME", help="Only versions this writer recorded (exact name).")
@click.option("--sql", is_flag=True, help="Print the SQL the query would run instead of running it.")
@json_option
def facts_cmd(subject: str | None, predicate: str | None, obj: str | None, literal: bool, as_of: TimePoint | None,
              known_at: TimePoint | None, direction: str, limit: int | None, recorded_by: str | None,
              sql: bool) -> None:
    """Query facts on both time axes."""
    mem = state().memory(create=False)
    kwargs = dict(as_of=as_of, known_at=known_at, direction=direction, limit=limit, literal=literal,
                  recorded_by=recorded_by)
    if sql:
        text, params = mem.facts_sql(subject, predicate, obj, **kwargs)

        def human(con: Console) -> None:
            click.echo(text + ";")
            if params:
                click.echo(f"-- params: {params!r}")

        emit({"sql": text, "params": params}, human)
        return
    at = read_at(mem, as_of)  # statuses are relative to --as-of ("valid at 2019-06"), else now
    found = mem.facts(subject, predicate, obj, as_of=as_of, known_at=known_at, direction=direction,
                      limit=limit, literal=literal, recorded_by=recorded_by)
    _known(mem, found, subject)
    facts_out(found, at=at)


@click.command("current")
@click.argument("subject")
@click.argument("predicate", required=False)
@json_option
def current_cmd(subject: str, predicate: str | None) -> None:
    """What is true now about SUBJECT (optionally only PREDICATE)."""
    mem = state().memory(create=False)
    found = mem.current(subject, predicate)
    _known(mem, found, subject)
    facts_out(found, "current facts", at=read_at(mem, None))


@click.command("history")
@click.argument("subject")
@click.argument("predicate", required=False)
@click.option("--direction", type=_DIRECTION, default="out", show_default=True,
              help="Outgoing, incoming or both.")
@click.option("--recorded-by", metavar="NAME", help="Only versions this writer recorded (exact name).")
@json_option
def history_cmd(subject: str, predicate: str | None, direction: str, recorded_by: str | None) -> None:
    """Every version of SUBJECT's facts on both axes (the audit trail), with
    who recorded each."""
    mem = state().memory(create=False)
    found = mem.history(subject, predicate, direction=direction, recorded_by=recorded_by)
    _known(mem, found, subject)
    facts_out(found, "history", at=read_at(mem, None), history=True)


@click.command("timeline")
@click.argument("entity")
@click.option("--start", metavar="TIME", type=ReadTime("start"), help="Only events at or after this time.")
@click.option("--end", metavar="TIME", type=ReadTime("end"), help="Only events before this time.")
@json_option
def timeline_cmd(entity: str, start: TimePoint | None, end: TimePoint | None) -> None:
    """Chronological events about ENTITY (valid and system time)."""
    events = state().memory(create=False).timeline(entity, start, end)
    rows_out(events, "events", {"at": {"no_wrap": True}, "axis": {}, "event": FOLD, "by": FOLD},
             lambda e: (fmt_time(e.at, e.precision), e.axis, e.text, e.recorded_by or ""))


@click.command("diff")
@click.argument("t1", type=ReadTime("t1"))
@click.argument("t2", type=ReadTime("t2"))
@click.option("--subject", help="Only facts about this entity.")
@click.option("--predicate", help="Only this predicate.")
@click.option("--axis", type=click.Choice(["valid", "system"]), default="valid", show_default=True,
              help="Compare what was true (valid) or what was believed (system).")
@json_option
def diff_cmd(t1: TimePoint, t2: TimePoint, subject: str | None, predicate: str | None, axis: str) -> None:
    """What changed between T1 and T2."""
    d = state().memory(create=False).diff(t1, t2, subject, predicate, axis)

    def human(con: Console) -> None:
        con.print(f"{axis} time {fmt_time(d.t1)} → {fmt_time(d.t2)}")
        if d.empty:
            return nothing(con, "changes")
        for f in d.added:
            con.print(Text.assemble(("+ ", "green"), f"{statement(f)} {interval(f)}"))
        for f in d.removed:
            con.print(Text.assemble(("- ", "red"), f"{statement(f)} {interval(f)}"))
        for c in d.changed:
            # each side with its interval: a change may be the interval alone
            con.print(Text.assemble(("~ ", "yellow"), f"{c.subject} -{c.predicate}->: {obj_text(c.old)} "
                                    f"{interval(c.old)} → {obj_text(c.new)} {interval(c.new)}"))

    emit(d.to_dict(), human)


@click.command("conflicts")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"), help="Only conflicts at this valid time.")
@json_option
def conflicts_cmd(as_of: TimePoint | None) -> None:
    """Several values of one subject and predicate valid at once."""
    mem = state().memory(create=False)
    at = read_at(mem, as_of)
    found = mem.conflicts(as_of)

    def human(con: Console) -> None:
        if not found:
            return nothing(con, "conflicts")
        for c in found:
            span = f"[{fmt_time(c.overlap_from)}, {fmt_time(c.overlap_to)})"
            con.print(fact_table(c.facts, title=f"{c.kind}: {c.subject} -{c.predicate}-> overlap {span}", at=at))

    emit([{**c.to_dict(), "facts": fact_dicts(c.facts, at)} for c in found], human)


@click.command("volatility")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="How many to list.")
@click.option("--start", metavar="TIME", type=ReadTime("start"), help="Only facts valid after this time.")
@click.option("--end", metavar="TIME", type=ReadTime("end"), help="Only facts valid before this time.")
@json_option
def volatility_cmd(top: int, start: TimePoint | None, end: TimePoint | None) -> None:
    """Subject-predicate pairs that change value most often."""
    rows = state().memory(create=False).volatility(top, start, end)
    rows_out(rows, "changes", dict.fromkeys(("subject", "predicate", "changes", "values", "mean days"), FOLD),
             lambda v: (v.subject, v.predicate, str(v.changes), str(v.values),
                        "" if v.mean_duration_days is None else f"{v.mean_duration_days:.1f}"))


@click.command("neighbors")
@click.argument("entity")
@click.option("--hops", type=click.IntRange(min=1), default=1, show_default=True, help="How far to go.")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"), help="Only edges valid at this time.")
@json_option
def neighbors_cmd(entity: str, hops: int, as_of: TimePoint | None) -> None:
    """Entities within --hops edges of ENTITY."""
    found = state().memory(create=False).neighbors(entity, hops, as_of)
    rows_out(found, "neighbors", {"entity": FOLD, "hops": {"justify": "right"}, "via": FOLD},
             lambda n: (n.entity, str(n.hops), "; ".join(statement(f) for f in n.via)))


@click.command("path")
@click.argument("source")
@click.argument("target")
@click.option("--max-hops", type=click.IntRange(min=1), default=3, show_default=True, help="Longest path.")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"), help="Only edges valid at this time.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many paths.")
@json_option
def path_cmd(source: str, target: str, max_hops: int, as_of: TimePoint | None, limit: int) -> None:
    """Paths from SOURCE to TARGET through the graph."""
    found = state().memory(create=False).paths(source, target, max_hops, as_of, limit)

    def human(con: Console) -> None:
        if not found:
            return nothing(con, "paths")
        for p in found:
            con.print(" · ".join(statement(f) for f in p.facts) + f"  ({p.hops} hop{'s' if p.hops != 1 else ''})")

    emit([dict(p.to_dict(), hops=p.hops) for p in found], human)


@click.command("entity")
@click.argument("name")
@json_option
def entity_cmd(name: str) -> None:
    """Show entity NAME (or an alias): names, type, properties and current facts."""
    mem = state().memory(create=False)
    e = mem.entity(name)
    at = read_at(mem, None)
    facts = mem.facts(e.name, as_of=at.when, direction="both")

    def human(con: Console) -> None:
        con.print(kv_table([
            ("name", e.name), ("key", e.key), ("type", e.type), ("aliases", ", ".join(e.aliases)),
            ("properties", dict(e.properties) if e.properties else None), ("created", fmt_time(e.created_at)),
        ], title=e.name))
        if facts:
            con.print(fact_table(facts, title="current facts", at=at))
        else:
            nothing(con, "current facts")

    emit({"entity": e.to_dict(), "facts": fact_dicts(facts, at)}, human)


@click.command("search")
@click.argument("text")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"), help="Only facts valid at this time.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="At most this many.")
@json_option
def search_cmd(text: str, as_of: TimePoint | None, limit: int) -> None:
    """Facts whose entity or predicate names contain TEXT."""
    mem = state().memory(create=False)
    facts_out(mem.search_facts(text, as_of=as_of, limit=limit), "matches", at=read_at(mem, as_of))


@click.command("stats")
@json_option
def stats_cmd() -> None:
    """Counts of entities, facts and versions in the namespace."""
    s = state().memory(create=False).stats()
    emit(s.to_dict(), lambda con: con.print(kv_table(
        [(k, ", ".join(v) if isinstance(v, (list, tuple)) else v) for k, v in s.to_dict().items()], title="chronomem")))


def register(main: click.Group) -> None:
    for cmd in (facts_cmd, current_cmd, history_cmd, timeline_cmd, diff_cmd, conflicts_cmd, volatility_cmd,
                neighbors_cmd, path_cmd, entity_cmd, search_cmd, stats_cmd):
        main.add_command(cmd)
