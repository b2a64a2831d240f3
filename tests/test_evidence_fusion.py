"""Reciprocal-rank fusion and the lexical query builder, as pure functions."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from chronomem.evidence.fusion import group_boost, rrf, rrf_contributions
from chronomem.evidence.lexical import cjk_bigrams, fts_query, query_terms

rankings = st.lists(st.lists(st.integers(0, 30), max_size=15), min_size=1, max_size=4)


@given(rankings)
def test_every_ranked_item_appears_once_sorted_by_score(lists: list[list[int]]) -> None:
    fused = rrf(lists)
    items = [i for i, _ in fused]
    assert len(items) == len(set(items))
    assert set(items) == {i for lst in lists for i in lst}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)


@given(rankings, st.floats(0.0, 100.0))
def test_scores_are_the_sum_of_weighted_reciprocal_ranks(lists: list[list[int]], k: float) -> None:
    weights = [1.0 + i for i in range(len(lists))]
    parts = rrf_contributions(lists, weights, k)
    for item, contrib in parts.items():
        for i, lst in enumerate(lists):
            dedup = list(dict.fromkeys(lst))
            expected = weights[i] / (k + dedup.index(item) + 1) if item in dedup else 0.0
            assert abs(contrib[i] - expected) < 1e-12


@given(st.lists(st.integers(0, 20), min_size=1, max_size=10, unique=True))
def test_one_list_keeps_its_order_and_zero_weight_is_ignored(order: list[int]) -> None:
    assert [i for i, _ in rrf([order])] == order
    other = list(reversed(order))
    assert [i for i, _ in rrf([order, other], [1.0, 0.0])] == order


@given(st.lists(st.integers(0, 20), min_size=2, max_size=10, unique=True))
def test_an_item_first_in_both_lists_wins(order: list[int]) -> None:
    a = order
    b = [order[0]] + list(reversed(order[1:]))
    assert rrf([a, b])[0][0] == order[0]


def test_extra_bonus_reorders() -> None:
    assert [i for i, _ in rrf([["a", "b"]], extra={"b": 1.0})] == ["b", "a"]


@settings(max_examples=200)
@given(st.text(max_size=40))
def test_any_text_makes_a_valid_fts_query(text: str) -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    con.execute("INSERT INTO t VALUES ('hello world')")
    q = fts_query(text)
    if q is not None:
        con.execute("SELECT * FROM t WHERE t MATCH ?", (q,)).fetchall()


def test_query_terms_drop_stopwords_and_bigram_cjk() -> None:
    assert query_terms("When did Caroline go to the support group?") == ["caroline", "support", "group"]
    assert query_terms("the") == ["the"]
    assert cjk_bigrams("去北京").split() == ["去北", "北京"]
    assert fts_query('NEAR "x"') == '"near" OR "x"'
    assert fts_query("  ?! ") is None


scored_groups = st.dictionaries(
    st.integers(0, 40), st.tuples(st.floats(0.0, 1.0), st.one_of(st.none(), st.integers(0, 4))), max_size=25
)


@given(scored_groups, st.floats(0.0, 3.0), st.integers(1, 5))
def test_group_boost_adds_the_groups_best_scores(items: dict[int, tuple[float, int | None]], weight: float,
                                                 top: int) -> None:
    scores = {k: s for k, (s, _g) in items.items()}
    groups = {k: g for k, (_s, g) in items.items()}
    out = group_boost(scores, groups, weight, top)
    assert set(out) == set(scores)
    for item, score in scores.items():
        g = groups[item]
        if g is None:
            assert out[item] == score  # no group: unchanged
            continue
        best = sorted((s for k, s in scores.items() if groups[k] == g), reverse=True)[:top]
        assert abs(out[item] - (score + weight * sum(best))) < 1e-9
        assert out[item] >= score


@given(scored_groups, st.floats(0.0, 3.0), st.integers(1, 5))
def test_group_boost_keeps_the_order_inside_a_group(items: dict[int, tuple[float, int | None]], weight: float,
                                                    top: int) -> None:
    scores = {k: s for k, (s, _g) in items.items()}
    groups = {k: g for k, (_s, g) in items.items()}
    out = group_boost(scores, groups, weight, top)
    for a in scores:
        for b in scores:
            if groups[a] is not None and groups[a] == groups[b] and scores[a] > scores[b]:
                assert out[a] >= out[b]


def test_group_boost_lifts_the_stronger_group_and_zero_weight_is_identity() -> None:
    scores = {"a1": 0.10, "a2": 0.092, "b1": 0.095, "b2": 0.01}
    groups = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    assert group_boost(scores, groups, 0.0) == scores
    out = group_boost(scores, groups, 1.0, top=1)
    # b1 outscored a2 alone; a2's session is the stronger one, so a2 now leads b1
    assert scores["b1"] > scores["a2"] and out["a2"] > out["b1"]
    assert group_boost(scores, groups, 1.0, top=2)["b2"] == pytest.approx(0.01 + 0.095 + 0.01)
    with pytest.raises(ValueError):
        group_boost(scores, groups, -1.0)
    with pytest.raises(ValueError):
        group_boost(scores, groups, 1.0, top=0)
