"""System time: what the store believed when (``known_at``), and the three
ways of changing a record -- correction, change in the world, retraction."""

from __future__ import annotations

import datetime as _dt

from chronomem import FakeClock, Memory

from ._helpers import US, valid_objects_at


def test_known_at_before_a_write_sees_nothing(mem: Memory) -> None:
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    assert mem.facts("Kai", known_at=f.system_from - US) == []
    assert mem.facts(known_at=f.system_from - US) == []
    assert [x.id for x in mem.facts("Kai", known_at=f.system_from)] == [f.id]


def test_system_times_come_from_the_clock(mem: Memory, clock: FakeClock) -> None:
    expected = clock.peek()
    f = mem.add_fact("Kai", "works_at", "Orion", "2020")
    assert f.system_from == expected
    assert f.system_to is None
    assert clock.peek() > expected


def test_each_write_gets_a_later_system_time(mem: Memory) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion")
    b = mem.add_fact("Kai", "likes", "Tea")
    c = mem.add_fact("Ana", "likes", "Tea")
    assert a.system_from < b.system_from < c.system_from


def test_system_time_never_goes_backwards_even_if_the_clock_does(mem: Memory, clock: FakeClock) -> None:
    a = mem.add_fact("Kai", "works_at", "Orion")
    clock.set("2020-01-01T00:00:00Z")
    b = mem.add_fact("Kai", "likes", "Tea")
    assert b.system_from > a.system_from
    # reading at a's time still sees only a
    assert [x.object for x in mem.facts("Kai", known_at=a.system_from)] == ["Orion"]


def test_correction_keeps_the_old_version_readable(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    g = mem.correct(f.id, object="Bergen")
    assert g.id == f.id and g.version == f.version + 1
    assert valid_objects_at(mem, "Kai", "lives_in", "2020") == ["Bergen"]
    # between the two writes the store believed Oslo
    assert valid_objects_at(mem, "Kai", "lives_in", "2020", known_at=f.system_from) == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2020", known_at=g.system_from - US) == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2020", known_at=g.system_from) == ["Bergen"]
    old = mem.fact(f.id, known_at=f.system_from)
    assert old.object == "Oslo" and old.version == f.version
    assert old.system_to == g.system_from
    assert old.ended_by == "corrected" and old.ended_reason is None


def test_correction_does_not_change_valid_time_history(mem: Memory) -> None:
    """A correction rewrites the record: as of any valid time the old object is gone."""
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.correct(f.id, object="Bergen")
    assert valid_objects_at(mem, "Kai", "lives_in", "2019-06") == ["Bergen"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2018") == []


def test_change_in_the_world_keeps_the_old_value_valid_before(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    ended = mem.invalidate("Kai", "lives_in", "Oslo", ended="2022")
    assert ended.id == f.id and ended.valid_to_text == "2022"
    # the world changed: true before 2022, not after -- on today's knowledge
    assert valid_objects_at(mem, "Kai", "lives_in", "2021") == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2022") == []
    # and before the invalidation was recorded the store believed it still held
    assert valid_objects_at(mem, "Kai", "lives_in", "2023", known_at=f.system_from) == ["Oslo"]
    assert valid_objects_at(mem, "Kai", "lives_in", "2023", known_at=ended.system_from) == []


def test_retraction_keeps_history_but_current_reads_do_not_see_it(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    r = mem.retract(f.id, reason="typo")
    assert r.id == f.id
    assert mem.facts("Kai") == []
    assert mem.facts("Kai", as_of="2020") == []
    assert mem.current("Kai") == []
    # history and known_at still see it
    hist = mem.history("Kai")
    assert [(h.id, h.object) for h in hist] == [(f.id, "Oslo")]
    assert hist[0].system_to is not None and (hist[0].ended_by, hist[0].ended_reason) == ("retracted", "typo")
    assert valid_objects_at(mem, "Kai", "lives_in", "2020", known_at=f.system_from) == ["Oslo"]
    assert mem.fact(f.id, known_at=f.system_from).object == "Oslo"


def test_retracted_fact_is_never_valid_at_any_valid_time(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019", "2021")
    mem.retract(f.id)
    for when in ("2019", "2020", "2020-12-31"):
        assert valid_objects_at(mem, "Kai", "lives_in", when) == []


def test_retracting_a_superseding_value_restores_the_old_one(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice", "2020")
    b = mem.add_fact("Acme", "ceo", "Bob", "2023")
    assert valid_objects_at(mem, "Acme", "ceo", "2024") == ["Bob"]
    r = mem.retract(b.id)
    assert r.system_to is not None
    assert valid_objects_at(mem, "Acme", "ceo", "2024") == ["Alice"]
    restored = mem.fact(a.id)
    assert restored.valid_to is None and restored.invalidated_by is None
    # known_at between supersession and retraction still sees Bob
    assert valid_objects_at(mem, "Acme", "ceo", "2024", known_at=r.system_to - US) == ["Bob"]


def test_retraction_does_not_restore_a_value_ended_for_another_reason(mem: Memory) -> None:
    mem.define_predicate("ceo", cardinality="one")
    mem.add_fact("Acme", "ceo", "Alice", "2020")
    b = mem.add_fact("Acme", "ceo", "Bob", "2023")
    mem.invalidate("Acme", "ceo", "Alice", ended="2021")  # Alice's end changed since
    mem.retract(b.id)
    assert valid_objects_at(mem, "Acme", "ceo", "2022") == []
    assert valid_objects_at(mem, "Acme", "ceo", "2020-06") == ["Alice"]


def test_correction_change_and_retraction_read_back_on_both_axes(mem: Memory) -> None:
    """One timeline with all three kinds of write, checked at every stage."""
    mem.define_predicate("city", cardinality="one")
    oslo = mem.add_fact("Kai", "city", "Oslo", "2010")                 # s1
    s1 = oslo.system_from
    fixed = mem.correct(oslo.id, valid_from="2011")                     # s2: correction
    s2 = fixed.system_from
    rome = mem.add_fact("Kai", "city", "Rome", "2015")                  # s3: change in the world
    s3 = rome.system_from
    wrong = mem.add_fact("Kai", "city", "Paris", "2018")                # s4: a wrong record
    s4 = wrong.system_from
    gone = mem.retract(wrong.id)                                        # s5: retraction
    s5 = gone.system_to
    assert s5 is not None and s1 < s2 < s3 < s4 < s5

    def at(valid: str, known: _dt.datetime | None) -> list[str]:
        return valid_objects_at(mem, "Kai", "city", valid, known_at=known)

    assert at("2010-06", s1) == ["Oslo"]
    assert at("2010-06", s2) == []          # corrected: started 2011
    assert at("2011-06", s2) == ["Oslo"]
    assert at("2016", s2) == ["Oslo"]
    assert at("2016", s3) == ["Rome"]
    assert at("2012", s3) == ["Oslo"]
    assert at("2019", s4) == ["Paris"]
    assert at("2016", s4) == ["Rome"]
    assert at("2019", s5) == ["Rome"]       # retraction restored Rome
    assert at("2019", None) == ["Rome"]
    assert at("2012", None) == ["Oslo"]
    assert at("2010-06", None) == []
    # the audit trail has every version
    hist = mem.history("Kai", "city")
    assert {h.id for h in hist} == {oslo.id, rome.id, wrong.id}
    assert len(hist) >= 6


def test_history_is_ordered_by_system_time(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.correct(f.id, object="Bergen")
    mem.add_fact("Kai", "likes", "Tea")
    hist = mem.history("Kai")
    assert [h.system_from for h in hist] == sorted(h.system_from for h in hist)
    assert [h.version for h in hist if h.id == f.id] == [1, 2]


def test_versions_lists_every_version_of_a_fact(mem: Memory) -> None:
    f = mem.add_fact("Kai", "lives_in", "Oslo", "2019")
    mem.correct(f.id, object="Bergen")
    mem.correct(f.id, valid_from="2018")
    vs = mem.versions(f.id)
    assert [v.version for v in vs] == [1, 2, 3]
    assert [v.object for v in vs] == ["Oslo", "Bergen", "Bergen"]
    assert [v.system_to is None for v in vs] == [False, False, True]
    # each version's system interval ends where the next begins
    assert vs[0].system_to == vs[1].system_from and vs[1].system_to == vs[2].system_from


def test_current_flag(mem: Memory) -> None:
    now = mem.now()
    past = mem.add_fact("Kai", "lived_in", "Oslo", "2010", "2015")
    live = mem.add_fact("Kai", "lives_in", "Rome", "2015")
    future = mem.add_fact("Kai", "will_live_in", "Lima", now + _dt.timedelta(days=365))
    assert not past.current and live.current and not future.current
    assert [f.object for f in mem.current("Kai")] == ["Rome"]


def test_restored_value_is_a_new_version_recorded_at_the_retraction(mem: Memory) -> None:
    """Retracting a value that replaced another (same start) restores the old
    one as a new system-time version: the past stays as it was believed."""
    mem.define_predicate("ceo", cardinality="one")
    a = mem.add_fact("Acme", "ceo", "Alice")
    b = mem.add_fact("Acme", "ceo", "Bob")
    r = mem.retract(b.id)
    assert r.system_to is not None
    assert valid_objects_at(mem, "Acme", "ceo", "2020", known_at=a.system_from) == ["Alice"]
    assert valid_objects_at(mem, "Acme", "ceo", "2020", known_at=b.system_from) == ["Bob"]
    assert valid_objects_at(mem, "Acme", "ceo", "2020", known_at=r.system_to) == ["Alice"]
    assert valid_objects_at(mem, "Acme", "ceo", "2020") == ["Alice"]
    restored = mem.fact(a.id)
    assert restored.version == 2 and restored.system_from == r.system_to and restored.system_to is None
    assert [v.system_to is None for v in mem.versions(a.id)] == [False, True]
