"""ChatGPT data export (Settings → Data controls → Export data): the
``conversations.json`` of the export folder or ``.zip``, an array of
conversations whose messages form a tree (``mapping``); the current branch,
from ``current_node`` up to the root, is what the conversation reads as.
See docs/import/chatgpt.md."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterator, Mapping
from typing import Any

from ..source import Item, Skip, SourceMessage
from .chatexport import ExportReader
from .summary import MAX_SUMMARY, clip, line_count
from .text import clean, count_lines, epoch_time, opt_str

__all__ = ["READER", "ChatGPTReader"]

# content types that are the model's reasoning or UI plumbing, not said
_HIDDEN_TYPES = frozenset({"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context",
                           "tether_browsing_display", "system_error", "sonic_webpage"})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _branch(mapping: Mapping[str, Any], leaf: Any) -> list[Mapping[str, Any]]:
    """The nodes from the root down to ``leaf`` (cycle-safe)."""
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    node_id = leaf
    while isinstance(node_id, str) and node_id not in seen:
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, Mapping):
            break
        path.append(node)
        node_id = node.get("parent")
    path.reverse()
    return path


def _leaf(mapping: Mapping[str, Any]) -> str | None:
    """``current_node`` is missing: the newest leaf stands for it."""
    best: tuple[float, str] | None = None
    for node_id, node in mapping.items():
        if isinstance(node, Mapping) and not node.get("children"):
            msg = node.get("message")
            when = msg.get("create_time") if isinstance(msg, Mapping) else None
            rank = (float(when) if isinstance(when, (int, float)) else -math.inf, str(node_id))
            if best is None or rank > best:
                best = rank
    return best[1] if best else None


class _Conversation:
    """One conversation's current branch, message by message."""

    def __init__(self, conv: Mapping[str, Any], conv_id: str) -> None:
        self.id = conv_id
        self.title = opt_str(conv.get("title"))
        self.model = opt_str(conv.get("default_model_slug"))
        self.created = epoch_time(conv.get("create_time"))
        mapping = conv.get("mapping")
        self.mapping: Mapping[str, Any] = mapping if isinstance(mapping, Mapping) else {}
        leaf = conv.get("current_node")
        self.leaf = leaf if isinstance(leaf, str) and leaf in self.mapping else _leaf(self.mapping)

    def messages(self) -> Iterator[Item]:
        for node in _branch(self.mapping, self.leaf):
            msg = node.get("message")
            if not isinstance(msg, Mapping):
                continue  # the root: a node without a message
            msg_id = opt_str(msg.get("id")) or opt_str(node.get("id"))
            if msg_id is None:
                yield Skip(f"{self.id}/?", "message without an id")
                continue
            key = f"{self.id}/{msg_id}"
            if self._hidden(msg):
                continue
            text = clean(self._text(msg))
            if not text.strip():
                yield Skip(key, "empty")
                continue
            author = _map(msg.get("author"))
            role = opt_str(author.get("role")) or "unknown"
            speaker = (opt_str(author.get("name")) or "tool") if role == "tool" else role
            meta = _map(msg.get("metadata"))
            context: dict[str, Any] = {}
            if self.title:
                context["title"] = self.title
            model = opt_str(meta.get("model_slug")) or (self.model if role == "assistant" else None)
            if model:
                context["model"] = model
            siblings = _map(self.mapping.get(str(node.get("parent")))).get("children")
            if isinstance(siblings, list) and len(siblings) > 1:
                context["variants"] = len(siblings)  # edited or regenerated: the others are not imported
            yield SourceMessage(key=key, text=text, occurred_at=epoch_time(msg.get("create_time")) or self.created,
                                speaker=speaker, session=self.id, context=context)

    @staticmethod
    def _hidden(msg: Mapping[str, Any]) -> bool:
        meta = _map(msg.get("metadata"))
        if meta.get("is_visually_hidden_from_conversation"):
            return True
        author = msg.get("author")
        role = author.get("role") if isinstance(author, Mapping) else None
        content = msg.get("content")
        ctype = content.get("content_type") if isinstance(content, Mapping) else None
        return (role == "system" and not meta.get("is_user_system_message")) or ctype in _HIDDEN_TYPES

    def _text(self, msg: Mapping[str, Any]) -> str:
        content = _map(msg.get("content"))
        meta = _map(msg.get("metadata"))
        author = _map(msg.get("author"))
        attachments = [a for a in meta.get("attachments") or [] if isinstance(a, Mapping)]
        attached = {a.get("id") for a in attachments}
        pieces: list[str] = []
        images = 0
        for part in content.get("parts") or []:
            if isinstance(part, str):
                if part.strip():
                    pieces.append(part)
            elif isinstance(part, Mapping):
                if part.get("content_type") == "image_asset_pointer":
                    images += 1
                    pointer = str(part.get("asset_pointer") or "").split("://", 1)[-1]
                    if pointer not in attached:  # an uploaded image is named once, by its attachment
                        pieces.append(f"[image: {clip(pointer or '?', 120)}]")
                elif isinstance(part.get("text"), str) and part["text"].strip():
                    pieces.append(part["text"])
                else:
                    pieces.append(f"[{clip(str(part.get('content_type') or 'part'), 60)}]")
        for key in ("text", "result"):  # code, execution_output, tether_quote ...
            if not pieces and isinstance(content.get(key), str) and content[key].strip():
                pieces.append(content[key])
        body = "\n".join(pieces)
        role = author.get("role")
        recipient = msg.get("recipient")
        if role == "tool":
            body = self._result_line(str(author.get("name") or "tool"), content, body, images)
        elif role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
            first = next((line for line in body.splitlines() if line.strip()), "")
            body = f"[tool {clip(recipient, 60)}: {clip(first, MAX_SUMMARY - 70)}]" if first else f"[tool {recipient}]"
        lines = [body] if body.strip() else []
        for att in attachments:
            name = opt_str(att.get("name")) or opt_str(att.get("id")) or "?"
            lines.append(f"[attachment: {clip(name, MAX_SUMMARY - 14)}]")
        return "\n".join(lines)

    @staticmethod
    def _result_line(name: str, content: Mapping[str, Any], body: str, images: int) -> str:
        """A tool's output as one line: what it was, never its content."""
        if isinstance(content.get("title"), str) or isinstance(content.get("url"), str):
            what = opt_str(content.get("title")) or opt_str(content.get("url")) or ""
        elif images:
            what = f"{images} image" + ("s" if images > 1 else "")
        else:
            what = line_count(body) if count_lines(body) else ""
        name = clip(name, 60)
        return f"[tool result {name}: {clip(what, MAX_SUMMARY - len(name) - 16)}]" if what else ""


class ChatGPTReader(ExportReader):
    name = "chatgpt"
    description = "ChatGPT data export (conversations.json, its folder or the export .zip)"
    beside = ("chat.html", "message_feedback.json")

    def conversation_id(self, conv: Mapping[str, Any]) -> str | None:
        found = opt_str(conv.get("conversation_id")) or opt_str(conv.get("id"))
        if found is None:  # a trimmed export (hand-made, or by an older tool): its creation time names it
            created = conv.get("create_time")
            if isinstance(created, (int, float)) and not isinstance(created, bool):
                found = f"created-{created!r}"
        return found

    def older(self, conv: Mapping[str, Any], since: _dt.datetime) -> bool:
        updated = conv.get("update_time")
        return isinstance(updated, (int, float)) and updated < since.timestamp()

    def messages(self, conv: Mapping[str, Any], conv_id: str, where: str) -> Iterator[Item]:
        return _Conversation(conv, conv_id).messages()


READER = ChatGPTReader()
