"""Who wrote what: every version records ``recorded_by`` (``acting_as``, else
``open(agent=...)``, else the local OS user), reads filter by it, and the
derived versions a write makes (an invalidation's closed interval, a
correction, a restored value, a merge) are the writer's of that write."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import chronomem
from chronomem import CloseKind, FakeClock, InvalidInputError, Memory
from chronomem.copy import copy_store
from chronomem.io import export_jsonl, import_jsonl
from chronomem.service.scope import local_user
from conftest import store_target
from contract._helpers import MemoryFactory


def _who(facts: list[chronomem.Fact]) -> list[tuple[object, int, str | None]]:
    return [(f.object, f.version, f.recorded_by) for f in facts]


def test_two_writers_read_their_own_versions_back(mem: Memory) -> None:
    with mem.acting_as("tok-a"):
        a1 = mem.add_fact("Ada", "works_at", "Acme", valid_from="2020")
        a2 = mem.add_fact("Ada", "lives_in", "Paris", valid_from="2019")
    with mem.acting_as("tok-b"):
        b1 = mem.add_fact("Bob", "works_at", "Hooli", valid_from="2021")
    assert (a1.recorded_by, a2.recorded_by, b1.recorded_by) == ("tok-a", "tok-a", "tok-b")

    assert {f.id for f in mem.facts(recorded_by="tok-a")} == {a1.id, a2.id}
    assert [f.id for f in mem.facts(recorded_by="tok-b")] == [b1.id]
    assert mem.facts(recorded_by="tok-c") == []
    # with the other filters: one subject, one predicate, a page
    assert [f.id for f in mem.facts("Ada", "works_at", recorded_by="tok-a")] == [a1.id]
    assert mem.facts("Ada", recorded_by="tok-b") == []
    assert len(mem.facts(recorded_by="tok-a", limit=1)) == 1
    assert [f.id for f in mem.facts(recorded_by="tok-a", limit=1, offset=1)] != \
        [f.id for f in mem.facts(recorded_by="tok-a", limit=1)]
    # the fact read by id and its dict carry it
    assert mem.fact(b1.id).recorded_by == "tok-b"
    assert mem.fact(b1.id).to_dict()["recorded_by"] == "tok-b"


def test_a_correction_by_another_writer_keeps_who_wrote_the_old_version(mem: Memory) -> None:
    with mem.acting_as("tok-a"):
        f = mem.add_fact("Ada", "born_in", "Lodnon", valid_from="1990")
    with mem.acting_as("tok-b"):
        mem.correct(f.id, object="London", reason="typo")
    versions = mem.versions(f.id)
    assert [(v.object, v.recorded_by, v.ended_by) for v in versions] == [
        ("Lodnon", "tok-a", CloseKind.CORRECTED), ("London", "tok-b", None)]
    assert [(v.object, v.version) for v in mem.history("Ada", recorded_by="tok-a")] == [("Lodnon", 1)]
    assert [(v.object, v.version) for v in mem.history("Ada", recorded_by="tok-b")] == [("London", 2)]
    assert _who(mem.history("Ada")) == [("Lodnon", 1, "tok-a"), ("London", 2, "tok-b")]


def test_invalidation_supersession_and_retraction_stamp_the_writer_of_that_write(mem: Memory) -> None:
    mem.define_predicate("ceo", "one")
    with mem.acting_as("tok-a"):
        alice = mem.add_fact("Acme", "ceo", "Alice", valid_from="2015")
    with mem.acting_as("tok-b"):
        bob = mem.add_fact("Acme", "ceo", "Bob", valid_from="2022")  # cuts Alice: her new version is b's
    assert _who(mem.versions(alice.id)) == [("Alice", 1, "tok-a"), ("Alice", 2, "tok-b")]
    with mem.acting_as("tok-c"):
        mem.retract(bob.id)  # Alice is given her open end back: by c
    assert _who(mem.versions(alice.id))[-1] == ("Alice", 3, "tok-c")
    assert mem.versions(bob.id)[-1].recorded_by == "tok-b"  # a close writes no version
    with mem.acting_as("tok-d"):
        mem.invalidate_fact(alice.id, "2024", reason="left")
    last = mem.versions(alice.id)[-1]
    assert (last.valid_to_text, last.recorded_by) == ("2024", "tok-d")
    assert [f.version for f in mem.history("Acme", recorded_by="tok-d")] == [4]


def test_bulk_add_facts_and_merges_record_the_writer(mem: Memory) -> None:
    with mem.acting_as("loader"):
        ids = mem.add_facts([{"subject": f"P{i}", "predicate": "knows", "object": "Ada"} for i in range(100)])
    assert {mem.fact(i).recorded_by for i in ids} == {"loader"}
    assert len(mem.facts(recorded_by="loader")) == 100
    with mem.acting_as("tok-a"):
        mem.add_fact("Ada Lovelace", "born_in", "London")
    with mem.acting_as("merger"):
        mem.merge("Ada", "Ada Lovelace")
    moved = mem.facts("Ada", "born_in")
    assert [(f.object, f.recorded_by) for f in moved] == [("London", "merger")]
    assert [(f.object, f.recorded_by) for f in mem.history("Ada", "born_in")] == [("London", "merger")]


def test_the_agent_of_open_and_the_local_user(store_url: str, make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    plain = make_memory(clock=clock)
    first = plain.add_fact("Ada", "knows", "Bob")
    assert first.recorded_by == local_user()
    with chronomem.open(store_url, agent="importer-bot", clock=clock) as bot:
        second = bot.add_fact("Ada", "knows", "Cy")
        assert second.recorded_by == "importer-bot"
        with bot.acting_as("tok-x"):  # acting_as wins over the agent
            assert bot.add_fact("Ada", "knows", "Di").recorded_by == "tok-x"
        view = bot.view(agent="viewer")
        assert view.add_fact("Ada", "knows", "Ed").recorded_by == "viewer"
    assert [f.object for f in plain.facts("Ada", recorded_by="importer-bot")] == ["Cy"]
    assert [f.object for f in plain.facts("Ada", recorded_by=local_user())] == ["Bob"]


def test_a_bad_recorded_by_filter_is_a_typed_error(mem: Memory) -> None:
    for bad in ("", 3, "x" * 201):
        with pytest.raises(InvalidInputError, match="recorded_by"):
            mem.facts(recorded_by=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="recorded_by"):
            mem.history("Ada", recorded_by=bad)  # type: ignore[arg-type]


def test_timeline_shows_who_recorded_each_version(mem: Memory) -> None:
    with mem.acting_as("tok-a"):
        f = mem.add_fact("Ada", "works_at", "Acme", valid_from="2020")
    with mem.acting_as("tok-b"):
        mem.invalidate_fact(f.id, "2023")
    events = mem.timeline("Ada")
    assert {e.fact.recorded_by for e in events if e.fact is not None} <= {"tok-a", "tok-b"}
    assert any(e.fact is not None and e.fact.recorded_by == "tok-b" for e in events)
    assert all("recorded_by" in e.to_dict()["fact"] for e in events if e.fact is not None)


def test_export_import_and_copy_keep_who_wrote_each_version(mem: Memory, make_memory: MemoryFactory, backend: str,
                                                            tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with mem.acting_as("tok-a"):
        f = mem.add_fact("Ada", "born_in", "Lodnon", valid_from="1990")
        mem.add_episode("Ada was born in London.", occurred_at="2024-01-01")
    with mem.acting_as("tok-b"):
        mem.correct(f.id, object="London")
    before = sorted((v.id, v.version, v.recorded_by) for v in mem.history("Ada"))
    eps_before = sorted((e.id, e.recorded_by) for e in mem.episodes())
    assert eps_before[0][1] == "tok-a"

    buf = io.StringIO()
    export_jsonl(mem, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["format_version"] == 7
    assert sorted((r["version"], r["recorded_by"]) for r in lines if r["type"] == "fact") == [
        (1, "tok-a"), (2, "tok-b")]
    assert [r["recorded_by"] for r in lines if r["type"] == "episode"] == ["tok-a"]
    buf.seek(0)
    with chronomem.open(store_target(backend, tmp_path / "restored", request)) as restored:
        with restored.acting_as("the-importer"):  # a restore keeps the exported writers
            import_jsonl(restored, buf)
        assert sorted((v.id, v.version, v.recorded_by) for v in restored.history("Ada")) == before
        assert sorted((e.id, e.recorded_by) for e in restored.episodes()) == eps_before
        assert [v.version for v in restored.history("Ada", recorded_by="tok-b")] == [2]

    # copy to SQLite, then from there to a fresh store of this backend: both directions
    with chronomem.open(tmp_path / "copy.db") as mid:
        copy_store(mem.store, mid.store)
        assert sorted((v.id, v.version, v.recorded_by) for v in mid.history("Ada")) == before
        with chronomem.open(store_target(backend, tmp_path / "again", request)) as again:
            copy_store(mid.store, again.store)
            assert sorted((v.id, v.version, v.recorded_by) for v in again.history("Ada")) == before
            assert sorted((e.id, e.recorded_by) for e in again.episodes()) == eps_before


def test_an_export_without_recorded_by_imports_as_not_recorded(mem: Memory, backend: str, tmp_path: Path,
                                                                request: pytest.FixtureRequest) -> None:
    with mem.acting_as("tok-a"):
        mem.add_fact("Ada", "knows", "Bob")
        mem.add_episode("Ada knows Bob.")
    buf = io.StringIO()
    export_jsonl(mem, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    old = [{**r, "format_version": 6} if r["type"] == "chronomem-export" else
           {k: v for k, v in r.items() if k != "recorded_by"} for r in lines]
    bad = [dict(r, recorded_by=7) if r["type"] == "fact" else r for r in lines]
    with chronomem.open(store_target(backend, tmp_path / "old", request)) as dst:
        with pytest.raises(InvalidInputError, match="recorded_by"):  # nothing written
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(r) for r in bad)))
        assert dst.facts() == []
        with dst.acting_as("the-importer"):
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(r) for r in old)))
        assert [(f.object, f.recorded_by) for f in dst.facts("Ada")] == [("Bob", None)]
        assert [e.recorded_by for e in dst.episodes()] == [None]
        assert dst.facts(recorded_by="the-importer") == []
