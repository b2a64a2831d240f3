"""Write a large, valid ChatGPT ``conversations.json`` for benchmarks and the
streaming test: conversations of ~40 messages with an edited turn, a
regenerated answer, code-interpreter calls, images, attachments, hidden
system messages and null timestamps sprinkled in. Written one conversation
at a time, so generating several GB needs no more memory than one.

    python -m bench.gen.chatgpt OUT_DIR MESSAGES
"""

from __future__ import annotations

import random
import sys
import uuid
from pathlib import Path
from typing import Any

from .export import sentence, write_conversations

__all__ = ["write"]



def _msg(mid: str, role: str, t: float | None, content: dict[str, Any], *, name: str | None = None,
         meta: dict[str, Any] | None = None, recipient: str = "all") -> dict[str, Any]:
    return {"id": mid, "author": {"role": role, "name": name, "metadata": {}}, "create_time": t,
            "update_time": None, "content": content, "status": "finished_successfully", "end_turn": None,
            "weight": 1.0, "metadata": meta or {}, "recipient": recipient, "channel": None}


def _conversation(rng: random.Random, n: int, t0: float) -> dict[str, Any]:
    cid = str(uuid.UUID(int=rng.getrandbits(128)))

    def nid() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128)))

    root = nid()
    mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None, "children": []}}
    parent, t = root, t0

    def add(msg: dict[str, Any] | None, under: str) -> str:
        node_id = msg["id"] if msg else nid()
        mapping[node_id] = {"id": node_id, "message": msg, "parent": under, "children": []}
        mapping[under]["children"].append(node_id)
        return node_id

    parent = add(_msg(nid(), "system", t, {"content_type": "text", "parts": [""]},
                      meta={"is_visually_hidden_from_conversation": True}), parent)
    for i in range(n):
        t += rng.uniform(5, 90)
        role = "user" if i % 2 == 0 else "assistant"
        kind = rng.random()
        meta: dict[str, Any] = {"model_slug": "gpt-4o"} if role == "assistant" else {}
        if role == "user" and kind < 0.05:  # an edited prompt: the old branch stays in the tree
            add(_msg(nid(), role, t, {"content_type": "text", "parts": [sentence(rng, 30)]}), parent)
        if role == "user" and kind > 0.95:
            meta["attachments"] = [{"id": f"file-{nid()[:8]}", "name": "report.pdf", "size": 81234,
                                    "mime_type": "application/pdf"}]
        if role == "assistant" and kind < 0.05:  # a regenerated answer
            add(_msg(nid(), role, t, {"content_type": "text", "parts": [sentence(rng, 200)]}, meta=meta), parent)
        if role == "assistant" and 0.05 <= kind < 0.10:  # a code-interpreter round trip
            parent = add(_msg(nid(), role, t, {"content_type": "code", "language": "python",
                                               "text": "import math\nprint(math.pi)"}, recipient="python"), parent)
            parent = add(_msg(nid(), "tool", t + 1, {"content_type": "execution_output", "text": "3.14159"},
                              name="python"), parent)
        if role == "user" and 0.10 <= kind < 0.13:
            content: dict[str, Any] = {"content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": f"sediment://file_{nid()[:12]}",
                 "size_bytes": 48029, "width": 1024, "height": 768}, sentence(rng, 40)]}
        else:
            content = {"content_type": "text", "parts": [sentence(rng, 60 if role == "user" else 400)]}
        when = None if kind > 0.99 else t
        parent = add(_msg(nid(), role, when, content, meta=meta), parent)
    return {"title": sentence(rng, 4), "create_time": t0, "update_time": t, "mapping": mapping,
            "moderation_results": [], "current_node": parent, "conversation_id": cid, "id": cid,
            "default_model_slug": "gpt-4o", "is_archived": False, "safe_urls": []}


def write(path: Path, messages: int, seed: int = 0) -> Path:
    """Write about ``messages`` messages as ``path/conversations.json`` (or
    to ``path`` itself if it ends in ``.json``); return the file."""
    return write_conversations(path, messages, seed, 1_700_000_000.0, _conversation)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gen.chatgpt PATH MESSAGES")
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
