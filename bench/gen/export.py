"""What the chat export generators (ChatGPT, Claude.ai) share: their words,
and writing a ``conversations.json`` one conversation at a time, so
generating several GB needs no more memory than one conversation."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["sentence", "write_conversations"]

_WORDS = ("the quick brown fox jumps over a lazy dog while memory keeps every turn of the "
          "conversation bitemporal facts recorded at query time agents recall what was said "
          "Lisbon tram café naïve résumé 東京 😀").split()
_PER_CONVERSATION = 40

#: (rng, messages in it, its start time) -> one conversation
Conversation = Callable[[random.Random, int, float], dict[str, Any]]


def sentence(rng: random.Random, words: int) -> str:
    """``words`` words drawn from a small mixed-script vocabulary."""
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def write_conversations(path: Path, messages: int, seed: int, t0: float, conversation: Conversation,
                        sep: str = ", ") -> Path:
    """Write about ``messages`` messages in conversations of ~40 as
    ``path/conversations.json`` (or to ``path`` itself if it ends in
    ``.json``), the n-th starting an hour after ``t0`` and the one before,
    ``sep`` between them; return the file."""
    rng = random.Random(seed)
    out = path if path.suffix == ".json" else path / "conversations.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fp:
        fp.write("[")
        done = 0
        while done < messages:
            n = min(_PER_CONVERSATION, messages - done)
            if done:
                fp.write(sep)
            fp.write(json.dumps(conversation(rng, n, t0), ensure_ascii=False))
            done += n
            t0 += 3600
        fp.write("]")
    return out
