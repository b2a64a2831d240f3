"""A call loads nothing it does not need (issue 20): a fact-only call and a
lexical search never import onnxruntime, tokenizers or numpy; with
``embedder="auto"`` a search in a namespace without vectors of the model in
use loads no model (also when other namespaces of the file have vectors),
while a namespace with vectors is searched densely; the multi-threaded
passage session exists only while ingesting; the MCP server's and
``serve``'s stats report the process's RSS.

The cold-process checks run each call in a fresh interpreter on a real
SQLite file and read ``sys.modules`` there."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import Memory
from hash_embedder import HashEmbedder

HEAVY = ["onnxruntime", "tokenizers", "numpy"]

_TURNS = [
    "Caroline went to the LGBTQ support group yesterday and felt welcome.",
    "Melanie painted a sunrise over the lake last weekend.",
    "Caroline is looking into adoption agencies this spring.",
    "Melanie took the kids camping in the mountains.",
    "The support group meets every Tuesday evening at the library.",
    "Caroline wants a career in counseling after her studies.",
]


def _cold(db: Path, script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` (it sets ``out``) in a fresh interpreter; its ``out``
    and the heavy modules it imported."""
    prelude = "import json, sys\nimport chronomem\nDB = sys.argv[1]\nARGS = sys.argv[2:]\nout = {}\n"
    tail = f"\nout['heavy'] = [m for m in {HEAVY!r} if m in sys.modules]\nprint(json.dumps(out))\n"
    proc = subprocess.run([sys.executable, "-c", prelude + script + tail, str(db), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _minilm_available() -> None:
    from chronomem.errors import MissingExtraError
    from chronomem.service.evidence import get_embedder

    try:
        get_embedder("minilm")
    except MissingExtraError as exc:  # pragma: no cover - depends on the environment
        pytest.skip(f"the MiniLM embedder is not installed: {exc}")


@pytest.fixture
def lexical_db(tmp_path: Path) -> Path:
    """Episodes and facts, no vector at all (written with ``embedder=None``)."""
    db = tmp_path / "lexical.db"
    m = chronomem.open(db, embedder=None)
    m.add_episodes([{"text": t, "session": "s1"} for t in _TURNS])
    m.add_fact("Caroline", "attends", "support group", valid_from="2023-05")
    m.add_fact("Caroline", "lives_in", "Boston", valid_from="2020")
    m.close()
    return db


@pytest.fixture(scope="module")
def vector_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Namespace ``talk`` with MiniLM vectors; ``facts`` holds only a fact."""
    _minilm_available()
    db = tmp_path_factory.mktemp("vec") / "vectors.db"
    m = chronomem.open(db, namespace="talk", embedder="minilm")
    m.add_episodes([{"text": t, "session": "s1"} for t in _TURNS])
    m.close()
    other = chronomem.open(db, namespace="facts", embedder=None)
    other.add_fact("Caroline", "attends", "support group", valid_from="2023-05")
    other.close()
    return db


_FACT_CALLS = """
mem = chronomem.open(DB)  # the default embedder: "auto"
out['facts'] = sorted(f.object for f in mem.facts('Caroline'))
out['current'] = sorted(f.object for f in mem.current('Caroline'))
out['history'] = len(mem.history('Caroline'))
out['added'] = mem.add_fact('Caroline', 'likes', 'music').object
out['stats'] = mem.stats().facts
mem.close()
"""


def test_fact_calls_import_no_model_and_no_numpy(lexical_db: Path) -> None:
    out = _cold(lexical_db, _FACT_CALLS)
    assert out["facts"] == ["Boston", "support group"]
    assert out["current"] == ["Boston", "support group"]
    assert out["history"] >= 2 and out["added"] == "music" and out["stats"] == 3
    assert out["heavy"] == []


_SEARCH = """
mem = chronomem.open(DB, namespace=ARGS[0], embedder=None if ARGS[1] == 'none' else ARGS[1])
hits = mem.search('support group', k=3)
out['hits'] = [h.episode.text for h in hits]
out['dense'] = [h.parts.dense for h in hits]
out['recall'] = [i.cite for i in mem.recall('When did Caroline go to the support group?').items]
out['loaded'] = mem._embedding.loaded is not None
mem.close()
"""


def test_lexical_search_imports_no_model(lexical_db: Path) -> None:
    """``embedder=None``, and "auto" on a store without vectors: the same
    answer, lexical, in a process that never imported onnxruntime."""
    none = _cold(lexical_db, _SEARCH, "default", "none")
    auto = _cold(lexical_db, _SEARCH, "default", "auto")
    assert none["heavy"] == [] and auto["heavy"] == []
    assert not auto["loaded"]
    assert auto["hits"] == none["hits"] and auto["recall"] == none["recall"]
    assert "support group" in auto["hits"][0] and auto["dense"] == [None] * len(auto["hits"])


def test_auto_with_another_models_vectors_stays_lexical(tmp_path: Path) -> None:
    """Vectors of a model "auto" does not pick (here the test hash embedder)
    are no reason to load MiniLM: the search is lexical."""
    db = tmp_path / "other.db"
    m = chronomem.open(db, embedder=HashEmbedder())
    m.add_episodes(_TURNS)
    m.close()
    out = _cold(db, _SEARCH, "default", "auto")
    assert "onnxruntime" not in out["heavy"] and "tokenizers" not in out["heavy"]
    assert not out["loaded"] and out["hits"] and out["dense"] == [None] * len(out["hits"])


def test_empty_namespace_of_a_file_with_vectors_loads_nothing(vector_db: Path) -> None:
    out = _cold(vector_db, _SEARCH, "facts", "auto")
    assert out["heavy"] == [] and not out["loaded"] and out["hits"] == []
    fresh = _cold(vector_db, _SEARCH, "never-written", "auto")  # a namespace the file does not know yet
    assert fresh["heavy"] == [] and fresh["hits"] == []


def test_dense_search_on_a_namespace_with_vectors_loads_the_model(vector_db: Path) -> None:
    out = _cold(vector_db, _SEARCH, "talk", "auto")
    assert "onnxruntime" in out["heavy"] and "numpy" in out["heavy"] and out["loaded"]
    assert out["hits"] and all(d is not None for d in out["dense"])  # every hit ranked by the dense side too
    assert "support group" in out["hits"][0]


_LATER_VECTORS = """
mem = chronomem.open(DB, namespace='later')  # auto
out['before'] = [h.parts.dense for h in mem.search('camping trip', k=2)]
out['heavy_before'] = [m for m in ('onnxruntime', 'tokenizers', 'numpy') if m in sys.modules]
writer = chronomem.open(DB, namespace='later', embedder='minilm')  # an embedding write loads the model
writer.add_episode('Melanie took the kids camping in the mountains.')
out['after'] = [h.parts.dense for h in mem.search('camping trip', k=2)]
mem.close(); writer.close()
"""


def test_vectors_written_later_are_seen(vector_db: Path) -> None:
    """The "no vectors here" answer is cached per episode generation: the
    next search after a write of vectors searches them densely."""
    out = _cold(vector_db, _LATER_VECTORS)
    assert out["before"] == [] and out["heavy_before"] == []
    assert len(out["after"]) == 1 and out["after"][0] is not None


def test_a_write_by_another_memory_is_seen_in_process(tmp_path: Path) -> None:
    db = tmp_path / "gen.db"
    reader = chronomem.open(db, embedder=HashEmbedder())
    reader.add_episodes(_TURNS[:2])
    writer = chronomem.open(db, namespace="n2", embedder=HashEmbedder())
    reader_n2 = chronomem.open(db, namespace="n2", embedder=HashEmbedder())
    assert reader_n2.search("camping mountains", k=3) == []
    writer.add_episode("Melanie took the kids camping in the mountains.")
    hits = reader_n2.search("camping mountains", k=3)
    assert len(hits) == 1 and hits[0].parts.dense is not None
    for m in (reader, writer, reader_n2):
        m.close()


def test_passage_session_exists_only_while_ingesting(tmp_path: Path) -> None:
    _minilm_available()
    from chronomem.service.evidence import MiniLMEmbedder
    from chronomem.service.evidence.embed import ingest_session

    emb = MiniLMEmbedder(passage_threads=2)
    emb.passage_linger = 0.0  # released as the last scope ends (the linger has its own test)
    m = chronomem.open(tmp_path / "ingest.db", embedder=emb)
    during: list[bool] = []
    m.add_episodes([{"text": t, "session": "s1"} for t in _TURNS],
                   progress=lambda done, total: during.append(emb.passage_session_open))
    assert during == [True]  # the batch ran on the multi-threaded session
    assert not emb.passage_session_open  # ... released once the batch was stored
    m.add_episode("Caroline signed up for a pottery class.")  # one text: the one-thread session
    assert not emb.passage_session_open
    with emb.ingest():  # nested scopes (two threads ingesting): released when the last one ends
        with emb.ingest():
            emb.embed(["one passage", "two passages"], "passage")
        assert emb.passage_session_open
    assert not emb.passage_session_open

    class Wrapper:  # as the eval's query cache: it keeps the embedder it wraps as `inner`
        def __init__(self, inner: Any) -> None:
            self.inner, self.name, self.dim = inner, inner.name, inner.dim

    with ingest_session(Wrapper(emb)):  # a bulk write through a wrapper keeps one session for all its batches
        emb.embed(["first batch", "of two"], "passage")
        assert emb.passage_session_open
        emb.embed(["second batch", "of two"], "passage")
        assert emb.passage_session_open
    assert not emb.passage_session_open
    hits = m.search("pottery class", k=1)
    assert hits and "pottery" in hits[0].episode.text and hits[0].parts.dense is not None
    m.close()


def test_passage_session_lingers_briefly_between_batches(tmp_path: Path) -> None:
    """Back-to-back bulk writes (an importer's batches) reuse the session; it
    is gone ``passage_linger`` seconds after the last one."""
    _minilm_available()
    from chronomem.service.evidence import MiniLMEmbedder

    emb = MiniLMEmbedder(passage_threads=2)
    emb.passage_linger = 0.3
    m = chronomem.open(tmp_path / "linger.db", embedder=emb)
    m.add_episodes(_TURNS[:3])
    assert emb.passage_session_open  # still there for the next batch ...
    with emb.ingest():  # ... which begins within the linger: its release is void
        time.sleep(0.6)
        assert emb.passage_session_open
    deadline = time.monotonic() + 10
    while emb.passage_session_open and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not emb.passage_session_open  # released after the last scope
    m.close()


def _assert_rss(process: dict[str, Any]) -> None:
    assert set(process) == {"rss_bytes", "peak_rss_bytes"}
    if sys.platform.startswith("linux"):
        rss, peak = process["rss_bytes"], process["peak_rss_bytes"]
        assert isinstance(rss, int) and isinstance(peak, int)
        assert 10 * 2**20 < rss <= peak  # a Python process with chronomem holds more than 10 MiB


def test_mcp_stats_report_rss(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from chronomem.adapters.mcp import build_server

    mem = chronomem.open(tmp_path / "mcp.db")
    mem.add_fact("A", "p", "B")

    async def main() -> Any:
        async with Client(build_server(mem), mode="legacy") as client:
            return await client.call_tool("stats", {})

    r = anyio.run(main)
    assert not r.is_error and r.structured_content is not None
    assert r.structured_content["facts"] == 1
    _assert_rss(r.structured_content["process"])
    mem.close()


def test_serve_stats_report_rss(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from chronomem.adapters.web import create_app
    from test_web_support import Client

    mem: Memory = chronomem.open(tmp_path / "web.db", embedder=None)
    mem.add_fact("A", "p", "B")
    mem.add_episode("A met B at the support group.")
    client = Client(create_app(mem))
    body = client.get("/api/stats").json()
    assert body["stats"]["facts"] == 1 and body["stats"]["namespaces"] == ["default"]
    assert body["evidence"]["episodes"] == 1
    _assert_rss(body["process"])
    _assert_rss(client.get("/index.json").json()["process"])
    mem.close()
