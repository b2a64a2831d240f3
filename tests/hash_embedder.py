"""A deterministic, offline stand-in for MiniLM in tests: words hashed into a
few dimensions, L2-normalised (fast, the same vectors on every run)."""

from __future__ import annotations

import re
import zlib
from typing import Any, Sequence


class HashEmbedder:
    """A hashed bag of words. ``signed``: each word adds +1 or -1 (vectors
    spread around the sphere); unsigned, a query that names a word is nearest
    to the turns that say it."""

    def __init__(self, name: str = "test-hash-embedder", dim: int = 24, *, signed: bool = True) -> None:
        self.name = name
        self.dim = dim
        self._signed = signed

    def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = zlib.crc32(word.encode())
                out[i, h % self.dim] += -1.0 if self._signed and not h & 0x100 else 1.0
            norm = float(np.linalg.norm(out[i]))
            if norm:
                out[i] /= norm
            else:
                out[i, 0] = 1.0
        return out
