"""Claude Code session logs: ``~/.claude/projects/<project>/<session>.jsonl``,
one JSON entry a line (see ``docs/import/claude-code.md``).

Current Claude Code writes one API message as several entries, one content
block each, all with the same ``message.id``: those consecutive entries
become one message keyed by that id, so the key does not depend on how many
blocks were written yet."""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from ..source import Item, ReadOptions, Skip, SourceMessage
from .agentlog import LogReader, LogSession, head_objects, project_of
from .inputs import read_head
from .summary import clip, compact, result_line, tool_line
from .text import iso_time

__all__ = ["READER", "ClaudeCodeReader"]

_ENTRY_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "custom-title", "ai-title",
                "queue-operation"}
#: entry type -> the field holding a session title
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
#: the input field that says what a built-in tool call does
_MAIN_FIELD = {
    "Bash": "command", "Read": "file_path", "Write": "file_path", "Edit": "file_path",
    "MultiEdit": "file_path", "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path",
    "Grep": "pattern", "Glob": "pattern", "LS": "path", "WebFetch": "url", "WebSearch": "query",
    "Task": "description", "Agent": "description", "Skill": "skill", "SlashCommand": "command",
}
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_HEAD_START = re.compile(rb'\{"type":"(?:summary|file-history-snapshot)"')
_HEAD_TYPE = re.compile(rb'"type":"(?:user|assistant|system)"')
_ERROR_TAG = re.compile(r"</?tool_use_error>")
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
#: user entries that only carry the output of a local command: plumbing
_OUTPUT_TAGS = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")
#: tool results waiting for their assistant message to be complete
_MAX_DEFERRED = 256


class ClaudeCodeReader(LogReader):
    name = "claude-code"
    description = "Claude Code session logs (~/.claude/projects/<project>/<session>.jsonl)"
    what = "Claude Code session log"

    def looks_like(self, path: Path) -> bool:
        head = read_head(path)
        for obj in head_objects(head):
            kind = obj.get("type")
            if kind in _ENTRY_TYPES and ("sessionId" in obj or "leafUuid" in obj or "snapshot" in obj):
                return True
        # a first line longer than the head (a big paste, a big snapshot): its
        # leading fields still say what it is
        return bool(_HEAD_START.match(head)) or (b'"sessionId":"' in head and bool(_HEAD_TYPE.search(head)))

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        return _Session(file).read()


def _title(path: Path) -> str | None:
    """The session's title: the last ``/rename`` (``custom-title``), else the
    last ``ai-title``, else the last ``summary``, as Claude Code's resume
    picker ranks them. They may sit anywhere in the file, so a first pass
    looks for them, parsing only the lines that can be one (constant memory)."""
    found: dict[str, str] = {}
    with open(path, "rb") as fp:
        for raw in fp:
            if b'"summary"' not in raw and b'"customTitle"' not in raw and b'"aiTitle"' not in raw:
                continue
            try:
                obj = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            field = _TITLE_FIELDS.get(str(obj.get("type"))) if isinstance(obj, dict) else None
            if field and isinstance(obj.get(field), str) and obj[field].strip():
                found[field] = obj[field].strip()
    return next((found[f] for f in ("customTitle", "aiTitle", "summary") if f in found), None)


def _project_folder(path: Path) -> str:
    """The folder under ``projects/`` a log sits in (subagent logs sit deeper)."""
    parts = path.parts
    if "projects" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("projects")
        if at + 1 < len(parts) - 1:
            return parts[at + 1]
    return path.parent.name


class _Session(LogSession):
    """One log being read: the assistant message still being assembled and
    the tool results that arrived meanwhile."""

    def __init__(self, file: Path) -> None:
        super().__init__(file)
        self.title = _title(file)
        self.folder = _project_folder(file)
        self.pending: SourceMessage | None = None
        self.pending_parts: list[str] = []
        self.pending_seen: set[str] = set()
        self.deferred: list[Item] = []
        self.flushed: deque[str] = deque(maxlen=64)

    def entry(self, number: int, entry: dict[str, Any]) -> Iterator[Item]:
        kind = entry.get("type")
        if kind == "assistant":
            yield from self._assistant(number, entry)
        elif kind == "user":
            yield from self._user(number, entry)
        # summary (the title), system, file-history-snapshot, progress,
        # queue-operation ...: plumbing, dropped silently

    def end(self) -> Iterator[Item]:
        return self._flush()

    def _base(self, entry: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        uuid = entry.get("uuid")
        context: dict[str, Any] = {}
        if self.title:
            context["title"] = self.title
        cwd = entry.get("cwd")
        context["project"] = project_of(cwd) or self.folder
        for field, name in (("cwd", "cwd"), ("gitBranch", "branch"), ("version", "version")):
            value = entry.get(field)
            if isinstance(value, str) and value:
                context[name] = value
        if entry.get("isSidechain") is True:
            context["sidechain"] = True
            if isinstance(entry.get("agentId"), str):
                context["agent"] = entry["agentId"]
        return (uuid if isinstance(uuid, str) and uuid else None), context

    def _message(self, key: str, text: str, speaker: str, entry: dict[str, Any],
                 context: dict[str, Any]) -> SourceMessage:
        session = entry.get("sessionId")
        return SourceMessage(
            key=key, text=text, occurred_at=iso_time(entry.get("timestamp")), speaker=speaker,
            session=session if isinstance(session, str) and session else self.file.stem, context=context)

    def _assistant(self, number: int, entry: dict[str, Any]) -> Iterator[Item]:
        message = entry.get("message")
        uuid, context = self._base(entry)
        if not isinstance(message, dict):
            yield Skip(f"{self.file.name}:{number}", "assistant entry without a message")
            return
        msg_id = message.get("id") if isinstance(message.get("id"), str) and message.get("id") else None
        key = msg_id or uuid
        if key is None:
            yield Skip(f"{self.file.name}:{number}", "assistant entry without uuid or message id")
            return
        if msg_id is not None and msg_id in self.flushed and uuid:
            key = f"{msg_id}#{uuid}"  # a late block of a message already handed on: its own message
        if self.pending is None or self.pending.key != key:
            yield from self._flush()
            if isinstance(message.get("model"), str) and message["model"]:
                context["model"] = message["model"]
            self.pending = self._message(key, "", "assistant", entry, context)
        self._add_parts(message.get("content"))

    def _add_parts(self, content: Any) -> None:
        """Add an assistant entry's blocks to the pending message. A block
        seen before in it (the same text, the same tool_use id) is not added
        again: some versions wrote each entry with every block so far."""
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                part, identity = block["text"], "text:" + block["text"]
            elif kind in ("tool_use", "server_tool_use"):
                name = str(block.get("name") or "?")
                if isinstance(block.get("id"), str):
                    self.remember(block["id"], name)
                part = tool_line(name, _tool_detail(name, block.get("input")))
                identity = f"tool:{block.get('id')}" if isinstance(block.get("id"), str) else "tool:" + part
            else:
                continue  # thinking / redacted_thinking: left out on purpose
            if identity not in self.pending_seen:
                self.pending_seen.add(identity)
                self.pending_parts.append(part)

    def _user(self, number: int, entry: dict[str, Any]) -> Iterator[Item]:
        if entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
            return  # injected caveats and compaction summaries: not said by anyone
        message = entry.get("message")
        uuid, context = self._base(entry)
        where = f"{self.file.name}:{number}"
        if not isinstance(message, dict):
            yield Skip(where, "user entry without a message")
            return
        if uuid is None:
            yield Skip(where, "user entry without uuid")
            return
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts: list[str] = []
        results = plumbing = 0
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                text = _user_text(block["text"])
                if text is None:
                    plumbing += 1
                elif text.strip():
                    parts.append(text)
            elif kind == "tool_result":
                results += 1
                parts.append(self._result_line(block))
            elif kind in ("image", "document"):
                parts.append(_attachment_line(block))
        if not parts:
            if not plumbing:
                yield Skip(uuid, "empty")
            return
        only_results = results == len(parts)
        item = self._message(uuid, "\n".join(parts), "tool" if only_results else "user", entry, context)
        if only_results and self.pending is not None and len(self.deferred) < _MAX_DEFERRED:
            self.deferred.append(item)  # a tool result inside a split assistant message
            return
        yield from self._flush()
        yield item

    def _result_line(self, block: dict[str, Any]) -> str:
        name = self.tool_names.get(str(block.get("tool_use_id")), "")
        content = block.get("content")
        texts: list[str] = []
        images = 0
        if isinstance(content, str):
            texts.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "image":
                images += 1
        text = _ERROR_TAG.sub("", "\n".join(texts))
        return result_line(name, text, images, error=block.get("is_error") is True)

    def _flush(self) -> Iterator[Item]:
        if self.pending is not None:
            text = "\n".join(self.pending_parts)
            if text.strip():
                yield replace(self.pending, text=text)
            else:
                yield Skip(self.pending.key, "empty")  # e.g. only thinking
            self.flushed.append(self.pending.key)
            self.pending = None
            self.pending_parts = []
            self.pending_seen = set()
        yield from self.deferred
        self.deferred = []


def _user_text(text: str) -> str | None:
    """A user text block as kept: verbatim, a slash command as one line, or
    ``None`` for command-output plumbing."""
    stripped = text.lstrip()
    if stripped.startswith(_OUTPUT_TAGS):
        return None
    name = _COMMAND_NAME.search(text) if stripped.startswith(("<command-name>", "<command-message>")) else None
    if name:
        args = _COMMAND_ARGS.search(text)
        command = name.group(1).strip() + (" " + args.group(1).strip() if args and args.group(1).strip() else "")
        return clip(f"[command: {command}") + "]"
    shell = _BASH_INPUT.search(text)
    if shell and stripped.startswith("<bash-input>"):
        return clip(f"[shell: {shell.group(1)}") + "]"
    return text


def _tool_detail(name: str, data: Any) -> str:
    if isinstance(data, dict):
        field = _MAIN_FIELD.get(name)
        if field and isinstance(data.get(field), str):
            return str(data[field])
        if name == "TodoWrite" and isinstance(data.get("todos"), list):
            return f"{len(data['todos'])} todos"
    return compact(data)


def _attachment_line(block: dict[str, Any]) -> str:
    source = block.get("source")
    kind = source.get("media_type") if isinstance(source, dict) else None
    title = block.get("title") if isinstance(block.get("title"), str) else None
    what = "image" if block.get("type") == "image" else "attachment"
    detail = title or (kind if isinstance(kind, str) else "")
    return clip(f"[{what}: {detail}") + "]" if detail else f"[{what}]"


READER = ClaudeCodeReader()
