"""``Memory.doctor`` / ``chronomem doctor``: real stores damaged for real
(plain sqlite3 / psycopg writes behind the library's back), found, and
repaired where no data is lost."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem import DoctorReport, FakeClock, InvalidInputError, Memory
from chronomem.core.time import LAST_US
from conftest import pg_schema_url
from hash_embedder import HashEmbedder

YEAR_10000 = LAST_US + 1


def _fill(mem: Memory) -> None:
    mem.use_embedder(HashEmbedder())
    mem.set_entity("Acme", type="company", properties={"founded": 1990})
    mem.add_fact("Acme", "ceo", "Alice", valid_from="2015", properties={"note": "first"})
    mem.add_fact("Acme", "ceo", "Bob", valid_from="2020")
    for i, text in enumerate(["the zebra meeting is next Tuesday", "budget review with the walrus team",
                              "lunch with the okapi people", "a note about nothing"]):
        mem.add_episode(text, session="s1", occurred_at=f"2024-05-0{i + 1}", metadata={"n": i})


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "doc.db"
    mem = chronomem.open(str(path), clock=FakeClock("2025-01-01T00:00:00Z", tick=1.0))
    _fill(mem)
    mem.close()
    yield path


def _open(path: Path) -> Memory:
    mem = chronomem.open(str(path))
    mem.use_embedder(HashEmbedder())
    return mem


def _sql(path: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    con = sqlite3.connect(path)
    with con:
        for sql, params in statements:
            con.execute(sql, params)
    con.close()


def _one(path: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, params).fetchone()[0]
    finally:
        con.close()


def codes(report: DoctorReport) -> dict[str, int]:
    return {p.code: p.count for p in report.problems}


def _ep_rowid(path: Path, word: str) -> int:
    return int(_one(path, "SELECT rowid FROM episodes WHERE text LIKE ?", (f"%{word}%",)))


def test_a_healthy_memory_is_ok(db: Path) -> None:
    with _open(db) as mem:
        report = mem.doctor()
        assert report.ok and report.problems == ()
        assert set(report.checks) == {"integrity", "migrations", "times", "json", "lexical_index", "vectors"}
        assert set(report.checks.values()) == {"ok"}
        again = mem.doctor(repair=True)
        assert again.ok and again.repaired == () and again.refused == ()
        data = json.loads(json.dumps(report.to_dict()))
        assert data["ok"] is True and data["namespace"] == "default" and data["problems"] == []
        with pytest.raises(InvalidInputError):
            mem.doctor(repair="yes")  # type: ignore[arg-type]


def test_out_of_range_times_are_found_and_not_repaired(db: Path) -> None:
    with _open(db) as mem:
        bob = next(f for f in mem.facts("Acme") if f.object == "Bob")
    _sql(db, ("UPDATE facts SET valid_to = ? WHERE fact_id = ?", (YEAR_10000, bob.id)),
         ("UPDATE episodes SET occurred_at = ? WHERE rowid = ?", (-(2**62), _ep_rowid(db, "walrus"))))
    with _open(db) as mem:
        report = mem.doctor()
        assert codes(report) == {"fact_time": 1, "episode_time": 1}
        fact = next(p for p in report.problems if p.code == "fact_time")
        assert bob.id in fact.examples[0] and "valid_to" in fact.examples[0]
        assert fact.check == "times" and not fact.repairable and "chronomem erase" in fact.fix
        repaired = mem.doctor(repair=True)
        assert codes(repaired) == codes(report) and repaired.repaired == ()
        assert any(r.startswith("fact_time: not repaired") for r in repaired.refused)
    # nothing was changed behind the user's back
    assert _one(db, "SELECT valid_to FROM facts WHERE fact_id = ?", (bob.id,)) == YEAR_10000


def test_bad_json_is_found(db: Path) -> None:
    deep = "[" * 100 + "]" * 100
    _sql(db, ("UPDATE entities SET properties = ? WHERE name = 'Acme'", ('{"founded": ',)),
         ("UPDATE facts SET properties = ? WHERE properties IS NOT NULL", (deep,)),
         ("UPDATE episodes SET metadata = ? WHERE rowid = ?", ('{"a": NaN}', _ep_rowid(db, "okapi"))))
    with _open(db) as mem:
        report = mem.doctor()
    assert codes(report) == {"entity_properties": 1, "fact_properties": 1, "episode_metadata": 1}
    by = {p.code: p for p in report.problems}
    assert "not JSON" in by["entity_properties"].examples[0]
    assert "100 deep" in by["fact_properties"].examples[0]
    assert "non-finite" in by["episode_metadata"].examples[0]
    assert report.checks["json"] == "3 problem(s)" and report.checks["times"] == "ok"


def test_missing_and_orphan_index_rows_are_rebuilt(db: Path) -> None:
    zebra = _ep_rowid(db, "zebra")
    _sql(db, ("DELETE FROM episodes_fts WHERE rowid = ?", (zebra,)),
         ("INSERT INTO episodes_fts (rowid, body, speaker, context, neighbors) VALUES (999, 'ghost', '', '', '')", ()))
    with _open(db) as mem:
        assert not [h for h in mem.search("zebra", k=5) if "zebra" in h.episode.text and h.parts.bm25_rank]
        report = mem.doctor()
        # (the row deleted behind the library's back is still in the namespace's BM25 counts)
        assert codes(report) == {"lexical_missing": 1, "lexical_orphans": 1, "lexical_counts": 1}
        assert all(p.repairable for p in report.problems)
        fixed = mem.doctor(repair=True)
        assert fixed.ok, fixed.to_dict()
        assert any("rebuilt the lexical index" in r for r in fixed.repaired)
        assert any("dropped 1 lexical index row" in r for r in fixed.repaired)
        assert any("BM25 statistics again" in r for r in fixed.repaired)
        hits = mem.search("zebra", k=5)
        assert hits and "zebra" in hits[0].episode.text and hits[0].parts.bm25_rank == 1
    assert _one(db, "SELECT count(*) FROM episodes_fts WHERE rowid = 999") == 0


def test_bm25_counts_that_drifted_are_counted_again(db: Path) -> None:
    _sql(db, ("UPDATE episode_index_stats SET nrow = nrow + 1, ntok = ntok + 7", ()))
    with _open(db) as mem:
        report = mem.doctor()
        assert codes(report) == {"lexical_counts": 1}
        (problem,) = report.problems
        assert problem.repairable and problem.examples == ("kept 5 row(s) / 68 token(s), counted 4 / 61",)
        fixed = mem.doctor(repair=True)
        assert fixed.ok and any("BM25 statistics again" in r for r in fixed.repaired)
        assert mem.doctor().ok


def test_a_dropped_vector_is_embedded_again(db: Path) -> None:
    okapi = _ep_rowid(db, "okapi")
    _sql(db, ("DELETE FROM episode_vectors WHERE episode_rowid = ?", (okapi,)))
    with _open(db) as mem:
        report = mem.doctor()
        assert codes(report) == {"vectors_missing": 1}
        assert "test-hash-embedder" in report.problems[0].message
        fixed = mem.doctor(repair=True)
        assert fixed.ok and any("embedded 1 episode" in r for r in fixed.repaired)
    assert _one(db, "SELECT count(*) FROM episode_vectors WHERE episode_rowid = ?", (okapi,)) == 1


def test_vectors_of_another_embedder_are_refused(db: Path) -> None:
    _sql(db, ("DELETE FROM episode_vectors WHERE episode_rowid = ?", (_ep_rowid(db, "okapi"),)))
    mem = chronomem.open(str(db))
    try:
        mem.use_embedder(HashEmbedder(name="other-embedder"))
        report = mem.doctor(repair=True)
        assert codes(report) == {"vectors_missing": 1}
        assert any("test-hash-embedder vectors need that embedder" in r for r in report.refused)
    finally:
        mem.close()


def test_orphan_vectors_and_bad_mentions_are_repaired(db: Path) -> None:
    zebra = _ep_rowid(db, "zebra")
    model, dim = _one(db, "SELECT id FROM embedding_models"), _one(db, "SELECT dim FROM embedding_models")
    _sql(db, ("INSERT INTO episode_vectors (episode_rowid, model_id, ns_id, vector, scale) VALUES (777, ?, 1, ?, 0)",
              (model, b"\0" * dim)),
         ("UPDATE episode_times SET end_us = ? WHERE episode_rowid = ?", (YEAR_10000 + 5, zebra)))
    assert _one(db, "SELECT count(*) FROM episode_times WHERE episode_rowid = ?", (zebra,)) >= 1
    with _open(db) as mem:
        report = mem.doctor()
        assert codes(report) == {"mention_time": 1, "vector_orphans": 1}
        fixed = mem.doctor(repair=True)
        assert fixed.ok, fixed.to_dict()
    assert _one(db, "SELECT count(*) FROM episode_vectors WHERE episode_rowid = 777") == 0
    assert _one(db, "SELECT max(end_us) FROM episode_times WHERE episode_rowid = ?", (zebra,)) <= LAST_US


def test_a_damaged_file_fails_integrity_check(db: Path) -> None:
    # the index now claims other columns than the rows it holds: integrity_check sees every row missing
    con = sqlite3.connect(db)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX facts_predicate ON facts(valid_to, confidence)' "
                "WHERE name = 'facts_predicate'")
    con.commit()
    con.close()
    with _open(db) as mem:
        report = mem.doctor(repair=True)
    (p,) = report.problems
    assert p.code == "integrity" and p.count >= 2 and "missing from index facts_predicate" in p.examples[0]
    assert "REINDEX" in p.fix and not p.repairable and report.refused


def test_doctor_on_postgres(request: pytest.FixtureRequest) -> None:
    psycopg = pytest.importorskip("psycopg")
    url = pg_schema_url(request)
    mem = chronomem.open(url)
    try:
        _fill(mem)
        assert mem.doctor().ok
        assert mem.doctor().checks["integrity"].startswith("not applicable")
        alice = next(f for f in mem.facts("Acme") if f.object == "Alice")
        schema = url.split("schema=")[1].split("&")[0]
        with psycopg.connect(url.split("?")[0], autocommit=True) as con:
            con.execute(f'SET search_path TO "{schema}"')
            zebra = con.execute("SELECT rowid FROM episodes WHERE text LIKE '%zebra%'").fetchone()[0]
            con.execute("DELETE FROM episodes_fts WHERE rowid = %s", (zebra,))
            # year 10000: PostgreSQL timestamps take it (its own range ends in 294276), readers do not
            con.execute("UPDATE facts SET valid_to = %s WHERE fact_id = %s", (YEAR_10000, alice.id))
            con.execute("UPDATE entities SET properties = '{\"x\": Infinity}' WHERE name = 'Acme'")
        report = mem.doctor()
        assert codes(report) == {"fact_time": 1, "entity_properties": 1, "lexical_missing": 1}
        fixed = mem.doctor(repair=True)
        assert codes(fixed) == {"fact_time": 1, "entity_properties": 1}
        assert any("rebuilt the lexical index" in r for r in fixed.repaired)
        assert mem.search("zebra", k=3)[0].parts.bm25_rank == 1
    finally:
        mem.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHRONOMEM_EMBEDDER": "none"}
    return subprocess.run([sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_doctor(db: Path) -> None:
    ok = _cli("--db", str(db), "doctor")
    assert ok.returncode == 0, ok.stderr
    assert "lexical_index" in ok.stdout and "ok" in ok.stdout
    _sql(db, ("DELETE FROM episodes_fts WHERE rowid = ?", (_ep_rowid(db, "zebra"),)),
         ("UPDATE entities SET properties = 'nope' WHERE name = 'Acme'", ()))
    found = _cli("--db", str(db), "doctor", "--json")
    assert found.returncode == 1, found.stderr
    data = json.loads(found.stdout)
    assert data["ok"] is False and {p["code"] for p in data["problems"]} == {"lexical_missing", "lexical_counts",
                                                                             "entity_properties"}
    human = _cli("--db", str(db), "doctor", "--repair")
    assert human.returncode == 1 and "Traceback" not in human.stderr
    assert "repaired: rebuilt the lexical index of" in human.stdout and "refused: entity_properties" in human.stdout
    after = json.loads(_cli("--db", str(db), "doctor", "--json").stdout)
    assert [p["code"] for p in after["problems"]] == ["entity_properties"]


def test_a_store_the_checks_cannot_read_is_reported_not_raised(db: Path) -> None:
    _sql(db, ("DROP TABLE episodes_fts", ()))
    with _open(db) as mem:
        report = mem.doctor(repair=True)
    assert report.checks["times"] == "ok" and report.checks["json"] == "ok"
    unreadable = {p.check for p in report.problems if p.code == "unreadable"}
    assert unreadable == {"integrity", "migrations", "lexical_index", "vectors"}
    assert all("episodes_fts" in p.message for p in report.problems)
