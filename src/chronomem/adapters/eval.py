"""Retrieval benchmark on LoCoMo and LongMemEval files.

LoCoMo: every turn becomes an episode (``occurred_at`` = its session's date,
one second per turn so order is kept; image captions go to metadata), one
namespace per conversation. For every question with gold evidence (dialog ids
such as ``D1:3``) the search runs in each mode (lexical, dense, hybrid) and
view, and recall@k, hit@k and nDCG@k are computed for k = 1, 5, 10 at turn
level and at session level, overall, per category and for categories 1-4
(the headline, ``category`` ``"1-4"``; adversarial stays apart):
``recall@k`` (the mean share of a question's gold turns in the top k),
``recall_any@k`` (at least one), ``recall_all@k`` (every one) for
k = 1, 5, 10, 20, 50, ``hit@k`` (= ``recall_any@k``) and nDCG@k for k = 1, 5,
10, and ``pool_recall@50`` / ``pool_recall``: the share of the gold turns in
the union of the lexical and dense top 50 (the pool a ranker sorts) and in the
whole pool (``SearchConfig.pool`` per list), the ceiling of any reordering.

LongMemEval: each item's haystack sessions are ingested into their own
namespace (``occurred_at`` from ``haystack_dates``); the question's
``answer_session_ids`` are the gold sessions; session-level metrics.

Nothing here knows the answers: gold ids are used only to score rankings.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import math
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from ..errors import InvalidInputError
from ..service.evidence import Embedder, Kind, SearchConfig
from ..service.evidence.rank_features import FEATURE_NAMES, Candidate, features
from ..service.ingest.formats.locomo import load_locomo, locomo_episodes, parse_locomo_date
from ..service.ingest.formats.longmemeval import lme_date

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory

__all__ = ["CATEGORIES", "EvalResult", "gold_questions", "load_locomo", "run_locomo", "run_longmemeval",
           "parse_locomo_date"]

log = logging.getLogger("chronomem.evidence.eval")

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
RECALL_KS = (1, 5, 10, 20, 50)
HEADLINE = "1-4"  # the categories 1-4 together (adversarial apart)
MODES = ("lexical", "dense", "hybrid")
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclasses.dataclass
class EvalResult:
    """The summary (JSON-ready) and where the diagnostics were written."""

    summary: dict[str, Any]
    out_dir: Path | None

    def table(self) -> str:
        """A plain-text table: one row per (view, mode, level, category)."""
        lines = [f"{'view':<12}{'mode':<9}{'level':<9}{'category':<13}{'n':>5}"
                 + "".join(f"{m + '@' + str(k):>10}" for m in ("recall", "hit", "ndcg") for k in KS)]
        for row in self.summary["rows"]:
            lines.append(
                f"{row['view']:<12}{row['mode']:<9}{row['level']:<9}{row['category']:<13}{row['n']:>5}"
                + "".join(f"{row[m + '@' + str(k)]:>10.3f}" for m in ("recall", "hit", "ndcg") for k in KS)
            )
        return "\n".join(lines)


class QueryCache:
    """Wraps an embedder and remembers query vectors (modes and views re-ask)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: dict[str, Any] = {}

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> Any:
        if kind != "query" or len(texts) != 1:
            return self.inner.embed(texts, kind)
        got = self._cache.get(texts[0])
        if got is None:
            got = self.inner.embed(texts, kind)
            self._cache[texts[0]] = got
        return got


def gold_questions(conv: dict[str, Any]) -> Iterator[tuple[int, str, str, list[str]]]:
    """``(index, question, category, gold turns)`` of each question of a
    LoCoMo conversation that names its evidence (an adversarial one by its
    ``adversarial_question`` when it has no ``question``)."""
    for qi, qa in enumerate(conv.get("qa", [])):
        gold = _gold_turns(qa.get("evidence") or [])
        question = str(qa.get("question") or qa.get("adversarial_question") or "").strip()
        if gold and question:
            yield qi, question, CATEGORIES.get(int(qa.get("category", 0)), str(qa.get("category"))), gold


def _gold_turns(evidence: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for e in evidence:
        for m in _DIA.finditer(str(e)):
            d = f"D{int(m.group(1))}:{int(m.group(2))}"
            if d not in out:
                out.append(d)
    return out


def _metrics(ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in RECALL_KS:
        found = len(gold.intersection(ranked[:k]))
        out[f"recall_any@{k}"] = 1.0 if found else 0.0
        out[f"recall_all@{k}"] = 1.0 if found == len(gold) else 0.0
        if k not in KS:
            out[f"recall@{k}"] = found / len(gold)
    for k in KS:
        top = list(ranked[:k])
        found = len(gold.intersection(top))
        out[f"recall@{k}"] = found / len(gold)
        out[f"hit@{k}"] = 1.0 if found else 0.0
        dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(top) if r in gold)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
        out[f"ndcg@{k}"] = dcg / ideal if ideal else 0.0
    return out


def _dedup(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _aggregate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str, str], list[dict[str, float]]] = {}
    for r in records:
        cats = ("all", r["category"]) if r["category"] == CATEGORIES[5] else ("all", HEADLINE, r["category"])
        for cat in cats:
            groups.setdefault((r["view"], r["mode"], r["level"], cat), []).append(r["metrics"])
    rows = []
    order = {"all": 0, HEADLINE: 1, **{name: i + 2 for i, name in enumerate(CATEGORIES.values())}}
    for (view, mode, level, cat), ms in sorted(
        groups.items(), key=lambda kv: (kv[0][0], MODES.index(kv[0][1]) if kv[0][1] in MODES else 9, kv[0][2],
                                        order.get(kv[0][3], 99), kv[0][3])
    ):
        row: dict[str, Any] = {"view": view, "mode": mode, "level": level, "category": cat, "n": len(ms)}
        for key in sorted({key for m in ms for key in m}, key=_key_order):
            have = [m[key] for m in ms if key in m]
            row[key] = round(sum(have) / len(have), 4)
        rows.append(row)
    return rows


def _key_order(key: str) -> tuple[int, int, str]:
    name, _, k = key.partition("@")
    kinds = ("recall", "recall_any", "recall_all", "hit", "ndcg", "pool_recall")
    return (kinds.index(name) if name in kinds else 99, int(k) if k.isdigit() else 999, key)


def _configs(base: SearchConfig | None) -> dict[str, SearchConfig]:
    hybrid = base or SearchConfig()
    return {
        "lexical": dataclasses.replace(hybrid, dense_weight=0.0, time_weight=0.0),
        "dense": dataclasses.replace(hybrid, lexical_weight=0.0, time_weight=0.0),
        "hybrid": hybrid,
    }


def run_locomo(
    open_memory: Callable[[str], "Memory"],
    path: str | Path,
    *,
    out_dir: str | Path | None = None,
    views: Sequence[str] = ("as_world", "as_recorded", "raw"),
    modes: Sequence[str] = MODES,
    config: SearchConfig | None = None,
    limit_conversations: int | None = None,
    progress: Callable[[str], None] | None = None,
    diagnostics: str | Path | None = None,
) -> EvalResult:
    """Ingest a LoCoMo file and score retrieval. ``open_memory(namespace)``
    returns a memory on a fresh namespace (one per conversation), or one that
    already holds exactly that conversation's turns (a store kept from an
    earlier run: reused, see :func:`ingest_conversation`). ``diagnostics``: a
    folder for ``questions.jsonl``, one line per question of the first view's
    hybrid search (gold turns' ranks in the result and in the pool, and the
    learned ranker's features of each gold turn)."""
    data = load_locomo(path)
    if limit_conversations is not None:
        data = data[:limit_conversations]
    cfgs = _configs(config)
    records: list[dict[str, Any]] = []
    candidates: list[str] = ["sample\tq\tview\tmode\trank\tdia_id\tscore\tgold"]
    misses: list[str] = ["sample\tq\tcategory\tquestion\tgold\tmissing\tmissing_text\ttop3"]
    timings = {"ingest_s": 0.0, "search_s": 0.0, "episodes": 0, "questions": 0, "searches": 0}
    embedder_name: str | None = None
    diag: list[str] | None = [] if diagnostics is not None else None
    for conv in data:
        sample = str(conv.get("sample_id") or f"conv{len(records)}")
        mem = open_memory(f"locomo:{sample}")
        emb = mem.embedder
        if emb is not None:
            embedder_name = emb.name
            mem.use_embedder(QueryCache(emb))
        eps = locomo_episodes(conv)
        t0 = time.perf_counter()
        ids = ingest_conversation(mem, eps)
        timings["ingest_s"] += time.perf_counter() - t0
        timings["episodes"] += len(ids)
        by_id = {ep_id: ep for ep_id, ep in zip(ids, eps, strict=True)}
        dia_of = {ep_id: str(ep["metadata"]["dia_id"]) for ep_id, ep in by_id.items()}
        text_of = {ep["metadata"]["dia_id"]: ep["text"] for ep in eps}
        if progress:
            progress(f"{sample}: {len(ids)} turns ingested")
        for qi, question, cat, gold in gold_questions(conv):
            timings["questions"] += 1
            gold_set = set(gold)
            gold_sessions = {g.split(":")[0] for g in gold}
            for view in views:
                for mode in modes:
                    if view != views[0] and mode != "hybrid":
                        continue  # views only differ for the default search
                    t0 = time.perf_counter()
                    hits = mem.search(question, k=50, view=view, config=cfgs[mode])
                    timings["search_s"] += time.perf_counter() - t0
                    timings["searches"] += 1
                    ranked = [str(by_id[h.episode.id]["metadata"]["dia_id"]) for h in hits if h.episode.id in by_id]
                    turn_m = _metrics(ranked, gold_set)
                    sess_ranked = _dedup(r.split(":")[0] for r in ranked)
                    sess_m = _metrics(sess_ranked, gold_sessions)
                    if view == views[0] and mode == "hybrid":
                        pool = question_pool(mem, question, view, cfgs[mode])
                        pool_dias = [dia_of.get(ep_id, "") for ep_id, _c in pool]
                        top50 = {d for d, (_e, c) in zip(pool_dias, pool, strict=True)
                                 if (c.lex_rank or 999) <= 50 or (c.dense_rank or 999) <= 50}
                        turn_m["pool_recall@50"] = len(gold_set & top50) / len(gold_set)
                        turn_m["pool_recall"] = len(gold_set & set(pool_dias)) / len(gold_set)
                        if diag is not None:
                            diag.append(_diagnostic(sample, qi, cat, question, gold, ranked, pool, pool_dias))
                    base = {"sample": sample, "q": qi, "view": view, "mode": mode, "category": cat}
                    records.append({**base, "level": "turn", "metrics": turn_m})
                    records.append({**base, "level": "session", "metrics": sess_m})
                    for rank, (h, dia) in enumerate(zip(hits[:10], ranked[:10], strict=False), 1):
                        candidates.append(f"{sample}\t{qi}\t{view}\t{mode}\t{rank}\t{dia}\t{h.score:.5f}\t"
                                          f"{int(dia in gold_set)}")
                    if view == views[0] and mode == "hybrid" and turn_m["recall@10"] < 1.0:
                        missing = [g for g in gold if g not in ranked[:10]]
                        misses.append("\t".join([
                            sample, str(qi), cat, _tsv(question), ",".join(gold), ",".join(missing),
                            _tsv(" | ".join(text_of.get(g, "?") for g in missing)),
                            _tsv(" | ".join(f"{d}: {text_of.get(d, '')}" for d in ranked[:3])),
                        ]))
        mem.close()
        if progress:
            progress(f"{sample}: {timings['questions']} questions scored so far")
    summary = {
        "dataset": "locomo", "file": str(path), "conversations": len(data), "timings": timings,
        "embedder": embedder_name, "config": (config or SearchConfig()).to_dict(), "rows": _aggregate(records),
    }
    out = _write(out_dir, summary, candidates, misses)
    if diagnostics is not None and diag is not None:
        folder = Path(diagnostics)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "questions.jsonl").write_text("".join(line + "\n" for line in diag), encoding="utf-8")
    return EvalResult(summary, out)


def ingest_conversation(mem: "Memory", eps: list[dict[str, Any]]) -> list[str]:
    """Add a conversation's episodes to an empty namespace, or reuse the
    namespace's episodes when it already holds exactly these turns (same
    count, every ``dia_id``) with vectors of the embedder in use: an
    evaluation store built once (``--store``) is read again without
    re-embedding. The ids come back in ``eps``'s order."""
    stats = mem.evidence_stats()
    if not stats["episodes"]:
        return mem.add_episodes(eps)
    if stats["episodes"] != len(eps):
        raise InvalidInputError(f"namespace {mem.namespace!r} holds {stats['episodes']} episodes, not this "
                                f"conversation's {len(eps)}: use a fresh --store")
    emb = mem.embedder
    if emb is not None and stats["models"].get(emb.name, {}).get("vectors", 0) != len(eps):
        raise InvalidInputError(f"namespace {mem.namespace!r} lacks {emb.name} vectors: use a fresh --store")
    by_dia: dict[str, str] = {}
    offset = 0
    while True:
        page = mem.episodes(limit=1000, offset=offset)
        if not page:
            break
        for ep in page:
            by_dia[str(ep.metadata.get("dia_id"))] = ep.id
        offset += len(page)
    try:
        return [by_dia[str(ep["metadata"]["dia_id"])] for ep in eps]
    except KeyError as exc:
        raise InvalidInputError(f"namespace {mem.namespace!r} holds other turns (no {exc}): use a fresh --store") \
            from None


def question_pool(mem: "Memory", question: str, view: str, config: SearchConfig) -> list[tuple[str, Candidate]]:
    """The pool the search ranks for ``question`` (episode id, candidate), in
    today's fusion order (:meth:`~chronomem.service.evidence.search.Search.search_pool`)."""
    return mem._search.search_pool(question, view=view, config=config)


def _diagnostic(sample: str, qi: int, cat: str, question: str, gold: list[str], ranked: list[str],
                pool: list[tuple[str, Candidate]], pool_dias: list[str]) -> str:
    rows = features(question, [c for _e, c in pool])
    gold_rows = {d: dict(zip(FEATURE_NAMES, (round(x, 5) for x in rows[i]), strict=True))
                 for i, d in enumerate(pool_dias) if d in gold}
    return json.dumps({
        "sample": sample, "q": qi, "category": cat, "question": question, "gold": gold,
        "rank": {g: ranked.index(g) + 1 if g in ranked else None for g in gold},
        "pool_rank": {g: pool_dias.index(g) + 1 if g in pool_dias else None for g in gold},
        "pool_size": len(pool), "features": gold_rows,
    }, sort_keys=True)


def _tsv(text: str) -> str:
    return re.sub(r"[\t\r\n]+", " ", text)


def _write(out_dir: str | Path | None, summary: dict[str, Any], candidates: list[str],
           misses: list[str]) -> Path | None:
    if out_dir is None:
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "candidates.tsv").write_text("\n".join(candidates) + "\n", encoding="utf-8")
    (out / "misses.tsv").write_text("\n".join(misses) + "\n", encoding="utf-8")
    return out


def run_longmemeval(
    open_memory: Callable[[str], "Memory"],
    path: str | Path,
    *,
    out_dir: str | Path | None = None,
    modes: Sequence[str] = MODES,
    config: SearchConfig | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvalResult:
    """Score session-level retrieval on a LongMemEval JSON file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(x, dict) and "haystack_sessions" in x for x in data):
        raise InvalidInputError(f"{path} is not in the LongMemEval format (items with 'haystack_sessions')")
    if limit is not None:
        data = data[:limit]
    cfgs = _configs(config)
    records: list[dict[str, Any]] = []
    candidates = ["question_id\tmode\trank\tsession\tscore\tgold"]
    misses = ["question_id\ttype\tquestion\tgold\ttop3"]
    timings = {"ingest_s": 0.0, "search_s": 0.0, "episodes": 0, "questions": 0, "searches": 0}
    embedder_name: str | None = None
    for idx, item in enumerate(data):
        qid = str(item.get("question_id", idx))
        mem = open_memory(f"lme:{qid}")
        emb = mem.embedder
        if emb is not None:
            embedder_name = emb.name
            mem.use_embedder(QueryCache(emb))
        sids = item.get("haystack_session_ids") or [f"s{i}" for i in range(len(item["haystack_sessions"]))]
        dates = item.get("haystack_dates") or [None] * len(sids)
        eps: list[dict[str, Any]] = []
        for sid, date, session in zip(sids, dates, item["haystack_sessions"], strict=False):
            when = lme_date(date)
            for i, turn in enumerate(session or []):
                text = str(turn.get("content") or "").strip()
                if text:
                    eps.append({"text": text[:100_000], "speaker": turn.get("role"), "session": str(sid),
                                "occurred_at": when + _dt.timedelta(seconds=i) if when else None})
        t0 = time.perf_counter()
        ids = mem.add_episodes(eps)
        timings["ingest_s"] += time.perf_counter() - t0
        timings["episodes"] += len(ids)
        session_of = {ep_id: ep["session"] for ep_id, ep in zip(ids, eps, strict=True)}
        gold = {str(s) for s in item.get("answer_session_ids") or []}
        question = str(item.get("question") or "").strip()
        if not gold or not question:
            mem.close()
            continue
        timings["questions"] += 1
        at = lme_date(item.get("question_date"))
        for mode in modes:
            t0 = time.perf_counter()
            hits = mem.search(question, k=100, view="raw", at=at, config=cfgs[mode])
            timings["search_s"] += time.perf_counter() - t0
            timings["searches"] += 1
            ranked = _dedup(session_of[h.episode.id] for h in hits if h.episode.id in session_of)
            m = _metrics(ranked, gold)
            records.append({"view": "raw", "mode": mode, "level": "session",
                            "category": str(item.get("question_type", "unknown")), "metrics": m})
            for rank, sid in enumerate(ranked[:10], 1):
                candidates.append(f"{qid}\t{mode}\t{rank}\t{sid}\t\t{int(sid in gold)}")
            if mode == "hybrid" and m["recall@10"] < 1.0:
                misses.append("\t".join([qid, str(item.get("question_type", "")), _tsv(question),
                                         ",".join(sorted(gold)), ",".join(ranked[:3])]))
        mem.close()
        if progress:
            progress(f"{qid}: {len(ids)} turns")
    summary = {"dataset": "longmemeval", "file": str(path), "items": len(data), "timings": timings,
               "embedder": embedder_name, "config": (config or SearchConfig()).to_dict(),
               "rows": _aggregate(records)}
    return EvalResult(summary, _write(out_dir, summary, candidates, misses))
