"""Hybrid search over episodes: BM25 and dense vectors fused, boosted by
time, mentions, speaker and session, filtered by a time view (``raw``,
``as_recorded``, ``as_world``) and annotated with the facts citing each hit."""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal, Mapping

from ...core.index_text import METADATA_TEXT_KEYS
from ...core.limits import MAX_K, MAX_QUERY_CHARS, MAX_SESSION_CHARS, check_count, check_text
from ...core.models import Fact
from ...core.time import TimeLike, from_us, to_us
from ...errors import InvalidInputError, InvalidIntervalError
from ...store.protocol import EpisodeFilter, EpisodeStore, PooledEpisode
from ..reads import FactReads
from ..scope import Scope
from .embed import load_numpy
from .embedding import Embedding
from .episodes import Episodes, episode_store, opt_str
from .fusion import group_boost, relative_contributions, rrf_contributions
from .lexical import fts_query, query_terms
from .mentioned import mentioned_facts
from .models import (
    VIEWS,
    FactNote,
    Hit,
    ScoreParts,
    SearchConfig,
)
from .rank_features import WHEN_QUESTION, Candidate, features
from .ranker import LearnedRanker, RankerFileError, shipped_ranker
from .timemention import resolve_mentions

__all__ = ["Search"]

log = logging.getLogger("chronomem.evidence")

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _embed_pool() -> ThreadPoolExecutor:
    """The worker that embeds a search's query while the lexical side runs."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chronomem-embed")
        return _POOL


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own pool."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


@dataclass
class _Pooled:
    """Today's fusion of one search's pool (:meth:`Search._pool`)."""

    recs: dict[int, PooledEpisode]
    bonus: dict[int, float]
    base: dict[int, float]
    final: dict[int, float]
    times: list[tuple[int, int, int, str, int]]
    candidates: list[Candidate]
    lex_rank: dict[int, tuple[int, float]]
    dense_rank: dict[int, tuple[int, float]]


_WARNED: list[str] = []
#: caption-like metadata keys (the ones the lexical index's context column reads)
_CONTEXT_KEY = re.compile('"(?:' + "|".join(map(re.escape, METADATA_TEXT_KEYS)) + ')"')


def _learned_model(embedder: str | None) -> LearnedRanker | None:
    """The shipped ranker when it was fitted on the cosines of ``embedder``
    (the dense list's model), else ``None``: the search then ranks with
    today's fusion. A missing model file, or one that fails its checks, is
    logged once per process."""
    try:
        model = shipped_ranker()
    except RankerFileError as exc:
        if not _WARNED:
            _WARNED.append(str(exc))
            log.error("the learned ranker is unavailable (%s); ranking with fusion", exc)
        return None
    return model if embedder is not None and embedder == model.meta["training"].get("embedder") else None


def _checked(query: str, view: str, config: SearchConfig | str | None, k: int | None = None) -> SearchConfig:
    """Check a search's query, ``k`` and view; its configuration (a preset name resolved)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("search query must be a non-empty string")
    check_text(query, "search query", MAX_QUERY_CHARS)
    if k is not None:
        check_count(k, "k", 1, MAX_K)
    if view not in VIEWS:
        raise InvalidInputError(f"unknown view {view!r}; expected one of {', '.join(VIEWS)}")
    cfg = SearchConfig.preset(config) if isinstance(config, str) else (config or SearchConfig())
    if not isinstance(cfg, SearchConfig):
        raise InvalidInputError("config must be a SearchConfig or a preset name")
    return cfg


class Search:
    """Search of one namespace's episodes."""

    def __init__(self, scope: Scope, reads: FactReads, episodes: Episodes, embedding: Embedding) -> None:
        self._scope = scope
        self._reads = reads
        self._episodes = episodes
        self._embedding = embedding

    @property
    def _es(self) -> EpisodeStore:
        return episode_store(self._scope.store)

    def prepare_search(self, config: SearchConfig | None = None, *, warm: bool = False) -> dict[str, object]:
        """Build what dense search reads, now: the mapped vector file beside a
        SQLite database (every vector and its context vector) and, from
        ``config.ann_threshold`` vectors on with the ``ann`` extra, the ANN
        index. A search builds them too (the index in the background, while
        the exact search answers); this makes the first search of every later
        process fast. Batch writes (:meth:`add_episodes` of
        ``PREPARE_BATCH`` items or more) build the same files.

        ``warm``: also build what lives in this process only (SQLite: the
        numpy copy of the lexical index, which a process otherwise builds in
        the background at its second search; the time-phrase parser's
        tables), for a server about to answer.
        Returns ``{"vectors": n, "file": bool, "ann": bool}`` and, with
        ``warm``, ``"lexical": bool`` (whether a copy was made)."""
        cfg = config if config is not None else SearchConfig()
        out = self._embedding.prepare(self._es, self._scope.ns_id, self._scope.store.capabilities.local_path,
                                      cfg.ann_threshold, cfg.dense_context)
        if warm:
            out["lexical"] = self._es.prepare_lexical()
            # the time-phrase parser's first use loads its tables (~0.2 s): not in a question's time
            resolve_mentions("in December 2023", from_us(self._scope.now_us()).astimezone(self._scope.tz))
        return out

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        view: str = "as_world",
        at: TimeLike | None = None,
        known_at: TimeLike | None = None,
        session: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        config: SearchConfig | str | None = None,
    ) -> list[Hit]:
        """Hybrid search over episodes: BM25 (FTS5) and dense vectors fused
        with reciprocal-rank fusion, optionally boosted by time proximity.

        ``view`` (``docs/concepts/time.md``, "Evidence views"): ``raw``
        (every episode), ``as_recorded`` (what the memory had stored by
        ``at``: ``recorded_at <= at``, superseded ones included) or
        ``as_world`` (the episodes that had occurred by ``at``, valid time:
        ``coalesce(occurred_at, recorded_at) <= at``, minus those a
        supersession had overridden by ``at`` and those whose citing facts
        had all ended by ``at``). ``known_at`` (system time, default now)
        answers as the memory knew at that time: only episodes, supersessions
        and facts recorded by then. ``at`` defaults to now. ``since``/``until``
        bound ``occurred_at``. ``config`` is a :class:`SearchConfig` or a
        preset name."""
        cfg = _checked(query, view, config, k)
        lexical, dense, at_us, known_us, emb_name = self._retrieve(query, k, view, at, known_at, session, since,
                                                                   until, cfg)
        return self._fuse(query, lexical, dense, cfg, at_us, known_us, k, view, emb_name)

    def search_pool(
        self,
        query: str,
        *,
        view: str = "as_world",
        at: TimeLike | None = None,
        config: SearchConfig | str | None = None,
    ) -> list[tuple[str, Candidate]]:
        """The candidate pool a search ranks (the union of its lexical and
        dense lists, before the view's ended-facts filter), each with the
        signals :func:`~.rank_features.features` reads, in today's fusion
        order: ``(episode id, candidate)``. For training and diagnosing the
        learned ranker (``chronomem eval train-ranker``)."""
        cfg = _checked(query, view, config)
        lexical, dense, at_us, _known, _emb = self._retrieve(query, 1, view, at, None, None, None, None, cfg)
        got = self._pool(query, lexical, dense, cfg, at_us, want_candidates=True)
        if got is None:
            return []
        by_key = {c.key: c for c in got.candidates}
        order = sorted(got.final, key=lambda r: (-got.final[r], r))
        return [(got.recs[r].id, by_key[r]) for r in order]

    def _retrieve(self, query: str, k: int, view: str, at: TimeLike | None, known_at: TimeLike | None,
                  session: str | None, since: TimeLike | None, until: TimeLike | None,
                  cfg: SearchConfig) -> tuple[list[tuple[int, float]], list[tuple[int, float]], int, int | None,
                                              str | None]:
        """The lexical and dense lists ``(rowid, score)`` best first, the
        view's basis ``at_us``, the ``known_at`` in microseconds and the name
        of the embedder the dense list came from."""
        scope = self._scope
        given_at = scope.read_time(at, "at").us if at is not None else None
        known_us = scope.known(known_at)  # settled: the answer as known at K is final (Store.settle)
        # the basis of the view, the time boosts and "ended by": `at`, else
        # now; as_world's now is the store's (never before its last stamp:
        # the episode just added has occurred)
        if given_at is not None:
            at_us = given_at
        else:
            at_us = to_us(scope.store_now()) if view == "as_world" else scope.now_us()
        f = self._view_filter(view, given_at, at_us, known_us, session, since, until)
        pool = max(cfg.pool, k * 3)
        # the dense side's set-up first, so the query embedding (onnxruntime
        # releases the GIL) runs in a worker thread while SQLite ranks BM25.
        # No vectors of the model in use in this namespace: lexical only, and
        # no model, numpy or vector loaded (Embedding.dense_model)
        dense_model = self._embedding.dense_model(self._es, self._scope.ns_id) if cfg.dense_weight > 0 else None
        model = dense_model[1] if dense_model is not None else None
        if dense_model is not None and model is None and not self._embedding.warned_no_vectors:
            mine = self._es.embedding_model(dense_model[0])
            others = [m for i, m, _d in self._es.embedding_models()
                      if (mine is None or i != mine[0]) and self._es.vector_stats(self._scope.ns_id, i)[0]]
            if others:  # the episodes were embedded with another model: say so once
                self._embedding.warned_no_vectors = True
                log.warning("the store has no %s vectors (it has: %s); searching lexically only. "
                            "Open it with that embedder, or reindex", dense_model[0], ", ".join(others))
        slot = None
        qfuture: Future[Any] | None = None
        embedded: tuple[Any, Any] = (None, None)
        if model is not None:
            # (dense_model found vectors of the model in the namespace)
            load_numpy()  # (here, first: numpy cannot be imported by two threads at once)
            if self._embedding.inline_queries:
                embedded = self._embed_query(query)  # a quick, loaded embedder: here (Embedding.inline_queries)
            else:
                # the model loads (a cold process: ~0.2 s; onnxruntime releases the GIL)
                # and embeds the query in the worker while this thread maps the
                # vectors, opens the ANN index and SQLite ranks BM25
                qfuture = _embed_pool().submit(self._embed_query, query)
            slot = self._embedding.vectors().slot(self._es, self._scope.ns_id, model[0], model[1],
                                                     self._scope.store.capabilities.local_path)
        lexical: list[tuple[int, float]] = []
        try:
            if cfg.lexical_weight > 0:
                match = fts_query(query)
                if match is not None:
                    # (the store returns the query as it is when neither limit is set)
                    match = self._es.prune_common_terms(match, cfg.lexical_df_cap, cfg.lexical_postings_budget)
                    lexical = self._es.lexical_search(match, f, pool, cfg.bm25_weights)
            if qfuture is not None and slot is not None and model is not None and slot.size >= cfg.ann_threshold:
                # (while the model loads in the worker: open the ANN index; inline, the ANN search opens it)
                self._embedding.vectors().index(slot, cfg.dense_context, self._scope.store.capabilities.local_path,
                                                (self._scope.ns_id, model[0]))
        finally:
            if qfuture is not None:
                wait([qfuture])  # never leave the worker running past this call
        emb, qvec = qfuture.result() if qfuture is not None else embedded
        if emb is not None and dense_model is not None and emb.name != dense_model[0]:
            # "auto" resolved again as it loaded, to a model registered meanwhile: ask for its vectors
            again = self._embedding.dense_model(self._es, self._scope.ns_id)
            model = again[1] if again is not None else None
            slot = None if model is None else self._embedding.vectors().slot(
                self._es, self._scope.ns_id, model[0], model[1], self._scope.store.capabilities.local_path)
        if emb is not None and model is not None and model[1] != emb.dim:
            raise InvalidInputError(f"embedder {emb.name!r} has {emb.dim} dimensions, the store {model[1]}")
        dense: list[tuple[int, float]] = []
        if qvec is not None and slot is not None and model is not None:
            cache = self._embedding.vectors()
            superseded = self._es.superseded_episodes(self._scope.ns_id) if f.not_superseded_at is not None else []
            got = None
            if slot.size >= cfg.ann_threshold:
                got = cache.ann_search(slot, qvec, pool, f, superseded, cfg.dense_context,
                                       self._scope.store.capabilities.local_path, (self._scope.ns_id, model[0]))
            dense = got if got is not None else cache.search(slot, qvec, pool, f, superseded, cfg.dense_context)
        return lexical, dense, at_us, known_us, emb.name if dense and emb is not None else None

    def _embed_query(self, query: str) -> tuple[Any, Any]:
        """``(embedder, query vector)``: loads the embedder at first use."""
        loaded = self._embedding.loaded is not None
        emb = self._embedding.current
        assert emb is not None  # (a dense model is only chosen with an embedder)
        t0 = time.perf_counter()
        vec = emb.embed([query], "query")[0]
        if loaded:  # (a first call's time is the model's load)
            self._embedding.note_query(time.perf_counter() - t0)
        return emb, vec

    def _view_filter(self, view: str, given_at: int | None, at_us: int, known_us: int | None,
                     session: str | None, since: TimeLike | None, until: TimeLike | None) -> EpisodeFilter:
        """The store filter of a view at ``at_us`` (``given_at``: the ``at``
        the caller gave, if any) as known at ``known_us`` (``None``: now,
        every recorded row counts)."""
        scope = self._scope
        recorded_by, occurred_by = known_us, None
        if view == "as_recorded" and given_at is not None:
            scope.store.settle(given_at)  # `at` is a system time here: the view at a past time is final
            recorded_by = given_at if known_us is None else min(given_at, known_us)
        elif view == "as_world":
            occurred_by = at_us
        since_us = scope.read_time(since, "since").us if since is not None else None
        until_us = scope.read_time(until, "until").us if until is not None else None
        if since_us is not None and until_us is not None and until_us < since_us:
            raise InvalidIntervalError(f"until ({until}) must not be before since ({since})")
        return EpisodeFilter(
            scope.ns_id,
            recorded_by=recorded_by,
            occurred_by=occurred_by,
            not_superseded_at=occurred_by,
            supersessions_recorded_by=known_us if view == "as_world" else None,
            session=opt_str(session, "session", MAX_SESSION_CHARS),
            since=since_us,
            until=until_us,
        )

    def _pool(self, query: str, lexical: list[tuple[int, float]], dense: list[tuple[int, float]],
              cfg: SearchConfig, at_us: int, *, want_candidates: bool = False) -> _Pooled | None:
        """Today's fusion of the two lists: the pooled episodes, time terms,
        scores before (``base``) and after session propagation (``final``)
        and, with ``want_candidates``, the learned ranker's :class:`Candidate`
        per pooled episode. ``None``: nothing to rank."""
        weights = [cfg.lexical_weight, cfg.dense_weight]
        if cfg.fusion == "rrf":
            parts = rrf_contributions([[r for r, _ in lexical], [r for r, _ in dense]], weights, cfg.rrf_k)
        else:
            # a short list ran out of candidates: what it did not find scores 0
            parts = relative_contributions([lexical, dense], weights, cfg.fusion_scale, cfg.pool, (0.0, 0.0))
        if not parts:
            return None
        # (a tombstone never answers: a cache read just before an erasure may still name it)
        pooled, times = self._es.pooled_episodes(list(parts))
        recs = {r.rowid: r for r in pooled}
        bonus: dict[int, float] = {}
        if cfg.time_weight > 0:
            half = cfg.time_half_life_days * 86_400e6
            for rowid, rec in recs.items():
                when = rec.occurred_at if rec.occurred_at is not None else rec.recorded_at
                bonus[rowid] = cfg.time_weight * math.pow(0.5, abs(at_us - when) / half)
        overlap: set[int] = set()
        if cfg.mention_weight > 0 or want_candidates:
            qspans = [(to_us(m.start), to_us(m.end)) for m in
                      resolve_mentions(query, from_us(at_us).astimezone(self._scope.tz))]
            if qspans:
                spans: dict[int, list[tuple[int, int]]] = {}
                for rowid, a, b, _p, _pr in times:
                    spans.setdefault(rowid, []).append((a, b))
                for rowid, rec in recs.items():
                    own = list(spans.get(rowid, []))
                    if rec.occurred_at is not None:
                        own.append((rec.occurred_at, rec.occurred_at + 1))
                    if any(a < qb and qa < b for a, b in own for qa, qb in qspans):
                        overlap.add(rowid)
                        if cfg.mention_weight > 0:
                            bonus[rowid] = bonus.get(rowid, 0.0) + cfg.mention_weight
        with_time = {t[0] for t in times}
        if cfg.when_weight > 0 and WHEN_QUESTION.search(query):
            for rowid in with_time:
                bonus[rowid] = bonus.get(rowid, 0.0) + cfg.when_weight
        if cfg.speaker_weight > 0:
            qwords = set(query_terms(query, keep_stopwords=True))
            for rowid, rec in recs.items():
                if rec.speaker and set(query_terms(rec.speaker, keep_stopwords=True)) & qwords:
                    bonus[rowid] = bonus.get(rowid, 0.0) + cfg.speaker_weight
        base = {rowid: sum(p) + bonus.get(rowid, 0.0) for rowid, p in parts.items() if rowid in recs}
        final = group_boost(base, {rowid: recs[rowid].session for rowid in base}, cfg.session_weight,
                            cfg.session_top)
        # each list's (rank, score) by rowid
        lex = {rowid: (i + 1, sc) for i, (rowid, sc) in enumerate(lexical)}
        den = {rowid: (i + 1, sc) for i, (rowid, sc) in enumerate(dense)}
        cands: list[Candidate] = []
        if want_candidates:
            absent = (None, None)
            for rowid in base:
                rec = recs[rowid]
                lr, dr = lex.get(rowid, absent), den.get(rowid, absent)
                cands.append(Candidate(  # (positional, in the fields' order: hundreds a search)
                    rowid, rec.text, rec.speaker, rec.session, lr[0], lr[1], dr[0], dr[1], base[rowid], final[rowid],
                    rowid in overlap, rowid in with_time, bool(rec.metadata and _CONTEXT_KEY.search(rec.metadata)),
                ))
        return _Pooled(recs, bonus, base, final, times, cands, lex, den)

    def _fuse(self, query: str, lexical: list[tuple[int, float]], dense: list[tuple[int, float]],
              cfg: SearchConfig, at_us: int, known_us: int | None, k: int, view: str,
              emb_name: str | None = None) -> list[Hit]:
        learned = cfg.ranker == "learned" and cfg.fusion == "relative" and cfg.lexical_weight > 0 and bool(dense)
        model = _learned_model(emb_name) if learned else None
        got = self._pool(query, lexical, dense, cfg, at_us, want_candidates=model is not None)
        if got is None:
            return []
        recs, bonus, base, lex_rank, den_rank = got.recs, got.bonus, got.base, got.lex_rank, got.dense_rank
        fused = got.final
        final = fused
        if model is not None:
            # the learned ranker reorders the pool; a hit's score is its probability
            logits = model.scores(features(query, got.candidates))
            # (z clamped to [-35, 35] as max(-35, min(35, z)) would, without the calls)
            final = {c.key: 1.0 / (1.0 + math.exp(-(35.0 if not z < 35.0 else z if z > -35.0 else -35.0)))
                     for c, z in zip(got.candidates, logits, strict=True)}
        ranked = sorted(sorted(final.items()), key=itemgetter(1), reverse=True)  # (score, then rowid: stable)
        # facts citing the candidates, as known at `known_at` (system time),
        # for the notes and the as_world view (whose facts had ended by `at`)
        cand = [rowid for rowid, _ in ranked[: max(k * 4, 40)]]
        cites: dict[str, list[str]] = {}
        for ep, fid in self._es.facts_citing_episodes(self._scope.ns_id, [recs[r].id for r in cand]):
            cites.setdefault(ep, []).append(fid)
        all_ids = sorted({f for fs in cites.values() for f in fs})
        known = {f.id: f for f in self._reads.by_ids(all_ids, known_us)}
        out_rows: list[tuple[int, float]] = []
        for rowid, score in ranked[: len(cand)]:
            if view == "as_world":
                facts = [known[fid] for fid in cites.get(recs[rowid].id, []) if fid in known]
                if facts and all(_ended(f, at_us) for f in facts):
                    continue  # every fact this evidence supports had ended by `at`
            out_rows.append((rowid, score))
            if len(out_rows) == k:
                break
        # the hits' whole records (the pool read only what ranks them; one
        # erased since is no hit)
        full = {r.rowid: r for r in self._es.episodes_by_rowids([r for r, _ in out_rows]) if r.erased_at is None}
        out_rows = [(r, sc) for r, sc in out_rows if r in full]
        tmap: dict[int, list[tuple[int, int, int, str, int]]] = {}
        for t in got.times:
            if t[0] in full:
                tmap.setdefault(t[0], []).append(t)
        # the hits no fact cites: the facts they mention (explicit links take precedence)
        mentioned = mentioned_facts(
            self._scope, self._reads, [full[r] for r, _ in out_rows if not cites.get(full[r].id)], known_us,
        ) if cfg.mentioned else {}
        ended = [f for f in known.values() if _ended(f, at_us)]
        ended += [f for fs in mentioned.values() for f in fs if _ended(f, at_us)]
        enders = self._reads.enders(ended, known_us)
        hits: list[Hit] = []
        for rowid, score in out_rows:
            rec = full[rowid]
            fids = sorted(set(cites.get(rec.id, [])))
            episode = self._episodes.model(rec, times=tmap.get(rowid, []), fact_ids=fids)
            notes = tuple(_fact_note(known[fid], at_us, enders) for fid in fids if fid in known)
            if not fids:
                notes = tuple(_fact_note(f, at_us, enders, "mentioned") for f in mentioned.get(rec.id, ()))
            lr, dr = lex_rank.get(rowid), den_rank.get(rowid)
            hits.append(Hit(
                episode=episode, score=score,
                parts=ScoreParts(
                    fused=fused[rowid], bm25=lr[1] if lr else None, bm25_rank=lr[0] if lr else None,
                    dense=dr[1] if dr else None, dense_rank=dr[0] if dr else None, time=bonus.get(rowid, 0.0),
                    session=fused[rowid] - base[rowid],
                ),
                facts=notes,
            ))
        return hits



def _ended(fact: Fact, at_us: int) -> bool:
    return fact.valid_to is not None and to_us(fact.valid_to) <= at_us


def _fact_note(fact: Fact, at_us: int, enders: Mapping[str, Fact],
               link: Literal["cited", "mentioned"] = "cited") -> FactNote:
    """``fact`` as a hit's note: current at ``at_us``, or ended (and by which fact, from ``enders``)."""
    if not _ended(fact, at_us):
        return FactNote(fact=fact, current=True, link=link)
    by = enders.get(fact.invalidated_by) if fact.invalidated_by else None
    return FactNote(fact=fact, current=False, ended_at=fact.valid_to, superseded_by=by, link=link)
