"""Time values accepted by writes and reads, their precision and rendering."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable
from zoneinfo import ZoneInfo

import pytest

import chronomem
from chronomem import FakeClock, InvalidTimeError, Memory, Precision
from chronomem.core.time import parse_time

from ._helpers import US, MemoryFactory, snapshot, utc

BERLIN = ZoneInfo("Europe/Berlin")


def test_aware_datetime_is_stored_as_its_utc_instant(mem: Memory) -> None:
    ist = _dt.timezone(_dt.timedelta(hours=5, minutes=30))
    f = mem.add_fact("Ana", "lives_in", "Pune", valid_from=_dt.datetime(2024, 3, 5, 10, 30, tzinfo=ist))
    assert f.valid_from == utc(2024, 3, 5, 5, 0)
    assert f.valid_from_precision is Precision.SECOND
    assert f.valid_from_text == "2024-03-05T05:00:00Z"


def test_naive_datetime_is_read_as_utc_by_default(mem: Memory) -> None:
    f = mem.add_fact("Ana", "lives_in", "Pune", valid_from=_dt.datetime(2024, 3, 5, 10, 30))
    assert f.valid_from == utc(2024, 3, 5, 10, 30)


def test_microseconds_keep_microsecond_precision(mem: Memory) -> None:
    f = mem.add_fact("Ana", "lives_in", "Pune", valid_from=utc(2024, 3, 5, 10, 30, 0, 250))
    assert f.valid_from_precision is Precision.MICROSECOND
    assert f.valid_from_text == "2024-03-05T10:30:00.000250Z"


def test_date_object_has_day_precision(mem: Memory) -> None:
    f = mem.add_fact("Ana", "lives_in", "Pune", valid_from=_dt.date(2024, 3, 5))
    assert f.valid_from == utc(2024, 3, 5)
    assert f.valid_from_precision is Precision.DAY
    assert f.valid_from_text == "2024-03-05"


@pytest.mark.parametrize(
    ("text", "instant", "precision"),
    [
        ("2024", utc(2024), Precision.YEAR),
        ("2024-03", utc(2024, 3), Precision.MONTH),
        ("2024-03-05", utc(2024, 3, 5), Precision.DAY),
        ("2024-03-05T10", utc(2024, 3, 5, 10), Precision.HOUR),
        ("2024-03-05T10:30", utc(2024, 3, 5, 10, 30), Precision.MINUTE),
        ("2024-03-05T10:30:15", utc(2024, 3, 5, 10, 30, 15), Precision.SECOND),
        ("2024-03-05T10:30:15.5", utc(2024, 3, 5, 10, 30, 15, 500000), Precision.MICROSECOND),
        ("2024-03-05T10:30:00Z", utc(2024, 3, 5, 10, 30), Precision.SECOND),
        ("2024-03-05T10:30:00+05:30", utc(2024, 3, 5, 5, 0), Precision.SECOND),
        ("2024-03-05T10:30:00-02:00", utc(2024, 3, 5, 12, 30), Precision.SECOND),
        ("2024-03-05 10:30", utc(2024, 3, 5, 10, 30), Precision.MINUTE),
    ],
)
def test_iso_strings(mem: Memory, text: str, instant: _dt.datetime, precision: Precision) -> None:
    f = mem.add_fact("Ana", "lives_in", "Pune", valid_from=text)
    assert f.valid_from == instant
    assert f.valid_from_precision is precision
    # and the stored value reads back identically
    (again,) = mem.facts("Ana", "lives_in")
    assert (again.valid_from, again.valid_from_precision) == (instant, precision)


@pytest.mark.parametrize("text", ["2024", "2024-03", "2024-03-05", "1999-12", "0845"])
def test_partial_dates_render_back_as_written(mem: Memory, text: str) -> None:
    f = mem.add_fact("Ana", "member_of", "Club", valid_from=text, valid_to="2030")
    assert f.valid_from_text == text
    assert f.valid_to_text == "2030"
    assert f.interval_text == f"[{text}, 2030)"
    assert f.to_dict()["valid_from"] == text


def test_unknown_start_and_open_end_render_as_ellipsis(mem: Memory) -> None:
    f = mem.add_fact("Ana", "member_of", "Club")
    assert f.valid_from is None and f.valid_to is None
    assert f.valid_from_text is None and f.valid_to_text is None
    assert f.interval_text == "[…, …)"


def test_a_bound_denotes_the_start_of_its_period(mem: Memory) -> None:
    mem.add_fact("Ana", "works_at", "Orion", valid_from="2026-03")
    assert mem.facts("Ana", as_of="2026-03-01T00:00:00Z") != []
    assert mem.facts("Ana", as_of=utc(2026, 3, 1) - US) == []
    assert mem.facts("Ana", as_of="2026-02-28") == []
    assert mem.facts("Ana", as_of="2026-03-31T23:59:59Z") != []


def test_year_end_bound_means_start_of_that_year(mem: Memory) -> None:
    mem.add_fact("Ana", "works_at", "Orion", valid_from="2020", valid_to="2022")
    assert mem.facts("Ana", as_of="2021-12-31T23:59:59Z") != []
    assert mem.facts("Ana", as_of="2022") == []


def test_timepoint_is_accepted_anywhere(mem: Memory) -> None:
    tp = mem.parse_time("2024-03")
    f = mem.add_fact("Ana", "works_at", "Orion", valid_from=tp)
    assert f.valid_from_text == "2024-03"
    assert mem.facts("Ana", as_of=tp) != []


def test_as_of_and_known_at_accept_every_time_type(mem: Memory) -> None:
    f = mem.add_fact("Ana", "works_at", "Orion", valid_from="2024-03-05")
    for when in ("2024-03-05", "2024-03-05T12:00:00+01:00", _dt.date(2024, 3, 6), utc(2024, 3, 5, 1),
                 _dt.datetime(2024, 3, 5, 1)):
        assert [x.id for x in mem.facts("Ana", as_of=when)] == [f.id]
    assert [x.id for x in mem.facts("Ana", known_at=f.system_from)] == [f.id]
    assert [x.id for x in mem.facts("Ana", known_at=f.system_from.isoformat())] == [f.id]


# -- a non-UTC memory --------------------------------------------------------

@pytest.fixture
def berlin(make_memory: MemoryFactory) -> Memory:
    return make_memory(clock=FakeClock("2025-01-01T00:00:00Z"), timezone="Europe/Berlin")


def test_berlin_memory_reads_naive_datetimes_in_berlin_time(berlin: Memory) -> None:
    summer = berlin.add_fact("Ana", "lives_in", "Pune", valid_from=_dt.datetime(2024, 7, 1, 12, 0))
    assert summer.valid_from == utc(2024, 7, 1, 10, 0)  # CEST = UTC+2
    winter = berlin.add_fact("Ben", "lives_in", "Pune", valid_from=_dt.datetime(2024, 1, 15, 12, 0))
    assert winter.valid_from == utc(2024, 1, 15, 11, 0)  # CET = UTC+1


def test_berlin_memory_reads_strings_without_offset_in_berlin_time(berlin: Memory) -> None:
    f = berlin.add_fact("Ana", "lives_in", "Pune", valid_from="2024-07-01T12:00")
    assert f.valid_from == utc(2024, 7, 1, 10, 0)
    g = berlin.add_fact("Ana", "born_in", "Pune", valid_from="2024")
    assert g.valid_from == utc(2024, 1, 1)  # a partial date is a calendar value, not a Berlin instant
    assert g.valid_from_precision is Precision.YEAR


def test_berlin_memory_honours_explicit_offsets(berlin: Memory) -> None:
    f = berlin.add_fact("Ana", "lives_in", "Pune", valid_from="2024-07-01T12:00:00Z")
    assert f.valid_from == utc(2024, 7, 1, 12, 0)
    g = berlin.add_fact("Ana", "visited", "Goa", valid_from="2024-07-01T12:00:00+05:30")
    assert g.valid_from == utc(2024, 7, 1, 6, 30)
    h = berlin.add_fact("Ana", "met", "Kai", valid_from=_dt.datetime(2024, 7, 1, 12, tzinfo=_dt.timezone.utc))
    assert h.valid_from == utc(2024, 7, 1, 12)


def test_berlin_memory_reads_as_of_in_berlin_time(berlin: Memory) -> None:
    berlin.add_fact("Ana", "works_at", "Orion", valid_from="2024-03-05T00:00")  # an instant: 2024-03-04T23:00Z
    assert berlin.facts("Ana", as_of="2024-03-04T23:30:00Z") != []
    assert berlin.facts("Ana", as_of="2024-03-04T22:59:59Z") == []
    assert berlin.facts("Ana", as_of=_dt.datetime(2024, 3, 5, 0, 0)) != []
    assert berlin.facts("Ana", as_of=_dt.datetime(2024, 3, 4, 23, 59)) == []


def test_berlin_and_utc_memories_agree_on_instants(make_memory: MemoryFactory) -> None:
    berlin = make_memory(timezone="Europe/Berlin")
    berlin.add_fact("Ana", "works_at", "Orion", valid_from="2024-03-05T00:30")
    utc_mem = make_memory()
    (f,) = utc_mem.facts("Ana")
    assert f.valid_from == utc(2024, 3, 4, 23, 30)


def test_berlin_memory_renders_times_with_their_offset(berlin: Memory) -> None:
    summer = berlin.add_fact("Ana", "lives_in", "Pune", valid_from="2024-07-01T12:00")
    assert summer.valid_from_text == "2024-07-01T12:00+02:00"
    winter = berlin.add_fact("Ben", "lives_in", "Pune", valid_from=_dt.datetime(2024, 1, 15, 12, 0))
    assert winter.valid_from_text == "2024-01-15T12:00:00+01:00"


@pytest.mark.parametrize("text", ["2024", "2024-03", "2024-03-05"])
def test_berlin_memory_renders_partial_dates_as_written(berlin: Memory, text: str) -> None:
    f = berlin.add_fact("Ana", "member_of", "Club", valid_from=text)
    assert f.valid_from_text == text


# -- malformed values ----------------------------------------------------------

MALFORMED: list[Any] = [
    "2025-13-45", "yesterday", "", "2024-02-30", "2023-02-29", "2024-00", "2024-03-05T25:00",
    "2024-03-05T10:61", "24-03-05", "2024/03/05", "2024-3-5", "2024-03-05T10:00+25:00", "0000",
    12345, 2024.5, True, ["2024"], {"year": 2024},
]


@pytest.mark.parametrize("value", MALFORMED, ids=repr)
@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
def test_malformed_time_on_write_raises_and_writes_nothing(mem: Memory, value: Any, field: str) -> None:
    mem.add_fact("Seed", "p", "Value", valid_from="2020")
    before = snapshot(mem)
    with pytest.raises(InvalidTimeError) as info:
        mem.add_fact("Ana", "works_at", "Orion", **{field: value})
    err = info.value
    assert err.field == field
    assert err.value == value
    assert field in str(err) and repr(value) in str(err)
    assert snapshot(mem) == before


# reads accept time phrases ("yesterday"), so a read's malformed value is a non-phrase
@pytest.mark.parametrize("value", ["2025-13-45", "someday", "", "2024-02-30", 12345], ids=repr)
def test_malformed_time_on_reads_names_the_field(mem: Memory, value: Any) -> None:
    mem.add_fact("Ana", "works_at", "Orion", valid_from="2020")
    calls: dict[str, Callable[[], object]] = {
        "as_of": lambda: mem.facts("Ana", as_of=value),
        "known_at": lambda: mem.facts("Ana", known_at=value),
        "ended": lambda: mem.invalidate("Ana", "works_at", "Orion", ended=value),
        "start": lambda: mem.between(value, "2030"),
        "end": lambda: mem.between("2020", value),
        "t1": lambda: mem.diff(value, "2021"),
        "t2": lambda: mem.diff("2021", value),
    }
    for field, call in calls.items():
        with pytest.raises(InvalidTimeError) as info:
            call()
        assert info.value.field == field
        assert info.value.value == value
        assert field in str(info.value)


def test_none_where_a_time_is_required(mem: Memory) -> None:
    with pytest.raises(InvalidTimeError) as info:
        mem.diff(None, "2021")  # type: ignore[arg-type]
    assert info.value.field == "t1"
    with pytest.raises(InvalidTimeError):
        chronomem.period_end(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTimeError):
        mem.parse_time(None)  # type: ignore[arg-type]


def test_invalid_time_error_is_an_invalid_input_and_value_error() -> None:
    assert issubclass(InvalidTimeError, chronomem.InvalidInputError)
    assert issubclass(InvalidTimeError, ValueError)


# -- period_end ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "expected", "text"),
    [
        ("2011", utc(2012), "2012"),
        ("2011-02", utc(2011, 3), "2011-03"),
        ("2011-12", utc(2012, 1), "2012-01"),
        ("2011-12-31", utc(2012, 1, 1), "2012-01-01"),
        ("2024-02-28", utc(2024, 2, 29), "2024-02-29"),
        ("2023-02-28", utc(2023, 3, 1), "2023-03-01"),
        ("2024-03-05T10", utc(2024, 3, 5, 11), "2024-03-05T11Z"),
        ("2024-03-05T23:59", utc(2024, 3, 6, 0, 0), "2024-03-06T00:00Z"),
        ("2024-03-05T23:59:59", utc(2024, 3, 6), "2024-03-06T00:00:00Z"),
    ],
)
def test_period_end(value: str, expected: _dt.datetime, text: str) -> None:
    end = chronomem.period_end(value)
    assert end.datetime == expected
    assert str(end) == text
    assert end.precision is parse_time(value).precision


def test_period_end_as_inclusive_valid_to(mem: Memory) -> None:
    """A fact "from 2011 to 2011" held during 2011."""
    f = mem.add_fact("Ana", "member_of", "Club", valid_from="2011", valid_to=chronomem.period_end("2011"))
    assert f.valid_to_text == "2012"
    assert mem.facts("Ana", as_of="2011-12-31T23:59:59Z") != []
    assert mem.facts("Ana", as_of="2012") == []


def test_period_end_in_a_timezone() -> None:
    # a calendar value's next period is on the UTC calendar, whatever the zone
    end = chronomem.period_end("2011", tz="Europe/Berlin")
    assert end.datetime == utc(2012, 1, 1)
    dst = chronomem.period_end("2024-03-30", tz="Europe/Berlin")  # the day before the DST switch
    assert dst.datetime == utc(2024, 3, 31)
    hour = chronomem.period_end("2024-03-31T01", tz="Europe/Berlin")  # an instant: 00:00Z, then one hour
    assert hour.datetime == utc(2024, 3, 31, 1)
