"""Issue 16: PostgreSQL's lexical ranking is SQLite FTS5's ``bm25``.

The same episodes written to a real SQLite file and a real PostgreSQL schema
(one namespace) give, for every query, the same top 10 (the same episodes) with
scores equal to 1e-6 relative: with no filter and under the ``as_world`` and
``as_recorded`` filters, over a fixed corpus (sessions, speakers, Chinese,
accents, apostrophes, numbers, captions, superseded turns) and, with
Hypothesis, over random small ones. Equal scores (ties) may come in either
order: FTS5 orders ties as it finds them, PostgreSQL by rowid; the ids tied
must be the same ones. On both backends the statistics are the namespace's:
filling another namespace leaves a namespace's scores as they were, and a
namespace beside another ranks alike on both.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronomem
from chronomem import FakeClock, Memory
from chronomem.core.time import to_us
from chronomem.errors import InvalidInputError
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.episodes import episode_store
from chronomem.service.evidence.lexical import fts_query
from chronomem.store.postgres.fts5_bm25 import query_phrases, tokenize_rows, tsvector_literal
from chronomem.store.protocol import EpisodeFilter
from conftest import pg_schema_url

WEIGHTS = SearchConfig().bm25_weights
T0 = "2024-03-01T10:00:00Z"

WORDS = (
    "dog dogs puppy running runs ran runner café cafe naïve Zoë résumé garden gardening painted painting "
    "paint Caroline Caroline's Melanie Melanie's don't it's 2023 2024 42 3pm 10k pottery workshop workshops "
    "Lisbon Paris berlin sunset sunsets lake hiking hiked hike camera photo photos adopted adoption "
    "support group LGBTQ pride parade counseling career mentor school kids daughter son birthday cake "
    "guitar violin concert music musical book books reading read novel sci-fi e-mail co-worker well-known "
    "ÉCOLE Straße façade jalapeño crème brûlée ångström"
).split()
CJK = ["我们上周二去了北京开会", "东京的天气很好", "我喜欢画画", "北京烤鸭很好吃", "日本語を勉強しています"]
SPEAKERS = ["Caroline", "Melanie", "Zoë", "Jon"]
QUERIES = [
    "dog", "running", "Caroline's painting", "café", "cafe naive", "Zoë résumé", "2023", "3pm", "42 runs",
    "pottery workshop", "Lisbon sunset", "北京", "天气", "画画", "hiking with camera", "support group pride",
    "career counseling mentor", "kids birthday cake", "guitar concert", "sci-fi novel", "e-mail co-worker",
    "Straße façade", "crème brûlée", "don't", "When did Melanie paint a sunset?",
    "What did Caroline research?", "adoption daughter", "Jon", "well-known book", "ångström jalapeño",
]


def _corpus(seed: int = 16, sessions: int = 8, turns: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    day = 0
    for s in range(sessions):
        day += rng.randint(3, 40)
        for t in range(turns):
            n = rng.randint(3, 25)
            text = " ".join(rng.choice(WORDS) for _ in range(n))
            if rng.random() < 0.08:
                text += " " + rng.choice(CJK)
            if rng.random() < 0.05:
                text = text.capitalize() + "!"
            item: dict[str, Any] = {"text": text, "speaker": SPEAKERS[(s + t) % len(SPEAKERS)],
                                    "session": f"session_{s}", "occurred_at": f"2023-{1 + day // 31:02d}-"
                                    f"{1 + day % 28:02d}T{8 + t // 4:02d}:00:00Z"}
            if rng.random() < 0.1:
                item["metadata"] = {"blip_caption": "a photo of " + " ".join(rng.choice(WORDS) for _ in range(4))}
            items.append(item)
    return items


def _open(target: str) -> Memory:
    return chronomem.open(target, clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")


def _fill(mem: Memory, items: Sequence[dict[str, Any]], supersede: Sequence[tuple[int, int]] = ()) -> list[str]:
    ids = mem.add_episodes(items)
    for old, new in supersede:
        mem.supersede_episode(ids[old], ids[new])
    return ids


def _ranked(mem: Memory, query: str, f: EpisodeFilter, limit: int,
            weights: tuple[float, float, float, float] = WEIGHTS) -> list[tuple[str, float]]:
    match = fts_query(query)
    assert match is not None
    es = episode_store(mem.store)
    hits = es.lexical_search(match, f, limit, weights)
    # (episode ids are the store's own: an episode is known by what was written)
    recs = es.episodes_by_rowids([r for r, _s in hits])
    ids = {r.rowid: f"{r.session}|{r.occurred_at}|{r.speaker}|{r.text}" for r in recs}
    # episodes alike in all of that (a random corpus repeats a turn) are told apart by
    # their order in the ranking, which the backends share (their scores differ: neighbours)
    seen: dict[str, int] = {}
    out = []
    for r, s in hits:
        n = seen[ids[r]] = seen.get(ids[r], -1) + 1
        out.append((f"{ids[r]}#{n}", s))
    return out


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)


def assert_same_ranking(lite: list[tuple[str, float]], pg: list[tuple[str, float]], top: int, what: str) -> None:
    """The first ``top`` of ``pg`` are ``lite``'s, in its order up to ties,
    with the same scores; ``lite`` and ``pg`` run past ``top`` (ties there)."""
    assert len(pg) == len(lite), (what, len(pg), len(lite))
    by_id = dict(lite)
    for i, (eid, score) in enumerate(pg[:top]):
        assert _close(score, lite[i][1]), (what, i, score, lite[i][1])
        # the same episode, or one FTS5 scored the same (a tie it ordered otherwise)
        assert eid in by_id and _close(by_id[eid], score), (what, i, eid, score, lite[:top])
    assert len({eid for eid, _s in pg[:top]}) == len(pg[:top])


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple[Memory, Memory]]:
    items = _corpus()
    sup = [(5, 9), (47, 60), (130, 131)]
    lite = _open(str(tmp_path_factory.mktemp("bm25") / "lite.db"))
    pg = _open(pg_schema_url(request))
    try:
        _fill(lite, items, sup)
        _fill(pg, items, sup)
        yield lite, pg
    finally:
        lite.close()
        pg.close()


def _filters(mem: Memory) -> dict[str, EpisodeFilter]:
    ns = mem._scope.ns_id
    world_at = to_us(_dt.datetime.fromisoformat("2023-04-15T00:00:00+00:00"))
    # about 150 episodes into the fill
    recorded_at = to_us(_dt.datetime.fromisoformat(T0.replace("Z", "+00:00"))) + 150_000_000
    return {
        "raw": EpisodeFilter(ns),
        "as_world": EpisodeFilter(ns, occurred_by=world_at, not_superseded_at=world_at),
        "as_recorded": EpisodeFilter(ns, recorded_by=recorded_at),
        "session": EpisodeFilter(ns, session="session_3"),
    }


@pytest.mark.parametrize("view", ["raw", "as_world", "as_recorded", "session"])
def test_the_top_10_and_scores_are_fts5s(both: tuple[Memory, Memory], view: str) -> None:
    lite, pg = both
    checked = 0
    for q in QUERIES:
        a = _ranked(lite, q, _filters(lite)[view], 40)
        b = _ranked(pg, q, _filters(pg)[view], 40)
        assert_same_ranking(a, b, 10, f"{view}: {q}")
        checked += bool(a)
    assert checked >= 25  # the queries find something


@pytest.mark.parametrize("weights", [(2.0, 0.5, 0.0, 1.0), (1.0, 1.0, 1.0, 1.0), (0.3, 3.0, 0.6, 0.0)])
def test_other_column_weights_rank_alike(both: tuple[Memory, Memory],
                                         weights: tuple[float, float, float, float]) -> None:
    """Weights above 1 and 0 (PostgreSQL's ts_rank_cd takes them in [0, 1]: scaled)."""
    lite, pg = both
    for q in QUERIES:
        assert_same_ranking(_ranked(lite, q, _filters(lite)["raw"], 40, weights),
                            _ranked(pg, q, _filters(pg)["raw"], 40, weights), 10, f"{weights}: {q}")


def test_a_negative_weight_is_refused_on_postgres(both: tuple[Memory, Memory]) -> None:
    _lite, pg = both
    with pytest.raises(InvalidInputError, match="must not be negative"):
        _ranked(pg, "dog", _filters(pg)["raw"], 10, (1.0, -1.0, 0.5, 0.5))


def test_search_with_the_lexical_preset_agrees(both: tuple[Memory, Memory]) -> None:
    lite, pg = both
    for q in QUERIES[:10]:
        for view in ("as_world", "as_recorded"):
            a, b = ([(f"{h.episode.session}|{h.episode.text}", h.score)
                     for h in mem.search(q, k=10, view=view, config="lexical", at="2023-05-01")]
                    for mem in (lite, pg))
            assert_same_ranking(a, b, 10, f"{view}: {q}")


def test_the_index_holds_fts5s_tokens(both: tuple[Memory, Memory]) -> None:
    """The tsvector of an episode is FTS5's tokens (stemmed, folded),
    weighted by column; its dl the token count FTS5 counts."""
    _lite, pg = both
    es = episode_store(pg.store)
    with es._conn() as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT e.text, x.dl, x.tsv::text FROM episodes_fts x JOIN episodes e "
                            "ON e.rowid = x.rowid WHERE e.text LIKE '%%Caroline''s%%' LIMIT 1").fetchall()
    assert rows
    text, dl, tsv = rows[0]
    assert "'carolin'" in tsv and "'s'" in tsv and "Caroline" not in tsv
    assert dl >= len(text.split())


def test_a_split_term_is_a_phrase_as_in_fts5(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A query term that FTS5's tokenizer splits into several tokens (here
    a New Tai Lue sign that Unicode now calls a letter and FTS5's tables a
    combining mark, a separator) is a phrase:
    its tokens next to each other, in one column."""
    term = "ab\u19b0cd"  # a letter (Lo) to Python's regex, a separator to FTS5
    assert query_phrases([term]) == [("ab", "cd")]
    items = [
        {"text": f"x {term} y", "speaker": "A", "session": "s"},
        {"text": "ab and cd apart", "speaker": "B", "session": "t"},
        {"text": "cd ab reversed", "speaker": "C", "session": "u"},
        {"text": "ab", "speaker": "D", "session": "v"},
        {"text": "cd ab cd ab cd", "speaker": "E", "session": "w"},
    ]
    lite = _open(str(tmp_path / "p.db"))
    pg = _open(pg_schema_url(request))
    try:
        _fill(lite, items)
        _fill(pg, items)
        for q in (term, f"{term} reversed", f"ab {term}"):
            match = '"' + q.replace(" ", '" OR "') + '"'
            got = []
            for mem in (lite, pg):
                es = episode_store(mem.store)
                hits = es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, WEIGHTS)
                ids = {r.rowid: r.text for r in es.episodes_by_rowids([r for r, _s in hits])}
                got.append([(ids[r], s) for r, s in hits])
            assert_same_ranking(got[0], got[1], 10, q)
        assert [t for t, _s in got[1]][:1] == ["cd ab cd ab cd"]  # "ab cd" twice in one column
    finally:
        lite.close()
        pg.close()


def test_positions_and_lexemes_past_postgres_limits() -> None:
    """Documented limits: a long token is stored as its digest, a position
    past 16383 is stored at 16383."""
    (tokens,) = tokenize_rows([("a" * 3000 + " b", "", "", "")])
    tsv, dl = tsvector_literal(tokens)
    assert dl == 2 and "'~" in tsv and "'b':2A" in tsv
    (tokens,) = tokenize_rows([(" ".join(["w"] * 17000), "", "", "")])
    tsv, dl = tsvector_literal(tokens)
    assert dl == 17000 and tsv.endswith(",16383A")


def test_another_namespace_leaves_the_scores_as_they_were(request: pytest.FixtureRequest,
                                                          tmp_path: Path) -> None:
    url = pg_schema_url(request)
    items = _corpus(seed=3, sessions=3, turns=30)
    a = chronomem.open(url, "ns_a", clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
    lite = _open(str(tmp_path / "a.db"))
    try:
        _fill(a, items)
        _fill(lite, items)
        f = EpisodeFilter(a._scope.ns_id)
        before = {q: _ranked(a, q, f, 20) for q in QUERIES}
        b = chronomem.open(url, "ns_b", clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
        try:
            # many more episodes, full of the query words: FTS5 over one file would move every score
            _fill(b, _corpus(seed=4, sessions=10, turns=60))
            _fill(b, [{"text": " ".join(QUERIES)}] * 50)
            assert _ranked(b, "dog", EpisodeFilter(b._scope.ns_id), 5)
        finally:
            b.close()
        for q in QUERIES:
            assert _ranked(a, q, f, 20) == before[q], q
            # and they are those of a SQLite file holding namespace A alone
            assert_same_ranking(_ranked(lite, q, EpisodeFilter(lite._scope.ns_id), 20), before[q], 10, q)
    finally:
        a.close()
        lite.close()


_word = st.sampled_from(WORDS + CJK + ["a", "the", "x", "Ω", "ﬁle", "１２３"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(_word, min_size=1, max_size=12).map(" ".join), min_size=1, max_size=25),
       queries=st.lists(st.lists(_word, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=4),
       seed=st.integers(0, 1000))
def test_random_small_corpora_rank_alike(tmp_path_factory: pytest.TempPathFactory, pg_url: str,
                                         texts: list[str], queries: list[str], seed: int) -> None:
    rng = random.Random(seed)
    items = [{"text": t, "speaker": rng.choice(SPEAKERS), "session": f"s{rng.randint(0, 3)}"} for t in texts]
    ns = f"h_{uuid.uuid4().hex}"  # (examples repeat a seed: each gets a namespace of its own)
    path = tmp_path_factory.mktemp("hyp") / "h.db"
    lite = chronomem.open(str(path), ns, clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
    pg = chronomem.open(pg_url, ns, clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
    try:
        _fill(lite, items)
        _fill(pg, items)
        for q in queries:
            if fts_query(q) is None:
                continue
            assert_same_ranking(_ranked(lite, q, EpisodeFilter(lite._scope.ns_id), 30),
                                _ranked(pg, q, EpisodeFilter(pg._scope.ns_id), 30), 10, q)
    finally:
        lite.close()
        pg.close()


@pytest.fixture(scope="module")
def pg_url(request: pytest.FixtureRequest) -> str:
    """One PostgreSQL schema for every Hypothesis example: each writes a
    namespace of its own (the statistics are per namespace)."""
    return pg_schema_url(request)


def test_a_forked_child_tokenizes_with_a_table_of_its_own() -> None:
    from chronomem.store.sql import fts5 as fts5_bm25

    assert query_phrases(["Running"]) == [("run",)]  # the parent's table exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        fresh = getattr(fts5_bm25._local, "con", None) is None
        os._exit(0 if fresh and query_phrases(["Cafés"]) == [("cafe",)] else 1)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


_TERM = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TERM, max_size=6))
def test_remembered_term_tokens_are_the_tokenizers(terms: list[str]) -> None:
    """A term's remembered tokens are what FTS5 makes of it, asked first or again."""
    from chronomem.store.sql.fts5 import term_tokens

    want = [tuple(t for t, _c, _o in toks) for toks in tokenize_rows([(t, "", "", "") for t in terms])]
    assert term_tokens(terms) == want
    assert term_tokens(terms) == want


def test_the_term_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.store.sql import fts5

    monkeypatch.setattr(fts5, "MAX_CACHED_TERMS", 8)
    monkeypatch.setattr(fts5, "_TERMS", {})
    for i in range(50):
        terms = [f"running{i}", f"cafés{i}", "e-mail"]
        assert fts5.term_tokens(terms) == [(f"running{i}",), (f"cafes{i}",), ("e", "mail")]
        assert len(fts5._TERMS) <= 8
    assert fts5.term_tokens(["Running", "_"]) == [("run",), ()]


def test_the_default_search_ranks_alike_on_both_backends(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The default hybrid search (BM25 and MiniLM fused, the learned ranker)
    returns the same hits in the same order with the same scores from a
    SQLite file and a PostgreSQL schema holding the same episodes in one
    namespace (issue 16: the same ranking on both backends)."""
    from chronomem.service.evidence import default_embedder

    emb = default_embedder()
    items = _corpus(seed=5, sessions=4, turns=30)
    stores = [str(tmp_path / "hybrid.db"), pg_schema_url(request)]
    mems = [chronomem.open(s, clock=FakeClock(T0, tick=1.0), embedder=emb, timezone="UTC") for s in stores]
    try:
        for m in mems:
            _fill(m, items, [(3, 40)])
        compared = learned = 0
        for q in QUERIES:
            got = [[(f"{h.episode.session}|{h.episode.occurred_at}|{h.episode.text}", h.score, h.parts.fused)
                    for h in m.search(q, k=10, view="as_world", at="2024-06-01T00:00:00Z")] for m in mems]
            lite, pg = got
            assert len(lite) == len(pg), q
            for (ka, sa, fa), (kb, sb, fb) in zip(lite, pg, strict=True):
                assert abs(sa - sb) <= 1e-5 and abs(fa - fb) <= 1e-5, (q, ka, kb, sa, sb)
                # the same episode, or one scored the same (a tie the backends may order otherwise)
                assert ka == kb or any(k == ka and abs(s - sa) <= 1e-5 for k, s, _f in pg), (q, lite, pg)
            compared += len(lite)
            learned += sum(1 for _k, s, f in lite if abs(s - f) > 1e-6)  # a hit's score: the ranker's probability
        assert compared > 150 and learned > 150
    finally:
        for m in mems:
            m.close()


def test_a_namespace_ranks_alike_beside_another(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Both backends rank a namespace over its own statistics: beside
    another namespace full of the query words, a SQLite file and a
    PostgreSQL schema give the same top 10 with the same scores (issue 16;
    FTS5's own statistics span the file: ``store/sqlite/lexstats.py``)."""
    items = _corpus(seed=3, sessions=3, turns=30)
    stores = [str(tmp_path / "two.db"), pg_schema_url(request)]
    ranked = []
    for target in stores:
        a = chronomem.open(target, "ns_a", clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
        b = chronomem.open(target, "ns_b", clock=FakeClock(T0, tick=1.0), embedder=None, timezone="UTC")
        try:
            _fill(a, items)
            _fill(b, [{"text": " ".join(QUERIES)}] * 50)
            f = EpisodeFilter(a._scope.ns_id)
            ranked.append({q: _ranked(a, q, f, 20) for q in QUERIES})
        finally:
            a.close()
            b.close()
    for q in QUERIES:
        assert_same_ranking(ranked[0][q], ranked[1][q], 10, q)
