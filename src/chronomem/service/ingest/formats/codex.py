"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
(see ``docs/import/codex.md``). Two shapes: the current one, every line an
envelope ``{timestamp, type, payload}``; the early one, a header line
``{id, timestamp, instructions}`` then bare response items.

A message is a ``response_item``; the ``event_msg`` lines that echo the same
text for the UI (``user_message``, ``agent_message``) are ignored, so each
thing said is imported once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from ..source import Item, ReadOptions, Skip, SourceMessage
from .agentlog import LogReader, LogSession, head_objects, project_of
from .inputs import read_head
from .summary import compact, result_line, tool_line
from .text import iso_time

__all__ = ["READER", "CodexReader"]

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ENVELOPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
#: user-role messages Codex writes itself (workspace context, AGENTS.md ...)
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>",
             "<collaboration_mode>", "<turn_aborted>")
_HEAD_START = re.compile(rb'\{"timestamp":"[^"]{0,40}","type":"(?:session_meta|response_item|event_msg|turn_context)"')
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


class CodexReader(LogReader):
    name = "codex"
    description = "OpenAI Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)"
    what = "Codex rollout"
    prefix = "rollout-"
    depth = 4

    def looks_like(self, path: Path) -> bool:
        head = read_head(path)
        found = head_objects(head, count=1)
        if not found:
            # a first line longer than the head (session_meta carries the whole
            # base instructions): its leading fields still say what it is
            return bool(_HEAD_START.match(head))
        first = found[0]
        if first.get("type") in _ENVELOPES and isinstance(first.get("payload"), dict):
            return True
        # the early header: no envelope, a session id and a start time
        return ("type" not in first and isinstance(first.get("id"), str) and "timestamp" in first
                and ("instructions" in first or path.name.startswith("rollout-")))

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        return _Rollout(file).read()


class _Rollout(LogSession):
    """One rollout being read: what the session's metadata and the latest
    turn context say."""

    def __init__(self, file: Path) -> None:
        super().__init__(file)
        found = _UUID.search(file.stem)
        self.session = found.group(0) if found else file.stem
        self.meta_seen = False
        self.context: dict[str, Any] = {}

    def entry(self, number: int, line: dict[str, Any]) -> Iterator[Item]:
        kind = line.get("type")
        payload = line.get("payload")
        if kind in _ENVELOPES and isinstance(payload, dict):
            if kind == "session_meta":
                self._meta(payload)
            elif kind == "turn_context":
                self._turn(payload)
            elif kind == "response_item":
                yield from self._item(number, payload, line.get("timestamp"))
            # event_msg (UI echoes, token counts), compacted: dropped silently
        elif kind is None and isinstance(line.get("id"), str) and not self.meta_seen:
            self._meta(line)  # the early header
        elif isinstance(kind, str) and kind not in _ENVELOPES:
            yield from self._item(number, line, line.get("timestamp"))  # an early bare item
        elif "record_type" not in line:  # early {"record_type": "state"} lines are plumbing
            yield Skip(f"{self.file.name}:{number}", "not a rollout line")

    def _meta(self, meta: dict[str, Any]) -> None:
        if self.meta_seen:
            return  # a fork repeats its parent's meta after its own
        self.meta_seen = True
        if isinstance(meta.get("id"), str) and meta["id"]:
            self.session = meta["id"]
        self._cwd(meta.get("cwd"))
        if isinstance(meta.get("cli_version"), str) and meta["cli_version"]:
            self.context["version"] = meta["cli_version"]
        git = meta.get("git")
        if isinstance(git, dict):
            for field, name in (("branch", "branch"), ("repository_url", "repo")):
                if isinstance(git.get(field), str) and git[field]:
                    self.context[name] = git[field]

    def _turn(self, turn: dict[str, Any]) -> None:
        self._cwd(turn.get("cwd"))
        if isinstance(turn.get("model"), str) and turn["model"]:
            self.context["model"] = turn["model"]

    def _cwd(self, cwd: Any) -> None:
        project = project_of(cwd)
        if project is not None:
            self.context["cwd"] = cwd
            self.context["project"] = project

    def _item(self, number: int, item: dict[str, Any], timestamp: Any) -> Iterator[Item]:
        key = f"{self.session}:{number}"
        kind = item.get("type")
        speaker = "assistant"
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant"):
                return  # developer / system prompts: plumbing
            speaker = str(role)
            parts, injected = _message_parts(item.get("content"))
            if not parts:
                if not injected:
                    yield Skip(key, "empty")
                return
            text = "\n".join(parts)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            text = self._call_line(kind, item)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            speaker = "tool"
            text = self._output_line(item)
        else:
            return  # reasoning (left out on purpose), ghost snapshots ...
        yield SourceMessage(key=key, text=text, occurred_at=iso_time(timestamp), speaker=speaker,
                            session=self.session, context=dict(self.context))

    def _call_line(self, kind: str, item: dict[str, Any]) -> str:
        if kind == "local_shell_call":
            if isinstance(item.get("call_id"), str):
                self.remember(item["call_id"], "shell")
            action = item.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            return tool_line("shell", _command(command))
        if kind == "web_search_call":
            action = item.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            return tool_line("web_search", query if isinstance(query, str) else "")
        name = str(item.get("name") or "?")
        if isinstance(item.get("call_id"), str):
            self.remember(item["call_id"], name)
        if kind == "custom_tool_call":
            raw = item.get("input")
            files = _PATCH_FILE.findall(raw) if isinstance(raw, str) else []
            return tool_line(name, ", ".join(files) if files else compact(raw))
        arguments = item.get("arguments")
        try:
            data = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            data = arguments
        if isinstance(data, dict):
            for field in ("command", "cmd"):
                if field in data:
                    return tool_line(name, _command(data[field]))
        return tool_line(name, compact(data))

    def _output_line(self, item: dict[str, Any]) -> str:
        name = self.tool_names.get(str(item.get("call_id")), "")
        output = item.get("output")
        exit_code: Any = None
        if isinstance(output, str) and output.startswith("{"):
            try:  # shell outputs are JSON {"output": ..., "metadata": {"exit_code": ...}}
                parsed = json.loads(output)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and "output" in parsed:
                output = parsed["output"]
                metadata = parsed.get("metadata")
                exit_code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        if isinstance(output, dict):
            output = output.get("content")
        images = 0
        if isinstance(output, list):  # content items: input_text / input_image
            images = sum(1 for p in output if isinstance(p, dict) and p.get("type") == "input_image")
            output = "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict) and "text" in p)
        text = output if isinstance(output, str) else ""
        return result_line(name, text, images, exit_code if isinstance(exit_code, int) else None)


def _message_parts(content: Any) -> tuple[list[str], bool]:
    """The parts of a message kept, and whether a part was Codex's own
    injected context (dropped silently)."""
    parts: list[str] = []
    injected = False
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            text = part["text"]
            if text.lstrip().startswith(_INJECTED):
                injected = True
            elif text.strip():
                parts.append(text)
        elif kind == "input_image":
            parts.append("[image]")
    return parts, injected


def _command(command: Any) -> str:
    """A shell command as one string; ``bash -lc SCRIPT`` shows the script."""
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) == 3 and words[0] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
            return words[2]
        return " ".join(words)
    return command if isinstance(command, str) else compact(command)


READER = CodexReader()
