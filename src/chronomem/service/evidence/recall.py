"""``recall``: the one call an agent makes. Facts about the entities the
question names (valid at ``at``), then evidence from the hybrid search in the
``as_world`` view, packed into a token budget with citation ids."""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import TYPE_CHECKING, Literal, cast

from ...core.limits import MAX_BUDGET_TOKENS, MAX_QUERY_CHARS, check_count, check_text
from ...core.models import Fact
from ...core.names import normalize_key
from ...core.time import TimeLike, from_us, to_us
from ...errors import InvalidInputError
from .lexical import STOPWORDS
from .models import Hit, Recall, RecallItem

if TYPE_CHECKING:  # pragma: no cover
    from ...store.protocol import EpisodeStore
    from ..reads import FactReads
    from ..scope import Scope
    from .search import Search

__all__ = ["Recaller", "estimate_tokens"]

_HITS = 10  # episodes asked of the search

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
_MAX_NGRAM = 4
_FACTS_PER_ENTITY = 40


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters per token)."""
    return max(1, math.ceil(len(text) / 4))


def _ngrams(words: list[str]) -> list[str]:
    out: list[str] = []
    for n in range(min(_MAX_NGRAM, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            out.append(" ".join(words[i:i + n]))
    return out


def _find_entities(scope: Scope, question: str) -> tuple[list[str], list[str]]:
    """Entities named in the question (exact name or alias, longest first) and
    fuzzy candidates (names sharing the first four letters of a capitalised
    word the exact match did not explain), never picked."""
    words = [re.sub(r"['’]s$", "", w) for w in _WORD.findall(question)]
    names: list[str] = []
    covered: set[int] = set()
    keys: list[str] = []
    for gram in _ngrams(words):  # longest first
        try:
            keys.append(normalize_key(gram, "name"))
        except InvalidInputError:
            continue
    named = scope.store.entity_ids_for_keys(scope.ns_id, keys)  # one read, not one per n-gram
    for key in keys:
        eid = named.get(key)
        if eid is None or eid in covered:
            continue
        rec = scope.store.entity(eid)
        if rec is not None:
            covered.add(eid)
            names.append(rec.name)
    candidates: list[str] = []
    lowered = {n.casefold() for n in names}
    for w in words:
        if (len(w) < 4 or not w[0].isupper() or w.casefold() in STOPWORDS
                or any(w.casefold() in n for n in lowered)):
            continue
        try:
            key = normalize_key(w, "name")
        except InvalidInputError:
            continue
        if scope.store.capabilities.entity_prefix_search:
            found = list(cast("EpisodeStore", scope.store).entity_names_with_prefix(scope.ns_id, key[:4], 5))
        else:  # a backend without the prefix primitive: substring scan
            found = [rec.name for rec in scope.store.entities_by_key_substring(scope.ns_id, key[:4], 5)]
        for name in found:
            if name not in names and name not in candidates:
                candidates.append(name)
    return names, candidates


_PAST = re.compile(
    r"\b(?:before|used to|previous(?:ly)?|former(?:ly)?|earlier|originally|histor(?:y|ical|ically)|"
    r"in the past|no longer|any ?more|prior|ago|when did|last (?:year|month|week|quarter|time)|"
    r"(?:had|has|have) (?:been|worked|lived|used))\b", re.I)
_YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")


def _asks_about_the_past(question: str, when: _dt.datetime) -> bool:
    """Does the question ask what used to be true (a past cue or a past year)?"""
    return bool(_PAST.search(question)) or any(int(y) < when.year for y in _YEAR.findall(question))


def _episode_line(hit: Hit) -> str:
    ep = hit.episode
    when = ep.occurred_at.date().isoformat() if ep.occurred_at else ep.recorded_at.date().isoformat()
    who = f"{ep.speaker}: " if ep.speaker else ""
    line = f"[{when}] {who}{ep.text}"

    def span(start: _dt.datetime, end: _dt.datetime) -> str:
        last = (end - _dt.timedelta(microseconds=1)).date().isoformat()
        return start.date().isoformat() + (f"..{last}" if (end - start) > _dt.timedelta(days=1) else "")

    # an ambiguous phrase gets no resolution, only its candidates marked "?"
    notes: dict[str, list[str]] = {}
    for m in ep.mentions:
        if m.certain:
            notes[f"{m.phrase} = {span(m.start, m.end)}"] = []
        else:
            notes.setdefault(f"{m.phrase} = ?", []).append(span(m.start, m.end))
    if notes:
        line += " (" + "; ".join(k + (f" ({' or '.join(v)})" if v else "") for k, v in notes.items()) + ")"
    history = [n.line() for n in hit.facts if not n.current]
    if history:
        line += " {history: " + "; ".join(history) + "}"
    return line


class Recaller:
    """Recall over one namespace: its facts and the search of its episodes."""

    def __init__(self, scope: Scope, reads: FactReads, search: Search) -> None:
        self._scope = scope
        self._reads = reads
        self._search = search

    def recall(self, question: str, *, at: TimeLike | None = None, known_at: TimeLike | None = None,
               budget_tokens: int = 1500) -> Recall:
        """Everything the memory knows for ``question``, packed for a prompt:
        the entities it names (exact names and aliases; fuzzy matches are only
        listed as candidates), their facts valid at ``at`` (default now), then
        what used to be true about them ("Earlier": facts that had ended by
        ``at``, most recent first, each with what ended it; all of them when
        the question asks about the past or ``at`` is past, else the latest
        ended value of each single-valued predicate shown), then evidence from
        :meth:`search` in the ``as_world`` view at ``at``, deduplicated per
        episode, each item with a citation id, within ``budget_tokens``.
        ``known_at`` (system time, default now) answers as the memory knew
        at that time, for the facts and the evidence alike."""
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError("recall question must be a non-empty string")
        check_text(question, "recall question", MAX_QUERY_CHARS)
        check_count(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        scope = self._scope
        when = scope.read_time(at, "at").datetime if at is not None else scope.now()
        known_us = scope.known(known_at)  # settled once; the reads below take it as an instant
        known = from_us(known_us) if known_us is not None else None
        names, candidates = _find_entities(scope, question)
        facts: list[Fact] = []
        seen_facts: set[str] = set()
        for name in names:
            for f in self._reads.facts(name, as_of=when, known_at=known, direction="both",
                                       limit=_FACTS_PER_ENTITY):
                if f.id not in seen_facts:
                    seen_facts.add(f.id)
                    facts.append(f)
        past = at is not None and when < scope.now() or _asks_about_the_past(question, when)
        history = self._history(names, facts, when, past, known)
        # at=None searches as of now (the store's now)
        hits = self._search.search(question, k=_HITS, view="as_world", at=when if at is not None else None,
                                   known_at=known)
        items: list[RecallItem] = []
        used = 0
        lines: list[str] = []
        day = when.date().isoformat()

        def pack(kind: Literal["fact", "history"], header: str, entries: list[tuple[str, str]]) -> None:
            """Facts in order while they fit the budget, under ``header``."""
            nonlocal used
            packed = []
            for cite, text in entries:
                cost = estimate_tokens(text)
                if used + cost > budget_tokens:
                    break
                used += cost
                items.append(RecallItem(kind, cite, text, cost))
                packed.append(f"- {text}")
            if packed:
                lines.extend([header, *packed])

        pack("fact", f"Facts (valid at {day}):", [(f.id, f.line()) for f in facts])
        pack("history", f"Earlier (no longer valid at {day}):",
             [(f.id, f"{f.line()} (ended {f.valid_to_text}{why})") for f, why in history])
        ep_lines = []
        seen_eps: set[str] = set()
        for hit in hits:
            if hit.episode.id in seen_eps:
                continue
            seen_eps.add(hit.episode.id)
            text = _episode_line(hit)
            cost = estimate_tokens(text)
            if used + cost > budget_tokens:
                continue  # a shorter one further down may still fit
            used += cost
            items.append(RecallItem("episode", hit.episode.id, text, cost))
            ep_lines.append(f"- {text} [{hit.episode.id}]")
        if ep_lines:
            lines += ["Evidence:", *ep_lines]
        if candidates:
            lines.append("Possibly meant (not used): " + ", ".join(candidates))
        return Recall(
            question=question, at=when, text="\n".join(lines), items=tuple(items), entities=tuple(names),
            candidates=tuple(candidates), facts=tuple(f for f in facts if f.id in {i.cite for i in items}),
            hits=tuple(hits), tokens=used, budget_tokens=budget_tokens,
            history=tuple(f for f, _why in history if f.id in {i.cite for i in items if i.kind == "history"}),
        )

    def _history(self, names: list[str], current: list[Fact], when: _dt.datetime,
                 past: bool, known: _dt.datetime | None) -> list[tuple[Fact, str]]:
        """The entities' facts that had ended by ``when``, most recently ended
        first, each with what ended it: all of them when the question is
        about the past, else the latest ended value of each single-valued
        (subject, predicate) among ``current``."""
        ended: list[Fact] = []
        reads, when_us = self._reads, to_us(when)
        for name in names:  # the store keeps only what had ended (valid_to <= when): no Fact for the rest
            mine = reads.run(reads.query(name, known_at=known, direction="both", ended_by=when_us))
            mine.sort(key=lambda f: f.valid_to or when, reverse=True)
            ended += mine[:_FACTS_PER_ENTITY]
        if not past:
            single: dict[str, bool] = {}
            for f in current:
                if f.predicate not in single:
                    rec = self._scope.predicate(f.predicate)
                    single[f.predicate] = rec is not None and rec.cardinality == "one"
            wanted = {(f.subject, f.predicate) for f in current if single[f.predicate]}
            latest: dict[tuple[str, str], Fact] = {}
            for f in ended:  # most recently ended first
                latest.setdefault((f.subject, f.predicate), f)
            ended = [f for key, f in latest.items() if key in wanted]
        ended = list({f.id: f for f in ended}.values())  # a fact of two named entities once
        by = self._reads.enders(ended, to_us(known) if known is not None else None)
        out = []
        for f in ended:
            cause = f.invalidated_by  # a fact id only; a free-text reason is ended_reason
            if cause is not None and cause in by:
                why = f": superseded by {by[cause].object_text}"
            elif cause is not None:
                why = ": superseded"  # by a fact no longer believed
            else:
                why = f": {f.ended_reason}" if f.ended_reason else ""
            out.append((f, why))
        return out
