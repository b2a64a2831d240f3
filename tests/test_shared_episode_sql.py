"""The episode SQL both backends share (``store/_baseepisodes.py``): every
statement, composed for the backend's placeholder and list binding, prepares
against its real schema, and the shared reads that cut long lists into
statements (SQLite binds each value, PostgreSQL one array) answer alike."""

from __future__ import annotations

from typing import Any

import pytest

import chronomem
from chronomem.errors import InvalidInputError
from chronomem.store.protocol import EpisodeFilter, EpisodeRecord
from chronomem.store.sql.episodes import EpisodeSQL

# the attributes of EpisodeSQL that are pieces a caller joins, not statements
_PIECES = {
    "in_ns", "times_head", "time_values", "episodes_head", "list_episodes_tail",
    "episode_times_head", "episode_times_tail", "citing_head", "citing_sources", "not_superseded_known",
    "import_keys_head", "pooled_head",
}


def _statements(store: Any, sql: EpisodeSQL) -> dict[str, tuple[str, list[Any]]]:
    """Every complete shared statement of ``sql``, with parameters to EXPLAIN it."""
    ph = "?" if store.backend == "sqlite" else "%s"
    out = {k: (v, [None] * v.count(ph)) for k, v in vars(sql).items() if isinstance(v, str) and k not in _PIECES}
    where, params = sql.where(EpisodeFilter(1, recorded_by=2, not_superseded_at=3, session="s", since=4, until=5))
    assert len(where) == 7 and params == [1, 2, 3, "s", 4, 5]
    # the as_world view as known at a time: supersessions recorded by then only
    kwhere, kparams = sql.where(EpisodeFilter(1, recorded_by=2, occurred_by=6, not_superseded_at=6,
                                              supersessions_recorded_by=2))
    assert len(kwhere) == 5 and kparams == [1, 2, 6, 6, 2] and sql.not_superseded_known in kwhere
    out["list_episodes/known"] = (sql.episodes_head + " AND ".join(kwhere) + sql.list_episodes_tail,
                                  [*kparams, 10, 0])
    out["list_episodes"] = (sql.episodes_head + " AND ".join(where) + sql.list_episodes_tail, [*params, 10, 0])
    out["insert_times"] = (sql.times_head + ", ".join([sql.time_values] * 2), [1, 2, 3, "p", 4] * 2)
    for n in (1, 3):
        ids = list(range(n))
        cond, p = store._in("e.rowid", ids)
        out[f"episodes_by_rowids/{n}"] = (sql.episodes_head + cond, p)
        cond, p = store._in("episode_rowid", ids)
        out[f"episode_times/{n}"] = (sql.episode_times_head + cond + sql.episode_times_tail, p)
        cond, p = store._in("e.rowid", ids)
        out[f"pooled_episodes/{n}"] = (sql.pooled_head + cond, p)
        a, pa = store._in("episode_id", [str(i) for i in ids])
        b, pb = store._in("s.episode_id", [str(i) for i in ids])
        out[f"facts_citing/{n}"] = (sql.citing_head + a + sql.citing_sources + b, [1, *pa, *pb])
        cond, p = store._in("key", [str(i) for i in ids])
        out[f"import_keys/{n}"] = (sql.import_keys_head + cond, [1, *p])
    return out


def test_every_shared_episode_statement_prepares(store_url: str) -> None:
    with chronomem.open(store_url) as mem:
        store: Any = mem.store
        other = "%s" if store.backend == "sqlite" else "?"
        with store.write() as tx:
            assert tx.ep_sql is store.ep_sql
            statements = _statements(store, tx.ep_sql)
            assert len(statements) > 30
            for name, (sql, params) in statements.items():
                assert other not in sql, name
                # EXPLAIN parses and plans the statement against the schema without running it
                tx._execute("EXPLAIN " + sql, params)


def _episode(i: int, ns: int) -> EpisodeRecord:
    return EpisodeRecord(0, f"ep-{i}", ns, f"text {i}", None, None, 1000 + i, None, "s", None, None)


def test_shared_reads_cut_long_lists_alike(store_url: str) -> None:
    with chronomem.open(store_url) as mem:
        store: Any = mem.store
        ns = mem._ns
        n = 1100  # more than one chunk of rowids (500) and of episode ids (400)
        with store.write() as tx:
            rowids = [tx.insert_episode(_episode(i, ns)) for i in range(n)]
            tx.insert_episode_times([(r, r * 10, r * 10 + 1, f"p{r}", 2) for r in rowids])
            tx.insert_episode_times([(r, r * 10 + 5, r * 10 + 6, f"q{r}", 3) for r in rowids[::100]])
            assert tx.adjacent_episodes(store.episode_by_id("ep-1"))[0] == store.episode_by_id("ep-0")
        mem.add_fact("A", "p", "x", episode_id="ep-3")
        mem.add_fact("B", "p", "y", episode_id="ep-1050")

        wanted = list(reversed(rowids)) + [max(rowids) + 7]  # the last one does not exist
        got = store.episodes_by_rowids(wanted)
        assert [r.rowid for r in got] == wanted[:-1]
        assert [r.id for r in got[:2]] == [f"ep-{n - 1}", f"ep-{n - 2}"]
        assert store.episodes_by_rowids([]) == []

        times = store.episode_times(rowids)
        assert len(times) == n + len(rowids[::100])
        assert [t[0] for t in times] == sorted(t[0] for t in times)
        first = [t for t in times if t[0] == rowids[0]]
        assert first == [(rowids[0], rowids[0] * 10, rowids[0] * 10 + 1, f"p{rowids[0]}", 2),
                         (rowids[0], rowids[0] * 10 + 5, rowids[0] * 10 + 6, f"q{rowids[0]}", 3)]
        assert store.episode_times([]) == []

        citing = store.facts_citing_episodes(ns, [f"ep-{i}" for i in range(n)])
        assert sorted(e for e, _f in citing) == ["ep-1050", "ep-3"]
        assert store.facts_citing_episodes(ns, []) == []

        assert store.episode_count(ns) == n
        assert [r.id for r in store.episode_index_rows(ns, rowids[-3], 10)] == [f"ep-{n - 2}", f"ep-{n - 1}"]
        page = store.list_episodes(EpisodeFilter(ns, since=1000 + 5, until=1000 + 8), 10)
        assert [r.id for r in page] == ["ep-5", "ep-6", "ep-7"]


def test_episode_generation_and_models(store_url: str) -> None:
    with chronomem.open(store_url) as mem:
        store: Any = mem.store
        start = store.episode_generation()
        with store.write() as tx:
            tx.bump_episode_generation()
            tx.bump_episode_generation()
            model = tx.embedding_model_id("m", 4)
            assert tx.embedding_model_id("m", 4) == model
            with pytest.raises(InvalidInputError, match="recorded with 4 dimensions"):
                tx.embedding_model_id("m", 8)
        assert store.episode_generation() == start + 2
        assert store.embedding_model("m") == (model, 4)
        assert store.embedding_model("absent") is None
        assert (model, "m", 4) in store.embedding_models()
        assert store.vector_stats(mem._ns, model) == (0, 0)
