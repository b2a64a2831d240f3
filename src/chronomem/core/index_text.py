"""The text of an episode's lexical-index columns, pure: what both the
evidence service (:func:`chronomem.service.evidence.episodes.index_parts`)
and a store's migration that rebuilds its index rows from the stored
episodes (PostgreSQL 0013) compute the same way.

Unsegmented scripts (Chinese, Japanese, Thai ...) become overlapping
character bigrams so that two-character words match; the context column
holds the caption-like metadata values named by :data:`METADATA_TEXT_KEYS`.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

__all__ = ["METADATA_TEXT_KEYS", "cjk_bigrams", "index_columns", "metadata_text"]

# Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f]+"
)

# metadata keys whose values are indexed (context column) and embedded
METADATA_TEXT_KEYS = ("caption", "blip_caption", "title", "tags", "summary", "links")


def cjk_bigrams(text: str) -> str:
    """Rewrite runs of unsegmented script as space-separated bigrams
    (a one-character run stays as it is)."""

    def repl(m: re.Match[str]) -> str:
        run = m.group(0)
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "

    return _CJK.sub(repl, text)


def metadata_text(metadata: Mapping[str, Any]) -> list[str]:
    """The indexed strings of an episode's metadata, in key order (a list
    value gives each item)."""
    out: list[str] = []
    for key in METADATA_TEXT_KEYS:
        value = metadata.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(str(v) for v in value)
    return out


def index_columns(text: str, speaker: str | None, context: Sequence[str],
                  neighbours: Sequence[str]) -> tuple[str, str, str, str]:
    """An episode's four index columns: its text, speaker, context (words
    joined) and its neighbours' texts (joined), unsegmented scripts as bigrams."""
    return (cjk_bigrams(text), speaker or "", cjk_bigrams(" ".join(context)),
            cjk_bigrams(" ".join(neighbours)))
