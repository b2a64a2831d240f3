"""A large Claude Code session log for benchmarks and the streaming test.

``write(path, messages, seed)`` writes ``messages`` JSONL entries (written
as they are made, never held in memory) in the shape current Claude Code
writes: assistant messages split into one entry per content block, tool
results of realistic size (a few KB, sometimes much more), sidechains,
summaries, meta entries, and now and then a bad line. ``path`` is the
``.jsonl`` file to write, or a folder under which a project folder and a
session file are made; the return value is what to give the reader.

    python -m bench.gen.claude_code PATH N
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

_WORDS = ("the test fails because the timestamp is naive and the store compares it with an aware one "
          "so we convert everything to UTC before writing and add a regression test for the CI run "
          "bitemporal episode recorded occurred valid interval entity predicate query index").split()
_COMMANDS = ("pytest -q tests/test_engine.py", "git status --short", "rg -n 'def ingest' src",
             "ls -la src/chronomem", "git diff --stat", "python -m chronomem doctor")


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    lines = [" ".join(words[i:i + 14]) for i in range(0, len(words), 14)]
    return "\n".join(lines).capitalize()


def write(path: Path, messages: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if path.suffix == ".jsonl":
        target, result = path, path
    else:
        target = path / "-home-bench-src-chronomem" / f"{session}.jsonl"
        result = path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as fp:
        _Writer(fp, rng, session).run(messages)
    return result


class _Writer:
    def __init__(self, fp: TextIO, rng: random.Random, session: str) -> None:
        self.fp, self.rng, self.session = fp, rng, session
        self.now = _dt.datetime(2025, 10, 1, 8, 0, tzinfo=_dt.timezone.utc)
        self.parent: str | None = None
        self.written = 0
        self.serial = 0
        # output lines drawn from a pool: realistic text, cheap to make
        self.pool = [" ".join(rng.choice(_WORDS) for _ in range(8)) for _ in range(997)]

    def entry(self, kind: str, message: dict[str, Any] | None, **extra: Any) -> None:
        self.now += _dt.timedelta(milliseconds=self.rng.randint(50, 9000))
        self.serial += 1
        uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        record: dict[str, Any] = {
            "parentUuid": self.parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/bench/src/chronomem", "sessionId": self.session, "version": "2.0.31",
            "gitBranch": "main", "type": kind, "uuid": uid,
            "timestamp": self.now.isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        if message is not None:
            record["message"] = message
        record.update(extra)
        self.parent = uid
        self.fp.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.written += 1

    def assistant(self, blocks: list[dict[str, Any]], **extra: Any) -> None:
        msg_id = f"msg_01{self.rng.getrandbits(64):016x}"
        for block in blocks:  # one entry per block, as current versions write them
            self.entry("assistant", {"model": "claude-sonnet-4-5-20250929", "id": msg_id, "type": "message",
                                     "role": "assistant", "content": [block], "stop_reason": None,
                                     "usage": {"input_tokens": 4, "output_tokens": 120}},
                       requestId=f"req_{msg_id[-8:]}", **extra)

    def run(self, messages: int) -> None:
        rng = self.rng
        self.fp.write(json.dumps({"type": "summary", "summary": "Benchmark session", "leafUuid": "x"}) + "\n")
        while self.written < messages:
            roll = rng.random()
            side = {"isSidechain": True} if rng.random() < 0.1 else {}
            if roll < 0.02:
                self.fp.write('{"type":"user","message":{"role":"user","content":"cut off\n')  # a bad line
                self.written += 1
                continue
            if roll < 0.05:
                self.entry("user", {"role": "user", "content": "Caveat: local command output follows."}, isMeta=True)
                continue
            self.entry("user", {"role": "user", "content": _text(rng, 8, 80)}, **side)
            for _ in range(rng.randint(0, 3)):
                tool_id = f"toolu_{self.serial:08d}"
                self.assistant([
                    {"type": "thinking", "thinking": _text(rng, 20, 120), "signature": "EqMB"},
                    {"type": "text", "text": _text(rng, 10, 60)},
                    {"type": "tool_use", "id": tool_id, "name": "Bash",
                     "input": {"command": rng.choice(_COMMANDS)}}], **side)
                size = rng.choice((20, 60, 200)) if rng.random() < 0.95 else 4000  # lines of output
                start = rng.randrange(len(self.pool))
                output = "\n".join(f"{i:5d}  {self.pool[(start + i) % len(self.pool)]}" for i in range(size))
                self.entry("user", {"role": "user", "content": [
                    {"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": False}]},
                    toolUseResult={"stdout": output[:2000], "stderr": ""}, **side)
            self.assistant([{"type": "text", "text": _text(rng, 30, 300)}], **side)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gen.claude_code PATH N")
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
