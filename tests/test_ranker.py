"""The learned ranker: its features and scoring as pure functions (unit and
property tests), the model file's checks on load, the search wiring and its
fallback, and retraining on a tiny synthetic fixture rebuilding the committed
fixture model byte for byte."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chronomem
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence import ranker as ranker_mod
from chronomem.service.evidence import search as search_mod
from chronomem.service.evidence.rank_features import FEATURE_NAMES, Candidate, features
from chronomem.service.evidence.ranker import (
    LearnedRanker,
    RankerFileError,
    dump_model,
    fit_logistic,
    load_ranker,
    parse_model,
    shipped_ranker,
)
from hash_embedder import HashEmbedder

HERE = Path(__file__).resolve().parent / "data" / "ranker"
FIXTURE = HERE / "fixture_locomo.json"
FIXTURE_MODEL = HERE / "fixture_model.json"
N = len(FEATURE_NAMES)


def _cand(key: int, text: str = "a turn", speaker: str | None = "Ana", session: str | None = "s1",
          lex: tuple[int, float] | None = None, dense: tuple[int, float] | None = None, base: float = 0.1,
          fused: float = 0.2, **kw: Any) -> Candidate:
    return Candidate(key=key, text=text, speaker=speaker, session=session,
                     lex_rank=lex[0] if lex else None, lex_score=lex[1] if lex else None,
                     dense_rank=dense[0] if dense else None, dense_score=dense[1] if dense else None,
                     base=base, fused=fused, **kw)


def _row(rows: list[list[float]], i: int) -> dict[str, float]:
    return dict(zip(FEATURE_NAMES, rows[i], strict=True))


# -- features ---------------------------------------------------------------

def test_feature_names_are_fixed_and_unique() -> None:
    assert len(set(FEATURE_NAMES)) == N >= 30
    assert all(name.isidentifier() for name in FEATURE_NAMES)
    assert features("anything", []) == []


def test_features_of_a_small_pool() -> None:
    pool = [
        _cand(10, "Ana went to a pottery class in May.", "Ana", "s1", lex=(1, 8.0), dense=(2, 0.6), base=0.08,
              fused=0.15, has_time=True),
        _cand(11, "Nice! What did you make?", "Ben", "s1", dense=(1, 0.7), base=0.03, fused=0.09),
        _cand(40, "I love pottery too", "Ben", "s2", lex=(2, 4.0), base=0.05, fused=0.07, time_overlap=True,
              has_context=True),
    ]
    rows = features("When did Ana go to a pottery class?", pool)
    assert len(rows) == 3 and all(len(r) == N for r in rows)
    a, b, c = (_row(rows, i) for i in range(3))
    assert (a["lex_in"], a["lex_rr"], a["lex_rel"]) == (1.0, 1.0, 1.0)
    assert (b["lex_in"], b["lex_rr"], b["lex_rel"]) == (0.0, 0.0, 0.0)
    assert b["lex_log_rank"] == pytest.approx(math.log(3))  # absent: log(list length + 1)
    assert c["lex_rel"] == 0.5 and c["dense_cos"] == 0.6  # absent from the dense list: its lowest cosine
    assert b["dense_gap"] == 0.0 and a["dense_gap"] == pytest.approx(0.1)
    assert a["fused_rr"] == 1.0 and b["fused_rr"] == 0.5 and c["fused_rr"] == pytest.approx(1 / 3)
    # speakers: the question names Ana
    assert (a["spk_named"], a["spk_other_named"]) == (1.0, 0.0)
    assert (b["spk_named"], b["spk_other_named"]) == (0.0, 1.0)
    # sessions and neighbours (rowids 10 and 11 of s1 are neighbours; 40 of s2 has none)
    assert a["session_best_rel"] == 1.0 and c["session_best_rel"] == pytest.approx(0.05 / 0.08)
    assert a["session_rr"] == 1.0 and c["session_rr"] == 0.5 and a["session_count_log"] == pytest.approx(math.log(3))
    assert a["nbr_count"] == 1.0 and b["nbr_best_rel"] == 1.0 and c["nbr_count"] == 0.0 and c["nbr_best_rel"] == 0.0
    # words: "ana", "pottery", "class" are the question's content words
    assert a["q_cover"] == 1.0 and a["q_cover_all"] == 1.0 and c["q_cover"] == pytest.approx(1 / 3)
    assert b["nbr_cover"] == 1.0
    assert b["is_question"] == 1.0 and a["is_question"] == 0.0 and b["short"] == 1.0
    # time: a when-question
    assert (a["has_time"], a["when_x_time"], a["when_x_no_time"]) == (1.0, 1.0, 0.0)
    assert (b["when_x_time"], b["when_x_no_time"]) == (0.0, 1.0)
    assert c["time_overlap"] == 1.0 and c["has_context"] == 1.0
    assert a["spk_named_x_lex"] == 1.0 and b["other_x_lex"] == 0.0 and c["other_x_lex"] == 0.5


_texts = st.sampled_from(["Ana went to Paris", "Ben likes pottery?", "we ran a marathon in May", "ok", "Miso the cat"])


@st.composite
def _pools(draw: Any) -> list[Candidate]:
    n = draw(st.integers(1, 8))
    keys = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n, unique=True))
    out = []
    for key in keys:
        lex = draw(st.one_of(st.none(), st.tuples(st.integers(1, 50), st.floats(0.1, 20))))
        dense = draw(st.one_of(st.none(), st.tuples(st.integers(1, 50), st.floats(-1, 1))))
        base = draw(st.floats(0, 1))
        out.append(_cand(key, draw(_texts), draw(st.sampled_from(["Ana", "Ben", None])),
                         draw(st.sampled_from(["s1", "s2", None])), lex, dense, base,
                         base + draw(st.floats(0, 1)), time_overlap=draw(st.booleans()),
                         has_time=draw(st.booleans())))
    return out


@settings(max_examples=60, deadline=None)
@given(pool=_pools(), query=st.sampled_from(["When did Ana go to Paris?", "What does Ben like?", "marathon"]),
       perm=st.randoms(use_true_random=False))
def test_features_and_scores_do_not_depend_on_pool_order(pool: list[Candidate], query: str, perm: Any) -> None:
    rows = features(query, pool)
    assert all(len(r) == N and all(math.isfinite(x) for x in r) for r in rows)
    shuffled = list(pool)
    perm.shuffle(shuffled)
    again = features(query, shuffled)
    by_key = {c.key: r for c, r in zip(pool, rows, strict=True)}
    assert all(by_key[c.key] == r for c, r in zip(shuffled, again, strict=True))
    model = _model()
    scores = dict(zip((c.key for c in pool), model.scores(rows), strict=True))
    assert all(scores[c.key] == s for c, s in zip(shuffled, model.scores(again), strict=True))
    # deterministic: the same pool gives the same rows
    assert features(query, pool) == rows


def test_a_candidates_own_features_ignore_other_sessions() -> None:
    """Adding a candidate of another session, ranked below the leaders, leaves
    the others' session, neighbour, speaker and word features unchanged."""
    pool = [_cand(1, "Ana went to Paris", "Ana", "s1", lex=(1, 5.0), base=0.5, fused=0.9),
            _cand(2, "ok", "Ben", "s1", dense=(1, 0.5), base=0.2, fused=0.6)]
    extra = _cand(99, "Miso the cat", "Ben", "s9", lex=(2, 1.0), dense=(2, 0.1), base=0.01, fused=0.01)
    names = [i for i, n in enumerate(FEATURE_NAMES) if n.startswith(("nbr_", "session_best", "session_share",
                                                                       "q_cover", "spk_", "lex_rel", "has_"))
             and "dense" not in n]  # (a candidate outside the dense list takes the list's lowest cosine)
    before = features("Where did Ana go?", pool)
    after = features("Where did Ana go?", [*pool, extra])
    for r0, r1 in zip(before, after, strict=False):
        assert [r0[i] for i in names] == [r1[i] for i in names]


# -- the model --------------------------------------------------------------

def _model(coef: list[float] | None = None) -> LearnedRanker:
    text = dump_model(FEATURE_NAMES, [0.0] * N, [1.0] * N, coef or [0.1 * (i % 5 - 2) for i in range(N)], -1.0,
                      {"training": {"data_sha256": "0" * 64}})
    return parse_model(text)


def test_scores_are_the_standardised_logit() -> None:
    text = dump_model(FEATURE_NAMES, [1.0] * N, [2.0] * N, [0.5] + [0.0] * (N - 1), 0.25,
                      {"training": {"data_sha256": "a" * 64}})
    m = parse_model(text)
    assert m.scores([[3.0] + [7.0] * (N - 1)]) == [pytest.approx(0.25 + 0.5 * (3.0 - 1.0) / 2.0)]


def test_fit_logistic_is_deterministic_and_learns_the_signal() -> None:
    x = [[float(i % 7), float((i * 3) % 5)] for i in range(60)]
    y = [1 if r[0] >= 4 else 0 for r in x]
    a = fit_logistic(x, y, 1.0, 25)
    assert a == fit_logistic(x, y, 1.0, 25)
    mean, scale, coef, _b = a
    assert coef[0] > 1.0 and abs(coef[1]) < 0.5 and scale[0] > 0
    # a constant column gets scale 1 and no weight
    _m, s2, c2, _ = fit_logistic([[1.0, r[0]] for r in x], y, 1.0, 25)
    assert s2[0] == 1.0 and c2[0] == pytest.approx(0.0, abs=1e-9)


def test_the_shipped_model_loads_and_is_fingerprinted() -> None:
    m = shipped_ranker()
    assert m.features == FEATURE_NAMES
    training = m.meta["training"]
    assert len(training["data_sha256"]) == 64 and training["file"] == "locomo_dev.json"
    assert set(m.meta["cv"]["folds"]) == set(training["conversations"])
    assert m is shipped_ranker()  # loaded once


@pytest.mark.parametrize("edit", ["coef", "features", "sha", "format", "json", "fingerprint", "nan"])
def test_a_corrupt_model_file_is_a_typed_error(tmp_path: Path, edit: str) -> None:
    doc = json.loads(_model().meta and dump_model(FEATURE_NAMES, [0.0] * N, [1.0] * N, [0.1] * N, 0.0,
                                                   {"training": {"data_sha256": "b" * 64}}))
    if edit == "coef":
        doc["coef"][3] = 9.0  # the content no longer matches its sha256
    elif edit == "features":
        doc["features"][0] = "something_else"
        doc["sha256"] = ranker_mod._content_digest(doc)
    elif edit == "sha":
        doc["sha256"] = "0" * 64
    elif edit == "format":
        doc["format"] = "chronomem-ranker/0"
    elif edit == "fingerprint":
        doc["meta"]["training"]["data_sha256"] = "not a digest"
        doc["sha256"] = ranker_mod._content_digest(doc)
    elif edit == "nan":
        doc["coef"][0] = "NaN"
        doc["sha256"] = ranker_mod._content_digest(doc)
    path = tmp_path / "m.json"
    path.write_text("{not json" if edit == "json" else json.dumps(doc), encoding="utf-8")
    with pytest.raises(RankerFileError):
        load_ranker(path)
    with pytest.raises(RankerFileError):
        load_ranker(tmp_path / "missing.json")


# -- the search -------------------------------------------------------------

def _memory(tmp_path: Path) -> chronomem.Memory:
    mem = chronomem.open(tmp_path / "r.db", embedder=HashEmbedder(signed=False))
    mem.add_episodes([
        {"text": "I went to a pottery class yesterday", "speaker": "Ana", "session": "s1",
         "occurred_at": "2023-05-08T10:00:00"},
        {"text": "What did you make there?", "speaker": "Ben", "session": "s1", "occurred_at": "2023-05-08T10:00:01"},
        {"text": "A blue bowl for my mother", "speaker": "Ana", "session": "s1", "occurred_at": "2023-05-08T10:00:02"},
        {"text": "I am training for a marathon in Berlin", "speaker": "Ben", "session": "s2",
         "occurred_at": "2023-06-01T10:00:00"},
    ])
    return mem


def test_learned_search_reorders_the_same_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _memory(tmp_path)
    # the fixture model was fitted on the hash embedder's cosines, as the search uses here
    fixture = parse_model(FIXTURE_MODEL.read_text(encoding="utf-8"))
    assert fixture.meta["training"]["embedder"] == "test-hash-embedder"
    monkeypatch.setattr(search_mod, "shipped_ranker", lambda: fixture)
    try:
        fusion = mem.search("What did Ana make in the pottery class?", k=10, config="fusion")
        learned = mem.search("What did Ana make in the pottery class?", k=10, config="learned")
        default = mem.search("What did Ana make in the pottery class?", k=10)
        assert [(h.episode.id, h.score) for h in default] == [(h.episode.id, h.score) for h in learned]
        assert {h.episode.id for h in fusion} == {h.episode.id for h in learned}
        assert all(0.0 < h.score < 1.0 for h in learned)  # probabilities
        assert [h.score for h in learned] == sorted((h.score for h in learned), reverse=True)
        # the score parts still explain today's fusion
        by_id = {h.episode.id: h for h in fusion}
        assert all(h.parts.fused == pytest.approx(by_id[h.episode.id].parts.fused) for h in learned)
        assert SearchConfig.preset("learned").ranker == SearchConfig().ranker == "learned"
        assert {SearchConfig.preset(p).ranker for p in ("fusion", "rrf", "recent")} == {"fusion"}
        with pytest.raises(chronomem.InvalidInputError):
            SearchConfig(ranker="magic")  # type: ignore[arg-type]
        # lexical only: the learned ranker needs the dense list, fusion ranks
        lex = SearchConfig(ranker="learned", dense_weight=0.0)
        assert [h.episode.id for h in mem.search("pottery", config=lex)] == \
            [h.episode.id for h in mem.search("pottery", config="lexical")]
    finally:
        mem.close()


def test_a_model_fitted_on_another_embedders_cosines_is_not_applied(tmp_path: Path) -> None:
    """The shipped model was fitted on MiniLM's cosines: a search whose dense
    list comes from another embedder ranks with fusion."""
    assert shipped_ranker().meta["training"]["embedder"] != "test-hash-embedder"
    mem = _memory(tmp_path)
    try:
        learned = mem.search("What did Ana make in the pottery class?", config="learned")
        fusion = mem.search("What did Ana make in the pottery class?", config="fusion")
        assert [(h.episode.id, h.score) for h in learned] == [(h.episode.id, h.score) for h in fusion]
    finally:
        mem.close()


def test_a_broken_model_file_falls_back_to_fusion_with_one_logged_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    mem = _memory(tmp_path)

    def broken() -> LearnedRanker:
        raise RankerFileError("the shipped ranker file: its content does not match its sha256")

    monkeypatch.setattr(search_mod, "shipped_ranker", broken)
    monkeypatch.setattr(search_mod, "_WARNED", [])
    try:
        with caplog.at_level(logging.ERROR, logger="chronomem.evidence"):
            got = [h.episode.id for h in mem.search("pottery bowl", config="learned")]
            mem.search("marathon", config="learned")
        assert got == [h.episode.id for h in mem.search("pottery bowl", config="fusion")]
        errors = [r for r in caplog.records if "learned ranker is unavailable" in r.getMessage()]
        assert len(errors) == 1
    finally:
        mem.close()


# -- training ---------------------------------------------------------------

def _train(tmp_path: Path) -> Any:
    from chronomem.adapters.ranker_train import train_ranker

    emb = HashEmbedder(signed=False)
    return train_ranker(lambda ns: chronomem.open(tmp_path / "t.db", namespace=ns, embedder=emb), FIXTURE)


def test_retraining_on_the_fixture_rebuilds_the_fixture_model_byte_for_byte(tmp_path: Path) -> None:
    res = _train(tmp_path)
    assert res.text == FIXTURE_MODEL.read_text(encoding="utf-8")
    m = parse_model(res.text)
    assert m.meta["training"]["questions"] == 18 and m.meta["training"]["conversations"] == ["syn-1", "syn-2",
                                                                                              "syn-3"]
    # the cross-validation table: each conversation, in fold and out of fold, adversarial apart
    table = res.table()
    assert "syn-2" in table and "out-of-fold" in table and "adversarial" in table
    cv = res.cv
    assert set(cv["folds"]) == {"syn-1", "syn-2", "syn-3"}
    assert {"1-4", "adversarial"} <= set(cv["overall"]["categories"])
    # a second run on the store the first left behind reuses its episodes: the same bytes
    assert _train(tmp_path).text == res.text


def test_train_ranker_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from chronomem.adapters.cli import main

    out = tmp_path / "model.json"
    r = CliRunner().invoke(main, ["--db", str(tmp_path / "x.db"), "eval", "train-ranker", str(FIXTURE),
                                  "--out", str(out), "--store", str(tmp_path / "t.db"), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert set(got["cv"]["folds"]) == {"syn-1", "syn-2", "syn-3"} and got["same_as_shipped"] is False
    assert parse_model(out.read_text(encoding="utf-8")).meta["training"]["questions"] == 18
    r = CliRunner().invoke(main, ["--db", str(tmp_path / "x.db"), "eval", "train-ranker", str(FIXTURE),
                                  "--store", str(tmp_path / "t.db")])
    assert r.exit_code == 0 and "out-of-fold" in r.output and "differs from the shipped model" in r.output


def test_eval_locomo_ranker_option(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from chronomem.adapters.cli import main

    for ranker in ("fusion", "learned"):
        r = CliRunner().invoke(main, ["--db", str(tmp_path / "x.db"), "eval", "locomo", str(FIXTURE), "--view",
                                      "as_world", "--ranker", ranker, "--out", str(tmp_path / ranker), "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.output)["config"]["ranker"] == ranker


def regenerate() -> None:  # pragma: no cover - run by hand: cd tests && python test_ranker.py
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        FIXTURE_MODEL.write_text(_train(Path(d)).text, encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    regenerate()
