"""Retracting a value gives back the values it had cut short, as they are
believed now: a correction made to a cut value since is kept (the value gets
back its end, not its old content)."""

from __future__ import annotations

from chronomem import Memory


def _ceo(mem: Memory) -> list[tuple[object, int, int | None]]:
    return [(f.object, f.valid_from.year if f.valid_from else 0, f.valid_to.year if f.valid_to else None)
            for f in mem.facts("Acme", "ceo")]


def test_retracting_the_cutter_keeps_a_correction_of_the_cut_value(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    alice = mem.add_fact("Acme", "ceo", "Alice", "2015")
    carol = mem.add_fact("Acme", "ceo", "Carol", "2020")  # cuts Alice at 2020
    mem.correct(alice.id, valid_from="2014")
    assert _ceo(mem) == [("Alice", 2014, 2020), ("Carol", 2020, None)]
    mem.retract(carol.id)
    assert _ceo(mem) == [("Alice", 2014, None)]
    restored = mem.fact(alice.id)
    assert restored.invalidated_by is None and restored.ended_reason is None and restored.ended_by is None


def test_retracting_the_cutter_restores_an_uncorrected_value_as_before(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    mem.add_fact("Acme", "ceo", "Alice", "2015", source="board minutes")
    carol = mem.add_fact("Acme", "ceo", "Carol", "2020")
    mem.retract(carol.id)
    (alice,) = mem.facts("Acme", "ceo")
    assert (alice.object, alice.valid_from.year if alice.valid_from else 0, alice.valid_to) == ("Alice", 2015, None)
    assert alice.source == "board minutes" and alice.version == 3


def test_the_timeline_shows_a_restored_value_as_it_is_believed_again(mem: Memory) -> None:
    mem.define_predicate("database", "one")
    mem.add_fact("Atlas", "database", "PostgreSQL", "2020")
    mysql = mem.add_fact("Atlas", "database", "MySQL", "2024-01")
    mem.retract(mysql.id)
    (restored,) = [e for e in mem.timeline("Atlas") if e.kind == "restored"]
    assert restored.text == ("restored: Atlas -database-> PostgreSQL [2020, …) after the retraction of "
                             "MySQL [2024-01, …) (was [2020, 2024-01))")
