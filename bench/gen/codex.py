"""A large Codex CLI rollout for benchmarks and the streaming test.

``write(path, messages, seed)`` writes ``messages`` rollout lines (written as
they are made) in the current envelope shape: session_meta, turn_context,
user and assistant messages echoed by event_msg lines, reasoning, shell
calls with outputs of realistic size, apply_patch calls, token counts, and
now and then a bad line. ``path`` is the ``.jsonl`` file to write, or a
sessions folder under which ``YYYY/MM/DD/rollout-….jsonl`` is made; the
return value is what to give the reader.

    python -m bench.gen.codex PATH N
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any, TextIO

__all__ = ["write"]

_WORDS = ("add a since flag to the ingest command and read it as UTC when it has no offset then run "
          "the tests again the rollout recorder writes one line per item session turn context model").split()
_SCRIPTS = ("rg -n 'def ingest' src", "pytest -q", "git status --short", "sed -n 1,120p src/chronomem/cli.py")


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return "\n".join(" ".join(words[i:i + 14]) for i in range(0, len(words), 14)).capitalize()


def write(path: Path, messages: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    start = _dt.datetime(2025, 10, 14, 10, 2, 11, tzinfo=_dt.timezone.utc)
    name = f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session}.jsonl"
    if path.suffix == ".jsonl":
        target, result = path, path
    else:
        target, result = path / f"{start:%Y/%m/%d}" / name, path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as fp:
        _Writer(fp, rng, start).run(session, messages)
    return result


class _Writer:
    def __init__(self, fp: TextIO, rng: random.Random, start: _dt.datetime) -> None:
        self.fp, self.rng, self.now = fp, rng, start
        self.written = 0
        # output lines drawn from a pool: realistic text, cheap to make
        self.pool = [" ".join(rng.choice(_WORDS) for _ in range(8)) for _ in range(997)]

    def line(self, kind: str, payload: dict[str, Any]) -> None:
        self.now += _dt.timedelta(milliseconds=self.rng.randint(5, 6000))
        stamp = self.now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.fp.write(json.dumps({"timestamp": stamp, "type": kind, "payload": payload},
                                 ensure_ascii=False, separators=(",", ":")) + "\n")
        self.written += 1

    def run(self, session: str, messages: int) -> None:
        rng = self.rng
        self.line("session_meta", {"id": session, "timestamp": "2025-10-14T10:02:11.398Z",
                                   "cwd": "/home/bench/src/chronomem", "originator": "codex_cli_rs",
                                   "cli_version": "0.46.0", "instructions": None, "source": "cli",
                                   "git": {"branch": "main", "repository_url": "git@github.com:bench/chronomem.git"}})
        while self.written < messages:
            if rng.random() < 0.02:
                self.fp.write('{"timestamp":"2025-10-14T10:00:00Z","type":"response_item","payload":{"type":\n')
                self.written += 1
                continue
            prompt = _text(rng, 8, 80)
            self.line("response_item", {"type": "message", "role": "user",
                                        "content": [{"type": "input_text", "text": prompt}]})
            self.line("event_msg", {"type": "user_message", "message": prompt, "images": []})
            self.line("turn_context", {"cwd": "/home/bench/src/chronomem", "approval_policy": "on-request",
                                       "model": "gpt-5-codex", "effort": "medium", "summary": "auto"})
            for n in range(rng.randint(0, 3)):
                self.line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" * 80})
                call = f"call_{rng.getrandbits(48):012x}"
                if n % 2:
                    self.line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call,
                                                "name": "apply_patch", "input": "*** Begin Patch\n*** Update File: "
                                                "src/chronomem/cli.py\n@@\n-a\n+b\n*** End Patch\n"})
                    self.line("response_item", {"type": "custom_tool_call_output", "call_id": call,
                                                "output": "Success. Updated the following files:\nM src/x.py\n"})
                    continue
                args = {"command": ["bash", "-lc", rng.choice(_SCRIPTS)], "workdir": "/home/bench/src/chronomem"}
                self.line("response_item", {"type": "function_call", "name": "shell",
                                            "arguments": json.dumps(args), "call_id": call})
                size = rng.choice((20, 60, 200)) if rng.random() < 0.95 else 4000
                start = rng.randrange(len(self.pool))
                out = "\n".join(f"{i:5d}  {self.pool[(start + i) % len(self.pool)]}" for i in range(size))
                self.line("response_item", {"type": "function_call_output", "call_id": call, "output": json.dumps(
                    {"output": out, "metadata": {"exit_code": rng.choice((0, 0, 0, 1)), "duration_seconds": 0.2}})})
                self.line("event_msg", {"type": "token_count", "info": None})
            answer = _text(rng, 30, 300)
            self.line("response_item", {"type": "message", "role": "assistant",
                                        "content": [{"type": "output_text", "text": answer}]})
            self.line("event_msg", {"type": "agent_message", "message": answer})


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gen.codex PATH N")
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
