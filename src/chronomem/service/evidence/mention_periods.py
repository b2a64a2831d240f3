"""Periods for time mentions: the intervals a phrase can name (a day, N
days, a week, a month, a year) and an open phrase's candidates, settled by
the clause's tense (:mod:`.tense`) or, with no cue, by which is nearer."""

from __future__ import annotations

import calendar
import datetime as _dt
from dataclasses import dataclass
from typing import Union

from ...core.time import Precision
from .tense import direction

__all__ = ["Either", "Interval", "Open", "Result", "add_months", "day_span", "days_span", "midpoint", "month_span",
           "open_result", "settle", "week_span", "year_span"]


def day_span(d: _dt.date, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    s = _dt.datetime(d.year, d.month, d.day, tzinfo=tz)
    return s, s + _dt.timedelta(days=1), Precision.DAY


def days_span(d: _dt.date, n: int, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    s = _dt.datetime(d.year, d.month, d.day, tzinfo=tz)
    return s, s + _dt.timedelta(days=n), Precision.DAY


def week_span(d: _dt.date, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    return days_span(d - _dt.timedelta(days=d.weekday()), 7, tz)


def month_span(year: int, month: int, tz: _dt.tzinfo, n: int = 1) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    while month < 1:
        month += 12
        year -= 1
    while month > 12:
        month -= 12
        year += 1
    s = _dt.datetime(year, month, 1, tzinfo=tz)
    em, ey = month + n, year
    while em > 12:
        em -= 12
        ey += 1
    return s, _dt.datetime(ey, em, 1, tzinfo=tz), Precision.MONTH


def year_span(year: int, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    return _dt.datetime(year, 1, 1, tzinfo=tz), _dt.datetime(year + 1, 1, 1, tzinfo=tz), Precision.YEAR


def add_months(d: _dt.date, n: int) -> _dt.date:
    m = d.month - 1 + n
    y = d.year + m // 12
    m = m % 12 + 1
    return _dt.date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


Interval = tuple[_dt.datetime, _dt.datetime, Precision]


@dataclass(frozen=True)
class Open:
    """An open phrase: the clause's tense picks ``back`` or ``fwd``."""

    back: Interval
    fwd: Interval


@dataclass(frozen=True)
class Either:
    """Ambiguous whatever the clause says ("next Friday" said on a Tuesday)."""

    options: tuple[Interval, Interval]


Result = Union[Interval, Open, Either]


def open_result(candidates: list[Interval], base: _dt.datetime) -> Result | None:
    """The latest candidate starting at or before ``base`` and the earliest
    ending after it (the same one, so certain, when it contains ``base``)."""
    back_c = [c for c in candidates if c[0] <= base]
    fwd_c = [c for c in candidates if c[1] > base]
    back = max(back_c, key=lambda c: c[0]) if back_c else None
    fwd = min(fwd_c, key=lambda c: c[0]) if fwd_c else None
    if back is None or fwd is None or back == fwd:
        return back or fwd
    return Open(back, fwd)


def midpoint(iv: Interval) -> _dt.datetime:
    return iv[0] + (iv[1] - iv[0]) / 2


def settle(res: Result, text: str, a: int, b: int, base: _dt.datetime) -> tuple[Interval, tuple[Interval, ...]]:
    """The resolution of ``text[a:b]`` and its other candidates (empty when certain)."""
    if isinstance(res, Either):
        back, fwd = res.options
    elif isinstance(res, Open):
        way = direction(text, a, b)
        if way:
            return (res.fwd if way > 0 else res.back), ()
        back, fwd = res.back, res.fwd
        near_b, near_f = base - midpoint(back), midpoint(fwd) - base
        if near_f * 3 <= near_b:
            return fwd, ()
        if near_b * 3 <= near_f:
            return back, ()
    else:
        return res, ()
    # ambiguous: the nearer candidate first, the other as the alternative
    return (back, (fwd,)) if base - midpoint(back) <= midpoint(fwd) - base else (fwd, (back,))


def days_of(year: int, month: int, day: int, tz: _dt.tzinfo) -> list[Interval]:
    out = []
    for y in (year - 1, year, year + 1):
        try:
            out.append(day_span(_dt.date(y, month, day), tz))
        except ValueError:  # 29 February, or outside years 1-9999
            continue
    return out


def season_span(year: int, start_month: int, tz: _dt.tzinfo) -> Interval:
    """A northern-hemisphere meteorological season: three months from
    ``start_month`` (winter ``year`` starts in December of ``year``)."""
    return month_span(year, start_month, tz, 3)


def seasons(year: int | None, start_month: int, base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    if year is not None:
        return season_span(year, start_month, tz)
    years = (base.year - 2, base.year - 1, base.year, base.year + 1)
    return open_result([season_span(y, start_month, tz) for y in years], base)


def weekend_of(monday: _dt.date, tz: _dt.tzinfo) -> Interval:
    return days_span(monday + _dt.timedelta(days=5), 2, tz)
