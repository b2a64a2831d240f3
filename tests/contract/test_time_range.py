"""Every stored instant lies in years 1-9999 (UTC), after the writer's zone
shift: anything outside is an InvalidTimeError naming the field before a row
is written, so no read can meet a time it cannot build. Read parameters
outside the range are the same typed error. ``Memory.now()`` never lags the
store's own stamps."""

from __future__ import annotations

import datetime as _dt

import pytest

from chronomem import FakeClock, InvalidTimeError, TimePoint
from chronomem.core.time import FIRST_US, LAST_US, Precision

from ._helpers import MemoryFactory

ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "Pacific/Kiritimati"]  # +14:00 is the farthest east


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("field,value", [
    ("valid_from", "0001-01-01T00:00:00+14:00"),
    ("valid_to", "9999-12-31T23:59:59.999999-00:01"),
])
def test_a_time_past_the_range_is_refused_before_anything_is_written(
        make_memory: MemoryFactory, zone: str, field: str, value: object) -> None:
    mem = make_memory(timezone=zone)
    with pytest.raises(InvalidTimeError) as err:
        mem.add_fact("Rome", "founded_in", "Italy", **{field: value})
    assert err.value.field == field and "years 1-9999" in str(err.value)
    assert mem.facts("Rome") == [] and mem.stats().facts == 0


@pytest.mark.parametrize("us", [FIRST_US - 1, LAST_US + 1])
def test_a_time_point_past_the_range_cannot_be_made(us: int) -> None:
    """A TimePoint checks itself (docs/limits.md), so none outside the range reaches a write."""
    with pytest.raises(InvalidTimeError, match="years 1-9999"):
        TimePoint(us, Precision.MICROSECOND)


def test_the_zone_shift_decides(make_memory: MemoryFactory) -> None:
    """East of UTC, midnight of 0001-01-01 is still year 0 in UTC, and west of
    it the last hour of 9999 is already year 10000: refused. The same local
    times on the other side of UTC are stored and read back. A partial date is
    a calendar value with no zone shift: "0001" and "9999-12-31" are stored in
    every zone."""
    tokyo, new_york = make_memory(timezone="Asia/Tokyo"), make_memory(timezone="America/New_York")
    with pytest.raises(InvalidTimeError):
        tokyo.add_fact("Rome", "founded_in", "Italy", "0001-01-01T00:00")
    with pytest.raises(InvalidTimeError):
        new_york.add_fact("Rome", "founded_in", "Italy", "2020", "9999-12-31T23:00")
    assert tokyo.facts("Rome") == []
    early = new_york.add_fact("Rome", "founded_in", "Italy", "0001-01-01T00:00")
    assert early.valid_from is not None and early.valid_from.year == 1 and early.valid_from.hour == 4  # LMT -4:56
    calendar = tokyo.add_fact("Troy", "founded_in", "Anatolia", "0001", "9999-12-31")
    assert calendar.valid_from == _dt.datetime(1, 1, 1, tzinfo=_dt.timezone.utc)
    assert calendar.interval_text == new_york.facts("Troy")[0].interval_text == "[0001, 9999-12-31)"
    late = tokyo.add_fact("Carthage", "founded_in", "Tunisia", "2020", "9999-12-31T23:00")
    assert late.valid_to == _dt.datetime(9999, 12, 31, 14, 0, tzinfo=_dt.timezone.utc)
    for reader in (tokyo, new_york, make_memory()):
        assert {f.subject for f in reader.facts(as_of="2021")} == {"Rome", "Carthage", "Troy"}


def test_the_last_microsecond_each_way_is_stored_and_read_in_every_zone(make_memory: MemoryFactory) -> None:
    writer = make_memory()
    f = writer.add_fact("Rome", "founded_in", "Italy", TimePoint(FIRST_US, Precision.MICROSECOND),
                        TimePoint(LAST_US, Precision.MICROSECOND))
    for zone in ZONES:
        reader = make_memory(timezone=zone)
        (got,) = reader.facts("Rome")
        assert got.id == f.id and got.valid_from == _dt.datetime(1, 1, 1, tzinfo=_dt.timezone.utc)
        assert got.valid_to == _dt.datetime.max.replace(tzinfo=_dt.timezone.utc)
        assert got.line() and got.to_dict()["valid_from"] and reader.timeline("Rome")
        assert reader.current("Rome")[0].id == f.id


@pytest.mark.parametrize("param", ["as_of", "known_at"])
def test_a_read_outside_the_range_is_a_typed_error(make_memory: MemoryFactory, param: str) -> None:
    mem = make_memory(timezone="Asia/Tokyo")
    mem.add_fact("Rome", "founded_in", "Italy", "2020")
    with pytest.raises(InvalidTimeError) as err:
        mem.facts("Rome", **{param: "0001-01-01T00:00"})  # 0000-12-31T15:00Z
    assert err.value.field == param
    assert mem.facts("Rome", **{param: "0001"}) == []  # the calendar year 1 is in range


def test_now_never_lags_the_stores_stamps(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-06-01T00:00:00Z", tick=1.0)
    mem = make_memory(clock=clock)
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    stamped = mem.fact(mem.facts("Acme")[0].id).system_from
    clock.set("2025-01-01T00:00:00Z")  # the clock went back
    assert mem.now() >= stamped
    assert [f.object for f in mem.facts("Acme", known_at=mem.now())] == ["Alice"]
