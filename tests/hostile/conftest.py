"""The memory every hostile test starts from: the corpus's entities, facts
and episodes (:func:`hostile.corpus.setup`) on a fake clock, with the
hashed test embedder, on each backend."""

from __future__ import annotations

import pytest

import chronomem
from chronomem import Memory
from contract._helpers import MemoryFactory
from hash_embedder import HashEmbedder
from hostile.corpus import setup


@pytest.fixture
def prepared(make_memory: MemoryFactory) -> Memory:
    mem = make_memory(clock=chronomem.FakeClock("2025-01-01T00:00:00Z"))
    mem.use_embedder(HashEmbedder())
    setup(mem)
    return mem
