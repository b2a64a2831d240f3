"""SQLite's numpy copy of the FTS5 index (``store/sqlite/lexindex.py``, issue 20).

The copy must answer exactly as FTS5 does: the same rows, in the same order,
with bit-equal scores, for any query, any column weights and any filter;
after writes from this or another connection (new turns, neighbours
re-indexed, a reindex), after an erasure, after the log was pruned past it
and after an index write the log never saw. Every test compares against
FTS5 itself on a real SQLite file and checks that the copy answered.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronomem
from chronomem import FakeClock, Memory
from chronomem.service.evidence.episodes import episode_store
from chronomem.service.evidence.lexical import fts_query
from chronomem.store.protocol import EpisodeFilter
from chronomem.store.sql import fts5
from chronomem.store.sqlite import lexindex

W = (1.0, 1.0, 0.6, 0.4)
WORDS = ("dog dogs puppy running runs ran café cafe naïve Zoë garden gardening painted painting paint Caroline "
         "Caroline's Melanie don't it's 2023 42 3pm pottery workshop Lisbon sunset sunsets lake hiking hiked "
         "camera photo adopted support group pride career mentor school kids birthday cake guitar concert "
         "book books reading novel e-mail sci-fi Straße jalapeño 北京 天气").split()
QUERIES = ["dog", "running", "Caroline's painting", "café", "cafe naive", "2023", "3pm", "42 runs",
           "pottery workshop", "Lisbon sunset", "hiking with camera", "support group pride", "kids birthday cake",
           "guitar concert", "When did Melanie paint a sunset?", "What did Caroline read?", "book", "Straße",
           "jalapeño sunsets lake", "puppy adopted school mentor career"]


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexindex, "BUILD_MIN_ROWS", 1)


def _items(rng: random.Random, n: int, sessions: int = 6) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 18)))
        item: dict[str, Any] = {"text": text, "speaker": rng.choice(["Caroline", "Melanie", "Jon"]),
                                "session": f"s{rng.randrange(sessions)}",
                                "occurred_at": f"2023-0{1 + i % 9}-{1 + i % 27:02d}T10:00:00Z"}
        if rng.random() < 0.1:
            item["metadata"] = {"blip_caption": "a photo of " + rng.choice(WORDS)}
        out.append(item)
    return out


def _open(path: Path) -> Memory:
    return chronomem.open(str(path), clock=FakeClock("2024-03-01T10:00:00Z", tick=1.0), embedder=None,
                          timezone="UTC")


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = _open(tmp_path / "lex.db")
    m.add_episodes(_items(random.Random(20), 300))
    yield m
    m.close()


def _es(mem: Memory) -> Any:
    return episode_store(mem.store)


def _both(mem: Memory, query: str, *, limit: int = 40, weights: tuple[float, ...] = W,
          f: EpisodeFilter | None = None) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """``(the copy's answer, FTS5's answer)``; asserts the copy answered."""
    es = _es(mem)
    match = fts_query(query)
    assert match is not None
    f = f or EpisodeFilter(mem._scope.ns_id)
    before = es._lexcopy.answered
    copy = es.lexical_search(match, f, limit, weights)
    assert es._lexcopy.answered == before + 1, "the copy did not answer"
    es._lexcopy.disabled = True
    try:
        fts = es.lexical_search(match, f, limit, weights)
    finally:
        es._lexcopy.disabled = False
    return copy, fts


def _assert_all_equal(mem: Memory, **kw: Any) -> None:
    for q in QUERIES:
        copy, fts = _both(mem, q, **kw)
        assert copy == fts, q  # rows, order and scores, bit for bit


def test_the_copy_ranks_every_query_as_fts5_does(mem: Memory) -> None:
    assert _es(mem)._lexcopy.build_now()
    _assert_all_equal(mem)
    _assert_all_equal(mem, limit=3)
    _assert_all_equal(mem, weights=(2.0, 0.5, 1.0, 0.0))  # any column weights
    ns = mem._scope.ns_id
    _assert_all_equal(mem, f=EpisodeFilter(ns, session="s1"))  # a filter applied after the ranking


def test_beside_another_namespace_the_copy_ranks_as_the_token_instances_do(mem: Memory, tmp_path: Path) -> None:
    """A namespace beside another is ranked over its own statistics: by the
    copy, and without it from FTS5's token instances (``lexstats``), bit
    for bit alike, before and after replayed writes."""
    other = chronomem.open(str(tmp_path / "lex.db"), namespace="other", clock=FakeClock("2024-03-01T10:00:00Z"),
                           embedder=None, timezone="UTC")
    try:
        other.add_episodes([{"text": "dog " * 5 + w} for w in WORDS * 8])  # many strong matches elsewhere
        assert _es(mem)._lexcopy.build_now() and _es(other)._lexcopy.build_now()
        _assert_all_equal(mem)
        _assert_all_equal(other)
        other.add_episodes([{"text": "sunset dog lake"}] * 30)  # replayed, with their namespace
        _assert_all_equal(mem)
        _assert_all_equal(other)
    finally:
        other.close()


def test_writes_after_the_copy_are_replayed(mem: Memory, tmp_path: Path) -> None:
    es = _es(mem)
    assert es._lexcopy.build_now()
    seq = es._lexcopy.current.seq
    # new turns in existing sessions: their neighbours' index rows are written again
    mem.add_episodes(_items(random.Random(21), 40))
    _assert_all_equal(mem)
    post = es._lexcopy.current
    assert post is not None and post.seq > seq and post.ndead > 0  # replayed, not rebuilt
    # another connection (another process's) writes: replayed too
    other = _open(tmp_path / "lex.db")
    try:
        other.add_episodes(_items(random.Random(22), 25))
    finally:
        other.close()
    _assert_all_equal(mem)
    assert es._lexcopy.current is post


def test_a_reindex_is_replayed_and_the_answers_stay_equal(mem: Memory) -> None:
    es = _es(mem)
    assert es._lexcopy.build_now()
    mem.reindex(lexical=True, vectors=False)  # 300 rows rewritten: every one replayed
    _assert_all_equal(mem)


def test_an_erasure_drops_the_copy_and_fts5_answers_until_it_is_rebuilt(mem: Memory) -> None:
    es = _es(mem)
    victim = mem.add_episode("zanzibarquux pottery workshop", speaker="Jon").id
    assert es._lexcopy.build_now()
    assert "zanzibarquux" in es._lexcopy.current.terms
    mem.erase_episode(victim, confirm=True)
    match = fts_query("pottery workshop")
    assert match is not None
    before = es._lexcopy.answered
    es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, W)
    assert es._lexcopy.answered == before and es._lexcopy.current is None  # FTS5 answered
    assert es._lexcopy.build_now()
    assert "zanzibarquux" not in es._lexcopy.current.terms  # the erased turn's tokens are gone
    _assert_all_equal(mem)


def test_a_copy_older_than_the_pruned_log_is_rebuilt(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chronomem.store.sqlite.episodes.LOG_KEEP", 10)
    monkeypatch.setattr("chronomem.store.sqlite.episodes.LOG_PRUNE_EVERY", 16)
    es = _es(mem)
    assert es._lexcopy.build_now()
    mem.add_episodes(_items(random.Random(23), 60))
    match = fts_query("dog")
    assert match is not None
    before = es._lexcopy.answered
    got = es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, W)
    assert es._lexcopy.answered == before and got  # the log no longer reaches back: FTS5 answered
    assert es._lexcopy.build_now()
    _assert_all_equal(mem)


def test_an_index_write_the_log_never_saw_is_caught_by_the_counts(mem: Memory, tmp_path: Path) -> None:
    es = _es(mem)
    assert es._lexcopy.build_now()
    con = sqlite3.connect(str(tmp_path / "lex.db"))
    with con:  # a row added behind chronomem's back, plus an unrelated logged write
        con.execute("INSERT INTO episodes_fts (rowid, body, speaker, context, neighbors) "
                    "VALUES (99999, 'dog dog dog', '', '', '')")
        con.execute("INSERT INTO episode_index_log (episode_rowid) VALUES (1)")
    con.close()
    match = fts_query("dog")
    assert match is not None
    before = es._lexcopy.answered
    es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, W)
    assert es._lexcopy.answered == before and es._lexcopy.current is None  # counts disagreed: dropped


def test_a_term_fts5_reads_as_a_phrase_is_left_to_fts5(mem: Memory) -> None:
    es = _es(mem)
    assert es._lexcopy.build_now()
    match = '"pottery workshop" OR "dog"'  # (fts_query splits such terms; a caller may not)
    before = es._lexcopy.answered
    got = es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, W)
    assert got and es._lexcopy.answered == before


def test_no_copy_below_the_size_threshold_or_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexindex, "BUILD_MIN_ROWS", 1000)
    m = _open(tmp_path / "small.db")
    try:
        m.add_episodes(_items(random.Random(1), 50))
        assert not _es(m)._lexcopy.build_now()
    finally:
        m.close()
    assert lexindex.LexIndex(":memory:").disabled


def test_the_copy_is_built_in_the_background_at_the_second_search(mem: Memory,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexindex, "BUILD_DELAY_S", 0.0)
    es = _es(mem)
    match = fts_query("garden dog")
    assert match is not None
    f = EpisodeFilter(mem._scope.ns_id)
    assert es._lexcopy.current is None
    es.lexical_search(match, f, 10, W)
    es.lexical_search(match, f, 10, W)
    thread = next((t for t in __import__("threading").enumerate() if t.name == "chronomem-lexcopy"), None)
    if thread is not None:
        thread.join(30)
    es.lexical_search(match, f, 10, W)
    assert es._lexcopy.current is not None and es._lexcopy.answered == 1


def test_a_one_shot_process_makes_no_copy(mem: Memory) -> None:
    """Searches in quick succession (a CLI call, a hook) never start a build."""
    es = _es(mem)
    match = fts_query("garden dog")
    assert match is not None
    for _ in range(5):
        es.lexical_search(match, EpisodeFilter(mem._scope.ns_id), 10, W)
    assert not es._lexcopy._building and es._lexcopy.current is None


def test_the_copy_tokenizes_as_the_index_table() -> None:
    """The copy re-tokenises replayed rows with ``fts5.TOKENIZE``: it must be
    the tokenizer ``episodes_fts`` was made with."""
    from chronomem.store.migrations import load_migrations
    sql = dict((name, body) for _n, name, body in load_migrations("sqlite"))["0002_episodes"]
    assert f"tokenize = '{fts5.TOKENIZE}'" in sql


def test_fts5_averages_reads_the_counts_bm25_uses(mem: Memory, tmp_path: Path) -> None:
    con = sqlite3.connect(str(tmp_path / "lex.db"))
    try:
        rows, tokens = lexindex.fts5_averages(con)
        assert rows == con.execute("SELECT count(*) FROM episodes_fts").fetchone()[0] == 300
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 'episodes_fts', 'instance')")
        assert tokens == con.execute("SELECT count(*) FROM temp.v").fetchone()[0]
    finally:
        con.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), more=st.integers(0, 30),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
       weights=st.tuples(*[st.sampled_from([0.0, 0.4, 0.6, 1.0, 2.5])] * 4))
def test_random_stores_and_queries_rank_alike(tmp_path_factory: pytest.TempPathFactory, seed: int, n: int,
                                              more: int, query: list[str], weights: tuple[float, ...]) -> None:
    m = _open(tmp_path_factory.mktemp("h") / "h.db")
    try:
        rng = random.Random(seed)
        m.add_episodes(_items(rng, n, sessions=3))
        assert _es(m)._lexcopy.build_now()
        m.add_episodes(_items(rng, more, sessions=3))  # replayed
        q = " ".join(w for w in query if w not in ("e-mail", "sci-fi")) or "dog"
        match = fts_query(q)
        if match is None:
            return
        copy, fts = _both(m, q, limit=10, weights=weights)
        assert copy == fts
    finally:
        m.close()
