#!/usr/bin/env python3
"""Cold-process timing of ``chronomem hook claude-code`` (goal: p50 under
300 ms for ``UserPromptSubmit``).

Builds a store of a few thousand episodes (lexical index; ``--episodes``),
then runs the real hook command ``--runs`` times, each a fresh process fed
real hook JSON on stdin, exactly as Claude Code runs it, and prints p50 /
p99 / max wall time per variant:

* ``cli``: the ``chronomem`` console script (``<venv>/bin/chronomem --db DB
  hook claude-code``: what ``install claude-code --hooks`` writes);
* ``fast``: ``python -m chronomem.adapters.hooks --db DB hook claude-code``
  (the same hook started without click and rich, ``docs/hooks.md``);
* ``server-cli`` / ``server-fast``: the same two with a ``chronomem serve``
  of that store running (the hook finds it and asks it for the recall);
* ``stop``: a ``Stop`` event (returns once the background import is started);
* ``floor``: ``python -c 'import chronomem'``, what any variant pays first.

Wall times on a shared machine move with its load; the CPU time (user + sys
of the hook process) moves less. ``--vectors`` embeds the episodes (MiniLM),
so the server's recall is hybrid as it would be on a real store.

    .venv/bin/python bench/hook_bench.py [--runs 30] [--episodes 3000] [--vectors]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WORDS = ("deploy database migration postgres sqlite pipeline release bug fix test flaky cache redis kafka auth "
         "token login latency budget design review frontend react backend api schema index query vector "
         "embedding hook session memory timezone parser importer").split()
NAMES = ("Alice", "Bob", "Carol", "Dave", "Acme", "Globex", "Initech")
PROMPTS = ("what did Alice decide about the postgres migration?", "why is the flaky cache test failing on CI",
           "remind me what Bob said about the kafka latency budget", "how do we deploy the frontend release?")


def build(db: str, episodes: int, vectors: bool) -> None:
    import chronomem

    rnd = random.Random(7)
    mem = chronomem.open(db, embedder="minilm" if vectors else None)
    try:
        items = [{"text": f"{rnd.choice(NAMES)}: " + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(8, 30))),
                  "occurred_at": f"2026-{rnd.randint(1, 11):02d}-{rnd.randint(1, 28):02d}T10:00:00Z",
                  "session": f"s{i // 50}", "speaker": rnd.choice(("user", "assistant"))}
                 for i in range(episodes)]
        for start in range(0, len(items), 500):
            mem.add_episodes(items[start:start + 500])
        mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
    finally:
        mem.close()


CPU: list[float] = []  # user+sys seconds of each timed process: less at the mercy of a busy machine


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=60)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return took, done.stdout, done.returncode


def stats(name: str, seconds: list[float], note: str = "") -> None:
    ms = sorted(s * 1000 for s in seconds)
    cpu = sorted(c * 1000 for c in CPU[-len(seconds):])
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    print(f"{name:6} p50 {statistics.median(ms):6.0f} ms   p99 {p99:6.0f} ms   max {ms[-1]:6.0f} ms"
          f"   cpu p50 {statistics.median(cpu):5.0f} ms   (n={len(ms)}){note}")


def run_variant(name: str, cmd: list[str], runs: int, transcript: Path, tmp: str, env: dict[str, str]) -> None:
    seconds, answered = [], 0
    for i in range(runs):
        hook = {"session_id": "bench", "transcript_path": str(transcript), "cwd": tmp,
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                "prompt": PROMPTS[i % len(PROMPTS)]}
        took, out, code = timed(cmd, json.dumps(hook).encode(), env)
        if code != 0:
            CPU.pop()
            print(f"{name}: exit {code}; is the hook command registered? ({' '.join(cmd[1:])})")
            return
        seconds.append(took)
        answered += bool(out.strip())
    stats(name, seconds, f"   {answered} answered with context")


def start_server(db: str, env: dict[str, str]) -> subprocess.Popen[str] | None:
    """A ``chronomem serve`` of ``db``, warmed up, once it has announced itself to hooks."""
    from chronomem.adapters.hooks import server_link

    os.environ["CHRONOMEM_STATE_DIR"] = env["CHRONOMEM_STATE_DIR"]  # where server_link looks
    proc = subprocess.Popen([str(BIN / "chronomem"), "--db", db, "serve", "--port", "0", "--no-mcp", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        url = server_link.find(db, "default")
        if url is not None:
            server_link.recall(url, "warm up the model", 100, 60)
            return proc
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--episodes", type=int, default=3000)
    ap.add_argument("--vectors", action="store_true", help="embed the episodes (MiniLM) for a hybrid server recall")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        build(db, args.episodes, args.vectors)
        env = {**os.environ, "CHRONOMEM_STATE_DIR": os.path.join(tmp, "state")}
        transcript = Path(tmp, "session.jsonl")
        transcript.write_text(json.dumps({
            "type": "user", "sessionId": "bench", "uuid": "u1", "timestamp": "2026-11-30T10:00:00Z",
            "cwd": tmp, "message": {"role": "user", "content": "bench"}}) + "\n", encoding="utf-8")
        variants = {
            "cli": [str(BIN / "chronomem"), "--db", db, "hook", "claude-code"],
            "fast": [sys.executable, "-m", "chronomem.adapters.hooks", "--db", db, "hook", "claude-code"],
        }
        print(f"{args.episodes} episodes, {args.runs} cold runs each, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}")
        for name, cmd in variants.items():
            run_variant(name, cmd, args.runs, transcript, tmp, env)
        server = start_server(db, env)
        if server is None:
            print("server: no `chronomem serve` announced itself for the store (docs/hooks.md); skipped")
        else:
            try:
                for name, cmd in variants.items():
                    run_variant(f"server-{name}", cmd, args.runs, transcript, tmp, env)
            finally:
                server.send_signal(signal.SIGINT)
                server.communicate(timeout=30)
        stop = {"session_id": "bench", "transcript_path": str(transcript), "cwd": tmp,
                "hook_event_name": "Stop", "stop_hook_active": False}
        seconds = [timed(variants["fast"], json.dumps(stop).encode(), env)[0] for _ in range(max(3, args.runs // 3))]
        stats("stop", seconds, "   (fast start; the import runs on in the background)")
        floor = [timed([sys.executable, "-c", "import chronomem"], b"", env)[0] for _ in range(args.runs)]
        stats("floor", floor, "   (python -c 'import chronomem')")
        time.sleep(3)  # let the background imports finish before the folder goes
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
