"""Rank fusion (reciprocal-rank and relative-score), session propagation and
the lexical query builder, as pure functions."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import InvalidInputError
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.fusion import group_boost, minmax, relative_contributions, rrf, rrf_contributions
from chronomem.service.evidence.lexical import cjk_bigrams, fts_query, query_terms

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


scored_lists = st.lists(st.tuples(st.integers(0, 30), st.floats(-50.0, 50.0)), max_size=20)


@given(scored_lists, st.one_of(st.none(), st.integers(1, 25)))
def test_minmax_maps_to_the_unit_interval_best_first(scored: list[tuple[int, float]], top: int | None) -> None:
    out = minmax(scored, top)
    first = dict(reversed(scored))  # an item listed twice keeps its first score
    assert set(out) == set(first)
    assert all(0.0 <= v <= 1.0 for v in out.values())
    if out:
        assert max(out.values()) == 1.0
    for a in first:  # order preserving (ties stay ties)
        for b in first:
            if first[a] > first[b]:
                assert out[a] >= out[b]
    distinct = list(dict.fromkeys(i for i, _ in scored))
    ref = distinct[:top] if top else distinct
    if len({first[i] for i in ref}) > 1:
        assert min(out[i] for i in ref) == 0.0


def test_minmax_edge_cases() -> None:
    assert minmax([]) == {}
    assert minmax([("a", 3.0)]) == {"a": 1.0}  # one item: the best, not 0
    assert minmax([("a", 2.0), ("b", 2.0)]) == {"a": 1.0, "b": 1.0}
    assert minmax([("a", 4.0), ("b", 2.0), ("c", 0.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    # the scale comes from the first `top` items; later ones clamp at 0
    assert minmax([("a", 4.0), ("b", 2.0), ("c", 0.0)], top=2) == {"a": 1.0, "b": 0.0, "c": 0.0}


def test_minmax_floor_is_the_bottom_of_a_list_that_ran_out_of_candidates() -> None:
    two = [("a", 4.0), ("b", 3.0)]
    assert minmax(two, top=100) == {"a": 1.0, "b": 0.0}  # without a floor the runner-up looks irrelevant
    assert minmax(two, top=100, floor=0.0) == {"a": 1.0, "b": 0.75}  # the scale runs down to "not found"
    assert minmax(two, top=2, floor=0.0) == {"a": 1.0, "b": 0.0}  # a full list keeps its own range
    assert minmax([("a", 4.0), ("b", -1.0)], top=100, floor=0.0) == {"a": 1.0, "b": 0.0}  # below the floor
    parts = relative_contributions([two, [("b", 0.8), ("a", 0.4)]], [1.0, 0.5], 1.0, 100, (0.0, 0.0))
    assert parts == {"a": [1.0, 0.25], "b": [0.75, 0.5]}
    with pytest.raises(ValueError):
        relative_contributions([two], [1.0], 1.0, 100, (0.0, 0.0))


@given(st.lists(scored_lists, min_size=1, max_size=3), st.floats(0.01, 5.0))
def test_relative_contributions_are_weighted_normalised_scores(lists: list[list[tuple[int, float]]],
                                                               scale: float) -> None:
    weights = [float(i) for i in range(len(lists))]  # the first list has weight 0: it adds nothing
    parts = relative_contributions(lists, weights, scale)
    expected_items = {i for lst, w in zip(lists, weights, strict=True) if w > 0 for i, _ in lst}
    assert set(parts) == expected_items
    for item, contrib in parts.items():
        assert len(contrib) == len(lists) and contrib[0] == 0.0
        for i, lst in enumerate(lists):
            norm = minmax(lst)
            want = scale * weights[i] * norm[item] if weights[i] > 0 and item in norm else 0.0
            assert abs(contrib[i] - want) < 1e-9


def test_relative_fusion_keeps_a_clear_lexical_winner_that_rrf_gives_away() -> None:
    # "a" is far ahead lexically; "b" barely matches but is the dense favourite
    lexical = [("a", 12.0), ("b", 3.1), ("c", 3.0), ("d", 2.9)]
    dense = [("b", 0.62), ("c", 0.60), ("a", 0.59), ("d", 0.30)]
    by_rank = rrf([[i for i, _ in lexical], [i for i, _ in dense]], [1.0, 0.7], k=10.0)
    assert by_rank[0][0] == "b"
    rel = relative_contributions([lexical, dense], [1.0, 0.4], 0.05)
    assert max(rel, key=lambda i: sum(rel[i])) == "a"
    # ... while two lists that agree still agree
    agree = relative_contributions([lexical, [("a", 0.7), ("b", 0.5)]], [1.0, 0.4])
    assert max(agree, key=lambda i: sum(agree[i])) == "a"


def test_relative_contributions_check_arguments() -> None:
    with pytest.raises(ValueError):
        relative_contributions([[("a", 1.0)]], [1.0, 2.0])
    with pytest.raises(ValueError):
        relative_contributions([[("a", 1.0)]], [1.0], scale=0.0)


def test_search_config_fusion_settings() -> None:
    assert SearchConfig().fusion == "relative"
    old = SearchConfig.preset("rrf")
    assert old.fusion == "rrf" and old.dense_weight == 0.7
    for bad in ({"fusion": "borda"}, {"fusion_scale": 0.0}, {"dense_weight": -1.0}, {"lexical_weight": -0.5}):
        with pytest.raises(InvalidInputError):
            SearchConfig(**bad)
    with pytest.raises(InvalidInputError):
        SearchConfig.preset("nope")
