"""A time keeps its written form for every reader (issue 14, points 10-11).

A partial time (year, month or day precision, or a ``date``) is a calendar
value: it is stored at its UTC calendar boundary whatever the writer's zone,
renders at its precision the same for every reader, and ``as_of`` on it means
the same period for every reader. A full timestamp without an offset is an
instant in the writer's zone. Typed literals (``date``, ``datetime``) come back
with their type and value, print naturally and match by value in every zone.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path

import pytest

import chronomem
from chronomem import Memory, Precision, TimePoint
from chronomem.core.time import to_us
from chronomem.service.transfer.jsonl import export_jsonl, import_jsonl

from ._helpers import US, MemoryFactory, utc

ZONES = ["Asia/Tokyo", "UTC", "America/New_York"]
#: (valid_from, valid_to) as written, one fact each
WRITTEN = [("2024", "2025"), ("2024-03", "2024-04"), ("2024-03-05", "2024-03-06"), ("0001", "9999-12-31")]
SUBJECTS = ["Ana", "Ben", "Cy", "Dee"]


def _write(mem: Memory) -> None:
    for subject, (start, end) in zip(SUBJECTS, WRITTEN, strict=True):
        mem.add_fact(subject, "member_of", "Club", start, end)


def _readers(make_memory: MemoryFactory) -> list[Memory]:
    return [make_memory(timezone=zone) for zone in ZONES]


@pytest.mark.parametrize("writer", ZONES)
def test_partial_times_read_as_written_in_every_zone(make_memory: MemoryFactory, writer: str) -> None:
    _write(make_memory(timezone=writer))
    for reader in _readers(make_memory):
        for subject, (start, end) in zip(SUBJECTS, WRITTEN, strict=True):
            (f,) = reader.facts(subject)
            assert f.interval_text == f"[{start}, {end})", (writer, reader.tz)
            data = f.to_dict()
            assert (data["valid_from"], data["valid_to"]) == (start, end)
            assert f" [{start}, {end}) " in f.line()
            assert f.valid_from is not None and f.valid_from.hour == 0 and f.valid_from.minute == 0


@pytest.mark.parametrize("writer", ZONES)
def test_as_of_a_partial_date_is_one_period_for_every_reader(make_memory: MemoryFactory, writer: str) -> None:
    make_memory(timezone=writer).add_fact("Ana", "works_at", "Orion", "2024-03", "2024-04")
    start, end = utc(2024, 3, 1), utc(2024, 4, 1)
    for reader in _readers(make_memory):
        def held(at: object, reader: Memory = reader) -> bool:
            return [f.object for f in reader.facts("Ana", as_of=at)] == ["Orion"]
        assert held("2024-03") and held("2024-03-31") and held(_dt.date(2024, 3, 1))
        assert not held("2024-02") and not held("2024-04") and not held(_dt.date(2024, 2, 29))
        # the period's edges are UTC calendar boundaries for every reader
        assert held(start) and not held(start - US)
        assert held(end - US) and not held(end)
        assert held(TimePoint(to_us(start), Precision.MICROSECOND))


#: "2024-03-05T10:30" written in each zone, as each reader (Tokyo, UTC, New York) shows it
SHOWN = {
    "Asia/Tokyo": ("2024-03-05T10:30+09:00", "2024-03-05T01:30Z", "2024-03-04T20:30-05:00"),
    "UTC": ("2024-03-05T19:30+09:00", "2024-03-05T10:30Z", "2024-03-05T05:30-05:00"),
    "America/New_York": ("2024-03-06T00:30+09:00", "2024-03-05T15:30Z", "2024-03-05T10:30-05:00"),
}


@pytest.mark.parametrize("writer,offset", [("Asia/Tokyo", 9), ("UTC", 0), ("America/New_York", -5)])
def test_full_timestamps_are_instants_in_the_writers_zone(make_memory: MemoryFactory, writer: str,
                                                          offset: int) -> None:
    f = make_memory(timezone=writer).add_fact("Ana", "met", "Kai", "2024-03-05T10:30")
    instant = utc(2024, 3, 5, 10, 30) - _dt.timedelta(hours=offset)
    assert f.valid_from == instant
    for reader, shown in zip(_readers(make_memory), SHOWN[writer], strict=True):
        (got,) = reader.facts("Ana")
        assert got.valid_from_text == shown and got.to_dict()["valid_from"] == shown
        assert reader.facts("Ana", as_of=instant) and not reader.facts("Ana", as_of=instant - US)
        # an offset-free as_of is read in the reader's own zone: its wall clock of the instant holds
        wall = shown[:16]
        assert reader.facts("Ana", as_of=wall)
        assert not reader.facts("Ana", as_of=wall[:-2] + "29")


def test_an_offset_wins_over_the_memory_zone(make_memory: MemoryFactory) -> None:
    tokyo = make_memory(timezone="Asia/Tokyo")
    f = tokyo.add_fact("Ana", "met", "Kai", "2024-03-05T10:30-05:00")
    assert f.valid_from == utc(2024, 3, 5, 15, 30)
    assert make_memory(timezone="America/New_York").facts("Ana")[0].valid_from_text == "2024-03-05T10:30-05:00"


@pytest.mark.parametrize("writer", ZONES)
def test_a_date_literal_keeps_its_type_and_day_for_every_reader(make_memory: MemoryFactory, writer: str) -> None:
    born = _dt.date(1990, 5, 17)
    written = make_memory(timezone=writer).add_fact("Eve", "born", born)
    assert written.object == born and type(written.object) is _dt.date
    for reader in _readers(make_memory):
        (f,) = reader.facts("Eve", "born", born)
        assert f.id == written.id and f.object == born and type(f.object) is _dt.date
        assert f.line().startswith("Eve -born-> 1990-05-17 [")
        assert f.to_dict()["object"] == "1990-05-17" and json.loads(json.dumps(f.to_dict()))["literal"] is True
        assert reader.facts("Eve", "born", _dt.date(1990, 5, 16)) == []
        assert reader.facts("Eve", "born", _dt.date(1990, 5, 18)) == []
    # the same date written again from another zone is the same fact
    assert make_memory(timezone="Pacific/Kiritimati").add_fact("Eve", "born", born).id == written.id


def test_a_datetime_literal_is_an_instant(make_memory: MemoryFactory) -> None:
    tokyo = make_memory(timezone="Asia/Tokyo")
    f = tokyo.add_fact("Eve", "seen", _dt.datetime(2024, 3, 5, 9, 0))  # naive: Tokyo wall clock
    assert f.object == utc(2024, 3, 5, 0, 0) and f.object_text == "2024-03-05T09:00:00+09:00"
    ny = make_memory(timezone="America/New_York")
    (again,) = ny.facts("Eve", "seen", utc(2024, 3, 5))
    assert again.object_text == "2024-03-04T19:00:00-05:00" and again.to_dict()["object"] == again.object_text


def test_export_import_keeps_a_date_literal_and_partial_times(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """The lossless export carries the typed literal encoding as it is stored;
    restored into another database read in another zone, nothing moves."""
    src = make_memory(timezone="Asia/Tokyo")
    src.add_fact("Eve", "born", _dt.date(1990, 5, 17), "1990-05-17")
    _write(src)
    buf = io.StringIO()
    export_jsonl(src, buf)
    dst = chronomem.open(tmp_path / "copy.db", timezone="America/New_York")
    import_jsonl(dst, io.BytesIO(buf.getvalue().encode()))
    (f,) = dst.facts("Eve", "born", _dt.date(1990, 5, 17))
    assert type(f.object) is _dt.date and f.object == _dt.date(1990, 5, 17)
    assert f.interval_text == "[1990-05-17, …)" and f.to_dict()["object"] == "1990-05-17"
    for subject, (start, end) in zip(SUBJECTS, WRITTEN, strict=True):
        assert dst.facts(subject)[0].interval_text == f"[{start}, {end})"
    dst.close()


def test_a_partial_time_stored_off_its_utc_boundary_reads_in_the_readers_zone(
        make_memory: MemoryFactory) -> None:
    """Older versions stored a partial time at the writer's local boundary
    ("2024-03" in Tokyo = 2024-02-29T15:00Z) and did not record the zone. Such a
    value (made here with a TimePoint, which is stored as given) still reads as
    written for a reader in the writer's zone; other readers see it in their
    own zone. There is no migration: the writer's zone is not known."""
    legacy_month = TimePoint(to_us(utc(2024, 2, 29, 15)), Precision.MONTH)
    legacy_day = TimePoint(to_us(utc(1990, 5, 16, 15)), Precision.DAY)
    make_memory().add_fact("Eve", "born", legacy_day, legacy_month)
    (tokyo,) = make_memory(timezone="Asia/Tokyo").facts("Eve")
    assert tokyo.valid_from_text == "2024-03" and tokyo.object == _dt.date(1990, 5, 17)
    (utc_reader,) = make_memory(timezone="UTC").facts("Eve")
    assert utc_reader.valid_from_text == "2024-02" and utc_reader.object == _dt.date(1990, 5, 16)


@pytest.mark.parametrize("zone", ZONES)
def test_an_episode_said_on_a_calendar_day_reads_its_phrases_from_that_day(make_memory: MemoryFactory,
                                                                          zone: str) -> None:
    """``occurred_at="2024-03-01"`` is that day in the memory's zone too (not
    the UTC midnight's wall clock, which is still February west of UTC)."""
    mem = make_memory(timezone=zone)
    ep = mem.add_episode("I arrived yesterday", occurred_at="2024-03-01")
    (m,) = ep.mentions
    assert m.start.astimezone(mem.tz).date() == _dt.date(2024, 2, 29)
    assert m.end.astimezone(mem.tz).date() == _dt.date(2024, 3, 1)
    assert ep.occurred_at == utc(2024, 3, 1)
