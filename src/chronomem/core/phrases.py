"""Time phrases: the one reader of a *read basis* on every interface.

People and agents say "yesterday", "last March" or "Q3 2024" far more often
than they write an ISO date. :func:`resolve_time` accepts everything
:func:`chronomem.core.time.parse_time` does (ISO-8601, partial dates such as
``"2024-03"``, ``datetime``/``date``/``TimePoint`` values) plus a small,
closed set of English phrases, resolved against a reference instant (the
store clock, ``Memory.now()``) in the memory's timezone:

=================================  =====================================  =========
phrase                             resolves to                            precision
=================================  =====================================  =========
``now``                            the reference instant (exact)          second+
``today`` / ``yesterday``          that calendar day                      day
``tomorrow``                       that calendar day                      day
``N days/weeks ago``               the calendar day N days/weeks back     day
``in N days/weeks``                the calendar day N days/weeks ahead    day
``N months/quarters/years ago``    same day N months/quarters/years back  day
``in N months/quarters/years``     same day N months/quarters/years on    day
``N hours/minutes ago``, ``in …``  the instant, to the minute             minute
``N seconds ago``, ``in …``        the instant, to the second             second
``last/this/next week``            Monday of that week                    day
``last/this/next month``           that month                             month
``last/this/next quarter``         the first month of that quarter        month
``last/this/next year``            that year                              year
``last/this/next March``           the March before / of / after now      month
``last/next Monday``               the Monday before / after today        day
``April 2022``, ``Apr 2022``       that month                             month
``Q3 2024``, ``2024 Q3``,          the first month of that quarter        month
``2024-Q3``
=================================  =====================================  =========

``N`` is digits or a small number word (``a``, ``an``, ``one`` .. ``twelve``).
"last March" is the most recent March that has fully begun before the
current month (in March 2026 it is March 2025). "this Monday" is refused
(the coming one or the past one?). Calendar results (day, month, year) are
calendar values like a partial ISO date: "today" in a Tokyo memory is the
Tokyo date, the same value as writing that date. Matching is
case-insensitive and ignores extra spaces. Anything else raises
:class:`~chronomem.errors.InvalidTimeError` naming the parameter.

**Where phrases are accepted.** Every *read basis* — a time that selects
what to read: ``as_of``, ``known_at``, ``at``, ``since``, ``until``, the
bounds of ``between``/``timeline``/``volatility``, ``diff``'s ``t1``/``t2`` —
goes through :func:`resolve_time` on all four surfaces (Python API, CLI,
HTTP API, MCP), which echo the resolved instant. *Written* times
(``valid_from``, ``valid_to``, ``ended``, ``occurred_at``, ``recorded_at``)
stay strict ISO/partial dates/typed values in the Python API and the CLI and
HTTP write paths: a program that stored "yesterday" would store a different
fact each day it ran. Only MCP's write tools also resolve phrases for
writes (an agent relays speech), and echo what each phrase became.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Callable, Union

from ..errors import InvalidTimeError
from .time import Precision, TimePoint, format_us, parse_time, to_us

__all__ = ["PHRASE_HELP", "Now", "ResolvedTime", "resolve_time"]

#: the accepted forms, for help texts and error messages
PHRASE_HELP = (
    "an ISO-8601 date or datetime ('2024', '2024-03', '2024-03-05', '2024-03-05T10:30:00Z') or a time phrase: "
    "'now', 'today', 'yesterday', 'tomorrow', '3 days ago', 'in 2 weeks', 'last Monday', 'next week', "
    "'this month', 'last year', 'last March', 'April 2022', 'Q3 2024'"
)
_WHY = ("nor a time phrase such as 'now', 'yesterday', '3 days ago', 'last Monday', 'last March', "
        "'April 2022' or 'Q3 2024'")

#: the reference instant, or a function giving it (called only when a phrase needs it)
Now = Union[_dt.datetime, Callable[[], _dt.datetime]]

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
    "day": "day", "week": "week", "wk": "week", "month": "month", "quarter": "quarter", "year": "year",
    "yr": "year",
}

_AGO = re.compile(r"^(?P<n>\d+|[a-z]+)\s+(?P<unit>[a-z]+?)s?\s+ago$")
_IN = re.compile(r"^in\s+(?P<n>\d+|[a-z]+)\s+(?P<unit>[a-z]+?)s?$")
_REL = re.compile(r"^(?P<which>last|this|next)\s+(?P<what>[a-z]+)$")
_MONTH_YEAR = re.compile(r"^(?P<month>[a-z]+)\.?,?\s+(?P<year>\d{4})$")
_QUARTER = re.compile(r"^(?:q(?P<q1>[1-4])[\s-]?(?P<y1>\d{4})|(?P<y2>\d{4})[\s-]?q(?P<q2>[1-4]))$")
#: an ISO-shaped string: when it fails, the ISO reason ("month must be in 1..12") is the useful one
_ISO_SHAPE = re.compile(r"^\d{4}(?:-\d{1,2}(?:-\d{1,2})?)?(?:[T\s]\d.*)?$")


@dataclass(frozen=True)
class ResolvedTime:
    """A time argument as given (``text``) and as resolved (``point``);
    ``relative`` is true when it was a phrase (worth echoing)."""

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
    if precision.calendar:  # "yesterday" is a calendar day of the memory's zone, kept as a calendar value
        local = local.replace(tzinfo=_dt.timezone.utc)
    return TimePoint(to_us(local), precision)


def _day(day: _dt.date, tz: _dt.tzinfo) -> TimePoint:
    return _point(_dt.datetime(day.year, day.month, day.day, tzinfo=tz), Precision.DAY)


def _month(year: int, month: int, tz: _dt.tzinfo) -> TimePoint:
    return _point(_dt.datetime(year, month, 1, tzinfo=tz), Precision.MONTH)


def _absolute(text: str, tz: _dt.tzinfo) -> TimePoint | None:
    """The phrases that need no reference instant: "April 2022", "Q3 2024"."""
    m = _MONTH_YEAR.match(text)
    if m is not None and m.group("month") in _MONTHS:
        year = int(m.group("year"))
        return _month(year, _MONTHS[m.group("month")], tz) if year >= 1 else None
    m = _QUARTER.match(text)
    if m is not None:
        year = int(m.group("y1") or m.group("y2"))
        quarter = int(m.group("q1") or m.group("q2"))
        return _month(year, 3 * quarter - 2, tz) if year >= 1 else None
    return None


def _offset(text: str, now: _dt.datetime, tz: _dt.tzinfo) -> TimePoint | None:
    """ "N units ago" / "in N units"."""
    m = _AGO.match(text) or _IN.match(text)
    if m is None:
        return None
    n = _count(m.group("n"))
    unit = _UNITS.get(m.group("unit"))
    if n is None or unit is None:
        return None
    sign = -1 if text.endswith("ago") else 1
    if unit in ("second", "minute", "hour"):
        delta = _dt.timedelta(**{unit + "s": sign * n})
        prec = Precision.SECOND if unit == "second" else Precision.MINUTE
        return _point((now + delta).astimezone(tz), prec)
    today = now.astimezone(tz).date()
    if unit in ("day", "week"):
        days = n * (7 if unit == "week" else 1)
        return _day(today + _dt.timedelta(days=sign * days), tz)
    months = n * {"month": 1, "quarter": 3, "year": 12}[unit]
    return _day(_add_months(today, sign * months), tz)


def _named(which: str, what: str, today: _dt.date, tz: _dt.tzinfo) -> TimePoint | None:
    """ "last/this/next" + week, month, quarter, year, a month name or a weekday."""
    step = {"last": -1, "this": 0, "next": 1}[which]
    if what == "week":
        monday = today - _dt.timedelta(days=today.weekday())
        return _day(monday + _dt.timedelta(weeks=step), tz)
    if what == "month":
        first = _add_months(today.replace(day=1), step)
        return _month(first.year, first.month, tz)
    if what == "quarter":
        first = _add_months(today.replace(month=3 * ((today.month - 1) // 3) + 1, day=1), 3 * step)
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
    if what in _WEEKDAYS and which != "this":  # "this Monday": the past one or the coming one?
        target = _WEEKDAYS[what]
        if which == "last":
            back = (today.weekday() - target) % 7 or 7
            return _day(today - _dt.timedelta(days=back), tz)
        ahead = (target - today.weekday()) % 7 or 7
        return _day(today + _dt.timedelta(days=ahead), tz)
    return None


def _relative(text: str, now: _dt.datetime, tz: _dt.tzinfo) -> TimePoint | None:
    local = now.astimezone(tz)
    today = local.date()
    if text in ("now", "right now"):
        # the exact instant: truncating would hide what was recorded this second
        return _point(local, Precision.MICROSECOND if local.microsecond else Precision.SECOND)
    days = {"today": 0, "yesterday": -1, "tomorrow": 1}.get(text)
    if days is not None:
        return _day(today + _dt.timedelta(days=days), tz)
    m = _REL.match(text)
    if m is not None:
        return _named(m.group("which"), m.group("what"), today, tz)
    return _offset(text, now, tz)


def _phrase(text: str, now: Now, tz: _dt.tzinfo) -> TimePoint | None:
    point = _absolute(text, tz)
    if point is not None:
        return point
    return _relative(text, now() if callable(now) else now, tz)


def resolve_time(value: object, field: str, now: Now, tz: _dt.tzinfo) -> ResolvedTime:
    """Read ``value`` (ISO-8601, partial date, typed value or time phrase) for
    parameter ``field``.

    ``now`` is the reference instant (aware), or a function returning it,
    called only for a phrase that needs it; ``tz`` is the timezone calendar
    phrases and offset-less ISO values are read in. Raises
    :class:`~chronomem.errors.InvalidTimeError` naming ``field``, with a hint
    listing the forms accepted; the result lies in years 1-9999 (UTC).
    """
    if not isinstance(value, str):
        return ResolvedTime(repr(value), parse_time(value, field, tz), False)
    text = value.strip()
    iso_error: InvalidTimeError | None = None
    if text[:1].isdigit():
        try:
            return ResolvedTime(value, parse_time(text, field, tz), False)
        except InvalidTimeError as exc:  # maybe "3 days ago" or "2024-Q3"
            iso_error = exc
    try:
        point = _phrase(re.sub(r"\s+", " ", text.lower()), now, tz)
    except (ValueError, OverflowError):  # "in 9000 years": past the calendar
        point = None
    if point is None:
        why = "not an ISO-8601 date " + _WHY
        if iso_error is not None and iso_error.why and _ISO_SHAPE.match(text):
            # an ISO date with a wrong part: what is wrong with it matters more than the phrases
            why = f"{iso_error.why}; phrases such as 'now', '3 days ago' or 'Q3 2024' are read too"
        raise InvalidTimeError(value, field, why)
    return ResolvedTime(value, parse_time(point, field, tz), True)
