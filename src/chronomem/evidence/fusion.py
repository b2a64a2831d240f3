"""Rank fusion as pure functions (property-tested in ``tests/test_evidence_fusion.py``).

Weighted reciprocal-rank fusion: an item at (1-based) rank ``r`` of list
``i`` scores ``w_i / (k + r)``; an item's fused score is the sum over the
lists that contain it. Ties break by the item key so results are stable.

Group propagation (:func:`group_boost`): an item gains a share of the best
scores in its group (for episodes: its session), so a turn of a conversation
that matches the question as a whole ranks above an equally scored turn of
one that does not.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence, TypeVar

__all__ = ["group_boost", "rrf", "rrf_contributions"]

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


def group_boost(scores: Mapping[K, float], groups: Mapping[K, Hashable | None], weight: float,
                top: int = 1) -> dict[K, float]:
    """Each item's score plus ``weight`` times the sum of the ``top`` best
    scores of its group (itself included). Items without a group (absent
    from ``groups`` or ``None``) keep their score. Within a group every item
    gains the same amount, so a group's internal order never changes."""
    if weight < 0:
        raise ValueError("weight must be non-negative")
    if top < 1:
        raise ValueError("top must be at least 1")
    if weight == 0:
        return dict(scores)
    members: dict[Hashable, list[float]] = {}
    for item, score in scores.items():
        g = groups.get(item)
        if g is not None:
            members.setdefault(g, []).append(score)
    gain = {g: weight * sum(sorted(v, reverse=True)[:top]) for g, v in members.items()}
    out: dict[K, float] = {}
    for item, score in scores.items():
        g = groups.get(item)
        out[item] = score + gain[g] if g is not None else score
    return out
