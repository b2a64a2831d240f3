"""Training the learned ranker on a LoCoMo file (``chronomem eval train-ranker``).

Every question with gold turns is searched once (the ``as_world`` view, the
default hybrid configuration); its pool (the union of the lexical and dense
lists) becomes one group of labelled candidates: the features of
:mod:`chronomem.service.evidence.rank_features`, label 1 for a gold turn. An
L2-regularised logistic regression (:func:`~chronomem.service.evidence.ranker.fit_logistic`,
Newton's method, fixed iterations, no randomness) is fitted on every
question of every category.

Leave-one-conversation-out cross-validation: for each conversation, the model
fitted on the other conversations ranks its questions (out of fold) and the
model fitted on all of them ranks them too (in fold); today's fusion order is
scored beside both. The figures (turn-level mean-share recall@10; categories
1-4 together as the headline, each category, adversarial apart) go into the
model file's ``meta.cv``, with the sha256 of the training file: rerunning the
command on the same file rebuilds the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..errors import InvalidInputError
from ..service.evidence import SearchConfig
from ..service.evidence.rank_features import FEATURE_NAMES, features
from ..service.evidence.ranker import FORMAT, dump_model, fit_logistic, parse_model
from ..service.ingest.formats.locomo import load_locomo, locomo_episodes
from .eval import CATEGORIES, HEADLINE, gold_questions, ingest_conversation, question_pool

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory

__all__ = ["L2", "ITERATIONS", "Group", "TrainResult", "collect", "cross_validate", "train_ranker"]

#: the penalty on the standardised coefficients and Newton's iterations
L2 = 1000.0
ITERATIONS = 30
#: the figure the cross-validation reports
K = 10


@dataclasses.dataclass(frozen=True)
class Group:
    """One question's pool: feature rows in today's fusion order, labels."""

    sample: str
    q: int
    category: str
    rows: list[list[float]]
    labels: list[int]
    gold: int  # gold turns of the question (some may be outside the pool)


@dataclasses.dataclass
class TrainResult:
    """The model file's text and the cross-validation table."""

    text: str
    cv: dict[str, Any]

    def table(self) -> str:
        cats = [HEADLINE, *[CATEGORIES[c] for c in (1, 2, 3, 4)], CATEGORIES[5]]
        head = f"{'held out':<10}{'n':>5}  " + "".join(f"{c:>30}" for c in cats)
        sub = f"{'':<17}" + "".join(f"{'fusion':>10}{'in-fold':>8}{'out-of-fold':>12}" for _ in cats)
        lines = [f"recall@{K} (mean share of gold turns), fusion vs learned in fold vs out of fold", head, sub]
        for name in [*self.cv["folds"], "all"]:
            f = self.cv["folds"][name] if name != "all" else self.cv["overall"]
            cells = []
            for c in cats:
                m = f["categories"].get(c)
                cells.append(f"{'-':>30}" if m is None else
                             f"{m['fusion']:>10.3f}{m['in_fold']:>8.3f}{m['out_of_fold']:>12.3f}")
            lines.append(f"{name:<10}{f['n']:>5}  " + "".join(cells))
        lines.append(f"pool ceiling (gold turns in the pool), {HEADLINE}: {self.cv['pool_ceiling'][HEADLINE]:.3f}; "
                     f"adversarial: {self.cv['pool_ceiling'][CATEGORIES[5]]:.3f}")
        return "\n".join(lines)


def collect(open_memory: Callable[[str], "Memory"], path: str | Path, *, config: SearchConfig | None = None,
            progress: Callable[[str], None] | None = None) -> tuple[list[Group], str | None]:
    """The labelled pools of every question of the file (and the embedder's name)."""
    cfg = dataclasses.replace(config or SearchConfig(), ranker="fusion")
    groups: list[Group] = []
    embedder: str | None = None
    data = load_locomo(path)
    # every conversation is stored before any is searched: BM25 ranks over
    # each namespace's own statistics, but which terms are too common to rank
    # is decided over the store, so a fresh store and one kept from an
    # earlier run give the same features (and the same model file)
    ids_of: list[list[str]] = []
    for i, conv in enumerate(data):
        mem = open_memory(f"locomo:{_sample(conv, i)}")
        try:
            ids_of.append(ingest_conversation(mem, locomo_episodes(conv)))
        finally:
            mem.close()
    for i, (conv, ids) in enumerate(zip(data, ids_of, strict=True)):
        sample = _sample(conv, i)
        mem = open_memory(f"locomo:{sample}")
        try:
            if mem.embedder is not None:
                embedder = mem.embedder.name
            eps = locomo_episodes(conv)
            dia_of = {ep_id: str(ep["metadata"]["dia_id"]) for ep_id, ep in zip(ids, eps, strict=True)}
            for qi, question, cat, gold_turns in gold_questions(conv):
                gold = set(gold_turns)
                pool = question_pool(mem, question, "as_world", cfg)
                rows = features(question, [c for _e, c in pool])
                labels = [int(dia_of.get(ep_id) in gold) for ep_id, _c in pool]
                groups.append(Group(sample, qi, cat, rows, labels, len(gold)))
        finally:
            mem.close()
        if progress:
            progress(f"{sample}: {len(groups)} questions so far")
    if len({g.sample for g in groups}) < 2:
        raise InvalidInputError("training needs at least two conversations with questions (leave-one-out)")
    return groups, embedder


def _sample(conv: dict[str, Any], index: int) -> str:
    return str(conv["sample_id"]) if conv.get("sample_id") else f"conv{index}"


def _fit(groups: Sequence[Group], l2: float) -> tuple[list[float], list[float], list[float], float]:
    x = [r for g in groups for r in g.rows]
    y = [lab for g in groups for lab in g.labels]
    return fit_logistic(x, y, l2, ITERATIONS)


def _scorer(model: tuple[list[float], list[float], list[float], float]) -> Callable[[Any], Any]:
    import numpy as np

    mean, scale, coef, intercept = model
    w = np.asarray(coef) / np.asarray(scale)
    b = intercept - float(w @ np.asarray(mean))
    return lambda rows: rows @ w + b


def _recall(g: Group, order: Sequence[int]) -> float:
    return sum(g.labels[i] for i in order[:K]) / g.gold


def _learned_order(g: Group, rows: Any, score: Callable[[Any], Any]) -> list[int]:
    s = score(rows).tolist()
    return sorted(range(len(g.rows)), key=lambda i: (-s[i], i))


def _summary(per: list[tuple[Group, float, float, float]]) -> dict[str, Any]:
    cats: dict[str, list[tuple[float, float, float]]] = {}
    for g, fu, inf, oof in per:
        keys = [g.category] if g.category == CATEGORIES[5] else [HEADLINE, g.category]
        for key in keys:
            cats.setdefault(key, []).append((fu, inf, oof))
    out: dict[str, Any] = {"n": len(per), "categories": {}}
    for key, vals in cats.items():
        out["categories"][key] = {
            "n": len(vals),
            "fusion": round(sum(v[0] for v in vals) / len(vals), 4),
            "in_fold": round(sum(v[1] for v in vals) / len(vals), 4),
            "out_of_fold": round(sum(v[2] for v in vals) / len(vals), 4),
        }
    return out


def cross_validate(groups: Sequence[Group], l2: float = L2) -> dict[str, Any]:
    """Leave-one-conversation-out figures (see the module docstring)."""
    import numpy as np

    samples = sorted({g.sample for g in groups})
    arrays = {id(g): np.asarray(g.rows, dtype=np.float64).reshape(len(g.rows), len(FEATURE_NAMES)) for g in groups}
    full = _scorer(_fit(groups, l2))
    per_all: list[tuple[Group, float, float, float]] = []
    folds: dict[str, Any] = {}
    for s in samples:
        held = [g for g in groups if g.sample == s]
        oof = _scorer(_fit([g for g in groups if g.sample != s], l2))
        per = [(g, _recall(g, range(len(g.rows))), _recall(g, _learned_order(g, arrays[id(g)], full)),
                _recall(g, _learned_order(g, arrays[id(g)], oof))) for g in held]
        folds[s] = _summary(per)
        per_all += per
    ceiling: dict[str, list[float]] = {}
    for g in groups:
        for key in ([g.category] if g.category == CATEGORIES[5] else [HEADLINE, g.category]):
            ceiling.setdefault(key, []).append(sum(g.labels) / g.gold)
    return {"metric": f"recall@{K}", "folds": folds, "overall": _summary(per_all),
            "pool_ceiling": {k: round(sum(v) / len(v), 4) for k, v in sorted(ceiling.items())}}


def train_ranker(open_memory: Callable[[str], "Memory"], path: str | Path, *, l2: float = L2,
                 progress: Callable[[str], None] | None = None) -> TrainResult:
    """Fit the ranker on every question of ``path`` and cross-validate it."""
    data_sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    groups, embedder = collect(open_memory, path, progress=progress)
    cv = cross_validate(groups, l2)
    mean, scale, coef, intercept = _fit(groups, l2)
    cfg = SearchConfig()
    meta = {
        "model": "logistic regression, L2 on standardised features, Newton's method",
        "l2": l2, "iterations": ITERATIONS,
        "training": {
            "data_sha256": data_sha, "file": Path(path).name, "embedder": embedder,
            "conversations": sorted({g.sample for g in groups}), "questions": len(groups),
            "candidates": sum(len(g.rows) for g in groups), "positives": sum(sum(g.labels) for g in groups),
            "view": "as_world", "pool": cfg.pool,
            "command": "chronomem eval train-ranker " + Path(path).name,
        },
        "cv": cv,
    }
    text = dump_model(FEATURE_NAMES, mean, scale, coef, intercept, meta)
    parse_model(text)  # what is written always loads
    assert FORMAT in text
    return TrainResult(text, cv)
