"""Int8 vectors (``chronomem.core.quantize``, ``service/evidence/qmatrix.py``):
the round trip and the ranking agreement with float32 exact search.

Stated tolerances (docs/evidence.md, "How vectors are stored"):

* each component reads back within half a step, ``scale / 2`` with
  ``scale = max|v| / 127``, plus float32 rounding of the product;
* a score (a dot product with a query ``x``) within ``|x|_1 * scale / 2`` of
  the float32 one, so every int8 top-k hit's float32 score is within twice
  the largest such bound of the exact k-th score;
* on random unit vectors, recall@10 of int8 search against float32 exact
  search at least 0.95 over 20 queries (measured: 0.98-1.0 from 16 to 384
  dimensions and 200 to 20,000 vectors).
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chronomem
from chronomem.core import quantize as quantize_module
from chronomem.core.quantize import INT8_STEPS, dequantize, quantize, quantize_rows
from chronomem.errors import InvalidInputError
from chronomem.service.evidence.episodes import episode_store
from chronomem.service.evidence.qmatrix import CHUNK_ROWS, QMatrix
from hash_embedder import HashEmbedder

# magnitudes from 2**-100 (a scale below float32's normal range would lose precision) to 2**100
magnitude = st.one_of(st.just(0.0), st.floats(min_value=2.0**-100, max_value=2.0**100, width=32))
finite32 = st.builds(lambda m, negative: -m if negative else m, magnitude, st.booleans())
vectors = st.lists(finite32, min_size=1, max_size=400)


def _blob(values: list[float]) -> bytes:
    return array("f", values).tobytes()


@settings(max_examples=300, deadline=None)
@given(vectors)
def test_each_component_reads_back_within_half_a_step(values: list[float]) -> None:
    ((q, scale),) = quantize([_blob(values)])
    back = array("f", dequantize(q, scale))
    top = max(abs(x) for x in values)
    assert len(q) == len(values) and math.isclose(scale, top / INT8_STEPS, rel_tol=1e-6)
    assert max(abs(x) for x in array("b", q)) == (INT8_STEPS if top > 0 else 0)
    for v, b in zip(values, back, strict=True):
        assert abs(v - b) <= scale / 2 + top * 2**-22, (v, b, scale)


@settings(max_examples=200, deadline=None)
@given(st.lists(vectors, min_size=1, max_size=6))
def test_numpy_and_the_standard_library_give_the_same_bytes(batch: list[list[float]]) -> None:
    blobs = [_blob(v) for v in batch]
    with_numpy = quantize(blobs)
    read_numpy = [dequantize(q, s) for q, s in with_numpy]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(quantize_module, "_numpy", lambda: None)
        assert quantize(blobs) == with_numpy
        assert [dequantize(q, s) for q, s in with_numpy] == read_numpy


@settings(max_examples=300, deadline=None)
@given(vectors)
def test_quantizing_what_was_read_back_gives_the_same_bytes(values: list[float]) -> None:
    # an export holds the read-back float32 values: importing it stores the same vector
    ((q, scale),) = quantize([_blob(values)])
    assert quantize([dequantize(q, scale)]) == [(q, scale)]


def test_a_zero_vector_and_bad_input() -> None:
    assert quantize([_blob([0.0, 0.0, -0.0])]) == [(b"\0\0\0", 0.0)]
    assert quantize([]) == []
    for bad in ([_blob([1.0, math.nan])], [_blob([math.inf, 1.0])], [b"\0" * 5], [_blob([1.0]), b"\0" * 3]):
        with pytest.raises(InvalidInputError):
            quantize(bad)
    with pytest.raises(InvalidInputError):
        quantize_rows(np, np.zeros(3))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 3000), dim=st.sampled_from([16, 64, 384]))
def test_int8_top_10_agrees_with_float32_exact_search(seed: int, n: int, dim: int) -> None:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    m = QMatrix.of_floats(np, v)
    k = min(10, n)
    recalls = []
    for _ in range(20):
        x = rng.normal(size=dim).astype(np.float32)
        x /= np.linalg.norm(x)
        exact, approx = v @ x, m.dot(x)
        bound = np.abs(x).sum() * m.scales / 2 + 1e-5
        assert np.all(np.abs(approx - exact) <= bound)
        want = np.argsort(-exact, kind="stable")[:k]
        got = np.argsort(-approx, kind="stable")[:k]
        assert exact[got].min() >= exact[want[-1]] - 2 * bound.max()
        recalls.append(len(set(want.tolist()) & set(got.tolist())) / k)
    assert sum(recalls) / len(recalls) >= 0.95, recalls


def test_the_product_is_computed_in_bounded_blocks_and_matches_one_product() -> None:
    rng = np.random.default_rng(3)
    n = 2 * CHUNK_ROWS + 17
    v = rng.normal(size=(n, 8)).astype(np.float32)
    m = QMatrix.of_floats(np, v)
    x = rng.normal(size=8).astype(np.float32)
    whole = m.rows(0, n) @ x
    assert np.allclose(m.dot(x), whole, rtol=1e-5, atol=1e-5)
    blocks = list(m.blocks(5, n))
    assert [a for a, _ in blocks] == [5, 5 + CHUNK_ROWS, 5 + 2 * CHUNK_ROWS]
    assert max(b.shape[0] for _, b in blocks) == CHUNK_ROWS
    assert np.array_equal(np.concatenate([b for _, b in blocks]), m.rows(5, n))
    assert m.q.dtype == np.int8 and m.nbytes == n * 8 + n * 4
    assert not m.q.flags.writeable and not m.scales.flags.writeable


def test_the_vector_cache_holds_int8_rows_and_int8_context_rows(tmp_path: Path) -> None:
    # the measured choice (docs/evidence.md): the cache keeps the stored form, a quarter of float32
    with chronomem.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add_episodes([{"text": f"turn {i} about rivers and maps", "session": "s"} for i in range(30)])
        assert mem.search("rivers", config="dense", view="raw")
        model_id, dim = episode_store(mem.store).embedding_model(HashEmbedder().name) or (0, 0)
        cache = mem._embedding.vectors()
        slot = cache.slot(episode_store(mem.store), mem._scope.ns_id, model_id, dim)
        assert slot.size == 30 and slot.vecs.q.dtype == np.int8 and slot.vecs.scales.dtype == np.float32
        windows = cache.matrix(slot, 0.3)
        assert windows.q.dtype == np.int8 and windows.size == 30
        # each context row is the normalised mix of its neighbours, within the int8 tolerance
        v = slot.vecs.rows(0, 30)
        mixed = v[1] + 0.3 * (v[0] + v[2])
        mixed /= np.linalg.norm(mixed)
        assert np.abs(windows.rows(1, 2)[0] - mixed).max() <= windows.scales[1] / 2 + 1e-6
