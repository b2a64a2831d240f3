"""Text preparation for the FTS5 lexical index and its queries.

Indexed text and queries go through the same steps: unsegmented scripts
(Chinese, Japanese, Thai ...) become overlapping character bigrams so that
two-character words match, and a query becomes quoted terms joined with OR,
so nothing a user types (``-``, ``:``, ``*``, ``NEAR``, quotes) is ever read as
FTS5 syntax.
"""

from __future__ import annotations

import re

from ...core.index_text import cjk_bigrams

__all__ = ["STOPWORDS", "cjk_bigrams", "fts_query", "query_terms"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t don didn doesn isn wasn weren hasn haven hadn won wouldn shouldn couldn ll re ve d m o y
    also ever any anything something thing things get got go going gone like likely kind much many
    ago""".split()
)


def query_terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """The distinct lower-cased search terms of ``text`` (bigrams for CJK),
    stop words dropped unless nothing else is left."""
    words = [w.lower().replace("’", "'") for w in _WORD.findall(cjk_bigrams(text))]
    out: list[str] = []
    seen: set[str] = set()
    for w in words:
        base = w.split("'")[0] if "'" in w else w
        if base and base not in seen:
            seen.add(base)
            out.append(base)
    if keep_stopwords:
        return out
    content = [w for w in out if w not in STOPWORDS]
    return content or out


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``: every term double-quoted and
    joined with OR; ``None`` when the text has no searchable term."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
