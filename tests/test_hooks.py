"""The hook runtime (``chronomem hook claude-code``) and ``chronomem watch``,
run as Claude Code and a user run them: real processes, real hook JSON on
stdin, real transcripts and stores in tmp_path.

The contract (docs/hooks.md): on ``UserPromptSubmit`` stdout is one JSON
object ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
"additionalContext": ...}}`` or nothing; on every path the exit status is 0
and stderr stays empty; ``Stop`` / ``PreCompact`` / ``SessionEnd`` import
the transcript in a detached child, one at a time per transcript.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import chronomem
from chronomem.adapters.hooks import ingest
from chronomem.adapters.hooks.claude_code import parse_input
from chronomem.adapters.hooks.entry import parse_hook_argv
from chronomem.adapters.hooks.runlog import FileLog

CLI = str(Path(sys.executable).parent / "chronomem")
FAST = [sys.executable, "-m", "chronomem.adapters.hooks"]
SESSION = "5b1d3c9e-2f4a-4c61-9a57-0d2e8f6b7a10"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of every process here: state (log, locks) and HOME in tmp_path."""
    state = tmp_path / "state"
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CHRONOMEM_STATE_DIR", str(state))  # the in-process IngestLock uses the same folder
    values = {**os.environ, "CHRONOMEM_STATE_DIR": str(state), "HOME": str(home), "CHRONOMEM_EMBEDDER": "none"}
    for name in ("CHRONOMEM_DB", "CHRONOMEM_NAMESPACE"):
        values.pop(name, None)
    return values


def log_text(env: dict[str, str]) -> str:
    path = Path(env["CHRONOMEM_STATE_DIR"]) / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def hook(db: Path | str, payload: Any, env: dict[str, str], *extra: str, fast: bool = False,
         timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    cmd = [*FAST, "--db", str(db), "hook", "claude-code", *extra] if fast else \
        [CLI, "--db", str(db), "hook", "claude-code", *extra]
    return subprocess.run(cmd, input=data, capture_output=True, env=env, timeout=timeout)


def prompt(text: str, session: str = "other-session", **more: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": "/nowhere/t.jsonl", "cwd": "/tmp",
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": text, **more}


def entry(n: int, role: str, text: str, session: str = SESSION) -> dict[str, Any]:
    """One Claude Code log entry as Claude Code 2.x writes it."""
    base: dict[str, Any] = {
        "parentUuid": f"u-{n - 1:04d}" if n > 1 else None, "isSidechain": False, "userType": "external",
        "cwd": "/home/ana/src/billing", "sessionId": session, "version": "2.1.0", "gitBranch": "main",
        "type": role, "uuid": f"u-{n:04d}", "timestamp": f"2026-11-30T10:{n // 60:02d}:{n % 60:02d}.000Z"}
    if role == "user":
        base["message"] = {"role": "user", "content": text}
    else:
        base["message"] = {"model": "claude-sonnet-4-5", "id": f"msg_{n:04d}", "type": "message",
                           "role": "assistant", "content": [{"type": "text", "text": text}],
                           "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 9}}
    return base


def write_log(path: Path, turns: list[str], start: int = 1, mode: str = "w") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, encoding="utf-8") as fp:
        for i, text in enumerate(turns, start):
            fp.write(json.dumps(entry(i, "user" if i % 2 else "assistant", text)) + "\n")


def episodes(db: Path) -> list[chronomem.Episode]:
    mem = chronomem.open(str(db), embedder=None)
    try:
        return list(mem.episodes(limit=1000))
    finally:
        mem.close()


def wait_for(check: Any, seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    return check()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A memory with a fact, a few episodes of an earlier session and one of the running session."""
    db = tmp_path / "memory.db"
    mem = chronomem.open(str(db), embedder=None)
    try:
        mem.add_fact("Billing", "database", "Postgres 17", valid_from="2026-11")
        mem.add_episodes([
            {"text": "We chose the zebrafish protocol for billing webhooks.", "session": "earlier",
             "speaker": "user", "occurred_at": "2026-11-02T09:00:00Z"},
            {"text": "The zebrafish retries back off exponentially, capped at one hour.", "session": "earlier",
             "speaker": "assistant", "occurred_at": "2026-11-02T09:01:00Z"},
            {"text": "Unrelated: the office plants need water on Fridays.", "session": "earlier",
             "speaker": "user", "occurred_at": "2026-11-03T09:00:00Z"},
            {"text": "zebrafish is what we are discussing right now in this very session", "session": "now",
             "speaker": "user", "occurred_at": "2026-12-01T09:00:00Z"},
        ])
    finally:
        mem.close()
    return db


# -- UserPromptSubmit ---------------------------------------------------------
@pytest.mark.parametrize("fast", [False, True], ids=["cli", "fast-start"])
def test_a_prompt_gets_the_recall_as_additional_context(store: Path, env: dict[str, str], fast: bool) -> None:
    done = hook(store, prompt("How do the zebrafish webhooks retry for Billing?", session="now"), env, fast=fast)
    assert done.returncode == 0 and done.stderr == b""
    out = json.loads(done.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Billing -database-> Postgres 17" in context
    assert "capped at one hour" in context and "zebrafish protocol" in context
    assert "right now in this very session" not in context  # the running session is in the model's context already
    assert len(context) <= 3000
    assert done.stdout.count(b"\n") == 1


def test_the_context_stays_within_the_budget(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "big.db"
    mem = chronomem.open(str(db), embedder=None)
    try:
        mem.add_episodes([{"text": f"kestrel migration note {i}: " + "details " * 10, "session": "s"}
                          for i in range(60)])
    finally:
        mem.close()
    for budget in (400, 1500):
        done = hook(db, prompt("what do we know about the kestrel migration?"), env, "--budget", str(budget))
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert 200 < len(context) <= budget
        assert "kestrel migration note" in context


def test_nothing_relevant_prints_nothing(store: Path, env: dict[str, str]) -> None:
    for text in ("qwertyuiop asdfghjkl", "/clear", "   "):
        done = hook(store, prompt(text), env)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), text


# -- never block or break the agent -------------------------------------------
@pytest.mark.parametrize("payload", [
    b"", b"not json", b"[1, 2]", b'{"prompt": "no event name"}', b'{"hook_event_name": 7}', b"\xff\xfe\x00",
    json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": 42}).encode(),
    json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}).encode(),
    json.dumps({"hook_event_name": "Stop", "transcript_path": "/no/such/file.jsonl"}).encode(),
    json.dumps({"hook_event_name": "SessionEnd"}).encode(),
], ids=["empty", "garbage", "array", "no-event", "event-not-string", "bytes", "prompt-not-string",
        "unknown-event", "missing-transcript", "no-transcript"])
def test_bad_input_is_silent_and_exits_0(store: Path, env: dict[str, str], payload: bytes) -> None:
    done = hook(store, payload, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_a_missing_database_is_silent_not_created(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "nope" / "memory.db"
    done = hook(db, prompt("What about zebrafish?"), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not db.exists()
    assert f"no memory database at {db}" in log_text(env)


def test_a_broken_database_is_logged_not_shown(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "broken.db"
    db.write_bytes(b"this is not an SQLite file" * 100)
    done = hook(db, prompt("What about zebrafish?"), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "claude-code hook" in log_text(env)


def test_an_unknown_client_or_option_never_exits_2(store: Path, env: dict[str, str]) -> None:
    # exit status 2 from a UserPromptSubmit or Stop hook would block the prompt or the stop
    for args in (["hook", "codex"], ["hook", "claude-code", "--future-option", "x"]):
        done = subprocess.run([CLI, "--db", str(store), *args], input=json.dumps(prompt("zebrafish")).encode(),
                              capture_output=True, env=env, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), args
    assert "unknown client or arguments" in log_text(env)


def test_the_time_limit_ends_a_hook_silently(store: Path, env: dict[str, str]) -> None:
    # stdin left open: the hook waits for its input and the limit ends it
    proc = subprocess.Popen([CLI, "--db", str(store), "hook", "claude-code", "--time-limit", "0.5"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    started = time.monotonic()
    try:
        proc.wait(timeout=30)  # not communicate(): that would close stdin
        took = time.monotonic() - started
    finally:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
    assert (proc.returncode, out, err) == (0, b"", b"")
    assert 0.5 <= took < 10
    assert "time limit of 0.5 s reached" in log_text(env)
    # and a limit shorter than the recall: no output, not half of it
    done = hook(store, prompt("How do the zebrafish webhooks retry?"), env, "--time-limit", "0.001")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_the_log_is_bounded(tmp_path: Path) -> None:
    import logging

    handler = FileLog(tmp_path / "hooks.log", max_bytes=2000)
    record = logging.LogRecord("chronomem.hooks", logging.WARNING, __file__, 1, "x" * 300, None, None)
    for _ in range(50):
        handler.emit(record)
    sizes = [p.stat().st_size for p in (tmp_path / "hooks.log", tmp_path / "hooks.log.1")]
    assert all(s <= 2000 + 400 for s in sizes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks.log", "hooks.log.1"]


# -- Stop / PreCompact / SessionEnd: the transcript imported in the background -
def test_stop_imports_the_transcript_in_the_background(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "memory.db"
    transcript = tmp_path / "projects" / "-home-ana-src-billing" / f"{SESSION}.jsonl"
    write_log(transcript, ["Move billing to Postgres 17 next sprint.", "Noted: billing moves in the sprint."])
    event = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": "/home/ana/src/billing",
             "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False}
    started = time.monotonic()
    done = hook(db, event, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert time.monotonic() - started < 10  # it does not wait for the import
    assert wait_for(lambda: db.exists() and len(episodes(db)) == 2), log_text(env)
    eps = episodes(db)
    assert {e.session for e in eps} == {SESSION}
    assert any("Postgres 17" in e.text for e in eps)
    # the session goes on; the next turn's Stop (or the compaction, or its end) adds only what is new
    write_log(transcript, ["And the ledger service after it."], start=3, mode="a")
    for name in ("PreCompact", "SessionEnd"):
        later = {**event, "hook_event_name": name, "trigger": "auto", "reason": "other"}
        assert hook(db, later, env).returncode == 0
    assert wait_for(lambda: len(episodes(db)) == 3), log_text(env)
    assert "And the ledger service after it." in {e.text for e in episodes(db)}
    assert wait_for(lambda: "1 added" in log_text(env)) and "3 added" not in log_text(env)


def test_a_stop_while_an_import_runs_starts_none(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "memory.db"
    transcript = tmp_path / f"{SESSION}.jsonl"
    write_log(transcript, ["one", "two"])
    event = {"session_id": SESSION, "transcript_path": str(transcript), "hook_event_name": "Stop"}
    lock = ingest.IngestLock(str(db), "default", str(transcript))
    assert lock.acquire()  # this test is the import running now
    try:
        for _ in range(3):
            done = hook(db, event, env)
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        time.sleep(1.5)
        assert not db.exists()  # no import started beside the running one
        assert log_text(env).count("already running; it will run once more") == 3
        assert lock.pending()  # ... but one more is asked for
        # a child started anyway (two hooks racing) finds the lock held and leaves
        child = [sys.executable, "-m", "chronomem.adapters.hooks.ingest", "--db", str(db), "--embedder", "none",
                 str(transcript)]
        assert subprocess.run(child, env=env, timeout=60, capture_output=True).returncode == 0
        assert not db.exists() and lock.pending()
    finally:
        lock.release()
    # once free, the next child runs the asked-for import, once
    assert subprocess.run(child, env=env, timeout=60, capture_output=True).returncode == 0
    assert len(episodes(db)) == 2 and not lock.pending()
    assert log_text(env).count("imported ") == 1


def test_run_pending_takes_a_request_made_while_it_held_the_lock(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "memory.db"
    transcript = tmp_path / f"{SESSION}.jsonl"
    write_log(transcript, ["first"])
    lock = ingest.IngestLock(str(db), "default", str(transcript))
    lock.mark_pending()
    assert ingest.run_pending(str(db), "default", str(transcript), "claude-code", "none") == 1
    assert ingest.run_pending(str(db), "default", str(transcript), "claude-code", "none") == 0  # nothing asked
    assert [e.text for e in episodes(db)] == ["first"]


def test_every_spelling_of_a_database_shares_its_lock_and_server_file(tmp_path: Path, env: dict[str, str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.adapters.hooks import server_link

    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.db").symlink_to(tmp_path / "memory.db")
    spellings = [str(tmp_path / "memory.db"), "memory.db", f"sqlite:///{tmp_path}/memory.db", "./link.db"]
    assert len({ingest.IngestLock(d, "default", "t.jsonl").lock_path for d in spellings}) == 1
    assert len({server_link.discovery_path(d, "default") for d in spellings}) == 1
    assert server_link.discovery_path(spellings[0], "work") != server_link.discovery_path(spellings[0], "default")
    url = "postgresql://me@db.example/memory"
    assert ingest.IngestLock(url, "default", "t.jsonl").lock_path != ingest.IngestLock(spellings[0], "default",
                                                                                       "t.jsonl").lock_path


def test_stale_lock_files_are_pruned(tmp_path: Path, env: dict[str, str]) -> None:
    old = ingest.IngestLock(str(tmp_path / "a.db"), "default", str(tmp_path / "old.jsonl"))
    new = ingest.IngestLock(str(tmp_path / "a.db"), "default", str(tmp_path / "new.jsonl"))
    for lock in (old, new):
        lock.mark_pending()
        assert lock.acquire()
        lock.release()
    month_ago = time.time() - 30 * 86400
    for path in (old.lock_path, old.pending_path):
        os.utime(path, (month_ago, month_ago))
    assert ingest.prune_locks() == 2
    assert not old.lock_path.exists() and new.lock_path.exists() and new.pending_path.exists()


# -- the fast start reads exactly the hook command line ------------------------
def test_the_fast_start_reads_the_hook_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOMEM_DB", raising=False)
    args = parse_hook_argv(["--db", "/m.db", "--namespace=work", "hook", "claude-code", "--budget", "900"])
    assert args is not None and (args.db, args.namespace, args.budget) == ("/m.db", "work", 900)
    late = parse_hook_argv(["hook", "claude-code", "--db", "/m.db", "--time-limit", "1.5"])
    assert late is not None and (late.db, late.time_limit) == ("/m.db", 1.5)
    hook_line = ["--db", "/m.db", "hook", "claude-code"]
    for other in (["facts"], ["hook", "claude-code"], ["--db", "/m.db", "hook", "codex"], ["-v", "hook"],
                  [*hook_line, "--budget", "9"], [*hook_line, "x"], ["--db"]):
        assert parse_hook_argv(other) is None, other  # the click command line decides
    monkeypatch.setenv("CHRONOMEM_DB", "/env.db")
    from_env = parse_hook_argv(["hook", "claude-code"])
    assert from_env is not None and from_env.db == "/env.db"


def test_the_fast_start_hands_every_other_command_line_to_click(store: Path, env: dict[str, str]) -> None:
    for args in (["--version"], ["--db", str(store), "stats", "--json"], ["--db", str(store), "nosuchcommand"]):
        fast = subprocess.run([*FAST, *args], capture_output=True, env=env, timeout=60)
        cli = subprocess.run([CLI, *args], capture_output=True, env=env, timeout=60)
        assert (fast.returncode, fast.stdout, fast.stderr) == (cli.returncode, cli.stdout, cli.stderr), args


def test_parse_input_reads_the_documented_fields() -> None:
    got = parse_input(json.dumps(prompt("hi", session="s1")).encode())
    assert got is not None and (got.event, got.session_id, got.prompt, got.cwd) == \
        ("UserPromptSubmit", "s1", "hi", "/tmp")
    assert parse_input(b'{"hook_event_name": "Stop", "transcript_path": 3}') is not None
    assert parse_input(b"{}") is None


# -- watch --------------------------------------------------------------------
def watch(db: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    done = subprocess.run([CLI, "--db", str(db), "watch", "--json", "--once", *args], capture_output=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_watch_once_imports_what_grew_between_passes(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "memory.db"
    projects = tmp_path / "projects"
    log = projects / "-home-ana-src-billing" / f"{SESSION}.jsonl"
    write_log(log, ["alpha question", "alpha answer"])
    first = watch(db, env, str(projects), "--format", "claude-code")
    assert [(r["added"], r["format"]) for r in first] == [(2, "claude-code")]
    again = watch(db, env, str(projects))
    assert [(r["added"], r["files_unchanged"]) for r in again] == [(0, 1)]  # unchanged file: not even read
    write_log(log, ["beta question"], start=3, mode="a")
    with open(log, "a", encoding="utf-8") as fp:
        fp.write(json.dumps(entry(4, "assistant", "beta answer"))[:40])  # a line still being written
    grown = watch(db, env, str(projects))
    assert grown[0]["added"] == 1 and grown[0]["unchanged"] == 2
    with open(log, "a", encoding="utf-8") as fp:
        fp.write(json.dumps(entry(4, "assistant", "beta answer"))[40:] + "\n")
    done = watch(db, env, str(projects))
    assert done[0]["added"] == 1
    assert sorted(e.text for e in episodes(db)) == ["alpha answer", "alpha question", "beta answer", "beta question"]


def test_watch_follows_a_file_until_ctrl_c(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "memory.db"
    projects = tmp_path / "projects"
    log = projects / "p" / f"{SESSION}.jsonl"
    write_log(log, ["gamma one"])
    proc = subprocess.Popen([CLI, "--db", str(db), "watch", "--json", "--interval", "0.2", str(projects)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        lines = _lines(proc)
        assert next(lines)["added"] == 1
        write_log(log, ["gamma two"], start=2, mode="a")
        grown = next(lines)
        assert grown["added"] == 1 and grown["path"] == str(log.resolve())  # that file alone
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err


def _lines(proc: subprocess.Popen[str]) -> Iterator[dict[str, Any]]:
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)


def test_watch_refuses_a_missing_path_with_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    done = subprocess.run([CLI, "--db", str(tmp_path / "m.db"), "watch", "--once", str(tmp_path / "nope")],
                          capture_output=True, env=env, timeout=60, text=True)
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([CLI, "--db", str(tmp_path / "m.db"), "watch", "--once", "--format", "chatgtp",
                           str(tmp_path)], capture_output=True, env=env, timeout=60, text=True)
    assert done.returncode == 1 and "unknown format 'chatgtp'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before anything was opened


# -- a running `chronomem serve` answers instead ------------------------------
def test_a_running_server_answers_with_the_hybrid_recall(tmp_path: Path, env: dict[str, str]) -> None:
    import urllib.request

    from chronomem.adapters.hooks import server_link

    db = tmp_path / "memory.db"
    mem = chronomem.open(str(db), embedder="minilm")  # vectors, for the server's dense search
    try:
        mem.add_episodes([{"text": "The cat sat on the mat all afternoon.", "session": "earlier"}])
    finally:
        mem.close()
    ask = prompt("kitten resting on a rug")  # no word in common: only the dense side finds it
    assert hook(db, ask, env).stdout == b""  # the hook alone recalls lexically
    server_env = {**env, "CHRONOMEM_EMBEDDER": "auto"}
    proc = subprocess.Popen([CLI, "--db", str(db), "serve", "--port", "0", "--no-mcp", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env, text=True)
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        found = wait_for(lambda: server_link.find(str(db), "default"), 30)
        assert found == url
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{url}api/recall?q=warm+up", timeout=60) as response:  # the model loads once
            assert "items" in json.loads(response.read())
        done = hook(db, ask, env)
        assert done.returncode == 0 and done.stderr == b""
        assert "The cat sat on the mat" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert server_link.find(str(db), "default") is None  # a stopped server removes its file
    assert not server_link.discovery_path(str(db), "default").exists()


def test_a_server_with_tokens_answers_the_hook_that_has_its_agent_token(tmp_path: Path, env: dict[str, str]) -> None:
    import urllib.request

    from chronomem.adapters.hooks import server_link

    db = tmp_path / "memory.db"
    mem = chronomem.open(str(db), namespace="team", embedder="minilm")
    try:
        mem.add_episodes([{"text": "The cat sat on the mat all afternoon.", "session": "earlier"}])
        token = mem.tokens.create("agent-7", "team", "read").token
    finally:
        mem.close()
    ask = prompt("kitten resting on a rug")  # only the server's dense side finds it
    env = {**env, "CHRONOMEM_NAMESPACE": "team"}
    proc = subprocess.Popen([CLI, "--db", str(db), "--namespace", "team", "serve", "--port", "0", "--no-mcp",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**env, "CHRONOMEM_EMBEDDER": "auto"}, text=True)
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        assert wait_for(lambda: server_link.find(str(db), "team"), 30) == url
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        warm = urllib.request.Request(f"{url}api/recall?q=warm+up", headers={"Authorization": f"Bearer {token}"})
        with opener.open(warm, timeout=60) as response:  # the model loads once
            assert "items" in json.loads(response.read())
        without = hook(db, ask, env)  # refused by the server (no token): the lexical recall finds nothing
        assert without.returncode == 0 and without.stdout == b""
        done = hook(db, ask, {**env, server_link.AGENT_TOKEN_ENV: token})
        assert done.returncode == 0 and done.stderr == b""
        assert "The cat sat on the mat" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_a_dead_servers_file_is_dropped(store: Path, env: dict[str, str]) -> None:
    from chronomem.adapters.hooks import server_link

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = server_link.discovery_path(str(store), "default")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"url": "http://127.0.0.1:9/", "pid": int(gone.stdout)}), encoding="utf-8")
    done = hook(store, prompt("How do the zebrafish webhooks retry?"), env)
    assert "capped at one hour" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert not path.exists()
    # a live process that does not answer (not a server at all): the hook recalls locally in time
    with server_link.announce(str(store), "default", "http://127.0.0.1:9/"):
        started = time.monotonic()
        done = hook(store, prompt("How do the zebrafish webhooks retry?"), env)
        assert "capped at one hour" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert time.monotonic() - started < 10
