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

Cost: per read, one batched name-key lookup for the words of the hits
(n-grams of up to four words) and one fact read of the entities found
(bounded by ``_FACTS_PER_READ``).
"""

from __future__ import annotations

import re
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


def _grams(text: str) -> set[str]:
    """Name keys an episode's words could be (n-grams of up to four words;
    a lone stop word or a one-letter word is no name)."""
    words = _WORD.findall(text)[:_MAX_WORDS]
    keys: set[str] = set()
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i:i + n])
            if n == 1 and (len(gram) < 2 or gram.casefold() in STOPWORDS):
                continue
            try:
                keys.add(normalize_key(gram, "name"))
            except InvalidInputError:
                continue
    return keys


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
    if not recs:
        return {}
    grams = {rec.id: _grams(rec.text) for rec in recs}
    ids = scope.store.entity_ids_for_keys(scope.ns_id, sorted(set().union(*grams.values())))
    if not ids:
        return {}
    named = {ep: {ids[k] for k in keys if k in ids} for ep, keys in grams.items()}
    subjects = sorted(set().union(*named.values()))
    facts = reads.run(FactQuery(scope.ns_id, subject_ids=subjects, direction="out", known_at=known_at,
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
        if len(mine) < 1:
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
