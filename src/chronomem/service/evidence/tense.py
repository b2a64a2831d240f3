"""Tense cues: which way a time phrase points, read from the words of its clause.

``direction(text, a, b)`` looks at the clause around ``text[a:b]`` (split at
sentence ends, semicolons and "but") and returns ``+1`` (future: resolve
forward from the utterance time), ``-1`` (past: backward) or ``0`` (no cue).

Cues have two strengths. Strong: modals and auxiliaries ("will", "'ll",
"going to", "gonna", "was", "were", "did", "had", "used to"), intent verbs
followed by "to" ("plan to", "agreed to", "decided to"), a move of a date
("moved to", "postponed to" right before the phrase), "ago", "yesterday", "tomorrow"; Chinese
将/会/要/打算/准备/决定, 了/过/已经/曾, 昨天/去年/明天/明年. Weak: "is/are/am",
schedule verbs in the present ("start(s)", "ends", "opens"), "due", "ready",
"next", "upcoming", "scheduled", "until", requests, proposals and obligations
("please", "let's", "can/could/shall/should we/you …", "need to", "must");
"-ed" verbs and common irregular past forms, "been", "last week/month/…";
Chinese 下周/下个月 and 上周/上个月, 见. A participle after "get/have + object"
("get the review done") is a result, not a past cue; 会/要 after 的 or 个
(周五的会, "the Friday meeting") are nouns, not "will".

The cues before the phrase are read first (the verb of an English clause
usually precedes its time adverbial): the nearest strong one wins, else the
nearest weak one. Only when nothing precedes do the cues after the phrase
decide ("On Monday we will ship"), the same way. With no cue at all the
phrase's own preposition, or the one right before it ("by Q2"), decides: "by",
"until", "till", "before", 之前 point forward, "since", 以来 backward.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ...core.lazyre import LazyPattern, lazy

__all__ = ["direction"]

_BOUNDARY = lazy(r"(?<=[.!?])\s+|[;。！？；\n]|\bbut\b|，?但是|，但|可是|不过", re.I)

_WEEKDAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTHS = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
           r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)")
_IRREGULAR_PAST = (
    "went came saw met left got made took said told gave found began bought brought thought felt kept knew ran sat "
    "spoke wrote sent spent won lost paid heard held ate drove flew grew threw wore broke chose forgot became stood "
    "understood taught caught fell sold slept built meant woke swam sang drank rode hid froze shook stole led fled "
    "fed been gone done seen"
).split()
# -ed words that are not past tense here: adjectives, nouns, and participles
# of planning (which point forward and are cues of their own)
_NOT_PAST = {
    "need", "feed", "seed", "speed", "indeed", "proceed", "succeed", "exceed", "breed", "bleed", "weed", "heed",
    "embed", "hundred", "shed", "sled", "bred", "sacred", "naked", "wicked", "kindred", "beloved", "scheduled",
    "planned", "expected", "supposed", "interested", "excited", "tired", "based", "related", "located", "closed",
    "booked", "required", "red", "bed", "wed",
}

# (pattern, strength, sign): strength 2 strong, 1 weak; sign +1 future, -1 past
_CUES: list[tuple[LazyPattern, int, int]] = [
    (lazy(r"\b(?:will|won['’]?t|shall|gonna|going\s+to|about\s+to|tomorrow)\b|['’]ll\b", re.I), 2, 1),
    (lazy(r"\b(?:plan(?:s|ned|ning)?|want(?:s|ed)?|hope[sd]?|expect(?:s|ed)?|intend(?:s|ed)?|agree[sd]?|"
                r"decide[sd]?|promise[sd]?|aim(?:s|ed)?)\s+to\b", re.I), 2, 1),
    (lazy(r"\b(?:was|were|wasn['’]?t|weren['’]?t|did|didn['’]?t|had|hadn['’]?t|ago|yesterday|used\s+to)\b",
                re.I), 2, -1),
    # 会/要 after 的 or 个 (周五的会, 一个会) are nouns ("meeting", "need"), not "will"
    (lazy(r"将|(?<![开聚晚大约机社协工宴学的个])会(?!议)|(?<![需重主只的个])要(?!求)|打算|准备|计划|决定|预计|安排|"
                r"即将|明天|后天|明年"), 2, 1),
    (lazy(r"(?<![为除])了(?!解|不起)|(?<![不通经超难])过(?![来年])|已经|曾经|曾|刚才|刚刚|昨天|前天|去年|前年"),
     2, -1),
    (lazy(r"\b(?:is|are|am|(?:it|that|he|she|there|what|who|where|when|which)['’]s|['’]re|['’]m|"
                r"starts?|begins?|ends|opens|launch(?:es)?|arrives?|leaves|returns|expires|closes|"
                r"due|ready|next|upcoming|scheduled|planned|expected|booked|deadline|coming|soon|until|till)\b",
                re.I), 1, 1),
    # requests, proposals and obligations point forward ("please", "can we", "need to")
    (lazy(r"\b(?:please|let['’]?s|let\s+us|"
                r"(?:can|could|shall|should)\s+(?:we|you|i|they|he|she)|needs?\s+to|ha(?:ve|s)\s+to|must|"
                r"make\s+sure|remember\s+to|don['’]t\s+forget)\b", re.I), 1, 1),
    (lazy(r"下(?=周|个|次|星期|礼拜|月)|见"), 1, 1),
    (lazy(rf"\b(?:{'|'.join(_IRREGULAR_PAST)})\b|['’]ve\s+been|\blast\s+(?:week|month|year|night|time|weekend|"
                rf"quarter|spring|summer|fall|autumn|winter|{_WEEKDAYS}|{_MONTHS})\b", re.I), 1, -1),
    (lazy(r"上(?=周|个|次|星期|礼拜|月)"), 1, -1),
]
# a date's move ("moved to Friday") points forward only when the phrase is its
# object; "we moved to MongoDB in January" is a past move
_MOVE = lazy(r"\b(?:moved|pushed(?:\s+back)?|postponed|delayed|rescheduled|extended|changed|"
                   r"brought\s+forward)(?P<prep>\s+(?:to|until|till|for))?\s*$", re.I)
_MOVE_LEAD = lazy(r"^(?:to|until|till|for)\b", re.I)
_ED = lazy(r"\b[a-z]{2,}ed\b", re.I)
_LEAD_FORWARD = lazy(r"^(?:by|until|till|before)\b", re.I)
_LEAD_BACKWARD = lazy(r"^since\b", re.I)
# the same words right before the phrase ("by Q2", "before the 3rd")
_PRE_FORWARD = lazy(r"\b(?:by|until|till|before)\s+(?:the\s+)?$", re.I)
_PRE_BACKWARD = lazy(r"\bsince\s+(?:the\s+)?$", re.I)
# a participle after "get/have + object" is a result, not the past: "get the review done"
_RESULT = lazy(r"\b(?:get|gets|getting|have|has|having)\s+"
                     r"(?:(?!(?:already|just|not|never|ever|been|finally|also|recently|all)\b)[\w'’]+\s+){1,3}$",
                     re.I)
_TRAIL = lazy(r"^\s*(?:(?P<f>之前|以前|前)|(?P<b>以来))")


def _clause(text: str, a: int, b: int) -> tuple[int, int]:
    start, end = 0, len(text)
    for m in _BOUNDARY.finditer(text):
        if m.end() <= a:
            start = m.end()
        elif m.start() >= b:
            end = m.start()
            break
    return start, end


@lru_cache(maxsize=32)  # every mention of one clause asks for the same cues
def _cues(text: str, start: int, end: int) -> tuple[tuple[int, int, int, int], ...]:
    """(start, end, strength, sign) of every cue in ``text[start:end]``."""
    clause = text[start:end]
    out = [(start + m.start(), start + m.end(), strength, sign)
           for pattern, strength, sign in _CUES for m in pattern.finditer(clause)]
    out.extend((start + m.start(), start + m.end(), 1, -1) for m in _ED.finditer(clause)
               if m.group(0).lower() not in _NOT_PAST)
    return tuple(c for c in out if not (c[2] == 1 and c[3] < 0 and " " not in text[c[0]:c[1]]
                                        and _RESULT.search(text, start, c[0])))


def _pick(cues: list[tuple[int, int, int, int]], before: bool) -> int:
    if not cues:
        return 0
    strongest = max(c[2] for c in cues)
    pool = [c for c in cues if c[2] == strongest]
    # before the phrase the nearest cue ends last; after it, it starts first
    best = max(pool, key=lambda c: c[1]) if before else min(pool, key=lambda c: c[0])
    return best[3]


def direction(text: str, a: int, b: int) -> int:
    """+1 (future), -1 (past) or 0 (no cue) for the phrase ``text[a:b]``."""
    start, end = _clause(text, a, b)
    cues = [c for c in _cues(text, start, end) if c[1] <= a or c[0] >= b]  # not inside the phrase
    move = _MOVE.search(text, start, a)
    if move and (move.group("prep") or _MOVE_LEAD.match(text[a:b])):
        cues.append((move.start(), a, 3, 1))
    got = _pick([c for c in cues if c[1] <= a], True) or _pick([c for c in cues if c[0] >= b], False)
    if got:
        return got
    phrase = text[a:b]
    if _LEAD_FORWARD.match(phrase) or _PRE_FORWARD.search(text, start, a):
        return 1
    if _LEAD_BACKWARD.match(phrase) or _PRE_BACKWARD.search(text, start, a):
        return -1
    trail = _TRAIL.match(text[b:end])
    if trail:
        return 1 if trail.group("f") else -1
    return 0
