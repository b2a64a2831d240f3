"""Which embedder one memory uses, and its cache of stored vectors: chosen
by name or instance, loaded lazily (a model load takes a second and ~280 MB),
never mixed across models. Shared by the memory's threads: they all get the
one process-wide embedder instance and this memory's one vector cache.

A search asks :meth:`Embedding.dense_model` first: the model name of a
built-in embedder is known without loading it, so a namespace that holds no
vectors of that model is searched lexically without importing onnxruntime,
tokenizers or numpy."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Sequence

from ...errors import InvalidInputError
from .embed import EMBEDDERS, Embedder, auto_embedder, get_embedder, model_name
from .vector import VectorCache

if TYPE_CHECKING:  # pragma: no cover
    from ...store.protocol import EpisodeStore

__all__ = ["INLINE_QUERY_S", "Embedding"]

#: a loaded embedder whose questions take less than this (seconds) embeds them
#: in the search's own thread (:attr:`Embedding.inline_queries`)
INLINE_QUERY_S = 0.010


class Embedding:
    """The embedder choice and vector cache of one memory."""

    def __init__(self, models: Callable[[], Sequence[tuple[int, str, int]]], embedder: Embedder | str | None) -> None:
        self._models = models  # the store's embedding models: decides "auto"
        self._name: str | None = None
        self._embedder: Embedder | None = None
        self._chosen = False
        self._vectors: VectorCache | None = None
        self._lock = threading.Lock()
        self.warned_no_vectors = False  # a search said once that the store has other models' vectors
        # (ns_id, model name) -> (episode generation, (model id, dim) or None when the namespace has no vectors)
        self._dense: dict[tuple[int, str], tuple[int, tuple[int, int] | None]] = {}
        self._query_s: float | None = None  # a loaded embedder's recent query time (moving average)
        self.use(embedder)

    def use(self, embedder: Embedder | str | None) -> None:
        """See :meth:`chronomem.Memory.use_embedder`."""
        if isinstance(embedder, str):
            if embedder != "auto" and embedder not in EMBEDDERS:
                raise InvalidInputError(
                    f"unknown embedder {embedder!r}; expected auto, {', '.join(EMBEDDERS)} or None")
            self._name = embedder
            self._chosen = False
            self._dense = {}
            self._query_s = None
            return
        if embedder is not None and not isinstance(embedder, Embedder):
            raise InvalidInputError("an embedder needs name, dim and embed(texts, kind)")
        self._embedder = embedder
        self._chosen = True
        self._dense = {}
        self._query_s = None

    @property
    def current(self) -> Embedder | None:
        """The embedder in use (``None`` when searches are lexical only),
        loaded at first use."""
        if not self._chosen:
            name = self._name or "auto"
            if name == "auto":
                name = auto_embedder([m for _i, m, _d in self._models()])
            # (two threads here get the one process-wide instance: get_embedder locks)
            self._embedder = get_embedder(name)
            self._chosen = True
        return self._embedder

    @property
    def model_name(self) -> str | None:
        """The model name the embedder in use records in the store (``None``:
        lexical only), without loading it: a chosen instance's ``name``, else
        the built-in one's name (``"auto"`` resolved against the store's
        models, a small table)."""
        if self._chosen:
            return self._embedder.name if self._embedder is not None else None
        name = self._name or "auto"
        if name == "auto":
            name = auto_embedder([m for _i, m, _d in self._models()])
        return model_name(name)

    def dense_model(self, store: EpisodeStore, ns_id: int) -> tuple[str, tuple[int, int] | None] | None:
        """``(model name, (model id, dim) or None)`` for a search of namespace
        ``ns_id``: the second item is ``None`` when the namespace holds no
        vectors of the model in use, so the search is lexical and loads no
        model. ``None`` when searches are lexical only. The answer is cached
        per store episode generation (every write of episodes or vectors,
        in any process, bumps it), so new vectors are seen at the next call."""
        name = self.model_name
        if name is None:
            return None
        gen = store.episode_generation()
        cached = self._dense.get((ns_id, name))
        if cached is not None and cached[0] == gen:
            return name, cached[1]
        model = store.embedding_model(name)
        if model is not None and not store.has_vectors(ns_id, model[0]):
            model = None
        self._dense[(ns_id, name)] = (gen, model)  # (one atomic dict store: threads may race, both right)
        return name, model

    @property
    def loaded(self) -> Embedder | None:
        """The embedder if one is chosen or loaded already; never loads one."""
        return self._embedder if self._chosen else None

    def note_query(self, seconds: float) -> None:
        """Record how long a loaded embedder took to embed one question."""
        last = self._query_s
        self._query_s = seconds if last is None else last + 0.25 * (seconds - last)

    @property
    def inline_queries(self) -> bool:
        """Whether a search should embed its question itself rather than in
        a worker beside the BM25 query: the embedder is loaded and its
        questions take under :data:`INLINE_QUERY_S`. On two cores the
        overlap saved nothing measurable (each side slowed the other about
        as much as it overlapped) and the hand-off added to the slowest
        searches (100k bench store: p50 12.0 vs 12.2 ms, p99 16.7 vs 21.3
        ms); a slow embedder (a remote one) still overlaps, as does a cold
        process's model load."""
        return self.loaded is not None and self._query_s is not None and self._query_s < INLINE_QUERY_S

    def vectors(self) -> VectorCache:
        """This memory's cache of the stored vectors (made at first use)."""
        cache = self._vectors
        if cache is None:
            with self._lock:  # one cache: a second would miss forget_vectors
                if self._vectors is None:
                    self._vectors = VectorCache()
                cache = self._vectors
        return cache

    def prepare(self, store: EpisodeStore, ns_id: int, db_path: str | None, ann_threshold: int,
                context: float, complete: bool = True) -> dict[str, object]:
        """Bring namespace ``ns_id``'s dense-search caches up to the store
        now — the vector file beside a SQLite database and, from
        ``ann_threshold`` vectors on, the ANN index — so the next search
        (in any process) opens them instead of building them; without
        ``complete``, the index only when it is stale (``ann.DELTA_SHARE``).
        Loads no model."""
        dense = self.dense_model(store, ns_id)
        if dense is None or dense[1] is None:
            return {"vectors": 0, "file": False, "ann": False}
        model_id, dim = dense[1]
        cache = self.vectors()
        slot = cache.slot(store, ns_id, model_id, dim, db_path)
        ann = slot.size >= ann_threshold and cache.prepare(slot, context, db_path, (ns_id, model_id), complete)
        return {"vectors": slot.size, "file": bool(db_path and db_path != ":memory:"), "ann": ann}

    def forget_vectors(self) -> None:
        """Drop the cached vectors (an erasure took some away)."""
        if self._vectors is not None:
            self._vectors.invalidate()
