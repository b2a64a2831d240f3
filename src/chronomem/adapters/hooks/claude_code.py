"""``chronomem hook claude-code``: what Claude Code runs on its hook events.

Claude Code passes one JSON object on stdin (hooks reference,
https://code.claude.com/docs/en/hooks; the fields read here are listed in
``docs/hooks.md`` with the version they were checked against):

* ``UserPromptSubmit`` (``prompt``): a budgeted :meth:`Memory.recall` for the
  prompt (asked of a running ``chronomem serve`` of the same store when there
  is one, :mod:`.server_link`; else lexical, in this process), printed as
  ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
  "additionalContext": ...}}``, which Claude Code adds to the model's
  context (not shown to the user as a message). Nothing is printed when the
  memory has nothing for the prompt.
* ``Stop`` / ``PreCompact`` / ``SessionEnd`` (``transcript_path``): the
  session's log is imported incrementally by a detached child
  (:mod:`.ingest`); the hook returns at once.
* anything else: ignored.

The hook never blocks or breaks the agent: it exits 0 on every path, writes
nothing but the answer to stdout and nothing to stderr, logs to the hook log
(:mod:`.runlog`), and gives up silently at its time limit (:mod:`.guard`).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

from .guard import Deadline
from .runlog import log_to_file

__all__ = ["BUDGET_RANGE", "DEFAULT_BUDGET_CHARS", "DEFAULT_TIME_LIMIT", "INGEST_EVENTS", "MAX_TIME_LIMIT",
           "HookInput", "context_text", "handle", "parse_input", "run"]

log = logging.getLogger("chronomem.hooks")

#: the additional context's size in characters (Claude Code keeps 10,000 whole)
DEFAULT_BUDGET_CHARS = 3000
#: seconds a hook process may take before it gives up (below any settings ``timeout``)
DEFAULT_TIME_LIMIT = 2.0
BUDGET_RANGE = (200, 10_000)
MAX_TIME_LIMIT = 600.0
INGEST_EVENTS = frozenset({"Stop", "PreCompact", "SessionEnd"})
RECALL_EVENT = "UserPromptSubmit"
_MAX_INPUT_BYTES = 4_000_000  # a prompt with a pasted log is big; a hook input past this is not ours
_MAX_PROMPT_CHARS = 2000  # recall reads the question for names and terms: the head is enough
_SERVER_TIMEOUT = 1.0  # seconds a running server gets to answer
_HEADER = ("Relevant memory (chronomem; from earlier sessions and recorded facts, may be outdated; "
           "ids in brackets cite facts and episodes):")


@dataclass(frozen=True)
class HookInput:
    """The fields of the hook input this runtime reads."""

    event: str
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None


def _text(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    return value if isinstance(value, str) and value else None


def parse_input(raw: bytes) -> HookInput | None:
    """The hook input, or ``None`` for anything that is not a JSON object
    with a ``hook_event_name`` string (logged by the caller)."""
    try:
        obj = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("hook_event_name"), str):
        return None
    return HookInput(event=obj["hook_event_name"], session_id=_text(obj, "session_id"),
                     transcript_path=_text(obj, "transcript_path"), cwd=_text(obj, "cwd"),
                     prompt=_text(obj, "prompt"))


def _wants_recall(prompt: str | None) -> bool:
    if prompt is None or not prompt.strip():
        return False
    words = prompt.split()
    return not (len(words) == 1 and words[0].startswith("/"))  # a bare slash command (/clear, /compact)


def context_text(recall: dict[str, Any], session_id: str | None, budget_chars: int) -> str:
    """The additional context for a recall (``Recall.to_dict()``, from this
    process or a server): its facts, ended facts and evidence, without
    episodes of the running session (the model has those already), at most
    ``budget_chars`` characters of whole lines; ``""`` when nothing is left."""
    own = {h["episode"]["id"] for h in recall.get("hits") or []
           if session_id is not None and h["episode"].get("session") == session_id}
    sections: dict[str, list[str]] = {"fact": [], "history": [], "episode": []}
    for item in recall.get("items") or []:
        kind, cite, text = item.get("kind"), item.get("cite"), item.get("text")
        if kind not in sections or not isinstance(text, str) or kind == "episode" and cite in own:
            continue
        sections[kind].append(f"- {text} [{cite}]" if kind == "episode" else f"- {text}")
    day = str(recall.get("at") or "")[:10]
    titles = {"fact": f"Facts (valid at {day}):", "history": f"Earlier (no longer valid at {day}):",
              "episode": "Evidence:"}
    lines = [_HEADER]
    used = len(_HEADER)
    found = False
    for kind, entries in sections.items():
        if not entries:
            continue
        title = titles[kind]
        if used + 1 + len(title) + 1 + len(entries[0]) > budget_chars:
            continue  # not even its first line fits: leave the section out
        lines.append(title)
        used += 1 + len(title)
        for entry in entries:
            if used + 1 + len(entry) > budget_chars:
                continue  # a shorter one further down may fit
            lines.append(entry)
            used += 1 + len(entry)
            found = True
    return "\n".join(lines) if found else ""


def _recall(db: str, namespace: str, timezone: str, hook: HookInput, budget_chars: int,
            deadline: Deadline | None = None) -> str:
    assert hook.prompt is not None
    question = hook.prompt[:_MAX_PROMPT_CHARS]
    budget_tokens = max(1, budget_chars // 4)
    from . import server_link

    url = server_link.find(db, namespace)
    if url is not None:
        # leave time for the local recall if the server fails us
        wait = min(_SERVER_TIMEOUT, deadline.remaining() / 2) if deadline is not None else _SERVER_TIMEOUT
        answer = server_link.recall(url, question, budget_tokens, wait, namespace=namespace,
                                    token=os.environ.get(server_link.AGENT_TOKEN_ENV))
        if answer is not None:
            log.debug("recall answered by %s", url)
            return context_text(answer, hook.session_id, budget_chars)
    import chronomem
    from chronomem.store import missing_local_file

    if missing_local_file(db) is not None:
        log.warning("no memory database at %s: nothing to recall", db)
        return ""
    # lexical only: loading the embedding model takes longer than a prompt may wait
    mem = chronomem.open(db, namespace=namespace, timezone=timezone, embedder=None, busy_timeout=1.0)
    try:
        recall = mem.recall(question, budget_tokens=budget_tokens)
    finally:
        mem.close()
    return context_text(recall.to_dict(), hook.session_id, budget_chars)


def _output(text: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": RECALL_EVENT, "additionalContext": text}},
                      ensure_ascii=False)


def handle(hook: HookInput, db: str, namespace: str, *, budget_chars: int, embedder: str = "auto",
           timezone: str = "UTC", deadline: Deadline | None = None) -> str | None:
    """What to print for ``hook`` (``None``: nothing); starts an import for the ingest events."""
    if hook.event == RECALL_EVENT:
        if not _wants_recall(hook.prompt):
            return None
        text = _recall(db, namespace, timezone, hook, budget_chars, deadline)
        return _output(text) if text else None
    if hook.event in INGEST_EVENTS:
        path = hook.transcript_path
        if path is None or not os.path.isfile(os.path.expanduser(path)):
            log.info("%s without a readable transcript_path (%r): nothing to import", hook.event, path)
            return None
        from .ingest import start

        start(db, namespace, os.path.expanduser(path), "claude-code", embedder)
        return None
    log.debug("ignored hook event %r", hook.event)
    return None


def run(db: str, namespace: str = "default", *, stdin: BinaryIO, stdout: TextIO,
        budget_chars: int = DEFAULT_BUDGET_CHARS, time_limit: float = DEFAULT_TIME_LIMIT,
        embedder: str = "auto", timezone: str = "UTC") -> int:
    """One hook invocation: read the input, answer, exit status 0 always."""
    log_to_file()
    with Deadline(time_limit, "claude-code hook") as deadline:
        try:
            raw = stdin.read(_MAX_INPUT_BYTES + 1)
            if len(raw) > _MAX_INPUT_BYTES:
                log.warning("hook input over %d bytes: ignored", _MAX_INPUT_BYTES)
                return 0
            hook = parse_input(raw)
            if hook is None:
                log.warning("hook input is not a JSON object with hook_event_name: ignored (%r)", raw[:200])
                return 0
            answer = handle(hook, db, namespace, budget_chars=budget_chars, embedder=embedder, timezone=timezone,
                            deadline=deadline)
            if answer is not None:
                with deadline.output:
                    stdout.write(answer + "\n")
                    stdout.flush()
        except Exception as exc:  # the agent must not notice: log it, stay silent
            from chronomem.errors import ChronomemError

            if isinstance(exc, ChronomemError):  # a known failure (no database, a locked one): one line
                log.warning("claude-code hook: %s", exc)
            else:
                log.exception("claude-code hook failed")
    return 0
