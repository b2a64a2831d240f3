"""Searches in many threads while another thread adds episodes to the same
session (issue 15, point 7): the shared vector cache hands each search an
immutable snapshot, so no search fails (it used to raise "operands could not be
broadcast together with shapes (674,) (673,)") and every answer is right: its
hits are episodes that exist, and a search started after an episode was
committed finds it when the query is its text. A tiny switch interval makes
the threads interleave inside the cache's code paths."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem.service.evidence import SearchConfig
from chronomem.store.protocol import EpisodeFilter
from contract._helpers import MemoryFactory
from hash_embedder import HashEmbedder

READERS = 6
EPISODES = 1500
WRITE_BUDGET = 7.0  # seconds of writing, once the two sides have overlapped enough
MIN_WRITES, MIN_SEARCHES = 100, 3  # "enough": writes and searches per reader, however slow the machine
HARD_LIMIT = 90.0  # seconds: a machine too slow even for that fails here, not by hanging


@pytest.fixture
def tiny_switch_interval() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _text(j: int) -> str:
    return f"turn zq{j}x says kiwi{j % 7} and mango{j % 11}"


def _race(mem: chronomem.Memory, budget: float, config: SearchConfig | None = None) -> None:
    """``READERS`` threads search for the last committed episode's text while
    this thread adds episodes to their session, for about ``budget`` seconds
    (longer on a machine too loaded to overlap the two sides by then)."""
    committed: list[tuple[str, str]] = [(mem.add_episode("the first turn", session="s1").id, "the first turn")]
    stop = threading.Event()
    errors: list[str] = []
    seen: set[str] = set()
    misses: list[str] = []
    searches = [0] * READERS

    def reader(i: int) -> None:
        # half filter by session (the exact path's session mask), half read raw
        opts: dict[str, Any] = {"session": "s1"} if i % 2 else {"view": "raw"}
        while not stop.is_set():
            want_id, want_text = committed[-1]  # committed before this search starts
            try:
                hits = mem.search(want_text, k=5, config=config, **opts)
            except Exception as exc:  # the failure under test: record it, stop everyone
                errors.append(f"reader {i}: {type(exc).__name__}: {exc}")
                stop.set()
                return
            ids = [h.episode.id for h in hits]
            seen.update(ids)
            if want_id not in ids:
                misses.append(f"reader {i}: {want_text!r} -> {ids}")
            searches[i] += 1

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(READERS)]
    for t in threads:
        t.start()
    start = time.monotonic()

    def enough() -> bool:
        """The budget is spent and the two sides overlapped (a loaded machine
        writes and searches more slowly: keep going until they have), or the
        hard limit is reached."""
        elapsed = time.monotonic() - start
        overlapped = len(committed) > MIN_WRITES and min(searches) >= MIN_SEARCHES
        return elapsed > HARD_LIMIT or (elapsed > budget and overlapped)

    try:
        for j in range(EPISODES):
            if stop.is_set() or enough():
                break
            text = _text(j)
            committed.append((mem.add_episode(text, session="s1").id, text))
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert misses == []
    assert len(committed) > MIN_WRITES and min(searches) >= MIN_SEARCHES  # the two sides really overlapped
    assert seen <= {ep_id for ep_id, _ in committed}
    # and the cache ends up agreeing with the store
    last_id, last_text = committed[-1]
    assert mem.search(last_text, k=1, view="raw", config=config)[0].episode.id == last_id


@pytest.mark.usefixtures("tiny_switch_interval")
def test_searches_beside_a_writer_never_fail_and_find_what_was_committed(make_memory: MemoryFactory) -> None:
    mem = make_memory()
    mem.use_embedder(HashEmbedder())
    _race(mem, WRITE_BUDGET)


@pytest.mark.usefixtures("tiny_switch_interval")
def test_ann_searches_beside_a_writer(tmp_path: Path) -> None:
    """The same with the HNSW index answering (a threshold of 1 vector): the
    index outlives snapshots, so a thread may query it after another thread
    extended it for a newer snapshot (its extra rows are skipped)."""
    with chronomem.open(str(tmp_path / "m.db"), embedder=HashEmbedder()) as mem:
        _race(mem, 4.0, dataclasses.replace(SearchConfig(), ann_threshold=1))


def test_an_index_built_for_one_snapshot_answers_a_newer_one_and_not_an_older_one(tmp_path: Path) -> None:
    """Snapshots are immutable: one taken before a write keeps its rows. The
    ANN index built over a snapshot answers a newer one (its rows are a
    prefix; the rows past it are searched exactly) and is not used for an
    older one, which the exact search answers."""
    with chronomem.open(str(tmp_path / "m.db"), embedder=HashEmbedder()) as mem:
        first = [mem.add_episode(_text(j), session="s1").id for j in range(20)]
        es, cache = mem.store, mem._embedding.vectors()
        ns, (model, dim) = mem._ns, es.embedding_model(HashEmbedder().name)  # type: ignore[attr-defined]
        path = str(tmp_path / "m.db")
        old = cache.slot(es, ns, model, dim, path)  # type: ignore[arg-type]
        for j in range(20, 40):
            mem.add_episode(_text(j), session="s1")
        new = cache.slot(es, ns, model, dim, path)  # type: ignore[arg-type]
        assert (old.size, new.size) == (20, 40) and old.rowids.tolist() == new.rowids[:20].tolist()
        with pytest.raises((ValueError, TypeError)):
            old.rowids[0] = 0  # read-only arrays
        query = HashEmbedder().embed([_text(25)], "query")[0]
        f = EpisodeFilter(ns)
        key = (ns, model)
        assert cache.prepare(old, 0.3, path, key)
        index = cache._ann[(ns, model, 0.3)]
        assert index.built is not None and index.built.count == 20
        got = cache.ann_search(new, query, 40, f, [], 0.3, path, key)
        exact = cache.search(new, query, 40, f, [], 0.3)
        # the rows past the index, searched exactly, all come back (k covers them); the index's rows as it finds them
        assert got is not None and set(new.rowids[20:].tolist()) <= {r for r, _ in got} <= set(new.rowids.tolist())
        assert got[0][0] == exact[0][0]
        assert index.usable(old) is not None and cache.prepare(new, 0.3, path, key, complete=True)
        assert index.built.count == 40  # extended
        assert index.usable(old) is None  # an older snapshot: the exact search answers
        rowids = {es.episode_by_id(i).rowid for i in first}  # type: ignore[attr-defined]
        assert {r for r, _ in cache.search(old, query, 40, f, [], 0.3)} == rowids


def test_an_erasure_never_shrinks_the_display_names_a_reader_holds(make_memory: MemoryFactory) -> None:
    """A reader resolves its rows' entity ids in the dict ``entity_names``
    returned (no lock): an erasure in another thread swaps in a copy without
    the name rather than deleting from the dict that reader may hold."""
    mem = make_memory()
    mem.add_fact("Alice", "knows", "Bob")
    store = mem.store
    ids = [store.entity_id(mem._ns, key) for key in ("alice", "bob")]
    held = store.entity_names(ids)  # type: ignore[arg-type]
    names_before = dict(held)
    assert {"Alice", "Bob"} <= set(names_before.values())
    mem.erase(entity="Bob", confirm=True)
    assert held == names_before  # what the reader holds is unchanged
    fresh = store.entity_names(())
    assert "Bob" not in fresh.values() and "Alice" in fresh.values()  # the erased name is gone from the cache
