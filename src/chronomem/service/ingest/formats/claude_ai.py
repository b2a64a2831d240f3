"""Claude.ai data export (Settings → Privacy → Export data): the
``conversations.json`` of the export folder or ``.zip``, an array of
conversations with their ``chat_messages``. Newer exports keep every edit and
retry in that flat list, linked by ``parent_message_uuid``; the branch ending
at the newest leaf is what the conversation reads as. See
docs/import/claude-ai.md."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Mapping
from typing import Any

from ..source import Item, Skip, SourceMessage
from .chatexport import ExportReader
from .summary import MAX_SUMMARY, clip, compact, tool_line
from .text import clean, count_lines, iso_time, opt_str

__all__ = ["READER", "ClaudeAIReader"]

_SPEAKERS = {"human": "user", "assistant": "assistant"}


def _tool_use(block: Mapping[str, Any]) -> str:
    data = block.get("input")
    # the field that says what the call does, when there is one
    main = next((data[k] for k in ("query", "command", "url", "path", "title", "code", "content")
                 if isinstance(data, Mapping) and isinstance(data.get(k), str)), None)
    return tool_line(opt_str(block.get("name")) or "?", main if main is not None else compact(data) if data else "")


def _tool_result(block: Mapping[str, Any]) -> str:
    body = block.get("content")
    if isinstance(body, list):  # [{type: text, text}, {type: knowledge, title, url} ...]
        texts = [b.get("text") for b in body if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
        body = "\n".join(t for t in texts if t)
    text = body if isinstance(body, str) else ""
    count = count_lines(text) if text.strip() else 0
    name = clip(opt_str(block.get("name")) or "", 60)
    label = f"tool result {name}" if name else "tool result"
    error = ", error" if block.get("is_error") else ""
    return f"[{label}: {count} line{'' if count == 1 else 's'}{error}]"


def _attachment_lines(msg: Mapping[str, Any]) -> list[str]:
    """One line per attached file (``attachments`` carry extracted text,
    ``files`` uploads); the extracted content itself is never pasted."""
    lines: list[str] = []
    seen: set[str] = set()
    for field in ("attachments", "files"):
        for att in msg.get(field) or []:
            if not isinstance(att, Mapping):
                continue
            name = opt_str(att.get("file_name"))
            if name is None:
                chars = att.get("extracted_content")
                name = f"pasted text, {len(chars)} chars" if isinstance(chars, str) else "unnamed"
            if name not in seen:
                seen.add(name)
                lines.append(f"[attachment: {clip(name, MAX_SUMMARY - 14)}]")
    return lines


def _text(msg: Mapping[str, Any]) -> str:
    pieces: list[str] = []
    blocks = msg.get("content")
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            pieces.append(block["text"])
        elif kind == "tool_use":
            pieces.append(_tool_use(block))
        elif kind == "tool_result":
            pieces.append(_tool_result(block))
        # thinking, token_budget, flag ...: the model's reasoning or UI plumbing, not said
    if not any(isinstance(b, Mapping) and b.get("type") == "text" and opt_str(b.get("text"))
               for b in (blocks if isinstance(blocks, list) else [])):
        text = msg.get("text")  # older exports: the whole message is here
        if isinstance(text, str) and text.strip():
            pieces.insert(0, text)
    return clean("\n".join(pieces + _attachment_lines(msg)))


def _branch(messages: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """The messages as the conversation reads, and how many children each
    parent has. With ``parent_message_uuid`` links: the path from the root to
    the newest leaf (the export does not say which branch was current); an
    older export without them is one linear list, kept in order."""
    children: dict[str, int] = {}
    if not any("parent_message_uuid" in m for m in messages):
        return messages, children
    by_id = {m["uuid"]: m for m in messages if isinstance(m.get("uuid"), str)}
    for m in messages:
        parent = m.get("parent_message_uuid")
        if isinstance(parent, str) and parent in by_id:
            children[parent] = children.get(parent, 0) + 1
    leaf: Mapping[str, Any] | None = None
    best: tuple[_dt.datetime, int] | None = None
    floor = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    for i, m in enumerate(messages):
        if isinstance(m.get("uuid"), str) and m["uuid"] not in children:
            rank = (iso_time(m.get("created_at")) or floor, i)  # ties: the later in the list
            if best is None or rank > best:
                best, leaf = rank, m
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    while leaf is not None and leaf["uuid"] not in seen:
        seen.add(leaf["uuid"])
        path.append(leaf)
        parent = leaf.get("parent_message_uuid")  # the root's is a sentinel uuid not in the list
        leaf = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path, children


def _conversation(conv: Mapping[str, Any], conv_id: str, where: str) -> Iterator[Item]:
    title = opt_str(conv.get("name"))
    created = iso_time(conv.get("created_at"))
    raw = conv.get("chat_messages")
    messages = [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, list) else []
    path, children = _branch(messages)
    for i, msg in enumerate(path):
        # a trimmed export (a single-chat exporter's) may drop message uuids: the
        # position names the message then (stable while the chat only grows)
        msg_id = opt_str(msg.get("uuid")) or f"#{i}"
        key = f"{conv_id}/{msg_id}"
        text = _text(msg)
        if not text.strip():
            yield Skip(key, "empty")
            continue
        sender = opt_str(msg.get("sender")) or "unknown"
        context: dict[str, Any] = {"title": title} if title else {}
        model = opt_str(conv.get("model"))
        if model and sender == "assistant":
            context["model"] = model
        parent = msg.get("parent_message_uuid")
        if isinstance(parent, str) and children.get(parent, 0) > 1:
            context["variants"] = children[parent]  # edited or retried: the others are not imported
        yield SourceMessage(key=key, text=text, occurred_at=iso_time(msg.get("created_at")) or created,
                            speaker=_SPEAKERS.get(sender, sender.lower()), session=conv_id, context=context)


class ClaudeAIReader(ExportReader):
    name = "claude-ai"
    description = "Claude.ai data export (conversations.json, its folder or the export .zip)"
    beside = ("users.json",)
    id_field = "a uuid"

    def conversation_id(self, conv: Mapping[str, Any]) -> str | None:
        return opt_str(conv.get("uuid")) or opt_str(conv.get("conversation_id")) or opt_str(conv.get("id"))

    def older(self, conv: Mapping[str, Any], since: _dt.datetime) -> bool:
        updated = iso_time(conv.get("updated_at"))
        return updated is not None and updated < since

    def messages(self, conv: Mapping[str, Any], conv_id: str, where: str) -> Iterator[Item]:
        return _conversation(conv, conv_id, where)


READER = ClaudeAIReader()
