"""The learned ranker: an L2-regularised logistic regression over
:mod:`.rank_features`, shipped as coefficients in a JSON package file
(``data/ranker.json``), and the numpy fit that produces it.

Scoring is pure Python (a dot product per candidate); only :func:`fit_logistic`
(training, ``chronomem eval train-ranker``) needs numpy. A model file is
checked when it loads: its format, its feature names against
:data:`~.rank_features.FEATURE_NAMES`, the shapes and finiteness of its
numbers, the training data fingerprint's form and a sha256 of its own content;
any mismatch raises :class:`RankerFileError` (the search then logs it once and
ranks with today's fusion: never a silently wrong order).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from operator import mul
from pathlib import Path
from typing import Any, Sequence

from .rank_features import FEATURE_NAMES

__all__ = ["FORMAT", "LearnedRanker", "RankerFileError", "dump_model", "fit_logistic", "load_ranker",
           "shipped_ranker"]

FORMAT = "chronomem-ranker/1"
_HEX64 = re.compile(r"[0-9a-f]{64}")


class RankerFileError(ValueError):
    """A ranker model file that is missing, corrupt or made for other features."""


@dataclass(frozen=True)
class LearnedRanker:
    """Standardised logistic regression: ``intercept + sum(coef * (x - mean) / scale)``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    meta: dict[str, Any]
    _w: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _b: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w = tuple(c / s for c, s in zip(self.coef, self.scale, strict=True))
        object.__setattr__(self, "_w", w)
        object.__setattr__(self, "_b", self.intercept - sum(wi * m for wi, m in zip(w, self.mean, strict=True)))

    def scores(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """The logit of each feature row (higher ranks first)."""
        w, b, n = self._w, self._b, len(self._w)
        out = []
        for row in rows:
            if len(row) != n:
                raise ValueError(f"a feature row has {len(row)} values, not {n}")
            out.append(b + sum(map(mul, w, row)))
        return out


def _content_digest(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _round(x: float) -> float:
    # 4 significant digits, nothing below 1e-6, no negative zero: the file is
    # the same whatever the BLAS's and the embedder's last bits (two machines'
    # onnxruntime moved the fitted numbers in their 8th-9th digit; a rounding
    # step 1e4 times wider than that drift rarely has a boundary inside it).
    # The scores move by ~1e-4 at most: far below any ranking difference
    return float(f"{round(x, 6):.4g}") + 0.0


def dump_model(features: Sequence[str], mean: Sequence[float], scale: Sequence[float], coef: Sequence[float],
               intercept: float, meta: dict[str, Any]) -> str:
    """The model file's text (deterministic: sorted keys, rounded numbers,
    its own sha256 inside)."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "features": list(features),
        "mean": [_round(x) for x in mean],
        "scale": [_round(x) for x in scale],
        "coef": [_round(x) for x in coef],
        "intercept": _round(intercept),
        "meta": meta,
    }
    doc["sha256"] = _content_digest(doc)
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _floats(doc: dict[str, Any], key: str, n: int) -> tuple[float, ...]:
    v = doc.get(key)
    if not isinstance(v, list) or len(v) != n or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        raise RankerFileError(f"ranker file: {key!r} must be {n} finite numbers")
    return tuple(float(x) for x in v)


def parse_model(text: str, where: str = "ranker file") -> LearnedRanker:
    """Check and load a model file's text (see the module docstring)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RankerFileError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RankerFileError(f"{where} is not a {FORMAT} file")
    if doc.get("sha256") != _content_digest(doc):
        raise RankerFileError(f"{where}: its content does not match its sha256 (edited or corrupt)")
    if doc.get("features") != list(FEATURE_NAMES):
        raise RankerFileError(f"{where} was trained on other features than this version computes")
    meta = doc.get("meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("training"), dict) or not _HEX64.fullmatch(
            str(meta["training"].get("data_sha256", ""))):
        raise RankerFileError(f"{where} has no training data fingerprint")
    n = len(FEATURE_NAMES)
    scale = _floats(doc, "scale", n)
    if any(s <= 0 for s in scale):
        raise RankerFileError(f"{where}: 'scale' must be positive")
    intercept = doc.get("intercept")
    if not isinstance(intercept, (int, float)) or isinstance(intercept, bool) or not math.isfinite(intercept):
        raise RankerFileError(f"{where}: 'intercept' must be a finite number")
    return LearnedRanker(FEATURE_NAMES, _floats(doc, "mean", n), scale, _floats(doc, "coef", n),
                         float(intercept), meta)


def load_ranker(path: str | Path | None = None) -> LearnedRanker:
    """The model at ``path``, or the one shipped in the package."""
    if path is None:
        try:
            text = resources.files("chronomem.service.evidence").joinpath("data/ranker.json").read_text("utf-8")
        except (FileNotFoundError, OSError) as exc:
            raise RankerFileError(f"the shipped ranker file is missing: {exc}") from None
        return parse_model(text, "the shipped ranker file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RankerFileError(f"cannot read ranker file {path}: {exc}") from None
    return parse_model(text, str(path))


_SHIPPED: list[LearnedRanker | RankerFileError] = []
_LOCK = threading.Lock()


def shipped_ranker() -> LearnedRanker:
    """The package's model, loaded and checked once per process (a bad file
    raises the same :class:`RankerFileError` on every call)."""
    with _LOCK:
        if not _SHIPPED:
            try:
                _SHIPPED.append(load_ranker())
            except RankerFileError as exc:
                _SHIPPED.append(exc)
        got = _SHIPPED[0]
    if isinstance(got, RankerFileError):
        raise got
    return got


def fit_logistic(x: Any, y: Any, l2: float, iterations: int = 30) -> tuple[list[float], list[float], list[float],
                                                                               float]:
    """L2-regularised logistic regression by Newton's method (IRLS), a fixed
    number of iterations, no randomness: ``(mean, scale, coef, intercept)``
    on standardised features (``scale`` 1 for a constant column). The
    intercept is not penalised. Needs numpy."""
    import numpy as np

    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    mean = xa.mean(axis=0)
    scale = xa.std(axis=0)
    scale[scale < 1e-12] = 1.0
    z = np.hstack([np.ones((xa.shape[0], 1)), (xa - mean) / scale])
    beta = np.zeros(z.shape[1])
    pen = np.full(z.shape[1], float(l2))
    pen[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -35, 35)))
        grad = z.T @ (p - ya) + pen * beta
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(pen) + 1e-9 * np.eye(z.shape[1])
        beta = beta - np.linalg.solve(hess, grad)
    return mean.tolist(), scale.tolist(), beta[1:].tolist(), float(beta[0])
