"""Int8 vector quantization: how episode vectors are stored and held.

A float32 vector ``v`` is kept as one signed byte per dimension and one
float32 scale (symmetric, per vector)::

    scale = max|v_i| / 127        q_i = round(v_i / max|v_i| * 127)        v_i ~ q_i * scale

so each component reads back within ``scale / 2`` (half a step; plus the
float32 rounding of the product), a quarter of float32's bytes. A zero
vector is all zeros with scale 0. Rounding is half to even, computed in
float64 on both paths below, so numpy and pure Python give the same bytes.

This is the one implementation: both backends quantize on write and in
their migration 0009 with it, and the vector cache and export read back
with it. The numpy forms (:func:`quantize_rows`, :func:`dequantize_rows`)
serve the matrices; the bytes forms fall back to the standard library when
numpy (the ``evidence`` extra) is not installed, so a store without it can
still restore an export or run the migration.
"""

from __future__ import annotations

import importlib
import math
from array import array
from typing import Any, Sequence

from ..errors import InvalidInputError

__all__ = ["INT8_STEPS", "dequantize", "dequantize_rows", "quantize", "quantize_rows"]

#: the largest magnitude of a quantized component
INT8_STEPS = 127


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ModuleNotFoundError:
        return None


def quantize_rows(np: Any, matrix: Any) -> tuple[Any, Any]:
    """``(int8 matrix, float32 scales)`` of a float matrix, one scale per row;
    :class:`InvalidInputError` for a non-finite component."""
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2:
        raise InvalidInputError(f"expected a matrix of vectors, got {a.ndim} dimensions")
    if not np.isfinite(a).all():
        raise InvalidInputError("a vector has a NaN or infinite component")
    top = np.abs(a).max(axis=1) if a.shape[1] else np.zeros(a.shape[0])
    safe = np.where(top > 0, top, 1.0)[:, None]
    q = np.rint(a / safe * INT8_STEPS).astype(np.int8)
    return q, (top / INT8_STEPS).astype(np.float32)


def dequantize_rows(np: Any, q: Any, scales: Any) -> Any:
    """The float32 matrix that ``(q, scales)`` stand for."""
    return q.astype(np.float32) * np.asarray(scales, dtype=np.float32)[:, None]


def _floats(blob: bytes) -> array[float]:
    if len(blob) % 4:
        raise InvalidInputError(f"a float32 vector has a multiple of 4 bytes, not {len(blob)}")
    return array("f", blob)


def quantize(vectors: Sequence[bytes]) -> list[tuple[bytes, float]]:
    """``(int8 bytes, scale)`` for each float32 (native byte order) vector."""
    if not vectors:
        return []
    np = _numpy()
    width = len(vectors[0])
    if np is not None and all(len(v) == width for v in vectors):
        if width % 4:
            _floats(vectors[0])  # raises
        mat = np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), width // 4)
        q, scales = quantize_rows(np, mat)
        return [(row.tobytes(), float(s)) for row, s in zip(q, scales, strict=True)]
    return [_quantize_one(v) for v in vectors]


def _quantize_one(blob: bytes) -> tuple[bytes, float]:
    values = _floats(blob)
    if not all(math.isfinite(x) for x in values):
        raise InvalidInputError("a vector has a NaN or infinite component")
    top = max((abs(x) for x in values), default=0.0)
    safe = top if top > 0 else 1.0
    q = array("b", [round(x / safe * INT8_STEPS) for x in values])
    return q.tobytes(), array("f", [top / INT8_STEPS])[0]


def dequantize(q: bytes, scale: float) -> bytes:
    """The float32 bytes (native byte order) that ``(q, scale)`` stand for."""
    np = _numpy()
    if np is not None:
        return bytes(dequantize_rows(np, np.frombuffer(q, dtype=np.int8)[None, :], [scale]).tobytes())
    s = array("f", [scale])[0]  # the stored float32 scale, as numpy multiplies by it
    # an int8 times a float32 is exact in float64: rounding it once to float32 is numpy's product
    return array("f", [x * s for x in array("b", q)]).tobytes()
