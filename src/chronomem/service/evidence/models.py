"""Result types of the evidence memory, frozen dataclasses with ``to_dict()``,
and the search configuration with its named presets."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from ...core.limits import MAX_EPISODE_CHARS
from ...core.models import Fact, _Dictable
from ...core.time import Precision, format_us, to_us
from ...errors import InvalidInputError

__all__ = [
    "Episode", "FactNote", "Hit", "Recall", "RecallItem", "ScoreParts", "SearchConfig", "TimeSpan", "View",
    "MAX_EPISODE_CHARS",
]

View = Literal["as_world", "as_recorded", "raw"]
VIEWS: tuple[str, ...] = ("as_world", "as_recorded", "raw")

# The longest episode text accepted (characters; it lives with every other
# limit in core/limits.py). Longer evidence should be split into several
# episodes (one per turn, paragraph or section).


@dataclass(frozen=True)
class TimeSpan(_Dictable):
    """A time expression of an episode, resolved to ``[start, end)``.

    ``certain`` is False when the phrase is ambiguous ("Monday" said on a
    Thursday with no tense cue): the episode then holds one span per
    candidate, each with ``certain=False``, and none of them is the answer."""

    phrase: str
    start: _dt.datetime
    end: _dt.datetime
    precision: Precision
    certain: bool = True


@dataclass(frozen=True)
class Episode(_Dictable):
    """A piece of evidence: a conversation turn, note or decision, verbatim.

    ``occurred_at``: when it was said or happened (valid time, may be None);
    ``recorded_at``: when the memory stored it (system time). ``mentions``:
    the time expressions in the text, resolved against ``occurred_at``.
    ``occurred_precision``: how ``occurred_at`` was given (``"2023-05-08"``
    is day precision). ``superseded_at``: when a supersession takes effect
    (the superseding episode's occurred time); ``superseded_recorded_at``:
    when the memory recorded it (``docs/concepts/time.md``, "Evidence views").
    ``fact_ids``: the facts that cite it. An erased episode (a tombstone)
    keeps only its id, namespace, times and supersession link (``erased_at``
    set, ``text`` empty; ``docs/evidence.md``, "Erasure"). ``recorded_by``:
    who wrote it (as :attr:`chronomem.Fact.recorded_by`; ``None`` when not
    recorded, before schema 10; a tombstone keeps it).
    """

    id: str
    text: str
    occurred_at: _dt.datetime | None
    recorded_at: _dt.datetime
    source: str | None = None
    session: str | None = None
    speaker: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    mentions: tuple[TimeSpan, ...] = ()
    fact_ids: tuple[str, ...] = ()
    superseded_by: str | None = None
    superseded_at: _dt.datetime | None = None
    erased_at: _dt.datetime | None = None
    namespace: str = "default"
    occurred_precision: Precision | None = None
    superseded_recorded_at: _dt.datetime | None = None
    recorded_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # one JSON time form: occurred_at at the precision it was given ("2023-05-08")
        out = super().to_dict()
        if self.occurred_at is not None and self.occurred_precision is not None:
            out["occurred_at"] = format_us(to_us(self.occurred_at), self.occurred_precision)
        return out


@dataclass(frozen=True)
class FactNote(_Dictable):
    """A fact an episode supports. When the fact has ended, ``superseded_by``
    is the fact that replaced it (if one did) and ``ended_at`` when.
    ``link``: ``"cited"`` (the fact names the episode as its evidence) or
    ``"mentioned"`` (the episode names the fact's subject and value and was
    said while it held; see :mod:`chronomem.service.evidence.mentioned`)."""

    fact: Fact
    current: bool
    ended_at: _dt.datetime | None = None
    superseded_by: Fact | None = None
    link: Literal["cited", "mentioned"] = "cited"

    def line(self) -> str:
        if self.current or self.ended_at is None:
            return self.fact.line()
        when = self.fact.valid_to_text or "?"
        if self.superseded_by is not None:
            return f"{self.fact.line()} -- HISTORY: ended {when}, superseded by {self.superseded_by.line()}"
        return f"{self.fact.line()} -- HISTORY: ended {when}"


@dataclass(frozen=True)
class ScoreParts(_Dictable):
    """Why a hit ranks where it does. Ranks are 1-based (None: not in that list).
    ``time``: the time terms' bonus; ``session``: what session propagation
    added (``fused`` includes both)."""

    fused: float
    bm25: float | None = None
    bm25_rank: int | None = None
    dense: float | None = None
    dense_rank: int | None = None
    time: float = 0.0
    session: float = 0.0


@dataclass(frozen=True)
class Hit(_Dictable):
    """One search result: the episode, its score parts and the facts it
    supports (each flagged current or history)."""

    episode: Episode
    score: float
    parts: ScoreParts
    facts: tuple[FactNote, ...] = ()

    @property
    def is_history(self) -> bool:
        """True when the episode supports facts (cited or, if it is cited by
        none, mentioned) and every one of them had ended by the basis."""
        return bool(self.facts) and not any(n.current for n in self.facts)


@dataclass(frozen=True)
class RecallItem(_Dictable):
    """One packed item: a fact or an episode, with its citation id."""

    kind: Literal["fact", "history", "episode"]  # history: a fact of the entities that had ended by ``at``
    cite: str
    text: str
    tokens: int


@dataclass(frozen=True)
class Recall(_Dictable):
    """What :meth:`~chronomem.Memory.recall` found, packed for a prompt."""

    question: str
    at: _dt.datetime
    text: str
    items: tuple[RecallItem, ...]
    entities: tuple[str, ...]
    candidates: tuple[str, ...]
    facts: tuple[Fact, ...]
    hits: tuple[Hit, ...]
    tokens: int
    budget_tokens: int
    history: tuple[Fact, ...] = ()
    """Facts of the entities that had ended by ``at`` (packed after ``facts``, labelled as such)."""


@dataclass(frozen=True)
class SearchConfig:
    """Every weight of the hybrid search. Use a preset (``SearchConfig.preset(name)``)
    or ``dataclasses.replace`` one.

    * ``fusion``: how the two lists combine. ``"relative"`` (default):
      relative-score fusion, each list's scores (BM25, cosine) min-max
      normalised over its ``pool`` candidates, so an item scores
      ``fusion_scale * (lexical_weight * lex + dense_weight * dense)``; it
      keeps how far a list's leader is ahead, which keeps the top hit as
      precise as the lexical list's. ``"rrf"``: weighted reciprocal-rank
      fusion, ``weight / (rrf_k + rank)`` per list (the ``rrf`` preset).
    * ``lexical_weight`` / ``dense_weight``: weights of the two lists (0
      switches a list off); ``rrf_k``: RRF's constant; ``fusion_scale``: puts
      relative fusion's ``[0, 1]`` scores on the scale of the additive terms
      below (tuned together with them).
    * ``bm25_weights``: FTS5 column weights (text, speaker, context, neighbours).
    * ``lexical_df_cap``: on large stores, query terms found in more than this
      many episodes are left out of the BM25 query (the rarest term always
      stays); 0 keeps every term.
    * ``lexical_postings_budget``: then, rarest first, only the terms whose
      summed episode counts fit in this budget stay (the rarest always does).
      BM25 scores every episode that holds a query term, so this bounds its
      cost whatever the store's size; the terms it drops are the question's
      most common, which weigh least in BM25. 0 switches it off.
    * ``ann_threshold``: from this many vectors on, dense search uses the ANN
      index (an inverted file, docs/evidence.md "At scale") instead of the exact product.
    * ``dense_context``: weight of the neighbouring turns (same session) mixed
      into each stored vector at search time (0: the turn alone).
    * ``pool``: candidates taken from each list before fusion.
    * ``time_weight`` / ``time_half_life_days``: the time-proximity term, added
      to the fused score as ``time_weight * 0.5 ** (|occurred - at| / half_life)``.
    * ``mention_weight``: added when the question names a time (e.g. "in May
      2023") and the episode happened then or mentions a time that overlaps it.
    * ``when_weight``: added, for questions that ask for a time ("when ...",
      "what year ...", "how long ago ..."), to episodes whose text mentions one.
    * ``speaker_weight``: added to episodes said by a speaker the question names.
    * ``mentioned``: tie each hit that no fact cites to the facts it mentions
      (subject and value named, said while the fact held) for its notes and
      the history mark; ``False`` leaves uncited hits without notes.
    * ``session_weight`` / ``session_top``: session-level score propagation.
      After the terms above, every candidate gains ``session_weight`` times
      the sum of the ``session_top`` best scores among the candidates of its
      session (itself included; episodes without a session gain nothing), so
      a turn of the conversation that matches the question as a whole
      outranks an equally good turn of one that does not. The order inside a
      session never changes. 0 switches it off.
    * ``ranker``: ``"learned"`` (default) reorders the pool (the union of the
      two lists) by the shipped logistic-regression ranker over the
      candidates' features (``docs/evidence.md``, "The learned ranker"): it
      beat the additive score in leave-one-conversation-out cross-validation.
      It applies to relative fusion of both lists with vectors of the embedder
      it was fitted on (MiniLM); any other search (no vectors, one list,
      ``rrf``, another embedder) ranks by the additive score, as it does (with
      one logged error) if the model file fails its checks. ``"fusion"``
      always ranks by the additive score above (the ``fusion`` preset).
    """

    fusion: Literal["relative", "rrf"] = "relative"
    lexical_weight: float = 1.0
    dense_weight: float = 0.4
    rrf_k: float = 10.0
    fusion_scale: float = 0.06
    bm25_weights: tuple[float, float, float, float] = (1.0, 1.0, 0.6, 0.4)
    pool: int = 100
    dense_context: float = 0.3
    ann_threshold: int = 50_000
    lexical_df_cap: int = 50_000
    lexical_postings_budget: int = 20_000
    time_weight: float = 0.0
    time_half_life_days: float = 30.0
    mention_weight: float = 0.05
    when_weight: float = 0.04
    speaker_weight: float = 0.0
    session_weight: float = 0.8
    session_top: int = 1
    mentioned: bool = True
    ranker: Literal["fusion", "learned"] = "learned"

    PRESETS = ("hybrid", "lexical", "dense", "recent", "rrf", "fusion", "learned")

    def __post_init__(self) -> None:
        if self.fusion not in ("relative", "rrf"):
            raise InvalidInputError(f"fusion must be 'relative' or 'rrf', not {self.fusion!r}")
        if not self.fusion_scale > 0:
            raise InvalidInputError(f"fusion_scale must be positive, not {self.fusion_scale!r}")
        if self.lexical_weight < 0 or self.dense_weight < 0:
            raise InvalidInputError("lexical_weight and dense_weight must be non-negative")
        if self.lexical_df_cap < 0 or self.lexical_postings_budget < 0:
            raise InvalidInputError("lexical_df_cap and lexical_postings_budget must be non-negative (0: off)")
        if self.ranker not in ("fusion", "learned"):
            raise InvalidInputError(f"ranker must be 'fusion' or 'learned', not {self.ranker!r}")
        if self.session_weight < 0:
            raise InvalidInputError(f"session_weight must be non-negative, not {self.session_weight!r}")
        if isinstance(self.session_top, bool) or not isinstance(self.session_top, int) or self.session_top < 1:
            raise InvalidInputError(f"session_top must be a positive integer, not {self.session_top!r}")

    @classmethod
    def preset(cls, name: str) -> "SearchConfig":
        """``hybrid`` (default), ``lexical`` (BM25 only), ``dense`` (vectors
        only), ``recent`` (hybrid plus a strong time-proximity term) or
        ``rrf`` (hybrid with reciprocal-rank fusion, an earlier default),
        ``fusion`` (hybrid ranked by the additive score alone, the default
        before the learned ranker) or ``learned`` (the same as ``hybrid``:
        the learned ranker where it applies)."""
        base = cls()
        if name == "hybrid":
            return base
        if name == "lexical":
            return replace(base, dense_weight=0.0)
        if name == "dense":
            return replace(base, lexical_weight=0.0)
        if name == "recent":
            # 0.0055 is as strong against relative fusion's top score (0.084)
            # as 0.01 was against RRF's (0.155)
            return replace(base, time_weight=0.0055, time_half_life_days=14.0, ranker="fusion")
        if name == "rrf":
            return replace(base, fusion="rrf", dense_weight=0.7, ranker="fusion")
        if name == "fusion":
            return replace(base, ranker="fusion")
        if name == "learned":
            return replace(base, ranker="learned")
        raise InvalidInputError(f"unknown search preset {name!r}; expected one of {', '.join(cls.PRESETS)}")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
