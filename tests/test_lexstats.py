"""Each namespace's BM25 statistics on SQLite (``store/sqlite/lexstats.py``, issue 16).

FTS5's ``bm25`` reads its statistics over the whole table, so one
namespace's episodes moved another's scores. Now every namespace is ranked
over its own rows, tokens and term counts, kept in ``episode_index_stats``
by every index write: the counts must equal a recount from FTS5's own token
instances after any write, reindex, erasure, repair and restore, and after
the migration that adds them; and a namespace in a file beside another must rank
exactly (rows, order, bits) as in a file holding it alone, with and without
the warm numpy copy, under filters and any column weights.
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
from chronomem.store.sqlite import lexindex, lexstats

W = (1.0, 1.0, 0.6, 0.4)
WORDS = ("dog dogs puppy running runs café naïve Zoë garden painted painting Caroline Caroline's Melanie "
         "don't it's 2023 42 3pm pottery workshop Lisbon sunset lake hiking camera photo e-mail sci-fi "
         "北京 天气").split()
QUERIES = ["dog", "running", "Caroline's painting", "café", "2023 3pm", "pottery workshop", "Lisbon sunset",
           "e-mail", "don't", "sci-fi camera", "北京", "When did Melanie paint a sunset?"]


def _items(rng: random.Random, n: int, sessions: int = 4) -> list[dict[str, Any]]:
    return [{"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))),
             "speaker": rng.choice(["Caroline", "Melanie", "Jon"]), "session": f"s{rng.randrange(sessions)}",
             "occurred_at": f"2023-0{1 + i % 9}-{1 + i % 27:02d}T10:00:00Z"} for i in range(n)]


def _open(path: Path, ns: str = "default") -> Memory:
    return chronomem.open(str(path), ns, clock=FakeClock("2024-03-01T10:00:00Z", tick=1.0), embedder=None,
                          timezone="UTC")


def _truth(path: Path) -> dict[int, tuple[int, int]]:
    """Each namespace's (rows, tokens), counted from FTS5's rows and token instances."""
    con = sqlite3.connect(str(path))
    try:
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 'episodes_fts', 'instance')")
        rows = dict(con.execute("SELECT e.ns_id, count(*) FROM episodes_fts f JOIN episodes e ON e.rowid = f.rowid "
                                "GROUP BY e.ns_id").fetchall())
        toks = dict(con.execute("SELECT e.ns_id, count(*) FROM temp.v i JOIN episodes e ON e.rowid = i.doc "
                                "GROUP BY e.ns_id").fetchall())
        return {int(ns): (int(n), int(toks.get(ns, 0))) for ns, n in rows.items()}
    finally:
        con.close()


def _kept(path: Path) -> dict[int, tuple[int, int]]:
    con = sqlite3.connect(str(path))
    try:
        return {int(ns): (int(r), int(t)) for ns, r, t in
                con.execute("SELECT ns_id, nrow, ntok FROM episode_index_stats WHERE nrow != 0 OR ntok != 0")}
    finally:
        con.close()


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Memory, Memory, Path]]:
    path = tmp_path / "two.db"
    a, b = _open(path, "ns_a"), _open(path, "ns_b")
    a.add_episodes(_items(random.Random(1), 120))
    b.add_episodes([{"text": "dog " * 4 + w, "session": "x"} for w in WORDS * 3])
    yield a, b, path
    a.close()
    b.close()


def test_the_counts_follow_every_index_write(two: tuple[Memory, Memory, Path]) -> None:
    a, b, path = two
    assert _kept(path) == _truth(path) and len(_truth(path)) == 2
    a.add_episodes(_items(random.Random(2), 30))  # neighbours' rows written again
    assert _kept(path) == _truth(path)
    a.reindex(lexical=True, vectors=False)
    assert _kept(path) == _truth(path)
    victim = a.add_episode("zanzibarquux dog", session="s1").id
    a.erase_episode(victim, confirm=True)  # its row deleted, its neighbours' rewritten
    assert _kept(path) == _truth(path)
    old = b.add_episode("an old dog turn", session="x").id
    b.supersede_episode(old, b.add_episode("a new dog turn", session="x").id)
    assert _kept(path) == _truth(path)


def test_a_rolled_back_write_leaves_the_counts_as_they_were(two: tuple[Memory, Memory, Path]) -> None:
    a, _b, path = two
    before = _kept(path)
    rowid = episode_store(a.store).episodes_by_rowids([1])[0].rowid
    with pytest.raises(RuntimeError), a.store.write() as tx:
        tx.delete_episode_index(rowid)  # counted at commit, which never comes
        raise RuntimeError("abandoned")
    assert _kept(path) == before == _truth(path)


def test_pruning_an_orphan_index_row_counts_again(two: tuple[Memory, Memory, Path]) -> None:
    a, _b, path = two
    con = sqlite3.connect(str(path))
    with con:  # index rows no live episode names, written behind chronomem's back
        for rowid in (99998, 99999):
            con.execute("INSERT INTO episodes_fts (rowid, body, speaker, context, neighbors) "
                        "VALUES (?, 'dog dog dog', '', '', '')", (rowid,))
    con.close()
    assert a.store.prune_derived()[0] == 2  # (counted again once, at the commit)
    assert _kept(path) == _truth(path)


def test_migration_0015_counts_a_store_written_before_it(two: tuple[Memory, Memory, Path]) -> None:
    a, b, path = two
    want = _truth(path)
    a.close()
    b.close()
    con = sqlite3.connect(str(path))
    with con:  # the store as schema 14 left it
        con.execute("DROP TABLE episode_index_stats")
        con.execute("DELETE FROM schema_migrations WHERE version = 15")
    con.close()
    m = _open(path, "ns_a")
    try:
        assert m.store.schema_version() == 15
        assert _kept(path) == want
    finally:
        m.close()


def _ranked(mem: Memory, query: str, *, limit: int = 30, weights: tuple[float, ...] = W,
            copy: bool = False, **filt: Any) -> list[tuple[str, float]]:
    """The lexical ranking as ``(occurred_at|text, score)``; ``copy``: asserts the warm copy answered."""
    es = episode_store(mem.store)
    match = fts_query(query)
    assert match is not None
    before = es._lexcopy.answered
    es._lexcopy.disabled = not copy
    try:
        hits = es.lexical_search(match, EpisodeFilter(mem._scope.ns_id, **filt), limit, weights)
    finally:
        es._lexcopy.disabled = False
    # (the copy answers twice when a filter left too few of its first rows)
    assert es._lexcopy.answered - before in ((1, 2) if copy else (0,))
    recs = {r.rowid: r for r in es.episodes_by_rowids([r for r, _s in hits])}
    return [(f"{recs[r].session}|{recs[r].occurred_at}|{recs[r].text}", s) for r, s in hits]


def _same_as_alone(beside: Memory, alone: Memory, **kw: Any) -> None:
    for q in QUERIES:
        want = _ranked(alone, q, **kw)
        assert _ranked(beside, q, **kw) == want, q  # rows, order and bits (FTS5's own bm25 in `alone`)
        if lexindex.BUILD_MIN_ROWS <= 1:
            assert _ranked(beside, q, copy=True, **kw) == want, q


@pytest.mark.parametrize("with_copy", [False, True])
def test_a_namespace_ranks_as_in_a_file_of_its_own(two: tuple[Memory, Memory, Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, with_copy: bool) -> None:
    a, b, _path = two
    alone = _open(tmp_path / "alone.db", "ns_a")
    try:
        alone.add_episodes(_items(random.Random(1), 120))
        if with_copy:
            monkeypatch.setattr(lexindex, "BUILD_MIN_ROWS", 1)
            assert episode_store(a.store)._lexcopy.build_now()
        _same_as_alone(a, alone)
        _same_as_alone(a, alone, limit=3)
        _same_as_alone(a, alone, weights=(2.0, 0.5, 1.0, 0.0))
        _same_as_alone(a, alone, limit=5, session="s3")  # a filter that drops most of the ranking
        b.add_episodes([{"text": "sunset lake dog café"}] * 40)  # the other namespace grows: nothing moves
        more = _items(random.Random(3), 15)
        a.add_episodes(more)
        alone.add_episodes(more)
        _same_as_alone(a, alone)
    finally:
        alone.close()


def test_a_store_of_one_namespace_keeps_fts5s_own_ranking(tmp_path: Path) -> None:
    """Where the namespace is the whole table, FTS5 ranks (the statistics
    are the same): the namespace's own scoring gives the same bits."""
    m = _open(tmp_path / "one.db")
    try:
        m.add_episodes(_items(random.Random(4), 80))
        es = episode_store(m.store)
        con = es._con
        stats = lexstats.namespace_stats(con, m._scope.ns_id)
        assert stats == lexindex.fts5_averages(con)
        from chronomem.store.sql.fts5 import term_tokens
        from chronomem.store.sqlite.episodes import _match_terms
        for q in QUERIES:
            match = fts_query(q)
            assert match is not None
            fts = _ranked(m, q, limit=1000)
            own = lexstats.namespace_bm25(con, term_tokens(_match_terms(match)), W, m._scope.ns_id, stats)
            recs = {r.rowid: r for r in es.episodes_by_rowids([r for r, _s in own])}
            assert [(f"{recs[r].session}|{recs[r].occurred_at}|{recs[r].text}", s) for r, s in own] == fts, q
    finally:
        m.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), other=st.integers(1, 40),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
       weights=st.tuples(*[st.sampled_from([0.0, 0.4, 1.0, 2.5])] * 4))
def test_random_namespaces_rank_as_if_alone(tmp_path_factory: pytest.TempPathFactory, seed: int, n: int,
                                           other: int, query: list[str], weights: tuple[float, ...]) -> None:
    d = tmp_path_factory.mktemp("ns")
    rng = random.Random(seed)
    items, noise = _items(rng, n, sessions=2), _items(rng, other, sessions=2)
    beside, neighbour, alone = _open(d / "two.db", "a"), _open(d / "two.db", "b"), _open(d / "one.db", "a")
    try:
        neighbour.add_episodes(noise)
        beside.add_episodes(items)
        alone.add_episodes(items)
        q = " ".join(query)
        if fts_query(q) is None:
            return
        assert _ranked(beside, q, weights=weights) == _ranked(alone, q, weights=weights)
        assert _kept(d / "two.db") == _truth(d / "two.db")
    finally:
        for m in (beside, neighbour, alone):
            m.close()


def test_rows_of_many_tokens_rank_as_if_alone(tmp_path: Path) -> None:
    """A column of 128 tokens or more has a varint of several bytes in FTS5's
    ``docsize`` record: its length is still read exactly."""
    rng = random.Random(9)
    items = _items(rng, 30) + [{"text": " ".join(rng.choice(WORDS) for _ in range(n)), "session": "s0"}
                               for n in (127, 128, 300, 12_000)]
    beside, other, alone = _open(tmp_path / "two.db", "a"), _open(tmp_path / "two.db", "b"), _open(tmp_path / "one.db")
    try:
        other.add_episodes(_items(rng, 20))
        beside.add_episodes(items)
        alone.add_episodes(items)
        for q in QUERIES:
            assert _ranked(beside, q) == _ranked(alone, q), q
        assert _kept(tmp_path / "two.db") == _truth(tmp_path / "two.db")
    finally:
        for m in (beside, other, alone):
            m.close()


def test_an_exported_namespace_restored_beside_another_counts_and_ranks_alike(
        two: tuple[Memory, Memory, Path], tmp_path: Path) -> None:
    """Export and import (the restore writes every index row again) keep the
    counts true, and the restored namespace ranks as the original."""
    import io

    from chronomem.io import export_jsonl, import_jsonl

    a, _b, _path = two
    buf = io.StringIO()
    export_jsonl(a, buf)
    target = tmp_path / "restored.db"
    neighbour, restored = _open(target, "other"), _open(target, "ns_a")
    try:
        neighbour.add_episodes(_items(random.Random(5), 40))
        import_jsonl(restored, io.BytesIO(buf.getvalue().encode()))
        assert _kept(target) == _truth(target)
        for q in QUERIES:
            assert _ranked(restored, q) == _ranked(a, q), q
    finally:
        neighbour.close()
        restored.close()
