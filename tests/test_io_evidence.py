"""The evidence side of a backup: ``export`` -> ``import`` and ``copy`` carry
every episode (times, mentions, sessions, speakers, metadata, supersession,
erasure tombstones, vectors) and every link between facts and episodes, so
that every read -- facts at any ``as_of`` / ``known_at``, ``episodes``,
``episode``, ``search`` in each view at several ``at``, ``recall`` -- answers
as in the source. Sources on both backends; ``copy`` SQLite -> PostgreSQL ->
SQLite. Plus the format version checks."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Sequence

import pytest
from click.testing import CliRunner

import chronomem
from chronomem import ExportVersionError, FakeClock, InvalidInputError, Memory
from chronomem._open import open_store_at
from chronomem.adapters.cli import main
from chronomem.service.transfer.copy import copy_store
from chronomem.service.transfer.jsonl import EXPORT_VERSION, export_jsonl, import_jsonl
from conftest import pg_schema_url, store_target
from contract._helpers import MemoryFactory
from hash_embedder import HashEmbedder

EMBEDDER = HashEmbedder()  # signed, 24 dimensions


QUERIES = ("when does Alice start as chief executive", "congratulations to the board", "北京开会",
           "the offsite last weekend", "Dana phone number", "who runs Acme")
VIEWS = ("raw", "as_world", "as_recorded")
AT = ("2019-03-04", "2024-07-01", "2025-01-01T00:01:00Z", "2030-01-01")
VALID = (None, "2015", "2019-03-20", "2020-06", "2022", "2031")


def evidence_story(m: Memory, clock: FakeClock) -> tuple[list[str], list[str]]:
    """A memory with every kind of record, facts and episodes. Returns the
    system times (ISO) between the steps and the ids of every episode (the
    erased and the superseded included)."""
    marks: list[str] = []

    def mark() -> None:
        marks.append(clock.peek().isoformat())
        clock.advance(10)

    m.use_embedder(HashEmbedder())
    m.define_predicate("ceo", cardinality="one", inverse="ceo_of", aliases=["chief executive"],
                       description="who runs it")
    e1 = m.add_episode("Alice told the board she becomes chief executive of Acme in March.",
                       occurred_at="2019-03-02", source="minutes", session="board", speaker="Bob",
                       metadata={"caption": "board minutes", "page": 3, "tags": ["hr", "exec"]},
                       facts=[{"subject": "Acme", "predicate": "ceo", "object": "Alice", "valid_from": "2019-03"}])
    e2 = m.add_episode("Congratulations to her! When does she start?", session="board", speaker="Carol")
    e3 = m.add_episode("She starts next month, on the 1st.", occurred_at="2019-02", session="board",
                       speaker="Bob")  # month precision: mentions resolve against 2019-02
    mark()
    bulk = m.add_episodes([
        {"text": "The offsite was last weekend, everyone liked the lake.", "occurred_at": "2024-06-30T18:00:00Z"},
        {"text": "我们上周二去了北京开会", "occurred_at": "2025-09-30", "speaker": "李雷"},
        {"text": "Backfilled note: Acme was founded in 1999.", "recorded_at": "2018-12-01", "source": "archive"},
        {"text": "Carol moved to the Lisbon office in 2020.", "session": "hr", "speaker": "Dana"},
        {"text": "Dana confirmed: Lisbon, since spring 2020.", "session": "hr", "speaker": "Dana",
         "occurred_at": "2020"},
    ])
    e5 = m.add_episode("Correction: Alice starts on the 12th, not the 1st.", occurred_at="2019-03-05",
                       session="board", speaker="Bob")
    m.supersede_episode(e3.id, e5.id)
    secret = m.add_episode("Dana's private phone number is 555-0100.", speaker="Dana")
    mark()
    m.add_fact("Dana", "phone", "555-0100", literal=True, episode_id=secret.id, source="chat")
    m.add_fact("Acme", "ceo", "Alice", "2019-03", source="press", episode_id=e5.id)  # extra evidence
    m.add_fact("Carol", "works in", "Lisbon", "2020", episode_id=bulk[3], properties={"desk": 4})
    m.add_fact("Carol", "works in", "Lisbon", "2020", episode_id=bulk[4])  # a second episode, as a source
    m.add_fact("Acme", "founded", 1999, episode_id=bulk[2])
    mark()
    m.erase_episode(secret.id, confirm=True)  # keeps the fact: it now cites a tombstone
    wrong = m.add_fact("Acme", "based in", "Porto", "2010", episode_id=e2.id)
    m.correct(wrong.id, object="Lisbon", valid_from="2011")
    gone = m.add_fact("Acme", "ceo", "Ian", "2018", "2019-03")
    m.retract(gone.id, reason="never true")
    m.invalidate("Carol", "works in", "Lisbon", "2023")
    mark()
    m.alias("Acme", "Acme Corp")
    m.add_fact("A. Smith", "works at", "Acme", "2015")
    m.add_fact("Alice Smith", "works at", "Acme", "2016", episode_id=e1.id)
    m.merge("Alice Smith", "A. Smith")
    mark()
    return marks, [e1.id, e2.id, e3.id, *bulk, e5.id, secret.id]


def _facts(facts: list[chronomem.Fact]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in facts]


def fact_reads(m: Memory, known: Sequence[str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in VALID:
        for k in known:
            out[f"facts as_of={t} known_at={k}"] = _facts(m.facts(as_of=t, known_at=k))
    for e in m.entities():
        out[f"entity {e.name}"] = {k: v for k, v in m.entity(e.name).to_dict().items() if k != "id"}  # store-local
        out[f"history {e.name}"] = _facts(m.history(e.name, direction="both"))
        for f in m.history(e.name):
            out[f"evidence {f.id}"] = [p.to_dict() for p in m.evidence(f.id)]
    out["names"] = [m.entity(n).name for n in ("Acme Corp", "A. Smith", "alice smith")]
    out["predicates"] = [p.to_dict() for p in m.predicates()]
    return out


def evidence_reads(m: Memory, episode_ids: Sequence[str], *, ranked: bool = True) -> dict[str, Any]:
    """Every evidence read. ``ranked=False``: lexical scores differ between
    backends (FTS5 bm25 against ts_rank_cd), so searches are compared as sets
    of episode ids, and the dense side (identical vectors) in full."""
    out: dict[str, Any] = {
        "episodes": [e.to_dict() for e in m.episodes(limit=1000)],
        "episodes board": [e.to_dict() for e in m.episodes(session="board")],
        "episodes 2019..2025": [e.id for e in m.episodes(since="2019-03-03", until="2025")],
        "stats": m.evidence_stats(),
    }
    for eid in episode_ids:
        out[f"episode {eid}"] = m.episode(eid).to_dict()
        out[f"episode_facts {eid}"] = _facts(m.episode_facts(eid))
    for q in QUERIES:
        for at in AT:
            dense = m.search(q, view="raw", at=at, config="dense", k=20)
            out[f"dense {q} {at}"] = [h.to_dict() for h in dense]
            for view in VIEWS:
                hits = m.search(q, view=view, at=at, k=20)
                out[f"search {q} {view} {at}"] = (
                    [h.to_dict() for h in hits] if ranked else sorted(h.episode.id for h in hits))
            if ranked:
                out[f"recall {q} {at}"] = m.recall(q, at=at).to_dict()
    return out


def all_reads(m: Memory, marks: Sequence[str], episode_ids: Sequence[str], *, ranked: bool = True) -> dict[str, Any]:
    return {**fact_reads(m, [None, *marks]), **evidence_reads(m, episode_ids, ranked=ranked)}


@pytest.fixture
def other_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A second fresh store of this test's backend."""
    (tmp_path / "other").mkdir()
    return store_target(backend, tmp_path / "other", request)


def _reader(target: str | Path) -> Memory:
    """A memory on ``target`` read at one fixed "now", with the test
    embedder (so ``current`` flags and default times agree between stores)."""
    return chronomem.open(target, clock=FakeClock("2026-01-01T00:00:00Z", tick=0), embedder=HashEmbedder())


def _export(m: Memory) -> list[str]:
    buf = io.StringIO()
    export_jsonl(m, buf)
    return buf.getvalue().splitlines()


# -- export / import -----------------------------------------------------------
def test_export_import_restores_every_evidence_read(make_memory: MemoryFactory, store_url: str,
                                                    other_store: str) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    src = make_memory(clock=clock)
    marks, episode_ids = evidence_story(src, clock)
    buf = io.StringIO()
    exported = export_jsonl(src, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["format_version"] == EXPORT_VERSION == 7
    assert (exported.episodes, exported.tombstones, exported.vectors) == (9, 1, 9)
    tomb = next(x for x in lines if x["type"] == "episode" and x["erased_at"] is not None)
    assert tomb["text"] == "" and tomb["speaker"] is None and tomb["vectors"] == {} and tomb["mentions"] == []
    assert [x["name"] for x in lines if x["type"] == "embedding_model"] == [EMBEDDER.name]
    assert "555-0100" not in "".join(json.dumps(x) for x in lines if x["type"] == "episode")

    dst_url = other_store
    # no embedder while restoring: the vectors come from the file, nothing is embedded
    with chronomem.open(dst_url, clock=FakeClock("2040-01-01T00:00:00Z"), embedder=None) as dst:
        restored = import_jsonl(dst, io.BytesIO(buf.getvalue().encode()))
        assert (restored.episodes, restored.tombstones, restored.vectors) == (9, 1, 9)
        assert (restored.versions, restored.sources) == (exported.versions, exported.sources)
        assert dst.evidence_stats()["models"] == {EMBEDDER.name: {"dim": EMBEDDER.dim, "vectors": 9}}
        # the restore exports to the same file again, apart from the export time
        assert _export(dst)[1:] == buf.getvalue().splitlines()[1:]

    with _reader(store_url) as a, _reader(dst_url) as b:
        expected = all_reads(a, marks, episode_ids)
        assert all_reads(b, marks, episode_ids) == expected
        # the reads the bug report named: the episode is there, found, and the
        # fact citing the erased one still finds its tombstone
        (phone,) = b.facts("Dana", "phone")
        assert b.episode(phone.episode_id).erased_at is not None and b.episode(phone.episode_id).text == ""
        assert b.search("Lisbon office", view="raw")[0].episode.id == episode_ids[6]
        assert expected["episode " + episode_ids[2]]["superseded_by"] == episode_ids[8]
        assert [s["phrase"] for s in expected["episode " + episode_ids[2]]["mentions"]] == ["next month", "the 1st"]


def test_the_reported_cli_case(store_url: str, other_store: str, tmp_path: Path) -> None:
    """One episode and one fact citing it: export, import into a new store;
    the episode is there and search finds it."""
    with chronomem.open(store_url, embedder=HashEmbedder()) as m:
        ep = m.add_episode("Alice joined Acme as chief executive.", occurred_at="2019-03")
        m.add_fact("Acme", "ceo", "Alice", "2019-03", episode_id=ep.id)
    runner = CliRunner()
    out = runner.invoke(main, ["--db", store_url, "export", str(tmp_path / "backup.jsonl"), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["episodes"] == 1
    dst = other_store
    out = runner.invoke(main, ["--db", dst, "import", str(tmp_path / "backup.jsonl")])
    assert out.exit_code == 0, out.output
    assert "1 episode" in out.output
    with chronomem.open(dst, embedder=HashEmbedder()) as m:
        (episode,) = m.episodes()
        assert episode.id == ep.id and episode.fact_ids == tuple(f.id for f in m.facts("Acme"))
        assert [h.episode.id for h in m.search("chief executive", view="raw")] == [ep.id]


# -- copy ------------------------------------------------------------------------
def test_copy_round_trip_keeps_every_evidence_read(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """SQLite -> PostgreSQL -> SQLite: the end answers every read as the
    source, ranking included; PostgreSQL the same apart from lexical scores;
    all three export to the same file (copy and export share one serializer)."""
    first, last, pg = tmp_path / "a.db", tmp_path / "b.db", pg_schema_url(request)
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    with chronomem.open(first, clock=clock) as m:
        marks, episode_ids = evidence_story(m, clock)
    for a, b in ((first, pg), (pg, last)):
        src, dst = open_store_at(a), open_store_at(b)
        try:
            res = copy_store(src, dst)
        finally:
            src.close()
            dst.close()
        assert (res.episodes, res.tombstones, res.vectors) == (9, 1, 9)
    files = []
    for target in (first, pg, last):
        with _reader(target) as m:
            files.append(_export(m)[1:])
    assert files[0] == files[1] == files[2]
    with _reader(first) as a, _reader(pg) as b, _reader(last) as c:
        assert all_reads(c, marks, episode_ids) == all_reads(a, marks, episode_ids)
        assert all_reads(b, marks, episode_ids, ranked=False) == all_reads(a, marks, episode_ids, ranked=False)


# -- format versions ---------------------------------------------------------------
def test_a_newer_format_version_is_refused_before_anything_is_written(make_memory: MemoryFactory,
                                                                      tmp_path: Path) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    src = make_memory(clock=clock)
    evidence_story(src, clock)
    lines = [json.loads(x) for x in _export(src)]
    lines[0]["format_version"] = EXPORT_VERSION + 1
    dst = make_memory("restored", clock=FakeClock("2040-01-01T00:00:00Z"))
    clock_before = dst.store.last_system_time()
    with pytest.raises(ExportVersionError, match=f"format_version is {EXPORT_VERSION + 1}.*newer chronomem") as info:
        import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
    assert isinstance(info.value, InvalidInputError)
    assert (info.value.field, info.value.version, info.value.supported) == (
        "format_version", EXPORT_VERSION + 1, tuple(range(1, EXPORT_VERSION + 1)))
    assert dst.entities() == [] and dst.predicates() == [] and dst.stats().versions == 0
    assert dst.episodes() == [] and dst.evidence_stats()["episodes"] == 0
    assert dst.store.last_system_time() == clock_before  # not even a write transaction ran
    for bad in ("3", True, None):
        lines[0]["format_version"] = bad
        with pytest.raises(ExportVersionError, match="format_version"):
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))


def test_a_hand_written_version_2_file_still_imports(make_memory: MemoryFactory) -> None:
    """Version 2 (no episode lines): facts, their sources and episode ids
    restore as before; there are no episodes."""
    old = [
        {"type": "chronomem-export", "format_version": 2, "namespace": "default",
         "exported_at": "2025-02-01T00:00:00.000000Z"},
        {"type": "predicate", "key": "ceo", "name": "ceo", "cardinality": "one", "inverse": None,
         "description": None, "declared": True, "aliases": []},
        {"type": "entity", "key": "acme", "name": "Acme", "entity_type": None, "properties": None,
         "created_at": "2025-01-01T00:00:00.000000Z", "aliases": ["ACME Inc"]},
        {"type": "entity", "key": "alice", "name": "Alice", "entity_type": None, "properties": None,
         "created_at": "2025-01-01T00:00:00.000000Z", "aliases": []},
        {"type": "fact", "id": "0190a0a0a0a0a0a0a0a0a0a0a0", "version": 1, "subject": "acme", "predicate": "ceo",
         "object": "alice", "object_literal": None, "valid_from": "2019-03-01T00:00:00.000000Z",
         "valid_from_precision": "month", "valid_to": None, "valid_to_precision": None,
         "system_from": "2025-01-01T00:00:01.000000Z", "system_to": None, "confidence": 1.0,
         "source": "press", "episode_id": "ep-from-elsewhere", "properties": None, "invalidated_by": None,
         "close_kind": None, "closed_by": None},
        {"type": "source", "fact_id": "0190a0a0a0a0a0a0a0a0a0a0a0", "source": "memo", "episode_id": None,
         "recorded_at": "2025-01-01T00:00:02.000000Z"},
    ]
    dst = make_memory()
    result = import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in old) + "\n"))
    assert (result.versions, result.sources, result.episodes, result.vectors) == (1, 1, 0, 0)
    (fact,) = dst.facts("ACME Inc", "ceo", as_of="2020")
    assert (fact.object, fact.valid_from_text, fact.episode_id) == ("Alice", "2019-03", "ep-from-elsewhere")
    assert [p.source for p in dst.evidence(fact.id)] == ["press", "memo"]
    assert dst.episodes() == []
    assert dst.add_fact("Acme", "ceo", "Bob", "2024").system_from > fact.system_from


# -- corrupt episode lines ------------------------------------------------------------
def _first(lines: list[dict[str, Any]], erased: bool = False) -> dict[str, Any]:
    return next(x for x in lines if x["type"] == "episode" and (x["erased_at"] is not None) == erased)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda ls: _first(ls)["vectors"].update({EMBEDDER.name: "AAAA"}), "is not 24 float32 values"),
        (lambda ls: _first(ls)["vectors"].update({"other-model": "AAAA"}), "'other-model' is not defined"),
        (lambda ls: _first(ls)["vectors"].update({EMBEDDER.name: "not base64!"}), "not valid base64"),
        (lambda ls: _first(ls, erased=True).__setitem__("text", "the secret"), "is erased"),
        (lambda ls: ls.append(_first(ls)), "appears twice"),
        (lambda ls: _first(ls).__setitem__("recorded_at", "2025-13-01"), r"line \d+: invalid time for recorded_at"),
        (lambda ls: _first(ls).__setitem__("superseded_at", "2025-01-01"), "go together"),
        (lambda ls: _first(ls)["mentions"].append({"phrase": "x", "start": "2020", "end": "2019",
                                                   "precision": "year"}), "empty interval"),
        (lambda ls: next(x for x in ls if x["type"] == "embedding_model").__setitem__("dim", 0), "positive"),
    ],
)
def test_corrupt_episode_lines_are_rejected_and_nothing_written(make_memory: MemoryFactory, other_store: str,
                                                               mutate: Any, message: str) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z", tick=1.0)
    src = make_memory(clock=clock)
    evidence_story(src, clock)
    lines = [json.loads(x) for x in _export(src)]
    mutate(lines)
    with chronomem.open(other_store) as dst:
        with pytest.raises(InvalidInputError, match=message):
            import_jsonl(dst, io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
        assert dst.entities() == [] and dst.stats().versions == 0 and dst.episodes() == []


def test_an_episode_id_cannot_be_restored_twice_into_one_store(make_memory: MemoryFactory) -> None:
    src = make_memory()
    src.use_embedder(None)
    src.add_episode("only evidence, no facts")
    text = "\n".join(_export(src)) + "\n"
    with pytest.raises(chronomem.ConflictError, match="not empty"):
        import_jsonl(src, io.StringIO(text))
    other = make_memory("other")
    with pytest.raises(chronomem.ConflictError, match="episode .* already exists"):
        import_jsonl(other, io.StringIO(text))
    assert other.episodes() == []
