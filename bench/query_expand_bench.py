"""LLM-free query expansion and pool widening for evidence search, cross-validated (issue 16).

For every LoCoMo question with gold turns, each variant builds the pool the
learned ranker sorts (the lexical and dense lists, deeper or with a third
"expansion" list merged in), computes the ranker's features (optionally with
extra columns), and scores it as ``chronomem eval train-ranker`` does:
leave-one-conversation-out, turn recall@10 (mean share of gold turns) of
today's fusion order, of the model fitted on every conversation (in fold) and
of the model fitted on the other four (out of fold); and beside them session
recall@10 (sessions in the order of their first turn), the pool's recall in
the union of the top 50 of each list (``pool50``) and in the whole pool.

    .venv/bin/chronomem eval train-ranker ../shared/data/locomo/locomo_dev.json --store /tmp/qe.db
    .venv/bin/python bench/query_expand_bench.py ../shared/data/locomo/locomo_dev.json --store /tmp/qe.db \\
        [--only base dense200 ...]

Variants (``VARIANTS``):

* ``dense200`` / ``lex200`` / ``both200``: deeper lists (200 per list instead
  of ``SearchConfig.pool``'s 100; the fusion's min-max scale still spans the
  first 100, so the first 100 score as today).
* ``spk20`` / ``spk20_denamed``: the named speaker's 20 turns nearest the
  question (or the question with the name removed: one more embedding per
  question) merged into the pool.
* ``prf3``: pseudo-relevance feedback: ``q + mean(top 3 turns of today's
  order, of the named speaker when named)``, its 20 nearest turns merged in;
  ``prf3_feat`` adds three columns (cosine to the feedback vector, the gap to
  the pool's best, 1/rank in the feedback list); ``prf3_feat_only`` adds
  the columns without merging turns.
* ``proto`` / ``proto_feat``: for "what/which [kind of] NOUN aux ..."
  questions, the head noun phrase embedded alone ("cities"), its 20 nearest
  turns of the named speaker merged in (and the three columns).
* ``qtype8``: a list-question flag (plural head noun, "where has", "has X
  done", "how many") and its products with 8 features.
* ``combo7``: rank combinations (best of the two 1/ranks, dense 1/rank when
  BM25 missed, BM25 1/rank when dense missed, top-10 flags, the lower log rank).
* ``propn``: log(1 + capitalised words past a sentence's first, speakers'
  names apart) and its product with the list-question flag.
* ``bge`` / ``bge_pool20``: a second embedder (bge-small-en-v1.5, the
  ``bge-small`` built-in) beside MiniLM: three columns (the turn's bge cosine
  to the question, the gap to the pool's best, 1/rank among the
  conversation's turns by that cosine, 0 past 100); ``bge_pool20`` also
  merges bge's 20 nearest turns into the pool. The turns are embedded as
  stored text is (``episodes.embed_text``), without neighbour context.

Nothing here knows the answers: gold turns only label rows and score orders.
The variants were written after reading the dev file's misses, so their
out-of-fold figures carry that much selection; none is shipped.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

import chronomem
from chronomem.adapters.eval import CATEGORIES, _gold_turns, ingest_conversation
from chronomem.adapters.ranker_train import ITERATIONS, L2
from chronomem.service.evidence import SearchConfig
from chronomem.service.evidence.embed import get_embedder
from chronomem.service.evidence.episodes import embed_text
from chronomem.service.evidence.rank_features import FEATURE_NAMES, Candidate, features
from chronomem.service.evidence.ranker import fit_logistic
from chronomem.service.ingest.formats.locomo import load_locomo, locomo_episodes

CATS = ["1-4", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
DEEP = 300  # the depth fetched once; variants take prefixes
_Q8 = ["dense_cos", "lex_rel", "spk_named", "session_rr", "session_best_rel", "fused_rr", "q_cover", "nbr_best_rel"]
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "dense200": {"dense": 200},
    "lex200": {"lex": 200},
    "both200": {"dense": 200, "lex": 200},
    "spk20": {"kind": "spk", "n": 20},
    "spk20_denamed": {"kind": "spk", "n": 20, "denamed": True},
    "prf3": {"kind": "prf", "m": 3, "beta": 1.0, "n": 20},
    "prf3_feat": {"kind": "prf", "m": 3, "beta": 1.0, "n": 20, "feat": True},
    "prf3_feat_only": {"kind": "prf", "m": 3, "beta": 1.0, "n": 0, "feat": True},
    "proto": {"kind": "proto", "n": 20, "restrict": True},
    "proto_feat": {"kind": "proto", "n": 20, "restrict": True, "feat": True},
    "qtype8": {"qtype": _Q8},
    "combo7": {"combo": ["best_rr", "nolex_dense_rr", "nolex_dense_gap", "nodense_lex_rr", "dense_top10",
                         "lex_top10", "min_log_rank"]},
    "propn": {"propn": True},
    "bge": {"bge": True},
    "bge_pool20": {"bge": True, "kind": "bge", "n": 20},
}
_AUX = r"(?:has|have|had|does|do|did|is|are|was|were|would|could|might|can|will)"
HEAD = re.compile(r"^\s*(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?!" + _AUX + r"\b)((?:(?!" + _AUX
                  + r"\b)[a-z]+\s+)?(?!" + _AUX + r"\b)[a-z]+)\s+" + _AUX + r"\s", re.I)
LISTQ = re.compile(r"^\s*(?:what|which)\s+(?:kinds?|types?|sorts?)\b|^\s*(?:what|which)\s+(?:\w+\s+)?\w+s\b"
                   r"(?!\s+(?:is|was)\b)|\b(?:has|have)\s+[A-Z]\w+\s+\w+|^\s*where\s+(?:has|have|did|does)\b"
                   r"|\bhow many\b", re.I)


def unit(v: Any) -> Any:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def collect(path: str, store: str, bge: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Per conversation its vectors and turns; per question its lists (``DEEP`` deep) and vectors
    (with ``bge``, also bge-small's vectors of every turn and question)."""
    cfg = SearchConfig(pool=DEEP, ranker="fusion")
    second = get_embedder("bge-small") if bge else None
    convs: dict[str, Any] = {}
    questions: list[dict[str, Any]] = []
    mems: dict[str, Any] = {}
    for conv in load_locomo(path):
        sample = str(conv["sample_id"])
        mem = mems[sample] = chronomem.open(store, namespace=f"locomo:{sample}")
        eps = locomo_episodes(conv)
        ids = ingest_conversation(mem, eps)
        dia_of = {ep_id: str(ep["metadata"]["dia_id"]) for ep_id, ep in zip(ids, eps, strict=True)}
        s = mem._search
        es = s._es
        model = s._embedding.dense_model(es, s._scope.ns_id)[1]
        cache = s._embedding.vectors()
        slot = cache.slot(es, s._scope.ns_id, model[0], model[1], s._scope.store.capabilities.local_path)
        mat = cache.matrix(slot, cfg.dense_context)
        recs = {r.rowid: r for r in es.episodes_by_rowids([int(x) for x in slot.rowids])}
        c = convs[sample] = {
            "rowids": slot.rowids.copy(), "matrix": np.asarray(mat.rows(0, mat.size), np.float32),
            "speaker": {r: x.speaker for r, x in recs.items()}, "dia": {r: dia_of.get(x.id) for r, x in recs.items()},
        }
        c["pos"] = {int(r): i for i, r in enumerate(c["rowids"])}
        if second is not None:
            c["bge"] = np.asarray(second.embed([embed_text(recs[int(r)].text, recs[int(r)].speaker, None)
                                                for r in c["rowids"]], "passage"), np.float32)
        speakers = sorted({v for v in c["speaker"].values() if v})
        heads: dict[str, Any] = {}
        for qi, qa in enumerate(conv.get("qa", [])):
            gold = _gold_turns(qa.get("evidence") or [])
            question = str(qa.get("question") or qa.get("adversarial_question") or "").strip()
            if not gold or not question:
                continue
            lex, dense, at_us, _k, _e = s._retrieve(question, 1, "as_world", None, None, None, None, None, cfg)
            qvec = np.asarray(s._embed_query(question)[1], np.float32)
            named = [sp for sp in speakers if re.search(r"\b" + re.escape(sp) + r"\b", question, re.I)]
            denamed = question
            for sp in named:
                denamed = re.sub(r"\b" + re.escape(sp) + r"(?:'s)?\b", "", denamed, flags=re.I)
            denamed = re.sub(r"\s+", " ", denamed).strip()
            m = HEAD.search(question)
            head = m.group(1).lower() if m else None
            if head and head not in heads:
                heads[head] = np.asarray(s._embed_query(head)[1], np.float32)
            questions.append({
                "sample": sample, "q": qi, "category": CATEGORIES.get(int(qa.get("category", 0))),
                "question": question, "gold": gold, "at_us": at_us, "lex": lex, "dense": dense, "qvec": qvec,
                "named": named, "dvec": np.asarray(s._embed_query(denamed)[1], np.float32) if named and denamed
                else None, "hvec": heads.get(head) if head else None,
                "bvec": np.asarray(second.embed([question], "query")[0], np.float32) if second is not None else None,
            })
        print(f"{sample}: {len(questions)} questions", file=sys.stderr)
    return convs, questions, mems


def expansion(q: dict[str, Any], conv: dict[str, Any], v: dict[str, Any], lex: list[Any], dense: list[Any],
              search: Any) -> tuple[dict[int, int], Any]:
    """The expansion list ``{rowid: rank}`` and its vector (``None``: the variant has none for ``q``)."""
    kind, named = v.get("kind"), q["named"]
    mat, rowids = conv["matrix"], conv["rowids"]
    if kind is None or (kind == "spk" and not named) or (kind == "proto" and q["hvec"] is None):
        return {}, None
    if kind == "bge":
        scores = conv["bge"] @ q["bvec"]
        top = np.argsort(-scores, kind="stable")[: v.get("n", 20)]
        return {int(rowids[j]): i + 1 for i, j in enumerate(top)}, None
    if kind == "proto":
        xvec = q["hvec"]
    elif kind == "spk":
        xvec = q["dvec"] if v.get("denamed") and q["dvec"] is not None else q["qvec"]
    else:  # prf: the top m turns of today's order, of the named speaker when named
        got = search._pool(q["question"], lex, dense, SearchConfig(ranker="fusion"), q["at_us"])
        order = sorted(got.final, key=lambda r: (-got.final[r], r))
        if named:
            order = [r for r in order if conv["speaker"].get(r) in named] or order
        fb = np.mean([mat[conv["pos"][r]] for r in order[: v["m"]]], axis=0)
        xvec = unit(unit(q["qvec"]) + v["beta"] * unit(fb))
    scores = mat @ xvec
    if kind == "spk" or (named and v.get("restrict")):
        scores = np.where(np.array([conv["speaker"].get(int(r)) in named for r in rowids]), scores, -np.inf)
    top = np.argsort(-scores, kind="stable")[: v.get("n", 20)]
    return {int(rowids[j]): i + 1 for i, j in enumerate(top) if scores[j] > -np.inf}, xvec


def pool_of(q: dict[str, Any], conv: dict[str, Any], v: dict[str, Any],
            search: Any) -> tuple[list[Candidate], dict[int, int], Any]:
    """The variant's pool in today's fusion order, its expansion list and vector. A merged turn
    carries its cosine to the question but no dense rank (it is not in the dense list)."""
    lex, dense = q["lex"][: v.get("lex", 100)], q["dense"][: v.get("dense", 100)]
    added, xvec = expansion(q, conv, v, lex, dense, search)
    listed = {r for r, _ in lex} | {r for r, _ in dense}
    new = [r for r in added if r not in listed]
    extra = sorted(((r, float(conv["matrix"][conv["pos"][r]] @ q["qvec"])) for r in new), key=lambda x: -x[1])
    got = search._pool(q["question"], lex, dense + extra, SearchConfig(ranker="fusion"), q["at_us"],
                       want_candidates=True)
    fresh = set(new)
    cands = [c._replace(dense_rank=None) if c.key in fresh else c for c in got.candidates]
    return sorted(cands, key=lambda c: (-got.final[c.key], c.key)), added, xvec


def proper_nouns(text: str, skip: set[str]) -> int:
    n = 0
    for sent in re.split(r"(?<=[.!?])\s+", text):
        toks = re.findall(r"[A-Za-z][\w'-]*", sent)
        n += sum(1 for t in toks[1:] if t[0].isupper() and t.lower() not in skip and t != "I")
    return n


def rows_of(q: dict[str, Any], conv: dict[str, Any], v: dict[str, Any], order: list[Candidate],
            added: dict[int, int], xvec: Any) -> list[list[float]]:
    rows = features(q["question"], order)
    f = {n: i for i, n in enumerate(FEATURE_NAMES)}
    listq = 1.0 if LISTQ.search(q["question"]) else 0.0
    if v.get("feat"):
        xs = [float(conv["matrix"][conv["pos"][c.key]] @ xvec) for c in order] if xvec is not None else None
        for i, (r, c) in enumerate(zip(rows, order, strict=True)):
            r += [0.0, 0.0, 0.0] if xs is None else [xs[i], max(xs) - xs[i], 1.0 / added[c.key] if c.key in added
                                                     else 0.0]
    if v.get("qtype"):
        for r in rows:
            r += [listq] + [listq * r[f[n]] for n in v["qtype"]]
    if v.get("combo"):
        for r in rows:
            lin, din = r[f["lex_in"]], r[f["dense_in"]]
            extra = {
                "best_rr": max(r[f["lex_rr"]], r[f["dense_rr"]]),
                "nolex_dense_rr": (1 - lin) * r[f["dense_rr"]], "nolex_dense_gap": (1 - lin) * r[f["dense_gap"]],
                "nodense_lex_rr": (1 - din) * r[f["lex_rr"]],
                "dense_top10": 1.0 if din and r[f["dense_rr"]] >= 0.1 else 0.0,
                "lex_top10": 1.0 if lin and r[f["lex_rr"]] >= 0.1 else 0.0,
                "min_log_rank": min(r[f["lex_log_rank"]], r[f["dense_log_rank"]]),
            }
            r += [extra[k] for k in v["combo"]]
    if v.get("bge"):
        cos = conv["bge"] @ q["bvec"]
        rank = np.empty(len(cos), np.int64)
        rank[np.argsort(-cos, kind="stable")] = np.arange(1, len(cos) + 1)
        mine = [float(cos[conv["pos"][c.key]]) for c in order]
        top = max(mine)
        for r, c, x in zip(rows, order, mine, strict=True):
            k = int(rank[conv["pos"][c.key]])
            r += [x, top - x, 1.0 / k if k <= 100 else 0.0]
    if v.get("propn"):
        skip = {w.lower() for c in order if c.speaker for w in c.speaker.split()}
        for r, c in zip(rows, order, strict=True):
            x = math.log1p(proper_nouns(c.text, skip))
            r += [x, listq * x]
    return rows


def _scorer(groups: list[dict[str, Any]]) -> Callable[[Any], Any]:
    mean, scale, coef, b = fit_logistic([r for g in groups for r in g["rows"].tolist()],
                                        [y for g in groups for y in g["labels"]], L2, ITERATIONS)
    w = np.asarray(coef) / np.asarray(scale)
    b0 = b - float(w @ np.asarray(mean))
    return lambda rows: rows @ w + b0


def _recalls(g: dict[str, Any], order: list[int]) -> tuple[float, float]:
    turn = sum(g["labels"][i] for i in order[:10]) / len(g["gold"])
    sessions: list[str] = []
    for i in order:
        s = (g["dias"][i] or "?").split(":")[0]
        if s not in sessions:
            sessions.append(s)
    gold_s = {d.split(":")[0] for d in g["gold"]}
    return turn, len(gold_s & set(sessions[:10])) / len(gold_s)


def run(name: str, v: dict[str, Any], convs: dict[str, Any], questions: list[dict[str, Any]],
        mems: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    groups = []
    for q in questions:
        conv = convs[q["sample"]]
        order, added, xvec = pool_of(q, conv, v, mems[q["sample"]]._search)
        dias = [conv["dia"].get(c.key) for c in order]
        gold = set(q["gold"])
        labels = [int(d in gold) for d in dias]
        top50 = {d for d, c in zip(dias, order, strict=True)
                 if min(c.lex_rank or 999, c.dense_rank or 999, added.get(c.key, 999)) <= 50}
        groups.append({"rows": np.asarray(rows_of(q, conv, v, order, added, xvec)), "labels": labels, "dias": dias,
                       "gold": gold, "cat": q["category"], "sample": q["sample"],
                       "pool50": len(gold & top50) / len(gold), "pool": sum(labels) / len(gold)})
    full = _scorer(groups)
    agg: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    for s in sorted({g["sample"] for g in groups}):
        oof = _scorer([g for g in groups if g["sample"] != s])
        for g in (g for g in groups if g["sample"] == s):
            n = len(g["labels"])
            sf, so = full(g["rows"]).tolist(), oof(g["rows"]).tolist()
            fu = _recalls(g, list(range(n)))
            inf = _recalls(g, sorted(range(n), key=lambda i: (-sf[i], i)))
            oo = _recalls(g, sorted(range(n), key=lambda i: (-so[i], i)))
            for key in [g["cat"]] if g["cat"] == "adversarial" else ["1-4", g["cat"]]:
                agg[key].append((fu[0], inf[0], oo[0], inf[1], oo[1], g["pool50"], g["pool"], n))
    res = {k: [float(x) for x in np.mean(np.asarray(vals), axis=0)] for k, vals in agg.items()}
    print(f"== {name}  {json.dumps(v)}  ({time.perf_counter() - t0:.0f} s)")
    print(f"{'':12}{'fusion':>8}{'in-fold':>8}{'OOF':>8}{'sessIN':>8}{'sessOOF':>8}{'pool50':>8}{'pool':>8}"
          f"{'size':>7}")
    for k in CATS:
        print(f"{k:12}" + "".join(f"{x:8.3f}" for x in res[k][:7]) + f"{res[k][7]:7.0f}")
    sys.stdout.flush()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--store", required=True, help="a store kept by `chronomem eval train-ranker --store`")
    ap.add_argument("--only", nargs="*", choices=sorted(VARIANTS), help="variants to run (default: all)")
    ap.add_argument("--json", type=Path, help="write every variant's figures here")
    args = ap.parse_args()
    names = args.only or list(VARIANTS)
    convs, questions, mems = collect(str(args.path), args.store, bge=any(VARIANTS[n].get("bge") for n in names))
    out = {name: run(name, VARIANTS[name], convs, questions, mems) for name in args.only or VARIANTS}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
