"""Write a large, valid Claude.ai ``conversations.json`` for benchmarks and
the streaming test: conversations of ~40 messages with edited prompts (both
branches kept, linked by ``parent_message_uuid``), content-block-only
answers with tool calls and thinking, attachments with extracted content and
uploaded files sprinkled in. Written one conversation at a time.

    python -m bench.gen.claude_ai OUT_DIR MESSAGES
"""

from __future__ import annotations

import datetime as _dt
import random
import sys
import uuid
from pathlib import Path
from typing import Any

from .export import sentence, write_conversations

__all__ = ["write"]

_ROOT = "00000000-0000-4000-8000-000000000000"


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, tz=_dt.timezone.utc).isoformat()


def _message(rng: random.Random, sender: str, t: float, parent: str) -> dict[str, Any]:
    kind = rng.random()
    text = sentence(rng, 60 if sender == "human" else 400)
    msg: dict[str, Any] = {"uuid": str(uuid.UUID(int=rng.getrandbits(128))), "text": text,
                           "content": [{"type": "text", "text": text, "citations": []}], "sender": sender,
                           "created_at": _iso(t), "updated_at": _iso(t), "attachments": [], "files": [],
                           "parent_message_uuid": parent}
    if sender == "assistant" and kind < 0.10:  # newer exports: empty text, all in blocks
        msg["text"] = ""
        msg["content"] = [{"type": "thinking", "thinking": sentence(rng, 80)},
                          {"type": "tool_use", "name": "web_search", "input": {"query": sentence(rng, 5)}},
                          {"type": "tool_result", "name": "web_search", "is_error": False,
                           "content": [{"type": "knowledge", "title": "A page", "url": "https://example.com",
                                        "text": sentence(rng, 50)}]},
                          {"type": "text", "text": text}]
    if sender == "human" and kind > 0.95:
        msg["attachments"] = [{"file_name": "notes.txt", "file_size": 4000, "file_type": "txt",
                               "extracted_content": sentence(rng, 700)}]
    if sender == "human" and 0.90 < kind <= 0.95:
        msg["files"] = [{"file_name": "photo.png", "file_uuid": str(uuid.UUID(int=rng.getrandbits(128)))}]
    return msg


def _conversation(rng: random.Random, n: int, t0: float) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    parent, t = _ROOT, t0
    for i in range(n):
        t += rng.uniform(5, 90)
        sender = "human" if i % 2 == 0 else "assistant"
        if sender == "human" and rng.random() < 0.05:  # an edited prompt: the old branch stays in the list
            messages.append(_message(rng, sender, t - 1, parent))
        msg = _message(rng, sender, t, parent)
        messages.append(msg)
        parent = msg["uuid"]
    return {"uuid": str(uuid.UUID(int=rng.getrandbits(128))), "name": sentence(rng, 4), "summary": "",
            "created_at": _iso(t0), "updated_at": _iso(t), "account": {"uuid": "0b7c1e5a-9d2f-4c1e-8a3b-5f6e7d8c9b0a"},
            "chat_messages": messages}


def write(path: Path, messages: int, seed: int = 0) -> Path:
    """Write about ``messages`` messages as ``path/conversations.json`` (or
    to ``path`` itself if it ends in ``.json``); return the file."""
    return write_conversations(path, messages, seed, 1_735_000_000.0, _conversation, sep=",\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gen.claude_ai PATH MESSAGES")
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
