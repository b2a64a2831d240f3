"""Time values: parsing, precision, rendering and the store clock.

Every instant is kept as an integer count of microseconds since the Unix epoch,
UTC, together with a :class:`Precision` that says how it was written. A value
always denotes the *start* of the period it names: ``"2026-03"`` is
2026-03-01T00:00Z with month precision. Dates are never compared as strings.

A *partial* time (year, month or day precision, or a ``date``) is a calendar
value: it names the same period for every writer and reader, so it is kept at
its UTC calendar boundary whatever the memory's timezone, and rendered in UTC.
Only instants (a time of day, a ``datetime``) are read in the memory's zone.

Sentinels: an unknown start is ``MIN_US`` and an open end is ``MAX_US`` so that
half-open interval tests are plain integer comparisons (and index friendly).
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from typing import Any, Callable, Protocol, Union
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidInputError, InvalidTimeError

__all__ = [
    "MAX_US",
    "MIN_US",
    "Clock",
    "FakeClock",
    "Precision",
    "SystemClock",
    "TimeLike",
    "TimePoint",
    "calendar_zone",
    "format_us",
    "from_us",
    "get_timezone",
    "local_datetime",
    "on_utc_boundary",
    "parse_time",
    "peek_clock",
    "period_end",
    "to_us",
]

UTC = _dt.timezone.utc
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)
MIN_US = -(2**63)  # unknown start
MAX_US = 2**63 - 1  # open end / still believed
#: the first and last instant a memory stores: years 1-9999 in UTC, after the
#: writer's zone shift (a datetime outside them cannot even be built)
FIRST_US = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
LAST_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
_ONE_US = _dt.timedelta(microseconds=1)


class Precision(IntEnum):
    """How precisely a time value was given."""

    YEAR = 1
    MONTH = 2
    DAY = 3
    HOUR = 4
    MINUTE = 5
    SECOND = 6
    MICROSECOND = 7

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def calendar(self) -> bool:
        """Year, month or day: a calendar period, the same in every zone."""
        return self <= Precision.DAY

    @classmethod
    def from_label(cls, label: str) -> "Precision":
        try:
            return cls[label.upper()]
        except KeyError:
            raise InvalidInputError(
                f"unknown precision {label!r}; expected one of "
                + ", ".join(p.label for p in cls)
            ) from None


_PRECISION_VALUES = frozenset(int(p) for p in Precision)


@dataclass(frozen=True, slots=True)
class TimePoint:
    """A UTC instant plus the precision it was written with.

    ``str(tp)`` renders it back as written (in UTC): ``"2024-03"``.
    Accepted anywhere a time value is. A calendar precision renders the same
    in every zone (see :func:`format_us`).
    """

    us: int
    precision: Precision

    def __post_init__(self) -> None:
        # a TimePoint is stored as it is: an instant outside years 1-9999 or an
        # unknown precision would be written and then break every reader
        us, prec = self.us, self.precision
        if type(prec) is not Precision:
            if isinstance(prec, bool) or not isinstance(prec, int) or prec not in _PRECISION_VALUES:
                raise InvalidTimeError(self, "TimePoint", f"precision must be one of 1-7 (Precision), not {prec!r}")
            object.__setattr__(self, "precision", Precision(prec))
        if type(us) is not int:
            if isinstance(us, bool) or not isinstance(us, int):
                raise InvalidTimeError(us, "TimePoint", f"us must be an integer, not {type(us).__name__}")
        if not FIRST_US <= us <= LAST_US:
            side = "before 0001-01-01T00:00:00Z" if us < FIRST_US else "after 9999-12-31T23:59:59.999999Z"
            raise InvalidTimeError(us, "TimePoint", f"it is {side} in UTC; times must lie in years 1-9999 (UTC)")

    @property
    def datetime(self) -> _dt.datetime:
        return from_us(self.us)

    def render(self, tz: _dt.tzinfo = UTC) -> str:
        return format_us(self.us, self.precision, tz)

    def __str__(self) -> str:
        return self.render()


TimeLike = Union[_dt.datetime, _dt.date, str, TimePoint]

_ISO = re.compile(
    r"""^\s*(?P<y>\d{4})
    (?:-(?P<mo>\d{2})
      (?:-(?P<d>\d{2})
        (?:[T\s](?P<h>\d{2})
          (?::(?P<mi>\d{2})
            (?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,6}))?)?
          )?
          (?P<tz>Z|z|[+-]\d{2}(?::?\d{2})?)?
        )?
      )?
    )?\s*$""",
    re.VERBOSE,
)


def get_timezone(name: str | _dt.tzinfo | None) -> _dt.tzinfo:
    """Resolve a timezone setting (``None`` or ``"UTC"`` -> UTC)."""
    if name is None:
        return UTC
    if isinstance(name, _dt.tzinfo):
        return name
    if name.upper() in ("UTC", "Z"):
        return UTC
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if m:
        delta = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return _dt.timezone(-delta if m.group(1) == "-" else delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(f"unknown timezone {name!r}") from None


def timezone_name(tz: _dt.tzinfo) -> str:
    """A name :func:`get_timezone` reads back: IANA key, ``UTC`` or ``+HH:MM``."""
    key = getattr(tz, "key", None)
    if isinstance(key, str):
        return key
    off = tz.utcoffset(None)
    if off is None or off == _dt.timedelta(0):
        return "UTC"
    total = int(off.total_seconds() // 60)
    sign = "-" if total < 0 else "+"
    return f"{sign}{abs(total) // 60:02d}:{abs(total) % 60:02d}"


def to_us(dt: _dt.datetime) -> int:
    """Aware datetime -> integer microseconds since the epoch (UTC)."""
    return (dt - EPOCH) // _ONE_US


def from_us(us: int) -> _dt.datetime:
    """Integer microseconds since the epoch -> aware UTC datetime."""
    return EPOCH + _dt.timedelta(microseconds=us)


def _aware(dt: _dt.datetime, tz: _dt.tzinfo) -> _dt.datetime:
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        return dt.replace(tzinfo=tz)
    return dt


def _precision_of(dt: _dt.datetime) -> Precision:
    if dt.microsecond:
        return Precision.MICROSECOND
    return Precision.SECOND


def parse_time(value: object, field: str = "time", tz: _dt.tzinfo = UTC) -> TimePoint:
    """Read one time value. Raises :class:`InvalidTimeError` naming ``field``.

    Accepts aware or naive ``datetime`` (naive is read in ``tz``), ``date``,
    :class:`TimePoint`, and ISO-8601 strings, including partial dates
    (``"2024"``, ``"2024-03"``) and times with or without an offset (without
    one, read in ``tz``). A partial date or a ``date`` is a calendar value:
    its UTC calendar boundary, whatever ``tz`` is.
    """
    try:
        return _read(value, field, tz)
    except InvalidTimeError as exc:
        if exc.field != "TimePoint":
            raise
        # an instant outside years 1-9999 (read in a zone east of UTC,
        # "0001-01-01T00:00" is still year 0 in UTC: stored, it could not be read back)
        raise InvalidTimeError(value, field, exc.why) from None


def _read(value: object, field: str, tz: _dt.tzinfo) -> TimePoint:
    if isinstance(value, TimePoint):
        tp = value
    elif isinstance(value, _dt.datetime):
        dt = _aware(value, tz)
        try:
            tp = TimePoint(to_us(dt), _precision_of(dt))
        except OverflowError as exc:  # pragma: no cover - extreme datetimes
            raise InvalidTimeError(value, field, str(exc)) from None
    elif isinstance(value, _dt.date):
        tp = TimePoint((value.toordinal() - _EPOCH_ORDINAL) * _DAY_US, Precision.DAY)
    elif isinstance(value, str):
        tp = _parse_str(value, field, tz)
    else:
        raise InvalidTimeError(value, field, f"expected a date, datetime or ISO string, not {type(value).__name__}")
    return tp


_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_DAY_US = 86_400_000_000
#: the parts of an ISO string (``_ISO``'s groups), finest first, and the precision each gives
_PARTS_PRECISION = (
    ("f", Precision.MICROSECOND), ("s", Precision.SECOND), ("mi", Precision.MINUTE), ("h", Precision.HOUR),
    ("d", Precision.DAY), ("mo", Precision.MONTH),
)


@lru_cache(maxsize=65536)
def _parse_str(text: str, field: str, tz: _dt.tzinfo) -> TimePoint:
    if len(text) == 10 and text[4] == "-" and text[7] == "-":
        # fast path for the commonest shape, "YYYY-MM-DD" (a quarter of the
        # general path's cost); anything it rejects takes the general path,
        # which raises the usual error
        try:
            d = _dt.date.fromisoformat(text)
        except ValueError:
            pass
        else:  # a calendar day: its UTC midnight in every zone
            return TimePoint((d.toordinal() - _EPOCH_ORDINAL) * _DAY_US, Precision.DAY)
    m = _ISO.match(text)
    if m is None:
        raise InvalidTimeError(text, field, "not an ISO-8601 date or datetime")
    g = m.groupdict()
    year = int(g["y"])
    month = int(g["mo"] or 1)
    day = int(g["d"] or 1)
    hour = int(g["h"] or 0)
    minute = int(g["mi"] or 0)
    second = int(g["s"] or 0)
    frac = g["f"]
    micro = int(frac.ljust(6, "0")) if frac else 0
    # the finest part written decides the precision
    prec = next((p for part, p in _PARTS_PRECISION if g[part]), Precision.YEAR)
    # a partial date has no time of day, so no zone: the calendar period in UTC
    zone: _dt.tzinfo = UTC if prec.calendar else tz
    off = g["tz"]
    if off:
        if off in ("Z", "z"):
            zone = UTC
        else:
            sign = -1 if off[0] == "-" else 1
            digits = off[1:].replace(":", "")
            oh, om = int(digits[:2]), int(digits[2:4] or 0)
            if oh > 23 or om > 59:
                raise InvalidTimeError(text, field, "offset out of range")
            zone = _dt.timezone(sign * _dt.timedelta(hours=oh, minutes=om))
    if year < 1:
        raise InvalidTimeError(text, field, "year out of range")
    try:
        us = to_us(_dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=zone))
    except (ValueError, OverflowError) as exc:
        raise InvalidTimeError(text, field, str(exc)) from None
    return TimePoint(us, prec)  # outside years 1-9999 in UTC: parse_time names the value and field


def on_utc_boundary(us: int, precision: Precision | int) -> bool:
    """Whether ``us`` starts a UTC calendar period of ``precision`` (always
    true for a partial time written by this version; see :func:`format_us`)."""
    prec = Precision(precision)
    if us % _DAY_US:
        return False
    if prec == Precision.DAY:
        return True
    try:
        day = _dt.date.fromordinal(us // _DAY_US + _EPOCH_ORDINAL)
    except (ValueError, OverflowError):  # outside years 1-9999: not a calendar value
        return False
    return day.day == 1 and (prec == Precision.MONTH or day.month == 1)


def calendar_zone(us: int, precision: Precision | int, tz: _dt.tzinfo) -> _dt.tzinfo:
    """The zone a time of ``precision`` is read in: UTC for a calendar value on
    its UTC boundary (written by any zone), else ``tz``. A partial time off the
    UTC boundary was stored by an older version at the writer's local
    boundary; the writer's zone is not stored, so the reader's zone stands in."""
    if Precision(precision).calendar and on_utc_boundary(us, precision):
        return UTC
    return tz


def local_datetime(us: int, precision: Precision | int | None, tz: _dt.tzinfo) -> _dt.datetime:
    """``us`` on ``tz``'s wall clock, as a base for reading phrases said then:
    a calendar value on its UTC boundary is its calendar date at ``tz``'s
    midnight (the day "2024-03-01" is that day in every zone), anything else
    the instant converted to ``tz``."""
    if precision is not None and Precision(precision).calendar and on_utc_boundary(us, precision):
        day = from_us(us)
        return _dt.datetime(day.year, day.month, day.day, tzinfo=tz)
    return from_us(us).astimezone(tz)


def format_us(us: int, precision: Precision | int, tz: _dt.tzinfo = UTC) -> str:
    """Render an instant at its precision, in ``tz`` (``Z`` suffix for UTC).

    A calendar precision (year/month/day) on its UTC boundary renders in UTC,
    so ``"2024-03"`` reads ``"2024-03"`` for every ``tz``."""
    prec = Precision(precision)
    try:
        dt = from_us(us).astimezone(calendar_zone(us, prec, tz))
    except OverflowError:  # the zone would take it past year 1 or 9999: say it in UTC
        dt = from_us(us)
    if prec == Precision.YEAR:
        return f"{dt.year:04d}"
    if prec == Precision.MONTH:
        return f"{dt.year:04d}-{dt.month:02d}"
    if prec == Precision.DAY:
        return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
    base = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}"
    if prec >= Precision.MINUTE:
        base += f":{dt.minute:02d}"
    if prec >= Precision.SECOND:
        base += f":{dt.second:02d}"
    if prec == Precision.MICROSECOND:
        base += f".{dt.microsecond:06d}"
    off = dt.utcoffset() or _dt.timedelta(0)
    if off == _dt.timedelta(0):
        return base + "Z"
    total = int(off.total_seconds() // 60)
    sign = "-" if total < 0 else "+"
    total = abs(total)
    return f"{base}{sign}{total // 60:02d}:{total % 60:02d}"


def period_end(value: TimeLike, tz: _dt.tzinfo | str | None = None, field: str = "valid_to") -> TimePoint:
    """The start of the period *after* the one ``value`` names.

    For inclusive end bounds: a fact that held "from 2011 to 2011" held during
    2011, so its half-open ``valid_to`` is ``period_end("2011")`` = 2012-01-01
    (kept at year precision). Works for every precision; a calendar value's
    next period is counted on the UTC calendar, like the value itself.
    """
    zone = get_timezone(tz)
    tp = parse_time(value, field, zone)
    zone = calendar_zone(tp.us, tp.precision, zone)
    try:
        return parse_time(TimePoint(_next_period(tp, zone), tp.precision), field)
    except (OverflowError, ValueError):
        raise InvalidTimeError(value, field, "the period after it ends past year 9999") from None


def _next_period(tp: TimePoint, zone: _dt.tzinfo) -> int:
    local = from_us(tp.us).astimezone(zone)
    p = tp.precision
    if p == Precision.YEAR:
        nxt = local.replace(year=local.year + 1)
    elif p == Precision.MONTH:
        nxt = local.replace(year=local.year + local.month // 12, month=local.month % 12 + 1)
    else:
        step = {
            Precision.DAY: _dt.timedelta(days=1),
            Precision.HOUR: _dt.timedelta(hours=1),
            Precision.MINUTE: _dt.timedelta(minutes=1),
            Precision.SECOND: _dt.timedelta(seconds=1),
            Precision.MICROSECOND: _ONE_US,
        }[p]
        if p == Precision.DAY:
            naive = local.replace(tzinfo=None) + step
            nxt = naive.replace(tzinfo=zone)
        else:
            nxt = local + step
    return to_us(nxt)


class Clock(Protocol):
    """Where system time comes from: a callable returning an aware datetime."""

    def __call__(self) -> _dt.datetime: ...


def peek_clock(clock: Any) -> _dt.datetime:
    """The clock's current time without advancing it (a clock with a
    ``peek()`` method, like :class:`FakeClock`, is peeked, not called)."""
    value = clock.peek() if hasattr(clock, "peek") else clock()
    assert isinstance(value, _dt.datetime)
    return value


class SystemClock:
    """The real wall clock (UTC)."""

    def __call__(self) -> _dt.datetime:
        return _dt.datetime.now(UTC)


class FakeClock:
    """A settable clock for tests and replays.

    Each call returns the current value and then advances it by ``tick``
    (default one second), so successive writes get distinct system times.
    """

    def __init__(self, start: TimeLike = "2025-01-01T00:00:00Z", tick: _dt.timedelta | float = 1.0) -> None:
        self._now = parse_time(start, "start").us
        self._tick = int((tick.total_seconds() if isinstance(tick, _dt.timedelta) else tick) * 1_000_000)
        self._lock = threading.Lock()

    def __call__(self) -> _dt.datetime:
        with self._lock:
            now = self._now
            self._now += self._tick
        return from_us(now)

    def peek(self) -> _dt.datetime:
        return from_us(self._now)

    def set(self, value: TimeLike) -> None:
        with self._lock:
            self._now = parse_time(value, "value").us

    def advance(self, seconds: float = 0, **delta: float) -> None:
        step = _dt.timedelta(seconds=seconds, **delta)
        with self._lock:
            self._now += step // _ONE_US


ClockFn = Callable[[], _dt.datetime]
