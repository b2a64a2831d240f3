"""Property-based tests of the time model (hypothesis), run on every backend.

Each hypothesis example works in a fresh namespace of the test's store (the
store itself is opened once per test by the ``make_memory`` fixture), and all
memories of a test share one :class:`FakeClock`, so every write's system time
is known in advance: it is ``clock.peek()`` right before the write.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import (
    FactNotFoundError,
    FakeClock,
    InvalidIntervalError,
    Memory,
    Precision,
    TimePoint,
    period_end,
)
from chronomem.core.time import parse_time
from contract._helpers import MemoryFactory

UTC = _dt.timezone.utc
US = _dt.timedelta(microseconds=1)
YEARS = list(range(2000, 2011))
# valid time is piecewise constant between year starts: check every year start
# and the instant just before it
PROBES = [t for y in range(1999, 2013) for t in (_dt.datetime(y, 1, 1, tzinfo=UTC) - US,
                                                  _dt.datetime(y, 1, 1, tzinfo=UTC))]

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@dataclass
class Lab:
    """Fresh namespaces on the test's store, all driven by one clock. The
    memories share the store (one connection) and are closed with it."""

    base: Memory
    clock: FakeClock
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def fresh(self, cardinality: str | None = "one") -> Memory:
        m = Memory(self.base.store, f"prop-{next(self.counter)}", clock=self.clock)
        if cardinality is not None:
            m.define_predicate("holds", cardinality=cardinality)
        return m


@pytest.fixture
def lab(make_memory: MemoryFactory) -> Lab:
    clock = FakeClock("2025-01-01T00:00:00Z")
    return Lab(make_memory(clock=clock), clock)


def year(y: int | None) -> str | None:
    return None if y is None else str(y)


def y_us(y: int | None, default: float) -> float:
    return default if y is None else _dt.datetime(y, 1, 1, tzinfo=UTC).timestamp()


# -- write sequences ---------------------------------------------------------------

objects = st.sampled_from(["A", "B", "C", "D"])
bounds = st.one_of(st.none(), st.sampled_from(YEARS))
add_op = st.tuples(st.just("add"), objects, bounds, bounds)
invalidate_op = st.tuples(st.just("invalidate"), objects, st.sampled_from(YEARS))
correct_op = st.one_of(
    st.tuples(st.just("correct"), st.integers(0, 30), st.just("object"), objects),
    st.tuples(st.just("correct"), st.integers(0, 30), st.sampled_from(["valid_from", "valid_to"]), bounds),
)
retract_op = st.tuples(st.just("retract"), st.integers(0, 30))
write_sequences = st.lists(st.one_of(add_op, add_op, add_op, invalidate_op, correct_op, retract_op),
                           min_size=1, max_size=12)

Op = tuple[Any, ...]


def apply(m: Memory, op: Op, ids: list[str]) -> str | None:
    """Run one write on ``m``; ``ids`` are the fact ids this memory returned so
    far (correct/retract pick one by index). Returns the written fact's id."""
    kind = op[0]
    if kind == "add":
        return m.add_fact("Acme", "holds", op[1], year(op[2]), year(op[3])).id
    if kind == "invalidate":
        return m.invalidate("Acme", "holds", op[1], ended=year(op[2])).id
    if not ids:
        raise FactNotFoundError("no fact yet")
    target = ids[op[1] % len(ids)]
    if kind == "correct":
        value = op[3] if op[2] == "object" else year(op[3])
        return m.correct(target, **{op[2]: value}).id
    return m.retract(target).id


def state(m: Memory, *, known_at: _dt.datetime | None = None,
          ids: dict[str, str] | None = None) -> set[tuple[Any, ...]]:
    """Believed facts as comparable tuples (fact ids translated through ``ids``)."""
    return {((ids or {}).get(f.id, f.id), str(f.object), f.valid_from, f.valid_to)
            for f in m.facts("Acme", "holds", known_at=known_at)}


def valid_at_probes(m: Memory, *, known_at: _dt.datetime | None = None) -> list[list[str]]:
    return [sorted(str(f.object) for f in m.facts("Acme", "holds", as_of=t, known_at=known_at)) for t in PROBES]


@SETTINGS
@given(ops=write_sequences)
def test_single_valued_never_has_two_values_and_known_at_equals_replay(lab: Lab, ops: list[Op]) -> None:
    original = lab.fresh()
    replay = lab.fresh()
    orig_ids: list[str] = []
    replay_ids: list[str] = []
    id_map: dict[str, str] = {}  # original fact id -> replay fact id
    recorded: list[tuple[_dt.datetime, set[tuple[Any, ...]], list[list[str]]]] = []
    for op in ops:
        at = lab.clock.peek()  # the system time this write gets
        try:
            got = apply(original, op, orig_ids)
        except (FactNotFoundError, InvalidIntervalError):
            continue  # rejected writes are not part of the history
        assert got is not None
        # replay the successful write on a fresh memory
        mirrored = apply(replay, op, replay_ids)
        assert mirrored is not None
        assert id_map.setdefault(got, mirrored) == mirrored, "fact identity diverged from the replay"
        if got not in orig_ids:
            orig_ids.append(got)
            replay_ids.append(mirrored)
        now_valid = valid_at_probes(original)
        assert all(len(v) <= 1 for v in now_valid), f"two values at once after {op}: {now_valid}"
        recorded.append((at, state(replay), valid_at_probes(replay)))

    inverse = {v: k for k, v in id_map.items()}
    if recorded:
        assert original.facts("Acme", "holds", known_at=recorded[0][0] - US) == []
    for at, replayed, replay_probes in recorded:
        for s in (at, at + _dt.timedelta(milliseconds=500)):
            assert state(original, known_at=s) == {(inverse.get(r[0], r[0]),) + r[1:] for r in replayed}
            probes = valid_at_probes(original, known_at=s)
            assert probes == replay_probes
            assert all(len(v) <= 1 for v in probes)
    assert [c for c in original.conflicts() if c.kind == "cardinality"] == []


@SETTINGS
@given(ops=st.lists(add_op, min_size=1, max_size=10))
def test_a_batch_equals_the_same_writes_one_by_one(lab: Lab, ops: list[Op]) -> None:
    batch = lab.fresh()
    single = lab.fresh()
    items = [("Acme", "holds", o, year(s), year(e)) for _, o, s, e in ops]
    good = [it for it in items if it[3] is None or it[4] is None or int(it[3]) < int(it[4])]
    if not good:
        return
    batch.add_facts(good)
    for it in good:
        single.add_fact(*it)
    assert valid_at_probes(batch) == valid_at_probes(single)
    assert {r[1:] for r in state(batch)} == {r[1:] for r in state(single)}


intervals = st.lists(st.tuples(bounds, bounds).filter(lambda t: t[0] is None or t[1] is None or t[0] < t[1]),
                     min_size=1, max_size=8)


def union(spans: list[tuple[int | None, int | None]]) -> list[tuple[float, float]]:
    """Maximal intervals of the union; touching intervals join."""
    ivs = sorted((y_us(s, float("-inf")), y_us(e, float("inf"))) for s, e in spans)
    out: list[list[float]] = []
    for lo, hi in ivs:
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


@pytest.mark.parametrize("cardinality", [None, "many"])
@SETTINGS
@given(spans=intervals)
def test_many_valued_coalescing_equals_the_union(lab: Lab, cardinality: str | None,
                                                 spans: list[tuple[int | None, int | None]]) -> None:
    m = lab.fresh(cardinality)
    for s, e in spans:
        m.add_fact("Acme", "holds", "Oslo", year(s), year(e))
    m.add_fact("Acme", "holds", "Rome", "2005")  # another value never interferes
    got = sorted(
        (f.valid_from.timestamp() if f.valid_from else float("-inf"),
         f.valid_to.timestamp() if f.valid_to else float("inf"))
        for f in m.facts("Acme", "holds", "Oslo")
    )
    assert got == union(spans)
    assert [f.interval_text for f in m.facts("Acme", "holds", "Rome")] == ["[2005, …)"]


# -- time text round trips -------------------------------------------------------------

def written(dt: _dt.datetime, prec: Precision) -> str:
    """``dt`` written at ``prec`` without an offset (an independent formatter)."""
    parts = [f"{dt.year:04d}", f"-{dt.month:02d}", f"-{dt.day:02d}", f"T{dt.hour:02d}", f":{dt.minute:02d}",
             f":{dt.second:02d}", f".{dt.microsecond:06d}"]
    return "".join(parts[:int(prec)])


def truncated(dt: _dt.datetime, prec: Precision) -> _dt.datetime:
    fields = [dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond]
    floor = [1, 1, 1, 0, 0, 0, 0]
    y, mo, d, h, mi, s, us = fields[:int(prec)] + floor[int(prec):]
    return _dt.datetime(y, mo, d, h, mi, s, us, tzinfo=UTC)


datetimes = st.datetimes(min_value=_dt.datetime(1, 1, 2), max_value=_dt.datetime(9999, 12, 30))
precisions = st.sampled_from(list(Precision))


@settings(max_examples=300, deadline=None)
@given(dt=datetimes, prec=precisions)
def test_parse_render_round_trip_at_every_precision(dt: _dt.datetime, prec: Precision) -> None:
    text = written(dt, prec)
    tp = parse_time(text)
    assert tp.precision is prec
    assert tp.datetime == truncated(dt, prec)
    rendered = str(tp)
    assert rendered == (text if prec <= Precision.DAY else text + "Z")
    assert parse_time(rendered) == tp


@settings(max_examples=200, deadline=None)
@given(dt=datetimes, prec=st.sampled_from([p for p in Precision if p >= Precision.HOUR]),
       minutes=st.integers(-14 * 60, 14 * 60))
def test_offsets_shift_the_instant(dt: _dt.datetime, prec: Precision, minutes: int) -> None:
    sign = "-" if minutes < 0 else "+"
    text = written(dt, prec) + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    tp = parse_time(text)
    assert tp.datetime == truncated(dt, prec) - _dt.timedelta(minutes=minutes)
    assert tp.precision is prec
    zone = _dt.timezone(_dt.timedelta(minutes=minutes))
    assert parse_time(tp.render(zone)) == tp


@settings(max_examples=200, deadline=None)
@given(dt=st.datetimes(min_value=_dt.datetime(1900, 1, 2), max_value=_dt.datetime(2100, 12, 30)),
       prec=st.sampled_from([Precision.YEAR, Precision.MONTH, Precision.DAY]),
       zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"]))
def test_dates_round_trip_in_a_zone(dt: _dt.datetime, prec: Precision, zone: str) -> None:
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(zone)
    text = written(dt, prec)
    tp = parse_time(text, tz=tz)
    assert tp.render(tz) == text
    assert period_end(tp, tz=tz).us > tp.us


_ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Pacific/Kiritimati",
          "Pacific/Pago_Pago", "+05:45", "-03:30"]


@settings(max_examples=300, deadline=None)
@given(dt=st.datetimes(min_value=_dt.datetime(1, 1, 1), max_value=_dt.datetime(9999, 12, 30)),
       prec=st.sampled_from([Precision.YEAR, Precision.MONTH, Precision.DAY]),
       writer=st.sampled_from(_ZONES), reader=st.sampled_from(_ZONES))
def test_a_partial_time_reads_as_written_in_any_zone_pair(dt: _dt.datetime, prec: Precision, writer: str,
                                                           reader: str) -> None:
    """A partial time is a calendar value: the writer's zone does not move it,
    the reader's zone does not change how it reads, and the period after it
    is the same for both (also for a ``date``, and at years 1 and 9999)."""
    from chronomem.core.time import get_timezone

    w, r = get_timezone(writer), get_timezone(reader)
    text = written(dt, prec)
    tp = parse_time(text, tz=w)
    assert tp == parse_time(text, tz=r) and tp.render(r) == tp.render(w) == text
    if prec == Precision.DAY:
        assert parse_time(dt.date(), tz=w) == tp
    last = dt.year == 9999 and (prec == Precision.YEAR or (prec == Precision.MONTH and dt.month == 12))
    if not last:  # the period after 9999 (or 9999-12) is out of range
        assert period_end(tp, tz=w) == period_end(text, tz=r)


@settings(max_examples=200, deadline=None)
@given(dt=datetimes, prec=precisions)
def test_period_end_is_the_start_of_the_next_period(dt: _dt.datetime, prec: Precision) -> None:
    if dt.year == 9999 and prec == Precision.YEAR:
        return
    tp = parse_time(written(dt, prec))
    end = period_end(tp)
    assert end.precision is prec
    assert end.us > tp.us
    # nothing of the same precision lies strictly between the two
    nxt = end.datetime
    assert written(nxt, prec) != written(tp.datetime, prec)
    assert parse_time(written(nxt, prec)).us == end.us
    before = nxt - US
    assert written(before, prec) == written(tp.datetime, prec)


@SETTINGS
@given(dt=st.datetimes(min_value=_dt.datetime(1800, 1, 2), max_value=_dt.datetime(2200, 12, 30)),
       prec=precisions)
def test_stored_bounds_render_back_as_written(lab: Lab, dt: _dt.datetime, prec: Precision) -> None:
    m = lab.fresh(None)
    text = written(dt, prec)
    f = m.add_fact("Acme", "holds", "Oslo", valid_from=text)
    expected = text if prec <= Precision.DAY else text + "Z"
    assert f.valid_from_text == expected
    (again,) = m.facts("Acme", "holds")
    assert again.valid_from_text == expected and again.valid_from_precision is prec
    assert m.facts("Acme", "holds", as_of=TimePoint(parse_time(text).us - 1, Precision.MICROSECOND)) == []

