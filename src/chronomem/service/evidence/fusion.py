"""Rank fusion as pure functions (property-tested in ``tests/test_evidence_fusion.py``).

Weighted reciprocal-rank fusion: an item at (1-based) rank ``r`` of list
``i`` scores ``w_i / (k + r)``; an item's fused score is the sum over the
lists that contain it. Ties break by the item key so results are stable.

Relative-score fusion (:func:`relative_contributions`): each list's own
scores (BM25, cosine) are min-max normalised to ``[0, 1]`` over the list,
weighted, and summed. Unlike RRF it keeps how far ahead a list's leader is:
a lexical match that clearly beats the rest stays first even when the dense
list prefers something else, which is what keeps the fused top 1 at least as
precise as the better list alone.

Group propagation (:func:`group_boost`): an item gains a share of the best
scores in its group (for episodes: its session), so a turn of a conversation
that matches the question as a whole ranks above an equally scored turn of
one that does not.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence, TypeVar

__all__ = ["group_boost", "minmax", "relative_contributions", "rrf", "rrf_contributions"]

K = TypeVar("K", bound=Hashable)


def rrf_contributions(rankings: Sequence[Sequence[K]], weights: Sequence[float],
                      k: float = 60.0) -> dict[K, list[float]]:
    """Per item, its contribution from each ranking (0.0 where absent)."""
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking")
    if k < 0:
        raise ValueError("k must be non-negative")
    out: dict[K, list[float]] = {}
    for i, (ranking, w) in enumerate(zip(rankings, weights, strict=True)):
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


def minmax(scored: Sequence[tuple[K, float]], top: int | None = None,
           floor: float | None = None) -> dict[K, float]:
    """Scores mapped linearly to ``[0, 1]``: the best 1, the worst of the
    first ``top`` distinct items (default: all) 0, anything below it clamped
    to 0. All-equal scores (one item included) all become 1. An item listed
    twice keeps its first score. ``top`` makes the scale independent of how
    many candidates were fetched.

    ``floor`` is what an item the list did not find would score (0 for BM25
    and for cosine similarity). When the list holds fewer than ``top`` items
    it ran out of candidates, so its worst item is not the bottom of the
    scale: ``min(worst, floor)`` is. Without it, a store with two matching
    episodes would score the second as if it were irrelevant."""
    first = {item: float(score) for item, score in scored}
    if len(first) < len(scored):  # an item listed twice: its first score
        first = {}
        for item, score in scored:
            if item not in first:
                first[item] = float(score)
    if not first:
        return {}
    ref = list(first.values())[:top] if top is not None and top > 0 else list(first.values())
    hi, lo = max(ref), min(ref)
    if floor is not None and top is not None and len(ref) < top:
        lo = min(lo, floor)
    span = hi - lo
    if not span > 0:  # also catches NaN
        return {item: 1.0 if score >= lo else 0.0 for item, score in first.items()}
    out: dict[K, float] = {}
    for item, score in first.items():
        x = (score - lo) / span
        out[item] = x if 0.0 < x < 1.0 else (1.0 if x >= 1.0 else 0.0)  # (clamped; NaN: 0)
    return out


def relative_contributions(lists: Sequence[Sequence[tuple[K, float]]], weights: Sequence[float],
                           scale: float = 1.0, top: int | None = None,
                           floors: Sequence[float | None] | None = None) -> dict[K, list[float]]:
    """Per item, ``scale * weight_i * minmax(list_i, top, floor_i)[item]``
    for each list (0.0 where absent), from ``(item, score)`` lists where
    higher is better. A list with weight 0 contributes nothing and adds no
    items."""
    if len(lists) != len(weights) or (floors is not None and len(floors) != len(lists)):
        raise ValueError("one weight (and floor) per list")
    if scale <= 0:
        raise ValueError("scale must be positive")
    out: dict[K, list[float]] = {}
    for i, (scored, w) in enumerate(zip(lists, weights, strict=True)):
        if w <= 0:
            continue
        sw = scale * w
        for item, norm in minmax(scored, top, None if floors is None else floors[i]).items():
            parts = out.get(item)
            if parts is None:
                parts = out[item] = [0.0] * len(lists)
            parts[i] = sw * norm
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
    if top == 1:  # (the common case: a group's best score, with no list per group)
        best: dict[Hashable, float] = {}
        for item, score in scores.items():
            g = groups.get(item)
            if g is not None and (g not in best or score > best[g]):
                best[g] = score
        gain = {g: weight * b for g, b in best.items()}
    else:
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
