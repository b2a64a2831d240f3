"""Which model family should rank the pool? (issue 16: "logistic regression,
linear or gradient-boosted trees — measure which").

Every model here sees the same labelled pools as ``chronomem eval
train-ranker`` (the shipped features, one group per question, LoCoMo's dev
half) and is scored the same way: turn-level mean-share recall@10,
categories 1-4 together and each category, adversarial apart, fitted on all
five conversations (*in fold*) and on the other four (*out of fold*, leave
one conversation out). The shipped logistic regression is the first row, so
the table reproduces ``train-ranker``'s figures.

Run it in the training environment, never the product's (``train/README.md``)::

    python -m venv .venv-train
    .venv-train/bin/pip install -e . -r train/requirements.txt
    .venv-train/bin/python train/compare_rankers.py ../shared/data/locomo/locomo_dev.json \\
        --cache /tmp/ranker-groups.pkl

``--cache`` keeps the searched pools (about 3 minutes to make) for later
runs; it holds LoCoMo-derived numbers only, and stays outside the repository.
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import chronomem
from chronomem.adapters.eval import CATEGORIES, HEADLINE
from chronomem.adapters.ranker_train import L2, Group, _fit, _recall, _scorer, _summary, collect

Scorer = Callable[[Any], Any]
Fitter = Callable[[Sequence[Group]], Scorer]


def _xy(groups: Sequence[Group]) -> tuple[Any, Any]:
    x = np.asarray([r for g in groups for r in g.rows], dtype=np.float64)
    y = np.asarray([lab for g in groups for lab in g.labels], dtype=np.int64)
    return x, y


def logistic(groups: Sequence[Group]) -> Scorer:
    """The shipped model: L2 logistic regression, Newton's method (``train-ranker``)."""
    return _scorer(_fit(groups, L2))


def trees(**params: Any) -> Fitter:
    """Gradient-boosted trees (scikit-learn's histogram GBDT, log loss)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    def fit(groups: Sequence[Group]) -> Scorer:
        x, y = _xy(groups)
        model = HistGradientBoostingClassifier(early_stopping=False, random_state=0, **params).fit(x, y)
        return lambda rows: model.decision_function(rows)

    return fit


def forest(**params: Any) -> Fitter:
    """Random forest probabilities (a non-boosted baseline of trees)."""
    from sklearn.ensemble import RandomForestClassifier

    def fit(groups: Sequence[Group]) -> Scorer:
        x, y = _xy(groups)
        model = RandomForestClassifier(random_state=0, n_jobs=2, **params).fit(x, y)
        return lambda rows: model.predict_proba(rows)[:, 1]

    return fit


def _order(g: Group, rows: Any, score: Scorer) -> list[int]:
    s = np.asarray(score(rows)).tolist()
    return sorted(range(len(g.rows)), key=lambda i: (-s[i], i))


def cross_validate(groups: Sequence[Group], fit: Fitter) -> dict[str, Any]:
    """In-fold and out-of-fold figures of one model family (as ``ranker_train.cross_validate``)."""
    arrays = {id(g): np.asarray(g.rows, dtype=np.float64) for g in groups}
    full = fit(groups)
    per_all = []
    gaps = {}
    for s in sorted({g.sample for g in groups}):
        held = [g for g in groups if g.sample == s]
        oof = fit([g for g in groups if g.sample != s])
        per = [(g, _recall(g, range(len(g.rows))), _recall(g, _order(g, arrays[id(g)], full)),
                _recall(g, _order(g, arrays[id(g)], oof))) for g in held]
        fold = _summary(per)["categories"].get(HEADLINE)
        if fold:
            gaps[s] = fold["in_fold"] - fold["out_of_fold"]
        per_all += per
    out = _summary(per_all)
    out["largest_gap"] = max(gaps.items(), key=lambda kv: kv[1]) if gaps else None
    return out


MODELS: dict[str, Fitter] = {
    "logistic (shipped)": logistic,
    "trees d3 lr.05 x200": trees(max_depth=3, learning_rate=0.05, max_iter=200, min_samples_leaf=100,
                                 l2_regularization=1.0),
    "trees d3 lr.05 x500": trees(max_depth=3, learning_rate=0.05, max_iter=500, min_samples_leaf=100,
                                 l2_regularization=1.0),
    "trees d5 lr.05 x300": trees(max_depth=5, learning_rate=0.05, max_iter=300, min_samples_leaf=100,
                                 l2_regularization=1.0),
    "trees d2 lr.1 x300": trees(max_depth=2, learning_rate=0.1, max_iter=300, min_samples_leaf=200,
                                l2_regularization=1.0),
    "forest 300 leaf 20": forest(n_estimators=300, min_samples_leaf=20, max_features=0.3),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("locomo", type=Path)
    ap.add_argument("--cache", type=Path, help="Where the searched pools are kept between runs (outside the repo).")
    ap.add_argument("--models", default=",".join(MODELS), help="Comma-separated names of MODELS.")
    args = ap.parse_args()
    if args.cache and args.cache.exists():
        groups, embedder = pickle.loads(args.cache.read_bytes())
    else:
        with tempfile.TemporaryDirectory(prefix="chronomem-train-") as tmp:
            db = str(Path(tmp) / "eval.db")
            groups, embedder = collect(lambda ns: chronomem.open(db, namespace=ns), args.locomo,
                                       progress=lambda m: print(m, flush=True))
        if args.cache:
            args.cache.write_bytes(pickle.dumps((groups, embedder)))
    pos = sum(sum(g.labels) for g in groups)
    print(f"{len(groups)} questions, {sum(len(g.rows) for g in groups)} candidates, {pos} gold; embedder {embedder}")
    cats = [HEADLINE, *[CATEGORIES[c] for c in (1, 2, 3, 4)], CATEGORIES[5]]
    print(f"{'model':<22}{'1-4 in / out':>16}" + "".join(f"{c[:11]:>12}" for c in cats[1:])
          + f"{'gap (conv)':>20}{'fit s':>8}")
    for name in args.models.split(","):
        t0 = time.perf_counter()
        res = cross_validate(groups, MODELS[name])
        dt = time.perf_counter() - t0
        c = res["categories"]
        gap = res["largest_gap"]
        print(f"{name:<22}{c[HEADLINE]['in_fold']:>8.3f} / {c[HEADLINE]['out_of_fold']:.3f}"
              + "".join(f"{c[k]['out_of_fold']:>12.3f}" for k in cats[1:])
              + f"{gap[1]:>12.3f} ({gap[0]})" + f"{dt:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
