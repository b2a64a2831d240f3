"""The vector cache's matrices: int8 rows with a float32 scale each, as
stored (:mod:`chronomem.core.quantize`), searched without dequantizing the
whole matrix.

A product with a query converts ``CHUNK_ROWS`` rows at a time to float32
into one reused buffer, so the temporary stays bounded (``CHUNK_ROWS * dim *
4`` bytes: 1.5 MB at 384 dimensions, small enough to stay in the CPU cache:
measured at 100k x 384 on this 2-core machine, 1,024-row blocks take
16-20 ms, as long as float32's one product, 18-22 ms, which reads four times
the bytes; 8,192-row blocks took 84 ms) while the matrix itself is a quarter
of float32's size: 38 MB for 100k episodes of 384 dimensions, against 154 MB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ...core.quantize import dequantize_rows, quantize_rows

__all__ = ["CHUNK_ROWS", "QMatrix", "frozen", "mix_context"]

#: rows converted at once by a product or a rebuild (see above: larger blocks leave the cache)
CHUNK_ROWS = 1024


def mix_context(np: Any, v: Any, prev: Any, nxt: Any, has_prev: Any, has_next: Any, weight: float) -> Any:
    """``normalize(v + weight * (prev + next))`` row by row, a neighbour
    counting only where ``has_*`` (a float32 column of 0/1) says it exists:
    the one formula of the context vectors, so the mapped file and the
    in-process matrix hold the same bytes."""
    win = v + weight * (has_prev * prev + has_next * nxt)
    win /= np.maximum(np.linalg.norm(win, axis=1, keepdims=True), 1e-12)
    return win


def frozen(array: Any) -> Any:
    """``array``, made read-only (a published snapshot's arrays never change)."""
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class QMatrix:
    """``n`` vectors as an ``(n, dim)`` int8 array and ``(n,)`` float32
    scales, both read-only: row ``i`` stands for ``q[i] * scales[i]``."""

    np: Any
    q: Any
    scales: Any

    @classmethod
    def empty(cls, np: Any, dim: int) -> QMatrix:
        return cls(np, frozen(np.zeros((0, dim), np.int8)), frozen(np.zeros(0, np.float32)))

    @classmethod
    def of_floats(cls, np: Any, matrix: Any) -> QMatrix:
        """The quantization of a float matrix (quantized ``CHUNK_ROWS`` at a time)."""
        parts = [quantize_rows(np, matrix[a:a + CHUNK_ROWS]) for a in range(0, matrix.shape[0], CHUNK_ROWS)]
        if not parts:
            return cls.empty(np, matrix.shape[1])
        return cls(np, frozen(np.concatenate([p[0] for p in parts])),
                   frozen(np.concatenate([p[1] for p in parts])))

    @classmethod
    def concat(cls, np: Any, parts: list[QMatrix]) -> QMatrix:
        return cls(np, frozen(np.concatenate([p.q for p in parts])),
                   frozen(np.concatenate([p.scales for p in parts])))

    @property
    def size(self) -> int:
        return int(self.q.shape[0])

    @property
    def dim(self) -> int:
        return int(self.q.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.q.nbytes + self.scales.nbytes)

    def rows(self, start: int, stop: int) -> Any:
        """Rows ``[start, stop)`` as a float32 matrix."""
        return dequantize_rows(self.np, self.q[start:stop], self.scales[start:stop])

    def take(self, index: Any) -> Any:
        """The rows at the positions ``index`` as a float32 matrix."""
        return dequantize_rows(self.np, self.q[index], self.scales[index])

    def blocks(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, Any]]:
        """``(first row, float32 block)`` over ``[start, stop)``, ``CHUNK_ROWS`` at a time."""
        end = self.size if stop is None else stop
        for a in range(start, end, CHUNK_ROWS):
            yield a, self.rows(a, min(end, a + CHUNK_ROWS))

    def dot(self, query: Any) -> Any:
        """``matrix @ query`` (float32), a bounded block at a time: the scale
        multiplies each row's integer product once."""
        np = self.np
        x = np.asarray(query, dtype=np.float32)
        out = np.empty(self.size, np.float32)
        buf = np.empty((min(CHUNK_ROWS, self.size), self.dim), np.float32)
        for a in range(0, self.size, CHUNK_ROWS):
            b = min(self.size, a + CHUNK_ROWS)
            block = buf[:b - a]
            np.copyto(block, self.q[a:b], casting="unsafe")  # int8 -> float32 is exact
            np.dot(block, x, out=out[a:b])
        out *= self.scales
        return out
