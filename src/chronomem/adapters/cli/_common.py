"""Shared CLI plumbing: the per-invocation state (lazy memory), the ``--json``
option, output helpers and rich renderers for the result models."""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...core.basis import fact_dict_at, status_at, status_label
from ...core.ids import short_id
from ...core.jsonobj import load_object
from ...core.limits import MAX_JSON_DEPTH
from ...core.models import Fact
from ...core.time import Precision, TimeLike, format_us, to_us
from ...errors import LimitExceededError, StoreError
from ...memory import Memory
from ...store import missing_local_file
from ._times import echo as echo_times

__all__ = [
    "At",
    "CliError",
    "State",
    "console",
    "default_db",
    "emit",
    "fact_table",
    "fact_dicts",
    "facts_out",
    "fmt_time",
    "history_table",
    "json_option",
    "parse_json_object",
    "read_at",
    "state",
]

F = TypeVar("F", bound=Callable[..., Any])


def default_db() -> str:
    """``$XDG_DATA_HOME/chronomem/memory.db`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "chronomem", "memory.db")


class CliError(click.ClickException):
    """A user-facing failure: one ``error: ...`` line on stderr, exit 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        message = " ".join(self.format_message().split("\n"))
        # a lone surrogate in the message must not stop it from printing
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        click.echo(f"error: {message}", err=True)


@dataclass
class State:
    """Options of the ``chronomem`` group; the memory is opened on first use."""

    db: str | None
    namespace: str
    timezone: str
    embedder: str = "auto"
    verbose: int = 0
    read_replica: str | None = None  # a PostgreSQL standby's URL (--read-replica)
    json: bool = False
    _mem: Memory | None = None

    @property
    def embedder_arg(self) -> str | None:
        """``--embedder`` as ``chronomem.open`` takes it (``none``: ``None``)."""
        return None if self.embedder == "none" else self.embedder

    @property
    def db_path(self) -> str:
        return self.db or default_db()

    def memory(self, *, create: bool = True) -> Memory:
        """Open the memory. ``create=False`` (read commands) refuses a
        database file that does not exist instead of creating an empty one."""
        if self._mem is None:
            import chronomem

            target = self.db_path
            missing = missing_local_file(target)
            if not create and missing is not None:
                raise StoreError(
                    f"no memory database at {missing}; add a fact first or point --db (or CHRONOMEM_DB) "
                    "at an existing file"
                )
            self._mem = chronomem.open(target, namespace=self.namespace, timezone=self.timezone,
                                       embedder=self.embedder_arg, read_replica=self.read_replica)
        return self._mem

    def close(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None


def state() -> State:
    obj = click.get_current_context().find_object(State)
    assert obj is not None, "chronomem commands run under the chronomem group"
    return obj


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        obj = ctx.find_object(State)
        if obj is not None:
            obj.json = True


def json_option(f: F) -> F:
    """``--json``: machine-readable output on stdout."""
    return click.option(
        "--json", "json_output", is_flag=True, expose_value=False, callback=_set_json, is_eager=True,
        help="Print JSON (the models' to_dict()) instead of tables.",
    )(f)


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True, markup=False)


def emit(data: Any, human: Callable[[Console], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else call ``human`` with a
    console; first say what the read-basis times resolved to (:func:`._times.echo`)."""
    data = echo_times(data, state().json, _tz())
    if state().json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        human(console())


def parse_json_object(text: str | None, option: str) -> dict[str, Any] | None:
    """The JSON object an option's value holds (``None`` for no value)."""
    if text is None:
        return None
    try:
        return load_object(text, option, not_object="must be a JSON object such as '{\"key\": \"value\"}'")
    except RecursionError:  # nested far past the documented depth: json gives up first
        raise LimitExceededError(option, MAX_JSON_DEPTH, unit="levels of nesting") from None


# -- rendering ------------------------------------------------------------
def _tz() -> _dt.tzinfo:
    from ...core.time import get_timezone

    return get_timezone(state().timezone)


def fmt_time(dt: _dt.datetime | None, prec: Precision | None = None, empty: str = "…") -> str:
    """A time in the ``--timezone``, at its precision."""
    if dt is None:
        return empty
    return format_us(to_us(dt), prec if prec is not None else Precision.SECOND, _tz())


def interval(f: Fact) -> str:
    return f"[{fmt_time(f.valid_from, f.valid_from_precision)}, {fmt_time(f.valid_to, f.valid_to_precision)})"


def obj_text(f: Fact) -> str:
    return f.object_text


def statement(f: Fact) -> str:
    return f"{f.subject} -{f.predicate}-> {obj_text(f)}"


@dataclass(frozen=True)
class At:
    """The valid-time basis a read's statuses are relative to: ``when``, and
    ``text`` as shown (``None``: the basis is now)."""

    when: _dt.datetime
    text: str | None = None


def read_at(mem: Memory, as_of: TimeLike | None) -> At:
    """The basis of a read taking ``--as-of`` (unset: now)."""
    if as_of is None:
        return At(mem.now())
    point = mem.resolve_time(as_of, "as_of").point  # a ReadTime option's TimePoint passes through
    return At(point.datetime, fmt_time(point.datetime, point.precision))


def status_text(f: Fact, at: At) -> str:
    """``valid now`` / ``valid at 2019-06`` / ``ended 2018-04`` / ``starts 2020``."""
    return status_label(status_at(f, at.when), basis=at.text,
                        valid_from=fmt_time(f.valid_from, f.valid_from_precision),
                        valid_to=fmt_time(f.valid_to, f.valid_to_precision))


def fact_dicts(facts: Sequence[Fact], at: At) -> list[dict[str, Any]]:
    """Each fact's JSON with its ``status_at_basis``."""
    return [fact_dict_at(f, at.when) for f in facts]


def _table(title: str | None) -> Table:
    return Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)


def short_ids(facts: Sequence[Fact]) -> dict[str, str]:
    """The id each of ``facts`` is shown with: its 8-character short id, or
    12 characters (then the whole id) where two of them would share one, so
    what a table shows is what to type."""
    ids = {f.id for f in facts}
    for chars in (8, 12):
        shown = {fid: short_id(fid, chars) for fid in ids}
        if len(set(shown.values())) == len(shown):
            return shown
    return {fid: fid for fid in ids}


def fact_table(facts: Sequence[Fact], title: str | None = None, *, at: At) -> Table:
    """Facts, one per row: statement, valid interval, status at the basis ``at``,
    short id (every command taking a fact id accepts it)."""
    table = _table(title)
    table.add_column("fact", overflow="fold", ratio=1)
    table.add_column("valid", overflow="fold")
    table.add_column("status", overflow="fold")
    table.add_column("id", no_wrap=True, style="dim")
    shown = short_ids(facts)
    for f in facts:
        table.add_row(statement(f), interval(f), status_text(f, at), shown[f.id])
    return table


def closed_cause(f: Fact) -> str:
    """Why a version stopped being believed: ``retracted``, ``corrected: typo``, ..."""
    kind = f.ended_by.value if f.ended_by is not None else "closed"
    return f"{kind}: {f.ended_reason}" if f.ended_reason else kind


def history_table(facts: Sequence[Fact], title: str | None = None) -> Table:
    """Fact versions with their system-time interval, who recorded each and
    how they were closed."""
    table = _table(title)
    table.add_column("fact", overflow="fold", ratio=1)
    table.add_column("valid", overflow="fold")
    table.add_column("recorded", no_wrap=True)
    table.add_column("by", overflow="fold")
    table.add_column("closed", overflow="fold")
    table.add_column("id", no_wrap=True, style="dim")
    table.add_column("v", justify="right")
    shown = short_ids(facts)
    for f in facts:
        closed = "" if f.system_to is None else f"{fmt_time(f.system_to)} {closed_cause(f)}"
        table.add_row(statement(f), interval(f), fmt_time(f.system_from), f.recorded_by or "", closed, shown[f.id],
                      str(f.version))
    return table


def nothing(con: Console, what: str) -> None:
    con.print(Text(f"no {what}", style="dim"))


#: Above this many rows, facts are printed as tab-separated lines instead of a
#: table (rich tables get slow, and long lists are for grep anyway).
TABLE_MAX_ROWS = 1000


def fact_lines(facts: Sequence[Fact], at: At, history: bool = False) -> None:
    for f in facts:
        cols = [statement(f), interval(f)]
        if history:
            closed = "" if f.system_to is None else f"{fmt_time(f.system_to)} {closed_cause(f)}"
            cols += [fmt_time(f.system_from), f.recorded_by or "", closed, f.id, str(f.version)]
        else:
            cols += [status_text(f, at), f.id]
        click.echo("\t".join(cols))


def facts_out(facts: Sequence[Fact], what: str = "facts", *, at: At, history: bool = False) -> None:
    """Facts as JSON (each with its ``status_at_basis`` at ``at``) or a table
    (with the status in words; a history shows each version's system-time closing)."""
    def human(con: Console) -> None:
        if not facts:
            nothing(con, what)
        elif len(facts) > TABLE_MAX_ROWS:
            fact_lines(facts, at, history)
        else:
            con.print(history_table(facts) if history else fact_table(facts, at=at))

    emit(fact_dicts(facts, at), human)


class _ToDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_ToDict)

#: rich ``add_column`` options of a column that wraps long values
FOLD: Mapping[str, Any] = {"overflow": "fold"}


def rows_out(items: Sequence[R], what: str, columns: Mapping[str, Mapping[str, Any]],
             row: Callable[[R], Sequence[str]]) -> None:
    """``items`` as JSON (each its ``to_dict()``), or as a table with ``columns``
    (header -> rich column options) and one ``row(item)`` per item."""
    def human(con: Console) -> None:
        if not items:
            return nothing(con, what)
        table = _table(None)
        for name, options in columns.items():
            table.add_column(name, **options)
        for item in items:
            table.add_row(*row(item))
        con.print(table)

    emit([i.to_dict() for i in items], human)


def plural(n: int, word: str) -> str:
    """``1 fact``, ``2,000 facts``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def kv_table(rows: Iterable[tuple[str, Any]], title: str | None = None) -> Table:
    table = Table(title=title, show_header=False, box=box.SIMPLE, pad_edge=False)
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for k, v in rows:
        table.add_row(k, "" if v is None else str(v))
    return table
