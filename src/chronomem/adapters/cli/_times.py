"""Read-basis options (``--as-of``, ``--known-at``, ``--at``, ``--since``,
``--until``, ``--start``, ``--end``, ``diff T1 T2``): one click type that
resolves ISO dates and time phrases ("yesterday", "April 2022", "Q3 2024")
with :meth:`Memory.resolve_time` — the same reader as the Python API, the
HTTP API and MCP — against the store clock, once per invocation, and keeps
each resolution for the echo (:func:`echo`). Written times (``--from``,
``--to``, ``--ended``) are plain strings: the library reads them strictly."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Protocol, runtime_checkable

import click

from ...core.phrases import ResolvedTime
from ...core.time import TimePoint
from ...memory import Memory

__all__ = ["ReadTime", "echo", "resolved"]

_TIMES = "chronomem.times"
_NOW = "chronomem.now"


@runtime_checkable
class _Opens(Protocol):
    """The group's state (``_common.State``, which imports this module)."""

    def memory(self, *, create: bool = True) -> Memory: ...


def resolved() -> dict[str, ResolvedTime]:
    """The read bases this invocation resolved, by parameter name (in order)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    times: dict[str, ResolvedTime] = ctx.meta.setdefault(_TIMES, {})
    return times


class ReadTime(click.ParamType[TimePoint, Any]):
    """A read basis named ``field`` (``as_of``, ``known_at``, ``t1``, ...):
    converted to the :class:`TimePoint` it resolves to. Opens the memory (a
    read command's, so a missing database is refused as usual)."""

    name = "time"

    def __init__(self, field: str) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> TimePoint:
        if isinstance(value, TimePoint):
            return value
        if ctx is None or not isinstance(ctx.obj, _Opens):  # pragma: no cover - always under the chronomem group
            raise click.UsageError("read-time options need the chronomem group's state")
        mem = ctx.obj.memory(create=False)
        meta = ctx.meta
        now: _dt.datetime = meta.setdefault(_NOW, mem.now())  # one "now" for every option of the command
        rt = mem.resolve_time(str(value), self.field, now=now)
        meta.setdefault(_TIMES, {})[self.field] = rt
        return rt.point


def echo(data: Any, as_json: bool, tz: _dt.tzinfo) -> Any:
    """Say what the read bases resolved to: with ``as_json``, a ``"times"``
    object (``{"as_of": "2022-04"}``) added to an object output, or printed on
    stderr for a list output (so ``jq '.[]'`` keeps working); else one stderr
    line for those given as phrases. Returns ``data`` (with ``times`` added)."""
    times = resolved()
    if not times:
        return data
    rendered = {name: rt.render(tz) for name, rt in times.items()}
    if as_json:
        if isinstance(data, dict):
            return {**data, "times": rendered}
        click.echo(json.dumps({"times": rendered}), err=True)
        return data
    phrases = [f"{name}={rt.text!r} -> {rendered[name]}" for name, rt in times.items() if rt.relative]
    if phrases:
        click.echo(f"(resolved {', '.join(phrases)})", err=True)
    return data
