"""The time-phrase resolver (chronomem.core.phrases) that every read basis goes through."""

from __future__ import annotations

import datetime as _dt

import pytest

from chronomem import InvalidTimeError, Precision
from chronomem.core.phrases import resolve_time
from chronomem.core.time import get_timezone

UTC = _dt.timezone.utc
# a Sunday, late evening UTC
NOW = _dt.datetime(2026, 11, 29, 22, 30, 15, tzinfo=UTC)


def r(text: str, now: _dt.datetime = NOW, tz: str = "UTC") -> tuple[str, str]:
    zone = get_timezone(tz)
    got = resolve_time(text, "t", now, zone)
    return got.render(zone), got.point.precision.label


@pytest.mark.parametrize(
    ("phrase", "rendered", "precision"),
    [
        ("now", "2026-11-29T22:30:15Z", "second"),
        ("Right Now", "2026-11-29T22:30:15Z", "second"),
        ("today", "2026-11-29", "day"),
        ("yesterday", "2026-11-28", "day"),
        ("tomorrow", "2026-11-30", "day"),
        ("3 days ago", "2026-11-26", "day"),
        ("a day ago", "2026-11-28", "day"),
        ("two weeks ago", "2026-11-15", "day"),
        ("in 3 days", "2026-12-02", "day"),
        ("1 month ago", "2026-10-29", "day"),
        ("6 months ago", "2026-05-29", "day"),
        ("a year ago", "2025-11-29", "day"),
        ("2 hours ago", "2026-11-29T20:30Z", "minute"),
        ("45 minutes ago", "2026-11-29T21:45Z", "minute"),
        ("30 seconds ago", "2026-11-29T22:29:45Z", "second"),
        ("last week", "2026-11-16", "day"),  # Monday of the previous week
        ("this week", "2026-11-23", "day"),
        ("next week", "2026-11-30", "day"),
        ("last month", "2026-10", "month"),
        ("this month", "2026-11", "month"),
        ("next month", "2026-12", "month"),
        ("last year", "2025", "year"),
        ("next year", "2027", "year"),
        ("last March", "2026-03", "month"),
        ("last november", "2025-11", "month"),  # the current month is not "last"
        ("last December", "2025-12", "month"),
        ("this March", "2026-03", "month"),
        ("next March", "2027-03", "month"),
        ("next December", "2026-12", "month"),
        ("last Monday", "2026-11-23", "day"),
        ("last Sunday", "2026-11-22", "day"),  # today is Sunday: the one before
        ("next Friday", "2026-12-04", "day"),
        ("March 2024", "2024-03", "month"),
        ("sept 2021", "2021-09", "month"),
        ("  Last   March ", "2026-03", "month"),
        ("April 2022", "2022-04", "month"),
        ("Apr 2022", "2022-04", "month"),
        ("apr. 2022", "2022-04", "month"),
        ("April, 2022", "2022-04", "month"),
        ("Q3 2024", "2024-07", "month"),
        ("q1 2024", "2024-01", "month"),
        ("2024 Q3", "2024-07", "month"),
        ("2024-Q4", "2024-10", "month"),
        ("2024Q2", "2024-04", "month"),
        ("this quarter", "2026-10", "month"),
        ("last quarter", "2026-07", "month"),
        ("next quarter", "2027-01", "month"),
        ("2 quarters ago", "2026-05-29", "day"),
        ("this year", "2026", "year"),
        ("in 2 hours", "2026-11-30T00:30Z", "minute"),
        ("in a month", "2026-12-29", "day"),
        ("in 2 years", "2028-11-29", "day"),
        ("3 weeks ago", "2026-11-08", "day"),
    ],
)
def test_phrases(phrase: str, rendered: str, precision: str) -> None:
    assert r(phrase) == (rendered, precision)


@pytest.mark.parametrize(
    ("value", "rendered", "precision"),
    [("2024", "2024", "year"), ("2024-03", "2024-03", "month"), ("2024-03-05", "2024-03-05", "day"),
     ("2024-03-05T10:30:00Z", "2024-03-05T10:30:00Z", "second"), ("2024-03-05T10:30:00+01:00", "2024-03-05T09:30:00Z",
                                                                   "second")],
)
def test_iso_passes_through(value: str, rendered: str, precision: str) -> None:
    got = resolve_time(value, "t", NOW, UTC)
    assert not got.relative
    assert (got.render(UTC), got.point.precision.label) == (rendered, precision)


def test_month_arithmetic_clamps_the_day() -> None:
    end_of_march = _dt.datetime(2026, 3, 31, 12, tzinfo=UTC)
    assert r("1 month ago", end_of_march) == ("2026-02-28", "day")
    leap = _dt.datetime(2024, 2, 29, 12, tzinfo=UTC)
    assert r("a year ago", leap) == ("2023-02-28", "day")
    assert r("last month", _dt.datetime(2026, 1, 15, tzinfo=UTC)) == ("2025-12", "month")
    assert r("next month", _dt.datetime(2026, 12, 15, tzinfo=UTC)) == ("2027-01", "month")


def test_calendar_phrases_use_the_memory_timezone() -> None:
    # 22:30 UTC on the 29th is already the 30th in Tokyo
    assert r("today", tz="Asia/Tokyo") == ("2026-11-30", "day")
    got = resolve_time("today", "t", NOW, get_timezone("Asia/Tokyo"))
    assert got.point.datetime == _dt.datetime(2026, 11, 30, tzinfo=UTC)  # a calendar day: its UTC midnight
    assert got.point.precision == Precision.DAY


def test_an_iso_value_with_a_wrong_part_says_which_part() -> None:
    with pytest.raises(InvalidTimeError) as exc:
        resolve_time("2025-13-45", "as_of", NOW, UTC)
    assert exc.value.field == "as_of" and "month must be in 1..12" in str(exc.value)


def test_now_is_asked_only_for_a_phrase_that_needs_it() -> None:
    asked: list[int] = []

    def now() -> _dt.datetime:
        asked.append(1)
        return NOW

    assert resolve_time("2024-03", "t", now, UTC).render(UTC) == "2024-03"
    assert resolve_time("Q3 2024", "t", now, UTC).render(UTC) == "2024-07"
    assert asked == []
    assert resolve_time("yesterday", "t", now, UTC).render(UTC) == "2026-11-28" and asked == [1]


def test_now_keeps_microseconds() -> None:
    now = NOW.replace(microsecond=123456)
    got = resolve_time("now", "t", now, UTC)
    assert got.point.datetime == now and got.point.precision == Precision.MICROSECOND


@pytest.mark.parametrize("bad", ["someday", "last fortnight", "3 eons ago", "in many days", "", "March",
                                 "2024-13", "this Monday", "zero days ago", "Q5 2024", "2024 Q0", "0000 Q1",
                                 "April 0000", "Smarch 2024", "in 9000 years", "the day after never"])
def test_unknown_phrases_raise_a_helpful_error(bad: str) -> None:
    with pytest.raises(InvalidTimeError) as exc:
        resolve_time(bad, "valid_from", NOW, UTC)
    msg = str(exc.value)
    assert "valid_from" in msg and "3 days ago" in msg and "2024-03" in msg
