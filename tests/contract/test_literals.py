"""Literal objects, properties JSON and confidence."""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any

import pytest

from chronomem import InvalidInputError, Memory, Precision, TimePoint
from chronomem.core.time import to_us

from ._helpers import snapshot, utc

LITERALS: list[Any] = [
    0, 1, -7, 2**62, 3.25, -0.5, 1e-300, True, False,
    utc(2020, 5, 17, 8, 30), utc(1999, 12, 31, 23, 59, 59, 999999),
]


@pytest.mark.parametrize("value", LITERALS, ids=repr)
def test_non_string_objects_round_trip(mem: Memory, value: Any) -> None:
    f = mem.add_fact("Kai", "value", value, "2020")
    assert f.literal
    assert f.object == value and type(f.object) is type(value)
    (again,) = mem.facts("Kai", "value")
    assert again.object == value and type(again.object) is type(value)
    assert again.literal


@pytest.mark.parametrize("value", ["hello", "", "  padded  ", "Orion", "multi\nline", "北京"], ids=repr)
def test_string_literals_round_trip(mem: Memory, value: str) -> None:
    f = mem.add_fact("Kai", "note", value, literal=True)
    assert f.literal and f.object == value
    (again,) = mem.facts("Kai", "note")
    assert again.object == value and again.literal


def test_string_literal_is_not_an_entity(mem: Memory) -> None:
    mem.add_fact("Kai", "nickname", "Orion", literal=True)
    mem.add_fact("Ana", "works_at", "Orion")
    # the entity Orion has one incoming edge; the literal is separate
    assert [f.subject for f in mem.facts("Orion", direction="in")] == ["Ana"]
    assert [f.object for f in mem.facts("Kai", "nickname", object="Orion", literal=True)] == ["Orion"]
    assert sorted(e.name for e in mem.entities()) == ["Ana", "Kai", "Orion"]


def test_bool_and_int_literals_are_distinct(mem: Memory) -> None:
    mem.add_fact("Kai", "flag", 1)
    mem.add_fact("Kai", "flag", True)
    mem.add_fact("Kai", "flag", 1.0)
    objs = [(type(f.object).__name__, f.object) for f in mem.facts("Kai", "flag")]
    assert sorted(objs) == [("bool", True), ("float", 1.0), ("int", 1)]


def test_equal_literals_deduplicate(mem: Memory) -> None:
    a = mem.add_fact("Kai", "age", 30, "2020", "2021")
    b = mem.add_fact("Kai", "age", 30, "2020", "2021")
    assert a.id == b.id


def test_filter_by_literal_object(mem: Memory) -> None:
    mem.add_fact("Kai", "age", 30)
    mem.add_fact("Ana", "age", 31)
    assert [f.subject for f in mem.facts(predicate="age", object=30)] == ["Kai"]


def test_date_literal_reads_back_as_a_date(mem: Memory) -> None:
    f = mem.add_fact("Kai", "born", _dt.date(1990, 4, 2))
    assert f.literal and f.object == _dt.date(1990, 4, 2) and type(f.object) is _dt.date
    assert f.line().startswith("Kai -born-> 1990-04-02 ") and f.to_dict()["object"] == "1990-04-02"
    (again,) = mem.facts("Kai", "born", _dt.date(1990, 4, 2))
    assert again.id == f.id and type(again.object) is _dt.date


def test_datetime_and_timepoint_literals_print_as_times(mem: Memory) -> None:
    when = mem.add_fact("Kai", "seen", utc(2020, 5, 17, 8, 30))
    assert when.object_text == "2020-05-17T08:30:00Z" and json.dumps(when.to_dict())
    month = mem.add_fact("Kai", "joined", TimePoint(to_us(utc(2020, 5, 1)), Precision.MONTH))
    assert month.object == TimePoint(to_us(utc(2020, 5, 1)), Precision.MONTH)
    assert month.object_text == "2020-05" and month.to_dict()["object"] == "2020-05"
    assert mem.add_fact("Kai", "age", 30).object_text == "30"
    assert mem.add_fact("Kai", "note", "hi", literal=True).object_text == "'hi'"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1], {"a": 1}, object(), b"bytes"],
                         ids=["nan", "inf", "-inf", "list", "dict", "object", "bytes"])
def test_unsupported_literals_are_rejected(mem: Memory, value: Any) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidInputError):
        mem.add_fact("Kai", "value", value)
    assert snapshot(mem) == before


# -- properties ------------------------------------------------------------------


def test_properties_round_trip(mem: Memory) -> None:
    props = {"where": "Oslo", "n": 3, "ratio": 0.5, "ok": True, "none": None, "tags": ["a", "b"],
             "nested": {"k": [1, {"z": "北京"}]}}
    f = mem.add_fact("Kai", "works_at", "Orion", properties=props)
    assert dict(f.properties) == props
    (again,) = mem.facts("Kai")
    assert dict(again.properties) == props
    json.dumps(again.to_dict())


def test_no_properties_is_an_empty_mapping(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion")
    assert dict(f.properties) == {}


@pytest.mark.parametrize("props", [{"x": object()}, {"x": math.nan}, {"x": {1, 2}}],
                         ids=["object", "nan", "set"])
def test_properties_must_be_json(mem: Memory, props: Any) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidInputError):
        mem.add_fact("Kai", "works_at", "Orion", properties=props)
    assert snapshot(mem) == before


# -- confidence --------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 0.0, 0.25, 1, 1.0])
def test_confidence_in_range_is_stored(mem: Memory, value: float) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", confidence=value)
    assert f.confidence == value
    assert mem.facts("Kai")[0].confidence == value


@pytest.mark.parametrize("value", [-0.01, 1.01, 2, math.nan, math.inf, "0.5", None, True], ids=repr)
def test_confidence_out_of_range_is_rejected(mem: Memory, value: Any) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidInputError) as info:
        mem.add_fact("Kai", "works_at", "Orion", confidence=value)
    assert "confidence" in str(info.value)
    assert snapshot(mem) == before


def test_decay_is_read_time_only(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", confidence=0.8)
    later = f.system_from + _dt.timedelta(days=10)
    (decayed,) = mem.with_decay(mem.facts("Kai"), half_life_days=10, at=later)
    assert decayed.confidence == pytest.approx(0.4)
    (halfway,) = mem.facts("Kai", as_of=f.system_from + _dt.timedelta(days=20), decay_half_life=10)
    assert halfway.confidence == pytest.approx(0.2)
    # stored confidence never changes
    assert mem.facts("Kai")[0].confidence == 0.8
    assert mem.fact(f.id).confidence == 0.8
    assert [h.confidence for h in mem.history("Kai")] == [0.8]


def test_decay_half_life_must_be_positive(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mem.facts(decay_half_life=0)
    with pytest.raises(InvalidInputError):
        mem.with_decay([], -1.0)
