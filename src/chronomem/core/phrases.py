"""Relative time phrases for agent-facing interfaces (MCP's tools).

Agents say "yesterday" or "last March" far more often than they write an
ISO date. :func:`resolve_time` accepts everything
:func:`chronomem.core.time.parse_time` does (ISO-8601, partial dates such as
``"2024-03"``) plus a small, closed set of English phrases, resolved against a
reference instant (``mem.now()``) in the memory's timezone:

===========================  =====================================  =========
phrase                       resolves to                            precision
===========================  =====================================  =========
``now``                      the reference instant (exact)          second+
``today`` / ``yesterday``    that calendar day                      day
``tomorrow``                 that calendar day                      day
``N days/weeks ago``         the calendar day N days/weeks back     day
``in N days/weeks``          the calendar day N days/weeks ahead    day
``N months/years ago``       same day N months/years back           day
``N hours/minutes ago``      the instant, to the minute             minute
``N seconds ago``            the instant, to the second             second
``last/this/next week``      Monday of that week                    day
``last/this/next month``     that month                             month
``last/this/next year``      that year                              year
``last/this/next March``     the March before / of / after now      month
``last/next Monday``         the Monday before / after today        day
``March 2024``               that month                             month
===========================  =====================================  =========

``N`` is digits or a small number word (``a``, ``an``, ``one`` .. ``twelve``).
"last March" is the most recent March that has fully begun before the
current month (in March 2026 it is March 2025). Anything else raises
:class:`~chronomem.errors.InvalidTimeError` naming the parameter.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from ..errors import InvalidTimeError
from .time import Precision, TimePoint, format_us, parse_time, to_us

__all__ = ["ResolvedTime", "resolve_time", "PHRASE_HELP"]

PHRASE_HELP = (
    "use an ISO-8601 date such as '2024-03-05' (or '2024', '2024-03') or a phrase such as "
    "'now', 'today', 'yesterday', '3 days ago', 'last week', 'last March' or 'March 2024'"
)

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for name in names
}
_WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thurs"),
         ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")]
    )
    for name in names
}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}
_UNITS = {
    "second": "second", "sec": "second", "minute": "minute", "min": "minute", "hour": "hour", "hr": "hour",
    "day": "day", "week": "week", "wk": "week", "month": "month", "year": "year", "yr": "year",
}

_AGO = re.compile(r"^(?P<n>\d+|[a-z]+)\s+(?P<unit>[a-z]+?)s?\s+ago$")
_IN = re.compile(r"^in\s+(?P<n>\d+|[a-z]+)\s+(?P<unit>[a-z]+?)s?$")
_REL = re.compile(r"^(?P<which>last|this|next)\s+(?P<what>[a-z]+)$")
_MONTH_YEAR = re.compile(r"^(?P<month>[a-z]+)\.?\s+(?P<year>\d{4})$")


@dataclass(frozen=True)
class ResolvedTime:
    """A time argument as given and as resolved."""

    text: str
    point: TimePoint
    relative: bool

    def render(self, tz: _dt.tzinfo) -> str:
        """The resolved value at its precision, in ``tz``."""
        return format_us(self.point.us, self.point.precision, tz)


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def _add_months(day: _dt.date, months: int) -> _dt.date:
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    # clamp the day to the target month's length
    nxt = _dt.date(year + (month == 12), month % 12 + 1, 1)
    last = (nxt - _dt.timedelta(days=1)).day
    return _dt.date(year, month, min(day.day, last))


def _point(local: _dt.datetime, precision: Precision) -> TimePoint:
    if precision == Precision.YEAR:
        local = local.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif precision == Precision.MONTH:
        local = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    elif precision == Precision.DAY:
        local = local.replace(hour=0, minute=0, second=0, microsecond=0)
    elif precision == Precision.MINUTE:
        local = local.replace(second=0, microsecond=0)
    elif precision == Precision.SECOND:
        local = local.replace(microsecond=0)
    return TimePoint(to_us(local), precision)


def _day(day: _dt.date, tz: _dt.tzinfo) -> TimePoint:
    return _point(_dt.datetime(day.year, day.month, day.day, tzinfo=tz), Precision.DAY)


def _month(year: int, month: int, tz: _dt.tzinfo) -> TimePoint:
    return _point(_dt.datetime(year, month, 1, tzinfo=tz), Precision.MONTH)


def _phrase(text: str, now: _dt.datetime, tz: _dt.tzinfo) -> TimePoint | None:
    local = now.astimezone(tz)
    today = local.date()
    if text in ("now", "right now"):
        # the exact instant: truncating would hide what was recorded this second
        return _point(local, Precision.MICROSECOND if local.microsecond else Precision.SECOND)
    if text == "today":
        return _day(today, tz)
    if text == "yesterday":
        return _day(today - _dt.timedelta(days=1), tz)
    if text == "tomorrow":
        return _day(today + _dt.timedelta(days=1), tz)
    m = _AGO.match(text) or _IN.match(text)
    if m is not None:
        n = _count(m.group("n"))
        unit = _UNITS.get(m.group("unit"))
        if n is None or unit is None:
            return None
        sign = -1 if text.endswith("ago") else 1
        if unit in ("second", "minute", "hour"):
            delta = _dt.timedelta(**{unit + "s": sign * n})
            prec = Precision.SECOND if unit == "second" else Precision.MINUTE
            return _point((now + delta).astimezone(tz), prec)
        if unit in ("day", "week"):
            days = n * (7 if unit == "week" else 1)
            return _day(today + _dt.timedelta(days=sign * days), tz)
        months = n * (12 if unit == "year" else 1)
        return _day(_add_months(today, sign * months), tz)
    m = _REL.match(text)
    if m is not None:
        which, what = m.group("which"), m.group("what")
        step = {"last": -1, "this": 0, "next": 1}[which]
        if what == "week":
            monday = today - _dt.timedelta(days=today.weekday())
            return _day(monday + _dt.timedelta(weeks=step), tz)
        if what == "month":
            first = _add_months(today.replace(day=1), step)
            return _month(first.year, first.month, tz)
        if what == "year":
            return _point(_dt.datetime(today.year + step, 1, 1, tzinfo=tz), Precision.YEAR)
        if what in _MONTHS:
            month = _MONTHS[what]
            if which == "last":
                year = today.year if month < today.month else today.year - 1
            elif which == "next":
                year = today.year if month > today.month else today.year + 1
            else:
                year = today.year
            return _month(year, month, tz)
        if what in _WEEKDAYS and which != "this":
            target = _WEEKDAYS[what]
            if which == "last":
                back = (today.weekday() - target) % 7 or 7
                return _day(today - _dt.timedelta(days=back), tz)
            ahead = (target - today.weekday()) % 7 or 7
            return _day(today + _dt.timedelta(days=ahead), tz)
        return None
    m = _MONTH_YEAR.match(text)
    if m is not None and m.group("month") in _MONTHS:
        year = int(m.group("year"))
        if year < 1:
            return None
        return _month(year, _MONTHS[m.group("month")], tz)
    return None


def resolve_time(value: object, field: str, now: _dt.datetime, tz: _dt.tzinfo) -> ResolvedTime:
    """Read ``value`` (ISO-8601, partial date or relative phrase) for parameter ``field``.

    ``now`` is the reference instant (aware); ``tz`` the timezone calendar
    phrases and offset-less ISO values are read in. Raises
    :class:`~chronomem.errors.InvalidTimeError` with a hint listing the forms
    accepted.
    """
    if not isinstance(value, str):
        return ResolvedTime(repr(value), parse_time(value, field, tz), False)
    text = value.strip()
    if text and text[0].isdigit() and not _AGO.match(text.lower()):
        try:
            return ResolvedTime(value, parse_time(text, field, tz), False)
        except InvalidTimeError:
            pass
    try:
        point = _phrase(re.sub(r"\s+", " ", text.lower()), now, tz)
    except (ValueError, OverflowError):
        point = None
    if point is None:
        raise InvalidTimeError(
            value, field,
            "not an ISO-8601 date nor a known phrase such as 'now', 'yesterday', '3 days ago', 'last week', "
            "'last March' or 'March 2024'",
        )
    return ResolvedTime(value, point, True)
