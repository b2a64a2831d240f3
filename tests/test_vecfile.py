"""The mapped vector file and the ANN index beside a SQLite database
(docs/evidence.md, "At scale"): the file holds the same rows and context
vectors as the in-process matrices, is extended as episodes arrive, is
rebuilt when it does not match its store, and survives a SIGKILL at any
point of an update (the next process rebuilds it and answers right)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronomem
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.episodes import episode_store
from chronomem.service.evidence.vecfile import HEADER, read_header, session_key, vector_file_path
from chronomem.service.evidence.vector import FILE_CONTEXT, VectorCache
from chronomem.store.protocol import EpisodeFilter

np = pytest.importorskip("numpy")

sys.path.insert(0, str(Path(__file__).parent))
from hash_embedder import HashEmbedder  # noqa: E402

WORDS = ["river", "map", "kiwi", "violin", "tax", "chess", "garden", "puppy", "train", "cloud"]


def _turn(i: int) -> str:
    return f"turn {i} about {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]}"


def _slots(mem: chronomem.Memory) -> tuple[Any, Any, Any]:
    """(the file slot, an in-process slot of the same rows, the cache)."""
    es = episode_store(mem.store)
    model_id, dim = es.embedding_model(HashEmbedder().name) or (0, 0)
    cache = mem._embedding.vectors()
    path = mem.store.capabilities.local_path
    mapped = cache.slot(es, mem._scope.ns_id, model_id, dim, path)
    memory = VectorCache().slot(es, mem._scope.ns_id, model_id, dim)
    return mapped, memory, cache


def _same(mapped: Any, memory: Any, cache: VectorCache) -> None:
    assert mapped.rowids.tolist() == memory.rowids.tolist()
    assert mapped.recorded.tolist() == memory.recorded.tolist()
    assert mapped.occurred.tolist() == memory.occurred.tolist()
    assert mapped.sessions.tolist() == memory.sessions.tolist()
    assert np.array_equal(mapped.vecs.q, memory.vecs.q) and np.array_equal(mapped.vecs.scales, memory.vecs.scales)
    # the context vectors appended (and updated) row by row are the bytes the
    # in-process matrix computes over the whole namespace at once
    ctx_file = mapped.windows[FILE_CONTEXT]
    ctx_mem = VectorCache().matrix(memory, FILE_CONTEXT)
    assert np.array_equal(ctx_file.q, ctx_mem.q) and np.array_equal(ctx_file.scales, ctx_mem.scales)


def test_the_file_holds_what_the_store_holds_as_turns_arrive(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": f"s{i % 3}"} for i in range(40)])
        _same(*_slots(mem))
        # one at a time, into old sessions (each updates its predecessor's
        # context), a new one and none
        for i in range(40, 60):
            mem.add_episode(_turn(i), session=None if i % 5 == 0 else f"s{i % 4}")
            mem.search(_turn(i), config="dense", view="raw")  # (a search extends the file)
        mapped, memory, cache = _slots(mem)
        assert mapped.size == 60
        _same(mapped, memory, cache)
        assert not mapped.vecs.q.flags.writeable and not mapped.rowids.flags.writeable


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=6),
                        min_size=1, max_size=5))
def test_appending_in_any_batches_gives_the_whole_namespace_s_context_vectors(
        tmp_path_factory: pytest.TempPathFactory, batches: list[list[str | None]]) -> None:
    db = tmp_path_factory.mktemp("vf") / "m.db"
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        i = 0
        for batch in batches:
            mem.add_episodes([{"text": _turn(i + j), "session": s} for j, s in enumerate(batch)])
            i += len(batch)
            _slots(mem)  # extend the file after each batch
        _same(*_slots(mem))


def test_the_exact_search_over_the_file_matches_the_in_process_one(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": f"s{i % 5}",
                           "occurred_at": f"2024-01-{1 + i % 28:02d}"} for i in range(80)])
        mapped, memory, cache = _slots(mem)
        query = HashEmbedder().embed(["violin and chess"], "query")[0]
        for f in (EpisodeFilter(mem._scope.ns_id), EpisodeFilter(mem._scope.ns_id, session="s2"),
                  EpisodeFilter(mem._scope.ns_id, occurred_by=mapped.occurred[40].item())):
            assert cache.search(mapped, query, 10, f, [], FILE_CONTEXT) == \
                VectorCache().search(memory, query, 10, f, [], FILE_CONTEXT)
        assert session_key("s2") != session_key("s3") and session_key(None) == 0


def _file(db: Path) -> Path:
    return Path(vector_file_path(str(db), 1, 1))


@pytest.mark.parametrize("damage", ["dirty", "truncated", "garbage", "another store's"])
def test_a_damaged_or_foreign_file_is_rebuilt(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "m.db"
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": f"s{i % 3}"} for i in range(30)])
        want = [h.episode.id for h in mem.search("violin", config="dense", view="raw")]
    vf = _file(db)
    data = bytearray(vf.read_bytes())
    if damage == "dirty":
        head = read_header(str(vf))
        assert head is not None and not head.dirty
        data[48:52] = (1).to_bytes(4, "little")  # the header's dirty flag
        vf.write_bytes(bytes(data))
        assert read_header(str(vf)).dirty  # type: ignore[union-attr]
    elif damage == "truncated":
        vf.write_bytes(bytes(data[: HEADER + 100]))
    elif damage == "garbage":
        vf.write_bytes(b"\0" * len(data))
    else:
        other = tmp_path / "other.db"
        with chronomem.open(other, embedder=HashEmbedder()) as mem2:  # the same count, other texts
            mem2.add_episodes([{"text": f"other {i} {WORDS[i % 3]}", "session": "x"} for i in range(30)])
            mem2.search("violin", config="dense", view="raw")
        shutil.copyfile(_file(other), vf)
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        assert [h.episode.id for h in mem.search("violin", config="dense", view="raw")] == want
        _same(*_slots(mem))
    head = read_header(str(vf))
    assert head is not None and not head.dirty and head.count == 30


_KILL_CHILD = r"""
import sys, time
sys.path.insert(0, {tests!r})
import chronomem
from hash_embedder import HashEmbedder
from chronomem.service.evidence import ann, vecfile

def pause(*a, **k):
    open({marker!r}, "w").close()
    time.sleep(60)

if {where!r} == "vecfile":
    vecfile._Writable._context = pause  # rows written, header dirty, not published
else:
    import os, types
    proxy = types.ModuleType("os")
    proxy.__dict__.update(os.__dict__)
    proxy.replace = pause  # the new index written beside, not renamed over
    ann.os = proxy
mem = chronomem.open({db!r}, embedder=HashEmbedder())
mem.add_episodes([{{"text": "late turn %d about violin" % i, "session": "s1"}} for i in range(40)])
mem.prepare_search(chronomem.SearchConfig(ann_threshold=1))
"""


@pytest.mark.parametrize("where", ["vecfile", "ann"])
def test_a_process_killed_while_updating_leaves_files_the_next_one_rebuilds(tmp_path: Path, where: str) -> None:
    db = tmp_path / "m.db"
    ann = SearchConfig(ann_threshold=1)
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": f"s{i % 3}"} for i in range(30)])
        mem.prepare_search(ann)
    marker = tmp_path / "paused"
    child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD.format(
        tests=str(Path(__file__).parent), marker=str(marker), where=where, db=str(db))])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the child ended before it reached the update"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    if where == "vecfile":
        head = read_header(str(_file(db)))
        assert head is not None and head.dirty  # killed mid-update: marked, never trusted
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        exact = [h.episode.id for h in mem.search("late violin", config="dense", view="raw")]
        dense_ann = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=1)
        assert [h.episode.id for h in mem.search("late violin", config=dense_ann, view="raw")] == exact
        assert mem.prepare_search(ann)["vectors"] == 70
        _same(*_slots(mem))
        if where == "ann":
            index = mem._embedding.vectors()._ann[(1, 1, FILE_CONTEXT)]
            assert index.built is not None and index.built.count == 70
    assert not list(tmp_path.glob("*.tmp-*"))


def test_files_of_a_namespace_are_per_namespace_and_model(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with chronomem.open(db, namespace="a", embedder=HashEmbedder()) as a, \
            chronomem.open(db, namespace="b", embedder=HashEmbedder()) as b:
        a.add_episodes([{"text": _turn(i), "session": "s"} for i in range(5)])
        b.add_episodes([{"text": _turn(i + 50), "session": "s"} for i in range(7)])
        assert a.prepare_search()["vectors"] == 5 and b.prepare_search()["vectors"] == 7
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".vec"))
    assert len(names) == 2 and names[0] != names[1]
    assert all(os.path.getsize(tmp_path / n) > HEADER for n in names)


def test_vectors_that_leave_the_store_leave_the_file(tmp_path: Path) -> None:
    """A vector dropped without an erasure (``doctor --repair`` drops those of
    missing episodes) makes the file hold more rows than the store: rebuilt."""
    import sqlite3

    db = tmp_path / "m.db"
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": "s"} for i in range(20)])
        assert mem.prepare_search()["vectors"] == 20
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM episode_vectors WHERE episode_rowid = 5")
        con.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'episode_generation'")
    con.close()
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        mapped, memory, cache = _slots(mem)
        assert mapped.size == 19 and 5 not in mapped.rowids.tolist()
        _same(mapped, memory, cache)


def _clustered(n: int, dim: int = 32, clusters: int = 40, seed: int = 5) -> tuple[Any, Any, Any]:
    """``n`` unit vectors around ``clusters`` centres, quantized as stored."""
    from chronomem.core.quantize import quantize_rows

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    x = centres[rng.integers(0, clusters, n)] + 0.6 * rng.normal(size=(n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q, s = quantize_rows(np, x)
    return x.astype(np.float32), q, s


def test_the_inverted_file_finds_what_the_exact_search_finds() -> None:
    from chronomem.service.evidence.ann import build_index, nlist_for, nprobe_for

    x, q, s = _clustered(6000)
    n = len(q)
    built = build_index(np, q, s, np.arange(n), np.zeros(n, np.int64), np.arange(n), n, 0, b"l" * 16)
    assert built.centroids.shape[0] == nlist_for(6000) == 309 and built.nprobe == nprobe_for(309) == 19
    assert sorted(built.records["rowid"].tolist()) == list(range(6000))  # every row once, grouped by list
    assert built.offsets[0] == 0 and built.offsets[-1] == 6000 and (np.diff(built.offsets) >= 0).all()
    rng = np.random.default_rng(9)
    found = []
    exact_scores = q.astype(np.float32) * s[:, None]
    for j in rng.choice(6000, 30, replace=False):
        query = x[j] + 0.2 * rng.normal(size=x.shape[1]).astype(np.float32) / np.sqrt(x.shape[1])
        query /= np.linalg.norm(query)
        want = set(np.argsort(-(exact_scores @ query))[:10].tolist())
        pos, scores = built.search(np, query, 10)
        assert np.allclose(scores, (exact_scores[pos] @ query), atol=1e-5)  # probed rows score exactly
        found.append(len(want & set(pos.tolist())) / 10)
        everything, _ = built.search(np, query, 10, nprobe=built.centroids.shape[0])
        assert set(everything.tolist()) == want or len(want & set(everything.tolist())) >= 9  # (ties)
        # the view's filters apply inside the lists: only rows occurred by 3000, none of the gone ones
        kept, _ = built.search(np, query, 10, occurred_by=2999, gone=np.asarray(sorted(want)[:3]))
        assert all(r < 3000 for r in kept.tolist()) and not set(kept.tolist()) & set(sorted(want)[:3])
    assert np.mean(found) >= 0.9


def test_an_index_is_the_same_bytes_from_the_same_rows_and_survives_a_round_trip(tmp_path: Path) -> None:
    from chronomem.service.evidence.ann import _read, _write, build_index

    _x, q, s = _clustered(3000, seed=2)
    rowids = np.arange(1, 3001)
    a = build_index(np, q, s, rowids, rowids * 10, rowids * 20, 3000, 1, b"a" * 16)
    b = build_index(np, q, s, rowids, rowids * 10, rowids * 20, 3000, 1, b"a" * 16)
    for name in ("centroids", "offsets", "records"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    path = str(tmp_path / "i.ivf")
    _write(path, a)
    back = _read(path, np)
    assert back is not None and (back.count, back.max_rowid, back.erasures, back.lineage) == (3000, 3000, 1, b"a" * 16)
    assert np.array_equal(a.centroids, back.centroids) and np.array_equal(a.offsets, back.offsets)
    assert back.records is None  # the rows stay in the file, read per probed list
    query = q[7].astype(np.float32)
    for probe in (1, 5, 40):
        ra, sa = a.search(np, query, 20, probe)
        rb, sb = back.search(np, query, 20, probe)
        assert ra.tolist() == rb.tolist() and np.array_equal(sa, sb)
    with open(path, "r+b") as fh:
        fh.truncate(5000)
    assert _read(path, np) is None  # torn: never read
    assert not (tmp_path / "i.ivf.tmp").exists()


@pytest.mark.parametrize("batch", [1, 97, 16384])
def test_a_search_reads_its_lists_in_batches_and_answers_as_a_scan_of_them(tmp_path: Path, batch: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """However the probed lists fall into read batches (each list a batch of
    its own as it is longer than one; several short lists per batch, a long
    one alone; every list in one), the file and the in-memory index answer
    alike, and as a plain scan of the probed lists' rows with the view's
    filters."""
    from chronomem.service.evidence import ann

    monkeypatch.setattr(ann, "_BATCH", batch)
    x, q, s = _clustered(2500, seed=5)
    rowids = np.arange(1, 2501)
    mem_index = ann.build_index(np, q, s, rowids, rowids * 10, rowids * 20, 2500, 0, b"b" * 16)
    path = str(tmp_path / "b.ivf")
    ann._write(path, mem_index)
    on_file = ann._read(path, np)
    assert on_file is not None and on_file.records is None
    exact = q.astype(np.float32) * s[:, None]
    rng = np.random.default_rng(3)
    for j in rng.choice(2500, 12, replace=False):
        query = x[j]
        cs = mem_index.centroids @ query
        for probe in (1, 7, 30):
            lists = np.argpartition(-cs, probe - 1)[:probe]
            gone = rowids[rng.choice(2500, 40, replace=False)]
            probed = np.concatenate([mem_index.records["rowid"][mem_index.offsets[i]:mem_index.offsets[i + 1]]
                                     for i in lists])
            allowed = probed[(probed * 20 <= 40_000) & ~np.isin(probed, gone)]
            by_score = allowed[np.argsort(-(exact[allowed - 1] @ query), kind="stable")]
            a = mem_index.search(np, query, 15, probe, occurred_by=40_000, gone=gone)
            b = on_file.search(np, query, 15, probe, occurred_by=40_000, gone=gone)
            assert a[0].tolist() == b[0].tolist() and np.array_equal(a[1], b[1])
            assert set(a[0].tolist()) == set(by_score[:15].tolist()) or len(by_score) > 15 and np.isclose(
                exact[by_score[14] - 1] @ query, exact[by_score[15] - 1] @ query)  # (a tie at the edge)
            assert np.allclose(a[1], exact[a[0] - 1] @ query, atol=1e-5)


def test_prepare_search_waits_for_a_build_a_search_started(tmp_path: Path) -> None:
    """A search that finds no index starts one in the background;
    ``prepare_search`` right after waits for it (it does not return while a
    build holds the lock) and leaves an index that covers every row."""
    db = tmp_path / "m.db"
    cfg = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=1)
    with chronomem.open(db, embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": _turn(i), "session": f"s{i % 3}"} for i in range(200)])
        for _ in range(5):
            for p in tmp_path.glob("m.db.ann-*.ivf"):
                p.unlink()
            mem._embedding.forget_vectors()
            mem.search("violin", config=cfg, view="raw")  # (no index: exact, and a build starts)
            assert mem.prepare_search(cfg)["ann"]
            index = mem._embedding.vectors()._ann[(1, 1, FILE_CONTEXT)]
            assert index.built is not None and index.built.count == 200
            assert list(tmp_path.glob("m.db.ann-*.ivf"))


def test_the_vector_file_holds_the_default_context_weight() -> None:
    """``FILE_CONTEXT`` is the weight the mapped file precomputes; a search
    with another ``dense_context`` mixes in the process. The default search
    must be the one the file serves."""
    assert SearchConfig().dense_context == FILE_CONTEXT
