"""Unit tests of :mod:`chronomem.core.time`: parsing, precision, rendering,
period ends, timezones and clocks (no store involved)."""

from __future__ import annotations

import datetime as _dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import FakeClock, InvalidInputError, InvalidTimeError, Precision, SystemClock, TimePoint, period_end
from chronomem.core.time import (
    MAX_US,
    MIN_US,
    format_us,
    from_us,
    get_timezone,
    parse_time,
    timezone_name,
    to_us,
)

UTC = _dt.timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")


def utc(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0, second: int = 0,
        micro: int = 0) -> _dt.datetime:
    return _dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


# -- parse_time -----------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected", "precision"),
    [
        ("2024", utc(2024, 1, 1), Precision.YEAR),
        ("2024-03", utc(2024, 3, 1), Precision.MONTH),
        ("2024-03-05", utc(2024, 3, 5), Precision.DAY),
        ("2024-03-05T07", utc(2024, 3, 5, 7), Precision.HOUR),
        ("2024-03-05T07:08", utc(2024, 3, 5, 7, 8), Precision.MINUTE),
        ("2024-03-05T07:08:09", utc(2024, 3, 5, 7, 8, 9), Precision.SECOND),
        ("2024-03-05T07:08:09.1", utc(2024, 3, 5, 7, 8, 9, 100000), Precision.MICROSECOND),
        ("2024-03-05T07:08:09,123456", utc(2024, 3, 5, 7, 8, 9, 123456), Precision.MICROSECOND),
        ("2024-03-05 07:08", utc(2024, 3, 5, 7, 8), Precision.MINUTE),
        ("  2024-03-05  ", utc(2024, 3, 5), Precision.DAY),
        ("2024-03-05T07:08:09z", utc(2024, 3, 5, 7, 8, 9), Precision.SECOND),
        ("2024-03-05T07:08+0530", utc(2024, 3, 5, 1, 38), Precision.MINUTE),
        ("2024-03-05T07:08+05", utc(2024, 3, 5, 2, 8), Precision.MINUTE),
        ("2024-03-05T07-03:00", utc(2024, 3, 5, 10), Precision.HOUR),
        ("0001", utc(1, 1, 1), Precision.YEAR),
        ("9999-12-31", utc(9999, 12, 31), Precision.DAY),
        ("1969-07-20T20:17:40Z", utc(1969, 7, 20, 20, 17, 40), Precision.SECOND),
        ("2024-02-29", utc(2024, 2, 29), Precision.DAY),
    ],
)
def test_parse_iso_strings(text: str, expected: _dt.datetime, precision: Precision) -> None:
    tp = parse_time(text)
    assert tp.datetime == expected
    assert tp.precision is precision


def test_parse_reads_strings_without_offset_in_the_given_zone() -> None:
    assert parse_time("2024-07-01T12:00", tz=BERLIN).datetime == utc(2024, 7, 1, 10)
    assert parse_time("2024-01-01T12:00", tz=BERLIN).datetime == utc(2024, 1, 1, 11)
    assert parse_time("2024", tz=BERLIN).datetime == utc(2024, 1, 1)  # a calendar value: no zone
    assert parse_time("2024-03-05", tz=BERLIN).datetime == utc(2024, 3, 5)
    assert parse_time("2024-07-01T12:00Z", tz=BERLIN).datetime == utc(2024, 7, 1, 12)


def test_parse_datetimes_and_dates() -> None:
    aware = _dt.datetime(2024, 3, 5, 10, tzinfo=_dt.timezone(_dt.timedelta(hours=-5)))
    assert parse_time(aware).datetime == utc(2024, 3, 5, 15)
    assert parse_time(aware).precision is Precision.SECOND
    assert parse_time(_dt.datetime(2024, 3, 5, 10)).datetime == utc(2024, 3, 5, 10)
    assert parse_time(_dt.datetime(2024, 3, 5, 10), tz=BERLIN).datetime == utc(2024, 3, 5, 9)
    assert parse_time(_dt.datetime(2024, 3, 5, 10, 0, 0, 1)).precision is Precision.MICROSECOND
    d = parse_time(_dt.date(2024, 3, 5))
    assert (d.datetime, d.precision) == (utc(2024, 3, 5), Precision.DAY)
    assert parse_time(_dt.date(2024, 3, 5), tz=BERLIN).datetime == utc(2024, 3, 5)  # a date is a calendar day


def test_parse_timepoint_is_identity() -> None:
    tp = TimePoint(123, Precision.MONTH)
    assert parse_time(tp) is tp


BAD_STRINGS = ["", " ", "yesterday", "2025-13-45", "2024-02-30", "2023-02-29", "2024-13", "2024-00",
               "2024-01-32", "2024-03-05T24:00", "2024-03-05T10:60", "2024-03-05T10:00:61", "0000",
               "24", "20240", "2024/03/05", "2024-3-5", "2024-03-05T", "2024-03-05T10:00+24:00",
               "2024-03-05T10:00+05:60", "2024-03-05T10:00:00.1234567", "2024-03-05Z", "March 2024",
               "2024-03-05T10:00:00 UTC"]


@pytest.mark.parametrize("text", BAD_STRINGS)
def test_malformed_strings_raise_naming_value_and_field(text: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        parse_time(text, "valid_from")
    err = info.value
    assert err.value == text and err.field == "valid_from"
    assert "valid_from" in str(err) and repr(text) in str(err)


@pytest.mark.parametrize("value", [None, 12345, 2024.0, True, [2024], (2024, 3), {"y": 2024}, b"2024"], ids=repr)
def test_non_time_types_raise(value: Any) -> None:
    with pytest.raises(InvalidTimeError) as info:
        parse_time(value, "as_of")
    assert info.value.field == "as_of" and info.value.value is value


# -- rendering ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("precision", "expected"),
    [
        (Precision.YEAR, "2024"),
        (Precision.MONTH, "2024-03"),
        (Precision.DAY, "2024-03-05"),
        (Precision.HOUR, "2024-03-05T07Z"),
        (Precision.MINUTE, "2024-03-05T07:08Z"),
        (Precision.SECOND, "2024-03-05T07:08:09Z"),
        (Precision.MICROSECOND, "2024-03-05T07:08:09.000042Z"),
    ],
)
def test_format_at_each_precision(precision: Precision, expected: str) -> None:
    us = to_us(utc(2024, 3, 5, 7, 8, 9, 42))
    assert format_us(us, precision) == expected
    assert format_us(us, int(precision)) == expected


def test_format_in_a_zone() -> None:
    us = to_us(utc(2024, 7, 1, 10, 30))
    assert format_us(us, Precision.MINUTE, BERLIN) == "2024-07-01T12:30+02:00"
    assert format_us(us, Precision.DAY, BERLIN) == "2024-07-01"
    minus = _dt.timezone(-_dt.timedelta(hours=3, minutes=30))
    assert format_us(us, Precision.SECOND, minus) == "2024-07-01T07:00:00-03:30"
    # a year written in Berlin renders back as that year in Berlin
    assert format_us(parse_time("2024", tz=BERLIN).us, Precision.YEAR, BERLIN) == "2024"


@pytest.mark.parametrize(
    "text",
    ["2024", "2024-03", "2024-03-05", "2024-03-05T07Z", "2024-03-05T07:08Z", "2024-03-05T07:08:09Z",
     "2024-03-05T07:08:09.000001Z", "0001", "1900-02", "9999-12-31"],
)
def test_render_parse_round_trip(text: str) -> None:
    tp = parse_time(text)
    assert str(tp) == text
    assert parse_time(str(tp)) == tp


def test_timepoint_render_in_zone() -> None:
    tp = parse_time("2024-03", tz=BERLIN)
    assert tp.render(BERLIN) == tp.render() == "2024-03"  # a calendar value reads the same in every zone
    instant = parse_time("2024-03-01T00:00", tz=BERLIN)
    assert instant.render(BERLIN) == "2024-03-01T00:00+01:00" and instant.render() == "2024-02-29T23:00Z"


def test_a_partial_time_off_its_utc_boundary_renders_in_the_readers_zone() -> None:
    """Older versions stored "2024-03" written in Berlin at Berlin's month
    start. The writer's zone was not stored: a reader in that zone still
    reads it as written; the UTC boundary rule cannot apply to it."""
    legacy = to_us(_dt.datetime(2024, 3, 1, tzinfo=BERLIN))
    assert format_us(legacy, Precision.MONTH, BERLIN) == "2024-03"
    assert format_us(legacy, Precision.MONTH) == "2024-02"
    assert period_end(TimePoint(legacy, Precision.MONTH), tz=BERLIN).datetime == _dt.datetime(2024, 4, 1, tzinfo=BERLIN)


# -- instants and sentinels --------------------------------------------------------------

@pytest.mark.parametrize("dt", [utc(1970, 1, 1), utc(1969, 12, 31, 23, 59, 59, 999999), utc(1, 1, 1),
                                utc(9999, 12, 31, 23, 59, 59, 999999), utc(2024, 2, 29, 12)])
def test_us_round_trip(dt: _dt.datetime) -> None:
    assert from_us(to_us(dt)) == dt


def test_to_us_is_exact_microseconds() -> None:
    assert to_us(utc(1970, 1, 1)) == 0
    assert to_us(utc(1970, 1, 1, 0, 0, 1)) == 1_000_000
    assert to_us(utc(1969, 12, 31, 23, 59, 59, 999999)) == -1


def test_sentinels_lie_outside_every_representable_instant() -> None:
    assert MIN_US < to_us(utc(1, 1, 1))
    assert MAX_US > to_us(utc(9999, 12, 31, 23, 59, 59, 999999))


# -- Precision -------------------------------------------------------------------------------

def test_precision_labels() -> None:
    assert [p.label for p in Precision] == ["year", "month", "day", "hour", "minute", "second", "microsecond"]
    for p in Precision:
        assert Precision.from_label(p.label) is p
        assert Precision.from_label(p.label.upper()) is p
    assert Precision.YEAR < Precision.MONTH < Precision.MICROSECOND


def test_unknown_precision_label() -> None:
    with pytest.raises(InvalidInputError) as info:
        Precision.from_label("fortnight")
    assert "fortnight" in str(info.value)


# -- period_end -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2011", "2012"),
        ("1999", "2000"),
        ("2011-01", "2011-02"),
        ("2011-11", "2011-12"),
        ("2011-12", "2012-01"),
        ("2011-01-31", "2011-02-01"),
        ("2024-02-28", "2024-02-29"),
        ("2024-02-29", "2024-03-01"),
        ("2011-12-31", "2012-01-01"),
        ("2011-12-31T23", "2012-01-01T00Z"),
        ("2011-12-31T23:59", "2012-01-01T00:00Z"),
        ("2011-12-31T23:59:59", "2012-01-01T00:00:00Z"),
        ("2011-12-31T23:59:59.999999", "2012-01-01T00:00:00.000000Z"),
    ],
)
def test_period_end_every_precision(value: str, expected: str) -> None:
    end = period_end(value)
    assert str(end) == expected
    assert end.precision is parse_time(value).precision
    assert end.us > parse_time(value).us


def test_period_end_accepts_dates_and_timepoints() -> None:
    assert str(period_end(_dt.date(2011, 12, 31))) == "2012-01-01"
    assert str(period_end(parse_time("2011-12"))) == "2012-01"


def test_period_end_of_a_calendar_value_ignores_the_zone() -> None:
    # 2024-03-31 is 23 hours long in Berlin, but a calendar day is a UTC day in every zone
    end = period_end("2024-03-31", tz="Europe/Berlin")
    assert end.datetime == utc(2024, 4, 1) and str(end) == "2024-04-01"
    assert period_end("2024-12", tz=BERLIN).datetime == utc(2025, 1, 1)


def test_period_end_of_an_instant_across_dst() -> None:
    # the hour after 01:00 UTC on the DST switch: a plain hour, whatever the wall clock does
    end = period_end("2024-03-31T01", tz="Europe/Berlin")
    assert end.datetime == utc(2024, 3, 31, 1) and end.precision is Precision.HOUR


def test_period_end_bad_value_names_field() -> None:
    with pytest.raises(InvalidTimeError) as info:
        period_end("2011-13")
    assert info.value.field == "valid_to"
    with pytest.raises(InvalidTimeError) as info:
        period_end("x", field="end_year")
    assert info.value.field == "end_year"


# -- timezones --------------------------------------------------------------------------------

def test_get_timezone() -> None:
    assert get_timezone(None) is UTC
    assert get_timezone("UTC") is UTC and get_timezone("utc") is UTC and get_timezone("Z") is UTC
    assert get_timezone(BERLIN) is BERLIN
    assert get_timezone("Europe/Berlin") == BERLIN
    assert get_timezone("+05:30").utcoffset(None) == _dt.timedelta(hours=5, minutes=30)
    assert get_timezone("-0200").utcoffset(None) == -_dt.timedelta(hours=2)


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "+5", "Europe/", "../etc/passwd"])
def test_unknown_timezone(name: str) -> None:
    with pytest.raises(InvalidInputError):
        get_timezone(name)


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "Asia/Kolkata", "+05:30", "-03:00"])
def test_timezone_name_round_trip(name: str) -> None:
    tz = get_timezone(name)
    assert get_timezone(timezone_name(tz)).utcoffset(_dt.datetime(2024, 7, 1)) == tz.utcoffset(
        _dt.datetime(2024, 7, 1))


# -- clocks ------------------------------------------------------------------------------------

def test_fake_clock_ticks_after_each_call() -> None:
    c = FakeClock("2025-01-01T00:00:00Z")
    assert c.peek() == utc(2025, 1, 1)
    assert c() == utc(2025, 1, 1)
    assert c() == utc(2025, 1, 1, 0, 0, 1)
    assert c.peek() == utc(2025, 1, 1, 0, 0, 2)


def test_fake_clock_tick_set_and_advance() -> None:
    c = FakeClock("2025-01-01", tick=_dt.timedelta(minutes=1))
    c()
    assert c.peek() == utc(2025, 1, 1, 0, 1)
    c.set("2030-06-01T12:00:00Z")
    assert c.peek() == utc(2030, 6, 1, 12)
    c.advance(30)
    c.advance(days=1)
    assert c.peek() == utc(2030, 6, 2, 12, 0, 30)
    frozen = FakeClock(utc(2000, 1, 1), tick=0)
    assert frozen() == frozen() == utc(2000, 1, 1)


def test_fake_clock_is_thread_safe() -> None:
    import threading

    c = FakeClock("2025-01-01T00:00:00Z", tick=0.000001)
    seen: list[_dt.datetime] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [c() for _ in range(500)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 2000


def test_system_clock_is_aware_utc_now() -> None:
    before = _dt.datetime.now(UTC)
    now = SystemClock()()
    after = _dt.datetime.now(UTC)
    assert now.tzinfo is not None and now.utcoffset() == _dt.timedelta(0)
    assert before <= now <= after


@given(st.dates(), st.sampled_from([UTC, BERLIN, ZoneInfo("America/New_York"),
                                    _dt.timezone(_dt.timedelta(hours=5, minutes=30))]))
@settings(max_examples=300, deadline=None)
def test_the_day_fast_path_reads_every_date_as_the_general_parser_does(day: _dt.date, tz: _dt.tzinfo) -> None:
    """"YYYY-MM-DD" takes a fast path; with a leading space the same text
    takes the general ISO parser. Both give the same instant and precision
    (UTC midnight: a calendar day, whatever ``tz``), as a ``date`` does."""
    text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    fast = parse_time(text, "t", tz)
    assert fast == parse_time(" " + text, "t", tz)
    assert fast.precision == Precision.DAY
    assert fast.us == to_us(_dt.datetime(day.year, day.month, day.day, tzinfo=UTC)) == parse_time(day, "t", tz).us
    assert fast.render(tz) == text


@pytest.mark.parametrize("text", ["2025-13-45", "2025-02-30", "0000-01-01", "2021-W01-1", "2025-1x-01"])
def test_dates_the_fast_path_rejects_get_the_general_error(text: str) -> None:
    with pytest.raises(InvalidTimeError) as fast:
        parse_time(text, "as_of")
    with pytest.raises(InvalidTimeError) as general:
        parse_time(text + " ", "as_of")
    assert str(fast.value).replace(repr(text), "V") == str(general.value).replace(repr(text + " "), "V")
    assert "as_of" in str(fast.value) and text in str(fast.value)
