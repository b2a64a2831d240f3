"""Rank fusion as pure functions (property-tested in ``tests/test_evidence_fusion.py``).

Weighted reciprocal-rank fusion: an item at (1-based) rank ``r`` of list
``i`` scores ``w_i / (k + r)``; an item's fused score is the sum over the
lists that contain it. Ties break by the item key so results are stable.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence, TypeVar

__all__ = ["rrf", "rrf_contributions"]

K = TypeVar("K", bound=Hashable)


def rrf_contributions(rankings: Sequence[Sequence[K]], weights: Sequence[float], k: float = 60.0) -> dict[K, list[float]]:
    """Per item, its contribution from each ranking (0.0 where absent)."""
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking")
    if k < 0:
        raise ValueError("k must be non-negative")
    out: dict[K, list[float]] = {}
    for i, (ranking, w) in enumerate(zip(rankings, weights)):
        seen: set[K] = set()
        rank = 0
        for item in ranking:
            if item in seen:
                continue  # only an item's best rank in a list counts
            seen.add(item)
            rank += 1
            parts = out.setdefault(item, [0.0] * len(rankings))
            parts[i] = w / (k + rank)
    return out


def rrf(
    rankings: Sequence[Sequence[K]],
    weights: Sequence[float] | None = None,
    k: float = 60.0,
    extra: Mapping[K, float] | None = None,
) -> list[tuple[K, float]]:
    """Fuse ranked lists; ``extra`` adds a per-item bonus (e.g. time proximity)
    to items that appear in some list. Returns ``(item, score)`` best first."""
    w = list(weights) if weights is not None else [1.0] * len(rankings)
    parts = rrf_contributions(rankings, w, k)
    scored = {item: sum(p) + (extra.get(item, 0.0) if extra else 0.0) for item, p in parts.items()}
    return sorted(scored.items(), key=lambda kv: (-kv[1], repr(kv[0])))
