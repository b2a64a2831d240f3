"""Which embedder one memory uses, and its cache of stored vectors: chosen
by name or instance, loaded lazily (a model load takes a second), never
mixed across models. Shared by the memory's threads: they all get the one
process-wide embedder instance and this memory's one vector cache."""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from ...errors import InvalidInputError
from .embed import EMBEDDERS, Embedder, auto_embedder, get_embedder
from .vector import VectorCache

__all__ = ["Embedding"]


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
        self.use(embedder)

    def use(self, embedder: Embedder | str | None) -> None:
        """See :meth:`chronomem.Memory.use_embedder`."""
        if isinstance(embedder, str):
            if embedder != "auto" and embedder not in EMBEDDERS:
                raise InvalidInputError(
                    f"unknown embedder {embedder!r}; expected auto, {', '.join(EMBEDDERS)} or None")
            self._name = embedder
            self._chosen = False
            return
        if embedder is not None and not isinstance(embedder, Embedder):
            raise InvalidInputError("an embedder needs name, dim and embed(texts, kind)")
        self._embedder = embedder
        self._chosen = True

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
    def loaded(self) -> Embedder | None:
        """The embedder if one is chosen or loaded already; never loads one."""
        return self._embedder if self._chosen else None

    def vectors(self) -> VectorCache:
        """This memory's cache of the stored vectors (made at first use)."""
        cache = self._vectors
        if cache is None:
            with self._lock:  # one cache: a second would miss forget_vectors
                if self._vectors is None:
                    self._vectors = VectorCache()
                cache = self._vectors
        return cache

    def forget_vectors(self) -> None:
        """Drop the cached vectors (an erasure took some away)."""
        if self._vectors is not None:
            self._vectors.invalidate()
