"""Mentioned evidence: the facts an episode talks about without citing them.

An episode *mentions* a fact when its text names the fact's subject (by name
or alias) and its value (an entity by name or alias, or a literal's text),
and it was said (``occurred_at``, else ``recorded_at``) while the fact was
valid. "we tuned Redis maxmemory for the my_api queue workers", said in March
while ``my_api -uses_queue-> Redis [2026-03-02, 2026-10-12)`` held, mentions
that fact; read in November, after SQLite replaced Redis, the hit is history.

The tie is derived when an episode is read as a hit, not stored: the facts
it is measured against are those believed at the read's ``known_at``, so a
fact added, ended or corrected later changes what the episode mentions with
no relinking pass, and ingest pays nothing. Explicit links (a fact's
``episode_id``) take precedence: an episode cited by any fact gets only its
citing facts.

Cost: per read, one index probe for whether the namespace names any entity
(none: nothing else), one batched name-key lookup for the words of the hits
(n-grams of up to four words) and one fact read whose subject and value
are both among the names (or literal texts) found and whose interval
overlaps the hits' times (bounded by ``_FACTS_PER_READ``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

from ...core.models import Fact
from ...core.names import normalize_key
from ...core.time import to_us
from ...errors import InvalidInputError
from ...store.protocol import FactQuery
from .lexical import STOPWORDS

if TYPE_CHECKING:  # pragma: no cover
    from ...store.protocol import EpisodeRecord
    from ..reads import FactReads
    from ..scope import Scope

__all__ = ["mentioned_facts"]

# a word keeps inner underscores, dots and hyphens ("my_api", "node.js", "gpt-4")
_WORD = re.compile(r"[^\W_]+(?:[._'’-]+[^\W_]+)*|[^\W\d]\w*", re.UNICODE)
_MAX_NGRAM = 4
_MAX_WORDS = 400  # of one episode: a long note is matched on its first words
_FACTS_PER_READ = 2000
_MAX_LITERALS = 10_000  # with the entities, under any SQLite build's bound-parameter limit (32766)
_MAX_ENTITIES = 5_000


def _words(text: str) -> list[str]:
    return _WORD.findall(text)[:_MAX_WORDS]


def _word_key(word: str) -> str:
    # hits repeat the same words: a short one is normalized once per process
    return _short_word_key(word) if len(word) <= 64 else _key_of(word)


def _key_of(word: str) -> str:
    try:
        return normalize_key(word, "name")
    except InvalidInputError:  # nothing left after normalization ("_")
        return ""


_short_word_key = lru_cache(maxsize=1 << 16)(_key_of)


def _grams(words: list[str]) -> set[str]:
    """Name keys an episode's words could be (n-grams of up to four words;
    a lone stop word or a one-letter word is no name). A gram's key is its
    words' keys joined by ``_`` (what :func:`normalize_key` makes of it),
    so each word is normalized once."""
    keys = [_word_key(w) for w in words]
    out = {k for k in keys if len(k) >= 2 and k not in STOPWORDS}
    # every run of 2 to _MAX_NGRAM (4) non-empty keys, each n-gram its (n-1)-gram
    # and the next key ("": a run broken there; a zip stops at its shortest list)
    grams = keys
    for n in range(1, _MAX_NGRAM):
        grams = [f"{g}_{k}" if g and k else "" for g, k in zip(grams, keys[n:], strict=False)]
        out.update(grams)
    out.discard("")
    return out


def _literals(words: list[str]) -> set[str]:
    """The encoded literals an episode's words could be: each n-gram as a
    string (as written, and lower-cased), a whole number as an integer."""
    out: set[str] = set()
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i:i + n])
            if len(gram) < 2:
                continue
            out.update((f"s:{gram}", f"s:{gram.casefold()}"))
            if n == 1 and gram.isdigit():
                out.add(f"i:{int(gram)}")
    return out


def _literal_in(value: object, folded_text: str) -> bool:
    """Whether a literal value is written in the (casefolded) text, as whole words."""
    if isinstance(value, bool) or value is None:
        return False
    text = str(value).strip().casefold()
    if len(text) < 2:
        return False
    return re.search(rf"(?<!\w){re.escape(text)}(?!\w)", folded_text) is not None


def mentioned_facts(scope: Scope, reads: FactReads, recs: Sequence[EpisodeRecord],
                    known_at: int | None) -> dict[str, list[Fact]]:
    """For each episode of ``recs`` (by id), the facts it mentions: subject and
    value named in its text, valid when it was said, believed at
    ``known_at`` (``None``: now). Episodes that mention nothing are absent."""
    if not recs or not scope.store.has_entities(scope.ns_id):
        return {}  # (no names to find: the words are not even split, ~0.3 ms of a search)
    words = {rec.id: _words(rec.text) for rec in recs}
    grams = {ep: _grams(w) for ep, w in words.items()}
    ids = scope.store.entity_ids_for_keys(scope.ns_id, sorted(set().union(*grams.values())))
    if not ids:
        return {}
    named = {ep: {ids[k] for k in keys if k in ids} for ep, keys in grams.items()}
    entities = sorted(set().union(*named.values()))[:_MAX_ENTITIES]
    literals = sorted(set().union(*(_literals(w) for ep, w in words.items() if named[ep])))[:_MAX_LITERALS]
    times = [rec.occurred_at if rec.occurred_at is not None else rec.recorded_at for rec in recs]
    # subject and value among the names found, valid at some time one of them was said: the
    # store narrows the read, the loop below matches each episode exactly
    facts = reads.run(FactQuery(scope.ns_id, subject_ids=entities, direction="out", known_at=known_at,
                                overlap=(min(times), max(times) + 1), object_in=(entities, literals),
                                limit=_FACTS_PER_READ))
    if not facts:
        return {}
    fact_keys: dict[str, str] = {}
    for f in facts:
        for name in (f.subject, f.object) if not f.literal else (f.subject,):
            if name not in fact_keys:
                try:
                    fact_keys[name] = normalize_key(name, "name")
                except InvalidInputError:
                    continue
    key_ids = dict(ids)
    unknown = [k for k in fact_keys.values() if k not in key_ids]
    if unknown:
        key_ids.update(scope.store.entity_ids_for_keys(scope.ns_id, unknown))
    out: dict[str, list[Fact]] = {}
    for rec in recs:
        mine = named[rec.id]
        if not mine:
            continue
        said = rec.occurred_at if rec.occurred_at is not None else rec.recorded_at
        folded = rec.text.casefold()
        found = []
        for f in facts:
            sid = key_ids.get(fact_keys.get(f.subject, ""))
            if sid not in mine:
                continue
            if f.literal:
                if not _literal_in(f.object, folded):
                    continue
            elif key_ids.get(fact_keys.get(f.object, "")) not in mine:
                continue
            if f.valid_from is not None and to_us(f.valid_from) > said:
                continue
            if f.valid_to is not None and to_us(f.valid_to) <= said:
                continue
            found.append(f)
        if found:
            out[rec.id] = found
    return out
