"""The retrieval benchmark harness on tiny LoCoMo and LongMemEval files
written here, the CLI commands, and (when present) the real LoCoMo file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import chronomem
from chronomem.adapters.cli import ChronomemGroup, evidence_cmds, ingest_cmds
from chronomem.adapters.cli._common import State
from chronomem.adapters.eval import parse_locomo_date, run_locomo, run_longmemeval
from chronomem.service.evidence import default_embedder

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev.json"

LOCOMO = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I went to a pottery class yesterday."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! What did you make?"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "A blue bowl for my mother.",
             "img_url": ["x"], "blip_caption": "a photo of a blue ceramic bowl"},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "I have been training for a marathon in Berlin."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I finished the Berlin marathon last Sunday!"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Congratulations! My cat Miso got sick though."},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "Oh no, I hope Miso feels better soon."},
        ],
    },
    "qa": [
        {"question": "When did Ana go to a pottery class?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "What did Ana make for her mother?", "answer": "a blue bowl", "evidence": ["D1:3"],
         "category": 4},
        {"question": "Which city did Ben run a marathon in?", "answer": "Berlin", "evidence": ["D1:4", "D2:1"],
         "category": 1},
        {"question": "What is the name of Ana's cat?", "answer": "Miso", "evidence": ["D2:2"], "category": 4},
        {"question": "Something without evidence", "answer": "n/a", "evidence": [], "category": 3},
    ],
}]

LME = [
    {"question_id": "q1", "question_type": "single-session-user", "question": "What breed is my dog?",
     "question_date": "2023/06/01 (Thu) 10:00", "answer": "beagle", "answer_session_ids": ["s-b"],
     "haystack_session_ids": ["s-a", "s-b", "s-c"],
     "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00", "2023/05/03 (Wed) 09:00"],
     "haystack_sessions": [
         [{"role": "user", "content": "Can you suggest a pasta recipe?"},
          {"role": "assistant", "content": "Try carbonara with eggs and pecorino."}],
         [{"role": "user", "content": "My beagle Max keeps chewing shoes, any tips?"},
          {"role": "assistant", "content": "Give him chew toys and praise him."}],
         [{"role": "user", "content": "How do I fix a flat bicycle tyre?"}],
     ]},
    {"question_id": "q2", "question_type": "temporal-reasoning", "question": "Where did I travel in spring?",
     "question_date": "2023/06/01 (Thu) 10:00", "answer": "Lisbon", "answer_session_ids": ["t-2"],
     "haystack_session_ids": ["t-1", "t-2"],
     "haystack_dates": ["2023/03/01 (Wed) 09:00", "2023/04/10 (Mon) 09:00"],
     "haystack_sessions": [
         [{"role": "user", "content": "Explain how photosynthesis works."}],
         [{"role": "user", "content": "I just got back from my trip to Lisbon, the trams were lovely."}],
     ]},
]


@pytest.fixture(scope="module")
def embedder() -> Any:
    return default_embedder()


def _opener(path: Path) -> Any:
    def open_memory(ns: str) -> chronomem.Memory:
        return chronomem.open(path, namespace=ns)

    return open_memory


def test_locomo_harness_on_a_tiny_file(tmp_path: Path, embedder: Any) -> None:
    src = tmp_path / "tiny_locomo.json"
    src.write_text(json.dumps(LOCOMO), encoding="utf-8")
    res = run_locomo(_opener(tmp_path / "e.db"), src, out_dir=tmp_path / "out")
    rows = {(r["view"], r["mode"], r["level"], r["category"]): r for r in res.summary["rows"]}
    assert res.summary["timings"]["questions"] == 4 and res.summary["timings"]["episodes"] == 7
    assert res.summary["embedder"] == "all-MiniLM-L6-v2-onnx-int8"  # which model the figures are for
    for view in ("as_world", "as_recorded", "raw"):
        assert rows[(view, "hybrid", "turn", "all")]["n"] == 4
    for mode in ("lexical", "dense", "hybrid"):
        row = rows[("as_world", mode, "turn", "all")]
        for key in ("recall@1", "recall@5", "recall@10", "hit@1", "hit@5", "hit@10", "ndcg@1", "ndcg@5", "ndcg@10"):
            assert 0.0 <= row[key] <= 1.0
        assert row["recall@1"] <= row["recall@5"] <= row["recall@10"]
    # 7 turns: everything is within the top 10
    assert rows[("as_world", "hybrid", "turn", "all")]["recall@10"] == 1.0
    assert rows[("as_world", "hybrid", "session", "temporal")]["hit@1"] == 1.0
    assert rows[("as_world", "hybrid", "turn", "single-hop")]["n"] == 2
    out = tmp_path / "out"
    assert json.loads((out / "summary.json").read_text())["dataset"] == "locomo"
    cand = (out / "candidates.tsv").read_text().splitlines()
    assert cand[0].startswith("sample\tq") and len(cand) > 1
    assert (out / "misses.tsv").read_text().startswith("sample\tq")
    assert "recall@10" in res.table()


def test_longmemeval_harness_on_a_tiny_file(tmp_path: Path, embedder: Any) -> None:
    src = tmp_path / "tiny_lme.json"
    src.write_text(json.dumps(LME), encoding="utf-8")
    res = run_longmemeval(_opener(tmp_path / "l.db"), src, out_dir=tmp_path / "lout")
    rows = {(r["mode"], r["category"]): r for r in res.summary["rows"]}
    assert res.summary["embedder"] == "all-MiniLM-L6-v2-onnx-int8"
    assert rows[("hybrid", "all")]["n"] == 2
    assert rows[("hybrid", "all")]["hit@1"] == 1.0
    assert rows[("hybrid", "all")]["recall@5"] == 1.0


def test_bad_benchmark_files_are_typed_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "locomo"}', encoding="utf-8")
    with pytest.raises(chronomem.InvalidInputError):
        run_locomo(_opener(tmp_path / "x.db"), bad)
    with pytest.raises(chronomem.InvalidInputError):
        run_longmemeval(_opener(tmp_path / "x.db"), bad)
    with pytest.raises(chronomem.InvalidInputError):
        parse_locomo_date("yesterday-ish")
    assert parse_locomo_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"


@click.group(cls=ChronomemGroup)
@click.option("--db", required=True)
@click.pass_context
def cli(ctx: click.Context, db: str) -> None:
    state = State(db=db, namespace="default", timezone="UTC")
    ctx.obj = state
    ctx.call_on_close(state.close)


evidence_cmds.register(cli)
ingest_cmds.register(cli)


def test_cli_remember_search_recall_ingest_reindex_eval(tmp_path: Path, embedder: Any) -> None:
    db = str(tmp_path / "cli.db")
    run = CliRunner().invoke
    r = run(cli, ["--db", db, "remember", "The meeting with Acme is on the 10th", "--at", "2025-10-01",
                  "--speaker", "Dana", "--json"])
    assert r.exit_code == 0, r.output
    ep = json.loads(r.output)
    assert ep["mentions"][0]["start"].startswith("2025-10-10")
    r = run(cli, ["--db", db, "search", "Acme meeting", "--explain"])
    assert r.exit_code == 0 and "fused" in r.output and "Dana" in r.output
    r = run(cli, ["--db", db, "search", "Acme meeting", "--json", "--view", "raw", "-k", "3"])
    assert json.loads(r.output)[0]["episode"]["id"] == ep["id"]
    r = run(cli, ["--db", db, "search", "x", "--view", "as_dreamt"])
    assert r.exit_code == 2
    r = run(cli, ["--db", db, "search", "x", "--at", "soonish"])
    assert r.exit_code == 1 and r.output.startswith("error:") and "Traceback" not in r.output
    r = run(cli, ["--db", db, "remember", "   "])
    assert r.exit_code == 1 and "error:" in r.output
    r = run(cli, ["--db", db, "recall", "When is the Acme meeting?", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["items"][0]["cite"] == ep["id"]

    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in [
        {"text": "I bought a red kayak", "speaker": "Lu", "timestamp": "2024-07-01T10:00:00Z", "session": "k"},
        {"text": "We paddled around the lake", "speaker": "Mo", "timestamp": "2024-07-01T10:01:00Z", "session": "k"},
    ]) + "\n", encoding="utf-8")
    r = run(cli, ["--db", db, "ingest", str(turns), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["episodes"] == 2
    loc = tmp_path / "loc.json"
    loc.write_text(json.dumps(LOCOMO), encoding="utf-8")
    r = run(cli, ["--db", db, "ingest", str(loc), "--json"])
    got = json.loads(r.output)
    assert {k: got[k] for k in ("path", "format", "episodes", "added", "redacted", "redacted_by_kind")} == {
        "path": str(loc), "format": "locomo", "episodes": 7, "added": 7, "redacted": 0, "redacted_by_kind": {}}
    r = run(cli, ["--db", db, "search", "kayak", "--json", "--session", "k"])
    assert [h["episode"]["text"] for h in json.loads(r.output)][0] == "I bought a red kayak"
    r = run(cli, ["--db", db, "reindex", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["lexical"] == 10
    r = run(cli, ["--db", db, "search", "--facts", "Acme", "--json"])
    assert r.exit_code == 0

    r = run(cli, ["--db", db, "eval", "locomo", str(loc), "--out", str(tmp_path / "ev"), "--view", "as_world"])
    assert r.exit_code == 0, r.output
    assert "recall@10" in r.output and (tmp_path / "ev" / "misses.tsv").exists()
    lme = tmp_path / "lme.json"
    lme.write_text(json.dumps(LME), encoding="utf-8")
    r = run(cli, ["--db", db, "eval", "longmemeval", str(lme), "--out", str(tmp_path / "lev"), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["dataset"] == "longmemeval"


@pytest.mark.slow
def test_real_locomo_first_conversation(tmp_path: Path, embedder: Any) -> None:
    if not SHARED.exists():
        pytest.skip(f"LoCoMo data not found at {SHARED} (see ../shared/README.md)")
    res = run_locomo(_opener(tmp_path / "r.db"), SHARED, limit_conversations=1, views=("as_world",))
    rows = {(r["mode"], r["level"], r["category"]): r for r in res.summary["rows"]}
    hybrid = rows[("hybrid", "turn", "all")]["recall@10"]
    assert hybrid > rows[("lexical", "turn", "all")]["recall@10"]
    assert hybrid > rows[("dense", "turn", "all")]["recall@10"]


def test_locomo_conventions_headline_pool_and_diagnostics(tmp_path: Path, embedder: Any) -> None:
    """recall (mean share), recall_any and recall_all @1..50, the categories
    1-4 headline row, the pool's recall and the per-question diagnostics; a
    store kept from a first run is reused by a second (same figures)."""
    src = tmp_path / "tiny_locomo.json"
    src.write_text(json.dumps(LOCOMO), encoding="utf-8")
    store = tmp_path / "kept.db"
    res = run_locomo(_opener(store), src, views=("as_world",), diagnostics=tmp_path / "diag")
    rows = {(r["mode"], r["level"], r["category"]): r for r in res.summary["rows"]}
    head = rows[("hybrid", "turn", "1-4")]
    assert head["n"] == 4 and rows[("hybrid", "turn", "all")]["n"] == 4
    for k in (1, 5, 10, 20, 50):
        assert head[f"recall_all@{k}"] <= head[f"recall@{k}"] <= head[f"recall_any@{k}"]
    assert head["recall_any@10"] == head["hit@10"] and head["recall_all@50"] == 1.0
    assert head["pool_recall@50"] == head["pool_recall"] == 1.0
    assert "pool_recall" not in rows[("lexical", "turn", "1-4")]  # the pool is the hybrid search's
    lines = [json.loads(x) for x in (tmp_path / "diag" / "questions.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    marathon = next(x for x in lines if x["question"].startswith("Which city"))
    assert set(marathon["rank"]) == set(marathon["pool_rank"]) == {"D1:4", "D2:1"}
    assert all(isinstance(r, int) for r in marathon["rank"].values())
    assert set(marathon["features"]) == {"D1:4", "D2:1"} and "spk_named" in marathon["features"]["D1:4"]
    again = run_locomo(_opener(store), src, views=("as_world",))
    assert again.summary["timings"]["episodes"] == 7
    assert again.summary["rows"] == res.summary["rows"]
    # a store holding something else is refused, not mixed in
    other = dict(LOCOMO[0], conversation={**LOCOMO[0]["conversation"], "session_2": []})
    src2 = tmp_path / "other.json"
    src2.write_text(json.dumps([other]), encoding="utf-8")
    with pytest.raises(chronomem.InvalidInputError, match="fresh --store"):
        run_locomo(_opener(store), src2, views=("as_world",))


def test_cli_eval_locomo_takes_a_postgresql_store(tmp_path: Path, embedder: Any,
                                                   request: pytest.FixtureRequest) -> None:
    """``--store postgresql://…`` ingests into that database (it was read as a
    file path: a SQLite file named ``postgresql:/…`` appeared instead), and
    the figures equal a SQLite store's: both backends rank alike."""
    from conftest import pg_schema_url

    url = pg_schema_url(request)
    loc = tmp_path / "loc.json"
    loc.write_text(json.dumps(LOCOMO), encoding="utf-8")
    run = CliRunner().invoke
    got = {}
    for name, store in (("pg", url), ("sqlite", str(tmp_path / "s.db"))):
        r = run(cli, ["--db", str(tmp_path / "unused.db"), "eval", "locomo", str(loc), "--store", store,
                      "--out", str(tmp_path / name),
                      "--view", "as_world", "--json"])
        assert r.exit_code == 0, r.output
        got[name] = {(row["mode"], row["level"], row["category"]): row["recall@10"]
                     for row in json.loads(r.output)["rows"]}
    assert not list(tmp_path.glob("postgres*"))
    with chronomem.open(url, namespace="locomo:tiny-1") as mem:
        assert len(mem.episodes(limit=100)) == 7
    assert got["pg"] == got["sqlite"]
