"""The learned ranker's features: a fixed, named vector per candidate of a
search's pool (the union of the lexical and dense lists), computed from what
the search has at query time. Pure Python (no numpy: a lexical-only search
never loads it), deterministic, and equivariant to the pool's order: the
features of a candidate never depend on where it sits in ``pool``.

A candidate's own signals (its list ranks and scores, its text, speaker and
time marks) and the question give most features; the pool gives the rest,
each computed from the pool as a set: the list leaders the scores are taken
relative to, the speakers a question can name, the session and neighbour
aggregates. ``docs/evidence.md`` ("The learned ranker") lists every feature.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple, Sequence

from .lexical import STOPWORDS, cjk_bigrams

__all__ = ["FEATURE_NAMES", "Candidate", "WHEN_QUESTION", "features"]

WHEN_QUESTION = re.compile(
    r"^\s*(?:when\b|what (?:year|month|date|day|time|week)\b|which (?:year|month|day|week)\b|"
    r"how long (?:ago|has|have|had|did|was|were)\b)|\b(?:when did|when was|when is|when will|since when)\b",
    re.I,
)

#: a turn that is itself a question rarely holds the answer
_QUESTION_TURN = re.compile(r"\?\s*$|\?[\"')\s]*$")
#: rowids at most this far apart in one session count as neighbours (the
#: turns around a turn, in rowid order as the dense context takes them)
NEIGHBOUR_SPAN = 2


class Candidate(NamedTuple):
    """What the search knows about one pooled episode (a tuple: a search
    makes one per pooled episode, hundreds).

    ``key``: the episode's rowid (neighbours are found by rowid distance within
    a session); ``lex_*`` / ``dense_*``: its 1-based rank and raw score in the
    BM25 and dense lists (None: not in that list; BM25 higher is better, dense
    is a cosine); ``base``: today's additive score (fused list scores plus the
    time terms) and ``fused``: that plus session propagation (today's ranking
    score); ``time_overlap``: the episode or a time it mentions overlaps a time
    the question names; ``has_time``: its text mentions a time;
    ``has_context``: it carries caption-like metadata (a shared photo)."""

    key: int
    text: str
    speaker: str | None
    session: str | None
    lex_rank: int | None
    lex_score: float | None
    dense_rank: int | None
    dense_score: float | None
    base: float
    fused: float
    time_overlap: bool = False
    has_time: bool = False
    has_context: bool = False


FEATURE_NAMES: tuple[str, ...] = (
    # the lexical (BM25) list
    "lex_in",              # 1 when the candidate is in the BM25 list
    "lex_rr",              # 1 / its BM25 rank (0 when absent)
    "lex_log_rank",        # log(rank) (log(list length + 1) when absent)
    "lex_rel",             # BM25 / the leader's BM25 (0 when absent)
    # the dense list
    "dense_in",
    "dense_rr",
    "dense_log_rank",
    "dense_cos",           # cosine (the list's lowest when absent)
    "dense_gap",           # the leader's cosine minus its own
    # today's fusion
    "fused_rr",            # 1 / rank in today's order
    "fused_rel",           # today's score / the leader's
    "base_rel",            # the score before session propagation / the leader's
    # the session
    "session_best_rel",    # the best base score of its session's candidates / the leader's
    "session_count_log",   # log(1 + candidates of its session in the pool)
    "session_rr",          # 1 / rank of its session (sessions by their best base score)
    "session_share",       # its base score / the sum of its session's
    # the neighbours (same session, rowids at most NEIGHBOUR_SPAN apart)
    "nbr_best_rel",        # the best neighbour's base score / the leader's (0: none pooled)
    "nbr_count",           # neighbours in the pool
    "nbr_cover",           # share of the question's content words its neighbours' texts hold
    # speakers: the speakers of the pool the question names
    "spk_named",           # its speaker is named in the question
    "spk_other_named",     # the question names a speaker, not its own
    # the words
    "q_cover",             # share of the question's content words its text (or speaker) holds
    "q_cover_all",         # 1 when its text holds all of them
    "len_log",             # log(1 + words)
    "short",               # fewer than 6 words
    "is_question",         # the turn ends with a question mark
    "has_context",         # caption-like metadata (a shared photo)
    # time
    "time_overlap",        # it (or a time it mentions) overlaps a time the question names
    "has_time",            # its text mentions a time
    "when_x_time",         # a when-question and a turn that mentions a time
    "when_x_no_time",      # a when-question and a turn that mentions none
    # interactions the question type switches on
    "spk_named_x_lex",     # spk_named * lex_rel
    "spk_named_x_dense",   # spk_named * dense_cos
    "other_x_lex",         # spk_other_named * lex_rel
    # does the named speaker say it? (a question may name the wrong speaker)
    "spk_x_named_best",    # spk_named * the best base score of the named speakers' candidates / the leader's
    "other_x_named_weak",  # spk_other_named * (1 - that): the other speaker, when the named one matches weakly
)

_N = len(FEATURE_NAMES)
_KEY = attrgetter("key")
_FUSED = attrgetter("fused")


_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: ASCII text lower-cased, with a space for what ``_WORD`` does not match (no regex needed)
_ASCII_WORDS = bytes((b | 0x20 if chr(b).isalpha() else b) if chr(b).isalnum() and b < 128 else 32
                     for b in range(256))


def _words(text: str) -> str:
    """The lower-cased words of ``text`` (split at apostrophes, bigrams for
    unsegmented scripts) between spaces: ``" w "`` is in it for each word ``w``."""
    if text.isascii():
        return f" {text.encode('ascii').translate(_ASCII_WORDS).decode('ascii')} "
    return " " + " ".join(_WORD.findall(cjk_bigrams(text.lower().replace("’", "'")))) + " "


@lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """The set of :func:`_words` of the question and of the speakers (cached:
    they come back search after search)."""
    return frozenset(_words(text).split())


@lru_cache(maxsize=16_384)
def _turn(text: str) -> tuple[str, tuple[float, float, float]]:
    """A candidate text's :func:`_words` and its ``len_log``, ``short`` and
    ``is_question`` features (cached: the same turns come back search after
    search)."""
    n = len(text.split())
    return _words(text), (math.log1p(n), 1.0 if n < 6 else 0.0,
                          1.0 if _QUESTION_TURN.search(text) is not None else 0.0)


def features(query: str, pool: Sequence[Candidate]) -> list[list[float]]:
    """One row of ``len(FEATURE_NAMES)`` floats per candidate, in ``pool``'s
    order. Pool aggregates are computed from the pool as a set, so permuting
    ``pool`` permutes the rows and changes nothing else."""
    if not pool:
        return []
    qwords = _terms(query)
    qcontent = (qwords - STOPWORDS) or qwords
    qn = len(qcontent)
    when = 1.0 if WHEN_QUESTION.search(query) else 0.0

    lex_scores = [c.lex_score for c in pool if c.lex_score is not None]
    lex_top = max(lex_scores) if lex_scores else 0.0
    lex_len = max((c.lex_rank for c in pool if c.lex_rank is not None), default=0)
    cosines = [c.dense_score for c in pool if c.dense_score is not None]
    cos_top = max(cosines) if cosines else 0.0
    cos_floor = min(cosines) if cosines else 0.0
    dense_len = max((c.dense_rank for c in pool if c.dense_rank is not None), default=0)
    base_top = max(c.base for c in pool)
    fused_top = max(c.fused for c in pool)
    by_key = sorted(pool, key=_KEY)
    # today's order: fused score, then rowid (as the search sorts; a stable sort)
    fused_rr = {c.key: 1.0 / (i + 1) for i, c in enumerate(sorted(by_key, key=_FUSED, reverse=True))}

    # speakers of the pool the question names: per speaker, the question's
    # words it holds and its spk_named, spk_other_named, spk_x_named_best
    # and other_x_named_weak features (None: a candidate without a speaker)
    spk_terms: dict[str, frozenset[str]] = {s: _terms(s) for s in {c.speaker for c in pool if c.speaker}}
    named = {s for s, t in spk_terms.items() if t & qwords}
    # the question's content words as bits (a text's are an int: its cover is a bit count)
    bits = [(1 << b, w, f" {w} ") for b, w in enumerate(qcontent)]
    spk_q = {s: sum(bit for bit, w, _sp in bits if w in t) for s, t in spk_terms.items()}
    named_best = max((c.base for c in pool if c.speaker in named), default=0.0)
    named_rel = named_best / base_top if base_top > 0 else 0.0
    other_named = 1.0 if named else 0.0
    spk_feats: dict[str | None, tuple[float, float, float, float]] = {
        s: (1.0, 0.0, named_rel, 0.0) if s in named else (0.0, other_named, 0.0, other_named * (1.0 - named_rel))
        for s in (*spk_terms, None)}

    # sessions
    sess_best: dict[str, float] = {}
    sess_sum: dict[str, float] = {}
    sess_n: dict[str, int] = {}
    for c in by_key:  # (a float sum in a fixed order)
        s, b = c.session, c.base
        if s is None:
            continue
        if s in sess_n:
            if b > sess_best[s]:
                sess_best[s] = b
            sess_sum[s] += max(b, 0.0)
            sess_n[s] += 1
        else:
            sess_best[s], sess_sum[s], sess_n[s] = b, 0.0 + max(b, 0.0), 1
    # per session: its session_best_rel, session_count_log and session_rr (sessions
    # by best score, then name: stable sorts)
    sess = {s: (sess_best[s] / base_top if base_top > 0 else 0.0, math.log1p(sess_n[s]), 1.0 / (i + 1))
            for i, s in enumerate(sorted(sorted(sess_best), key=sess_best.__getitem__, reverse=True))}

    turns = [_turn(c.text) for c in pool]
    # the question's content words each candidate's text holds
    qhits = [0] * len(pool)
    texts = [t[0] for t in turns]
    for bit, _w, spaced in bits:
        for i in [i for i, t in enumerate(texts) if spaced in t]:
            qhits[i] |= bit
    index = {c.key: i for i, c in enumerate(pool)}
    offsets = [d for d in range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1) if d]
    # the list features of a candidate absent from the list
    lex_absent = (0.0, 0.0, math.log(lex_len + 1))
    dense_absent = (0.0, 0.0, math.log(dense_len + 1))
    # has_time, when_x_time, when_x_no_time by has_time
    time_feats = {True: (1.0, when * 1.0, when * (1.0 - 1.0)), False: (0.0, when * 0.0, when * (1.0 - 0.0))}

    rows: list[list[float]] = []
    for i, c in enumerate(pool):
        own = qhits[i] | spk_q[c.speaker] if c.speaker else qhits[i]
        cover = own.bit_count() / qn if qn else 0.0
        nbr_best = 0.0
        nbr_n = 0
        nbr_cover = 0.0
        session = c.session
        if session is not None:
            nbr_words = 0
            for d in offsets:
                j = index.get(c.key + d)
                if j is None or pool[j].session != session:
                    continue
                nbr_n += 1
                nbr_best = max(nbr_best, pool[j].base / base_top if base_top > 0 else 0.0)
                nbr_words |= qhits[j]
            if qn:
                nbr_cover = nbr_words.bit_count() / qn
            s_sum = sess_sum[session]
            sf = sess[session]
            s_share = max(c.base, 0.0) / s_sum if s_sum > 0 else 0.0
        else:
            sf = (c.base / base_top if base_top > 0 else 0.0, 0.0, 0.0)
            s_share = 1.0
        spk, other, spk_best, other_weak = spk_feats[c.speaker or None]
        lex_rel = c.lex_score / lex_top if c.lex_score is not None and lex_top > 0 else 0.0
        cos = c.dense_score if c.dense_score is not None else cos_floor
        r, dr = c.lex_rank, c.dense_rank
        rows.append([
            *((1.0, 1.0 / r, math.log(r)) if r is not None else lex_absent),
            lex_rel,
            *((1.0, 1.0 / dr, math.log(dr)) if dr is not None else dense_absent),
            cos,
            cos_top - cos,
            fused_rr[c.key],
            c.fused / fused_top if fused_top > 0 else 0.0,
            c.base / base_top if base_top > 0 else 0.0,
            *sf, s_share,
            nbr_best, float(nbr_n), nbr_cover,
            spk, other,
            cover, 1.0 if qn and cover == 1.0 else 0.0,
            *turns[i][1],
            1.0 if c.has_context else 0.0,
            1.0 if c.time_overlap else 0.0, *time_feats[bool(c.has_time)],
            spk * lex_rel, spk * cos, other * lex_rel,
            spk_best, other_weak,
        ])
    assert len(rows[0]) == _N
    return rows
