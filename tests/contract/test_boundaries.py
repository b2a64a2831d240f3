"""Valid time is half-open: ``[valid_from, valid_to)``."""

from __future__ import annotations

import pytest

from chronomem import InvalidIntervalError, Memory

from ._helpers import US, snapshot, utc, valid_objects_at


def test_valid_exactly_at_valid_from(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020-03-01", "2021-03-01")
    assert valid_objects_at(mem, "Kai", "works_at", utc(2020, 3, 1)) == ["Orion"]


def test_not_valid_just_before_valid_from(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020-03-01", "2021-03-01")
    assert valid_objects_at(mem, "Kai", "works_at", utc(2020, 3, 1) - US) == []


def test_not_valid_exactly_at_valid_to(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020-03-01", "2021-03-01")
    assert valid_objects_at(mem, "Kai", "works_at", utc(2021, 3, 1)) == []
    assert valid_objects_at(mem, "Kai", "works_at", utc(2021, 3, 1) - US) == ["Orion"]


def test_open_end_is_valid_forever(mem: Memory) -> None:
    mem.add_fact("Kai", "works_at", "Orion", "2020")
    assert valid_objects_at(mem, "Kai", "works_at", "9999-12-31") == ["Orion"]
    assert valid_objects_at(mem, "Kai", "works_at", "2019-12-31T23:59:59Z") == []


def test_unknown_start_is_valid_at_any_time_before_its_end(mem: Memory) -> None:
    mem.add_fact("Kai", "born_in", "Oslo", valid_to="2000")
    assert valid_objects_at(mem, "Kai", "born_in", "0001") == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "born_in", "1999-12-31") == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "born_in", "2000") == []


def test_unknown_start_and_open_end_is_always_valid(mem: Memory) -> None:
    f = mem.add_fact("Kai", "likes", "Tea")
    for when in ("0001", "1970", "2025-01-01T00:00:00Z", "9999"):
        assert valid_objects_at(mem, "Kai", "likes", when) == ["Tea"]
    assert f.current


def test_valid_to_equal_to_valid_from_is_rejected(mem: Memory) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidIntervalError):
        mem.add_fact("Kai", "works_at", "Orion", "2020", "2020")
    with pytest.raises(InvalidIntervalError):
        mem.add_fact("Kai", "works_at", "Orion", "2020-01-01", "2020")  # same instant, other precision
    assert snapshot(mem) == before


def test_valid_to_before_valid_from_is_rejected(mem: Memory) -> None:
    before = snapshot(mem)
    with pytest.raises(InvalidIntervalError) as info:
        mem.add_fact("Kai", "works_at", "Orion", "2021", "2020")
    assert "valid_to" in str(info.value)
    assert snapshot(mem) == before


def test_switch_over_instant_has_exactly_the_new_value(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    mem.add_fact("Acme", "ceo", "Bob", "2022-07-01T09:00:00Z")
    switch = utc(2022, 7, 1, 9)
    assert valid_objects_at(mem, "Acme", "ceo", switch) == ["Bob"]
    assert valid_objects_at(mem, "Acme", "ceo", switch - US) == ["Alice"]


def test_switch_over_with_explicit_end_and_start(mem: Memory) -> None:
    """Two consecutive intervals of a many-valued predicate meet without overlap."""
    mem.add_fact("Kai", "lives_in", "Oslo", "2010", "2015")
    mem.add_fact("Kai", "lives_in", "Rome", "2015", "2020")
    assert valid_objects_at(mem, "Kai", "lives_in", "2015") == ["Rome"]
    assert valid_objects_at(mem, "Kai", "lives_in", utc(2015) - US) == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2020") == []


def test_fact_valid_at_helper_is_half_open(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020", "2021")
    assert f.valid_at(utc(2020))
    assert not f.valid_at(utc(2021))
    assert not f.valid_at(utc(2020) - US)
    g = mem.add_fact("Kai", "likes", "Tea")
    assert g.valid_at(utc(1, 1, 1)) and g.valid_at(utc(9999, 12, 31))


def test_between_uses_half_open_overlap(mem: Memory) -> None:
    mem.add_fact("Kai", "lives_in", "Oslo", "2010", "2015")
    assert mem.between("2015", "2016", subject="Kai") == []
    assert mem.between("2009", "2010", subject="Kai") == []
    assert len(mem.between(utc(2015) - US, "2016", subject="Kai")) == 1
    assert len(mem.between("2009", utc(2010) + US, subject="Kai")) == 1
    assert len(mem.between(None, None, subject="Kai")) == 1


def test_between_rejects_empty_window(mem: Memory) -> None:
    with pytest.raises(InvalidIntervalError):
        mem.between("2020", "2020")
    with pytest.raises(InvalidIntervalError):
        mem.between("2021", "2020")
