"""A value cut short by another value gets back the end it was given when
that value is retracted, erased or corrected away (``docs/concepts/time.md``,
"Retraction" and "Correction"), also when the cut happened on its own arrival
(placement rule 1: it ends where the later value begins), and a value that
coexisted with its neighbours before a predicate was declared single-valued
is restored as it was, beside them. The end a write gave is kept on the
version (``stated_to``) and travels through export, import and copy."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import chronomem
from chronomem import CloseKind, FakeClock, InvalidIntervalError, Memory
from chronomem._open import open_store_at
from chronomem.copy import copy_store
from chronomem.io import export_jsonl, import_jsonl
from conftest import store_target

from ._helpers import MemoryFactory

Line = tuple[object, str, object]


def _state(mem: Memory, subject: str, predicate: str) -> list[Line]:
    """(object, interval, ended_by) of each believed value, in valid-time order."""
    return [(f.object, f.interval_text, f.ended_by) for f in mem.facts(subject, predicate)]


SUP = CloseKind.SUPERSEDED


def _al_cut_by_bea(mem: Memory) -> str:
    """Bea recorded first (2022), then Al (2010): Al ends where Bea begins (rule 1)."""
    mem.define_predicate("ceo", "one")
    bea = mem.add_fact("Hooli", "ceo", "Bea", "2022")
    al = mem.add_fact("Hooli", "ceo", "Al", "2010")
    assert (al.interval_text, al.ended_by, al.invalidated_by) == ("[2010, 2022)", SUP, bea.id)
    return bea.id


def test_retracting_the_value_that_cut_an_arrival_gives_it_back_its_open_end(mem: Memory) -> None:
    bea = _al_cut_by_bea(mem)
    mem.retract(bea)
    assert _state(mem, "Hooli", "ceo") == [("Al", "[2010, …)", None)]
    (al,) = mem.facts("Hooli", "ceo")
    assert al.invalidated_by is None and al.ended_reason is None
    assert "stated_to" not in al.to_dict()  # internal bookkeeping, not part of the public record


def test_erasing_the_value_that_cut_an_arrival_gives_it_back_its_end(mem: Memory) -> None:
    bea = _al_cut_by_bea(mem)
    mem.erase(bea, confirm=True)
    assert _state(mem, "Hooli", "ceo") == [("Al", "[2010, …)", None)]


def test_correcting_the_cutters_start_moves_the_cut_with_no_gap(mem: Memory) -> None:
    bea = _al_cut_by_bea(mem)
    mem.correct(bea, valid_from="2023")
    assert _state(mem, "Hooli", "ceo") == [("Al", "[2010, 2023)", SUP), ("Bea", "[2023, …)", None)]
    mem.retract(bea)  # the end Al was given survives the re-cut
    assert _state(mem, "Hooli", "ceo") == [("Al", "[2010, …)", None)]


def test_a_value_spliced_in_between_gets_its_end_back(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2022")
    mem.add_fact("Acme", "ceo", "Carla", "2020")  # cut by Bob at 2022 on arrival; Alice cut at 2020
    assert _state(mem, "Acme", "ceo") == [
        ("Alice", "[2015, 2020)", SUP), ("Carla", "[2020, 2022)", SUP), ("Bob", "[2022, …)", None)]
    mem.retract(bob.id)
    assert _state(mem, "Acme", "ceo") == [("Alice", "[2015, 2020)", SUP), ("Carla", "[2020, …)", None)]


def test_a_restored_end_is_cut_again_by_the_next_live_value(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    bea = mem.add_fact("Hooli", "ceo", "Bea", "2022")
    eve = mem.add_fact("Hooli", "ceo", "Eve", "2025")
    mem.add_fact("Hooli", "ceo", "Al", "2010")
    mem.retract(bea.id)
    assert _state(mem, "Hooli", "ceo") == [("Al", "[2010, 2025)", SUP), ("Eve", "[2025, …)", None)]
    assert mem.facts("Hooli", "ceo")[0].invalidated_by == eve.id


def test_a_corrected_end_of_a_cut_value_is_kept_and_given_back(mem: Memory) -> None:
    mem.define_predicate("lives in", "one")
    rome = mem.add_fact("Globex", "lives in", "Rome", "2009-07", "2018")
    club = mem.add_fact("Globex", "lives in", "Club", "2012-09-28T18:00Z")
    corrected = mem.correct(rome.id, valid_to="2020-12-13")
    # cut again at the same place, but it is a new version: the end asked for is recorded
    assert corrected.version == 3 and corrected.interval_text == "[2009-07, 2012-09-28T18:00Z)"
    assert [v.version for v in mem.versions(rome.id)] == [1, 2, 3]
    mem.retract(club.id)
    assert _state(mem, "Globex", "lives in") == [("Rome", "[2009-07, 2020-12-13)", None)]


def test_a_value_cut_in_the_batch_that_wrote_it_gets_its_end_back(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    _alice, bob = mem.add_facts([("Acme", "ceo", "Alice", "2015", "2030"), ("Acme", "ceo", "Bob", "2022")])
    assert _state(mem, "Acme", "ceo") == [("Alice", "[2015, 2022)", SUP), ("Bob", "[2022, …)", None)]
    mem.retract(bob)
    assert _state(mem, "Acme", "ceo") == [("Alice", "[2015, 2030)", None)]


def _badges(mem: Memory) -> str:
    """Red and Blue written while ``badge`` was many-valued, then Green on a single-valued one."""
    mem.add_fact("Jo", "badge", "Red", "2015")
    mem.add_fact("Jo", "badge", "Blue", "2016")
    mem.define_predicate("badge", "one")
    green = mem.add_fact("Jo", "badge", "Green", "2018")
    assert _state(mem, "Jo", "badge") == [
        ("Red", "[2015, 2018)", SUP), ("Blue", "[2016, 2018)", SUP), ("Green", "[2018, …)", None)]
    return green.id


def test_values_that_coexisted_before_a_declaration_are_restored_side_by_side(mem: Memory) -> None:
    green = _badges(mem)
    mem.retract(green)
    assert _state(mem, "Jo", "badge") == [("Red", "[2015, …)", None), ("Blue", "[2016, …)", None)]


def test_correcting_the_cutter_of_coexisting_values_cuts_both_where_it_now_starts(mem: Memory) -> None:
    green = _badges(mem)
    mem.correct(green, valid_from="2019")
    assert _state(mem, "Jo", "badge") == [
        ("Red", "[2015, 2019)", SUP), ("Blue", "[2016, 2019)", SUP), ("Green", "[2019, …)", None)]
    mem.retract(green)
    assert _state(mem, "Jo", "badge") == [("Red", "[2015, …)", None), ("Blue", "[2016, …)", None)]


def test_a_value_written_after_the_cut_still_cuts_the_restored_one(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    mem.add_fact("Acme", "ceo", "Alice", "2015")
    bob = mem.add_fact("Acme", "ceo", "Bob", "2015")  # replaces Alice (same start)
    carla = mem.add_fact("Acme", "ceo", "Carla", "2020")
    mem.retract(bob.id)
    assert _state(mem, "Acme", "ceo") == [("Alice", "[2015, 2020)", SUP), ("Carla", "[2020, …)", None)]
    assert mem.facts("Acme", "ceo")[0].invalidated_by == carla.id


def _export(mem: Memory) -> str:
    buf = io.StringIO()
    export_jsonl(mem, buf)
    return buf.getvalue()


def _facts_of(text: str) -> list[dict[str, object]]:
    return [rec for rec in map(json.loads, text.splitlines()) if rec["type"] == "fact"]


def test_export_and_import_keep_the_end_a_value_was_given(make_memory: MemoryFactory, backend: str,
                                                          tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    bea = _al_cut_by_bea(src)
    src.define_predicate("lives in", "one")
    rome = src.add_fact("Globex", "lives in", "Rome", "2009-07", "2018")
    club = src.add_fact("Globex", "lives in", "Club", "2012-09-28T18:00Z")
    src.correct(rome.id, valid_to="2020-12-13")
    text = _export(src)
    stated = {(r["object"], r["version"]): (r["stated_end"], r["stated_end_precision"]) for r in _facts_of(text)}
    assert stated[("al", 1)] == ("open", None)
    assert stated[("rome", 3)] == ("2020-12-13T00:00:00.000000Z", "day")
    assert stated[("bea", 1)] == stated[("rome", 1)] == (None, None)
    (tmp_path / "other").mkdir()
    with chronomem.open(store_target(backend, tmp_path / "other", request),
                        clock=FakeClock("2025-06-01T00:00:00Z")) as dst:
        import_jsonl(dst, io.StringIO(text))
        assert _facts_of(_export(dst)) == _facts_of(text)
        dst.retract(bea)
        dst.retract(club.id)
        assert _state(dst, "Hooli", "ceo") == [("Al", "[2010, …)", None)]
        assert _state(dst, "Globex", "lives in") == [("Rome", "[2009-07, 2020-12-13)", None)]


def test_an_export_without_stated_ends_still_imports(make_memory: MemoryFactory, backend: str,
                                                     tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    _al_cut_by_bea(src)
    lines = [json.loads(x) for x in _export(src).splitlines()]
    lines[0]["format_version"] = 5
    old = [{k: v for k, v in rec.items() if not k.startswith("stated_end")} for rec in lines]
    (tmp_path / "other").mkdir()
    with chronomem.open(store_target(backend, tmp_path / "other", request)) as dst:
        import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in old) + "\n"))
        assert _state(dst, "Hooli", "ceo") == _state(src, "Hooli", "ceo")
        assert {r["stated_end"] for r in _facts_of(_export(dst))} == {None}


def test_a_stated_end_before_the_start_is_refused(make_memory: MemoryFactory, backend: str,
                                                  tmp_path: Path, request: pytest.FixtureRequest) -> None:
    src = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    _al_cut_by_bea(src)
    lines = [json.loads(x) for x in _export(src).splitlines()]
    for rec in lines:
        if rec.get("stated_end") == "open":
            rec["stated_end"] = "2001-01-01"
    (tmp_path / "other").mkdir()
    with chronomem.open(store_target(backend, tmp_path / "other", request)) as dst:
        with pytest.raises(InvalidIntervalError, match="stated_end"):
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))


def test_copy_keeps_the_end_a_value_was_given(mem: Memory, tmp_path: Path) -> None:
    bea = _al_cut_by_bea(mem)
    dst = open_store_at(str(tmp_path / "copy.db"))
    try:
        copy_store(mem.store, dst)
    finally:
        dst.close()
    copied = chronomem.open(str(tmp_path / "copy.db"), clock=FakeClock("2026-01-01T00:00:00Z"), embedder=None)
    try:
        assert _state(copied, "Hooli", "ceo") == [("Al", "[2010, 2022)", SUP), ("Bea", "[2022, …)", None)]
        copied.retract(bea)
        assert _state(copied, "Hooli", "ceo") == [("Al", "[2010, …)", None)]
    finally:
        copied.close()


def test_a_value_cut_twice_by_the_same_fact_gets_back_its_latest_end(mem: Memory) -> None:
    mem.define_predicate("lives in", "one")
    pg = mem.add_fact("Bo", "lives in", "Oslo", "2006", "2018")
    paris = mem.add_fact("Bo", "lives in", "Paris", "2008")  # Oslo cut at 2008 (its end was 2018)
    mem.correct(pg.id, valid_to=None)  # the end was wrong: open (cut again at 2008)
    mem.correct(paris.id, valid_from="2022")  # Oslo given back its open end, cut at 2022
    assert _state(mem, "Bo", "lives in") == [("Oslo", "[2006, 2022)", SUP), ("Paris", "[2022, …)", None)]
    mem.add_fact("Bo", "lives in", "Paris", "2018")  # coalesces into Paris: Oslo cut by it again, at 2018
    assert _state(mem, "Bo", "lives in") == [("Oslo", "[2006, 2018)", SUP), ("Paris", "[2018, …)", None)]
    mem.retract(paris.id)  # the end Oslo had before the latest cut, not before the first
    assert _state(mem, "Bo", "lives in") == [("Oslo", "[2006, …)", None)]


def test_a_correction_does_not_lose_a_later_statement_of_a_value_it_had_replaced(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    mem.add_fact("Acme", "ceo", "Alice", "2010")
    kafka = mem.add_fact("Acme", "ceo", "Kafka", "2010")  # same start: replaces Alice
    mem.add_fact("Acme", "ceo", "Alice", "2015")  # a new statement: Kafka ends there
    before = _state(mem, "Acme", "ceo")
    assert before == [("Kafka", "[2010, 2015)", SUP), ("Alice", "[2015, …)", None)]
    mem.correct(kafka.id, confidence=0.9)  # Alice is given back and replaced again, not merged on the way
    assert _state(mem, "Acme", "ceo") == before
    mem.correct(kafka.id, valid_from="2012")
    assert _state(mem, "Acme", "ceo") == [
        ("Alice", "[2010, 2012)", SUP), ("Kafka", "[2012, 2015)", SUP), ("Alice", "[2015, …)", None)]
