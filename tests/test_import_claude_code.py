"""The Claude Code session log reader, on hand-made logs in the shapes
Claude Code 1.0.x and 2.0.x write (tests/data/import/claude-code/)."""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats import reader
from chronomem.service.ingest.formats.claude_code import READER
from chronomem.service.ingest.source import Item, ReadOptions, Skip, SourceMessage
from import_helpers import DATA, assert_claims_no_other_fixture, generator, stream

ROOT = DATA / "claude-code" / "projects"
A = "5b1d3c9e-2f4a-4c61-9a57-0d2e8f6b7a10"
B = "c2e0a7b4-1d3f-4e8a-b6c5-93f1e2d4a8b7"
MAIN = ROOT / "-home-ana-src-chronomem" / f"{A}.jsonl"
AGENT = ROOT / "-home-ana-src-chronomem" / A / "subagents" / "agent-a1b2c3d4.jsonl"
NOTES = ROOT / "-home-ana-src-notes" / f"{B}.jsonl"


def at(hour: int, minute: int, second: int, ms: int = 0) -> _dt.datetime:
    return _dt.datetime(2025, 10, 14, hour, minute, second, ms * 1000, tzinfo=_dt.timezone.utc)


def items(path: Path) -> list[Item]:
    return list(READER.read(path, ReadOptions(root=path)))


CTX = {"title": "Fix flaky bitemporal query test", "project": "chronomem", "cwd": "/home/ana/src/chronomem",
       "branch": "main", "version": "2.0.31"}
MODEL = {"model": "claude-sonnet-4-5-20250929"}
SIDE = {"sidechain": True}


def msg(key: str, text: str, when: _dt.datetime | None, speaker: str, **extra: object) -> SourceMessage:
    return SourceMessage(key=key, text=text, occurred_at=when, speaker=speaker, session=A, context={**CTX, **extra})


def test_main_session_exact_messages_and_skips() -> None:
    assert items(MAIN) == [
        msg("u-0001", "Why does test_as_of_query fail only on CI?", at(9, 12, 3, 118), "user"),
        # three entries (thinking, text, tool_use) of one API message: one message, the thinking left out
        msg("msg_01AbCdEf", "Let me run the test first.\n[tool Bash: pytest -q tests/test_as_of.py -x]",
            at(9, 12, 6, 1), "assistant", **MODEL),
        msg("u-0005", "[tool result Bash: 3 lines]", at(9, 12, 9, 300), "tool"),
        Skip(f"{A}.jsonl:10", "invalid JSON (a truncated or corrupt line)"),
        msg("msg_01GhIjKl", "The test compares against `datetime.now()` without a timezone; CI runs in UTC and "
            "your laptop in CET.\n\nI'll make it timezone-aware.\n"
            "[tool Edit: /home/ana/src/chronomem/tests/test_as_of.py]",
            at(9, 12, 15), "assistant", **MODEL),
        msg("u-0007", "[tool error Edit: File has been modified since read, either by the user or by a linter.]",
            at(9, 12, 15, 500), "tool"),
        # u-0008 (isMeta caveat) and u-0010 (local-command stdout) are dropped silently
        msg("u-0009", "[command: /model sonnet]", at(9, 13, 0, 10), "user"),
        msg("u-0011", "Caf\ufffd au lait aside: does the r\ufffdsum\ufffd parser break too?",  # non-UTF-8 bytes
            at(9, 14, 2, 500), "user"),
        Skip("u-0012", "empty"),
        msg("u-0013", "Thanks, that works now.", None, "user"),  # no timestamp in the entry
        msg("u-0014", "Search the codebase for naive uses of datetime.now()", at(9, 15, 0), "user", **SIDE),
        msg("msg_01MnOpQr", "[tool Grep: datetime\\.now\\(\\)]", at(9, 15, 2), "assistant", **SIDE, **MODEL),
        msg("u-0016", "[tool result Grep: 2 lines]", at(9, 15, 2, 400), "tool", **SIDE),
        msg("msg_01StUvWx", "Found 2 naive uses: src/a.py:3 and src/b.py:9.", at(9, 15, 5), "assistant",
            **SIDE, **MODEL),
        # system compact_boundary and the isCompactSummary entry are dropped silently
        msg("u-0020", "Here is the screenshot of the CI failure\n[image: image/png]", at(9, 21, 0), "user"),
        Skip(f"{A}.jsonl:25", "invalid JSON (a truncated or corrupt line)"),  # last line, still being written
        Skip("msg_01YzAbCd", "empty"),  # only thinking
    ]


def test_subagent_log_and_session_without_summary() -> None:
    agent = {"project": "chronomem", "cwd": "/home/ana/src/chronomem", "branch": "main", "version": "2.0.31",
             "sidechain": True, "agent": "a1b2c3d4"}
    assert items(AGENT) == [
        SourceMessage("a-0001", "Read src/a.py and report its imports", at(9, 16, 0), "user", A, agent),
        SourceMessage("msg_01SubAgnt", "src/a.py imports datetime and json.", at(9, 16, 3), "assistant", A,
                      {**agent, **MODEL}),
    ]
    notes = {"project": "notes", "cwd": "/home/ana/src/notes", "version": "1.0.83"}  # empty gitBranch: no branch
    assert items(NOTES) == [
        SourceMessage("b-0001", "Rename the daily notes to ISO dates",
                      _dt.datetime(2025, 9, 2, 18, 40, 11, tzinfo=_dt.timezone.utc), "user", B, notes),
        SourceMessage("msg_01NotesOne", "I'll rename them with `git mv` so history is kept.",
                      _dt.datetime(2025, 9, 2, 18, 40, 15, 250000, tzinfo=_dt.timezone.utc), "assistant", B,
                      {**notes, **MODEL}),
    ]


def test_files_takes_the_projects_folder_one_project_or_one_log() -> None:
    assert READER.files(ReadOptions(root=ROOT)) == [AGENT, MAIN, NOTES]  # notes.txt is not a log
    assert READER.files(ReadOptions(root=ROOT / "-home-ana-src-notes")) == [NOTES]
    assert READER.files(ReadOptions(root=MAIN)) == [MAIN]


def test_files_rejects_what_is_not_claude_code(tmp_path: Path) -> None:
    rollout = next((DATA / "codex").rglob("rollout-*.jsonl"))
    for bad, word in ((tmp_path / "missing", "does not exist"), (ROOT / "-home-ana-src-notes" / "notes.txt", "not a"),
                      (rollout, "not a Claude Code"), (tmp_path, "no Claude Code session logs")):
        with pytest.raises(InvalidInputError, match=word) as caught:
            READER.files(ReadOptions(root=bad))
        assert str(caught.value).startswith("path: ")


def test_files_since_prunes_logs_not_written_since(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    for path in (old, new):
        path.write_bytes(NOTES.read_bytes())
    stamp = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc).timestamp()
    os.utime(old, (stamp, stamp))
    since = _dt.datetime(2025, 6, 1, tzinfo=_dt.timezone.utc)
    assert READER.files(ReadOptions(root=tmp_path, since=since)) == [new]


def test_detect_claims_its_logs_and_no_other_format() -> None:
    for path in (ROOT, ROOT.parent, ROOT / "-home-ana-src-notes", MAIN, AGENT, NOTES):
        assert READER.detect(path), path
    assert reader("claude-code") is READER
    assert_claims_no_other_fixture(READER, "claude-code")
    assert not READER.detect(DATA / "nowhere")
    assert not READER.detect(ROOT / "-home-ana-src-notes" / "notes.txt")


def _entry(uuid: str, mid: str, block: Mapping[str, object], ts: str) -> str:
    return json.dumps({"type": "assistant", "uuid": uuid, "sessionId": "s1", "timestamp": ts, "cwd": "/w/app",
                       "message": {"id": mid, "role": "assistant", "content": [block]}})


def test_split_message_key_does_not_depend_on_how_much_was_written(tmp_path: Path) -> None:
    log = tmp_path / "s1.jsonl"
    first = _entry("e1", "msg_X", {"type": "text", "text": "Part one."}, "2025-10-14T09:00:00Z")
    log.write_text(first + "\n")
    [partial] = items(log)
    assert isinstance(partial, SourceMessage) and (partial.key, partial.text) == ("msg_X", "Part one.")
    second = _entry("e2", "msg_X", {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
                    "2025-10-14T09:00:01Z")
    log.write_text(first + "\n" + second + "\n")
    [whole] = items(log)
    assert isinstance(whole, SourceMessage)
    assert (whole.key, whole.text, whole.occurred_at) == ("msg_X", "Part one.\n[tool Read: a.py]", partial.occurred_at)
    assert whole.context == {"project": "app", "cwd": "/w/app"}


def test_cumulative_entries_do_not_repeat_blocks_and_late_blocks_get_their_own_key(tmp_path: Path) -> None:
    log = tmp_path / "s1.jsonl"
    text = {"type": "text", "text": "Checking."}
    tool = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    both = json.dumps({"type": "assistant", "uuid": "e2", "sessionId": "s1", "timestamp": "2025-10-14T09:00:01Z",
                       "message": {"id": "msg_X", "role": "assistant", "content": [text, tool]}})
    other = _entry("e3", "msg_Y", {"type": "text", "text": "Next."}, "2025-10-14T09:00:02Z")
    late = _entry("e4", "msg_X", {"type": "text", "text": "Late block."}, "2025-10-14T09:00:03Z")
    log.write_text("\n".join([_entry("e1", "msg_X", text, "2025-10-14T09:00:00Z"), both, other, late]) + "\n")
    got = [(m.key, m.text) for m in items(log) if isinstance(m, SourceMessage)]
    assert got == [("msg_X", "Checking.\n[tool Bash: ls]"), ("msg_Y", "Next."), ("msg_X#e4", "Late block.")]


def test_odd_records_become_skips_never_errors(tmp_path: Path) -> None:
    log = tmp_path / "odd.jsonl"
    long_command = "echo " + "x" * 500
    lines = [
        "[1, 2, 3]",
        json.dumps({"type": "user", "uuid": "n1"}),  # no message
        json.dumps({"type": "user", "message": {"role": "user", "content": "no uuid"}}),
        json.dumps({"type": "assistant", "message": {"role": "assistant", "content": []}}),  # no uuid, no id
        json.dumps({"type": "assistant", "uuid": "n2", "message": "not an object"}),
        json.dumps({"type": "user", "uuid": "n3", "timestamp": "yesterday", "message": {"role": "user", "content": 7}}),
        json.dumps({"type": "assistant", "uuid": "n4", "timestamp": "2025-10-14T11:00:00+02:00", "message": {
            "id": "msg_L", "content": [
                {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": long_command}},
                "stray", {"type": "redacted_thinking", "data": "..."}]}}),
        json.dumps({"type": "user", "uuid": "n5", "message": {"content": "<bash-input>git log -1</bash-input>"}}),
        json.dumps({"type": "user", "uuid": "n6", "message": {"content": "<bash-stdout>abc</bash-stdout>"}}),
        json.dumps({"type": "queue-operation", "operation": "enqueue"}),
    ]
    log.write_text("\n".join(lines) + "\n")
    got = items(log)
    assert got[:6] == [
        Skip("odd.jsonl:1", "not a JSON object"),
        Skip("odd.jsonl:2", "user entry without a message"),
        Skip("odd.jsonl:3", "user entry without uuid"),
        Skip("odd.jsonl:4", "assistant entry without uuid or message id"),
        Skip("odd.jsonl:5", "assistant entry without a message"),
        Skip("n3", "empty"),
    ]
    tool, shell = got[6], got[7]
    assert isinstance(tool, SourceMessage) and tool.key == "msg_L"
    assert tool.occurred_at == _dt.datetime(2025, 10, 14, 9, 0, tzinfo=_dt.timezone.utc)  # converted to UTC
    assert tool.text.startswith("[tool Bash: echo xxx") and tool.text.endswith("…]") and len(tool.text) <= 201
    assert isinstance(shell, SourceMessage) and shell.text == "[shell: git log -1]" and shell.session == "odd"
    assert len(got) == 8  # bash-stdout plumbing and the queue operation dropped silently


def test_truncated_last_line_is_read_once_complete(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    whole = json.dumps({"type": "user", "uuid": "w1", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    log.write_text(whole[:30])
    assert items(log) == [Skip("live.jsonl:1", "invalid JSON (a truncated or corrupt line)")]
    log.write_text(whole + "\n")
    [got] = items(log)
    assert isinstance(got, SourceMessage) and got.key == "w1"


def test_a_30_mb_log_streams_in_constant_memory(tmp_path: Path) -> None:
    path = generator("claude_code").write(tmp_path / "big.jsonl", 7000, seed=3)
    assert path.stat().st_size > 28_000_000
    assert READER.detect(path) and READER.files(ReadOptions(root=path)) == [path]
    got = stream(READER, path)
    assert got.messages > 3000 and got.skips > 0  # the generator sprinkles bad lines in
    assert got.peak < 20_000_000, got.peak
    assert got.seconds < 10


def test_a_first_line_longer_than_the_detect_head_and_an_empty_new_log(tmp_path: Path) -> None:
    log = tmp_path / "paste.jsonl"
    paste = "Traceback line\n" * 2000  # a 30 KB paste as the first prompt
    log.write_text(json.dumps({"parentUuid": None, "isSidechain": False, "cwd": "/w/app", "sessionId": "s",
                               "type": "user", "message": {"role": "user", "content": paste}, "uuid": "p1",
                               "timestamp": "2025-10-14T09:00:00Z"}, separators=(",", ":")) + "\n")
    assert READER.detect(log) and READER.files(ReadOptions(root=log)) == [log]
    [got] = items(log)
    assert isinstance(got, SourceMessage) and got.text == paste  # verbatim, however long
    empty = tmp_path / "new.jsonl"
    empty.write_bytes(b"")
    assert READER.files(ReadOptions(root=empty)) == [empty] and items(empty) == []


def test_title_a_rename_beats_an_ai_title_beats_a_summary(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    user = json.dumps({"type": "user", "uuid": "t1", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    lines = ['{"type":"summary","summary":"Old summary","leafUuid":"t1"}', user,
             '{"type":"ai-title","aiTitle":"AI title one","sessionId":"s"}',
             '{"type":"ai-title","aiTitle":"AI title two","sessionId":"s"}']
    log.write_text("\n".join(lines) + "\n")
    [first] = items(log)
    assert isinstance(first, SourceMessage) and first.context["title"] == "AI title two"
    log.write_text("\n".join([*lines, '{"type":"custom-title","customTitle":"auth refactor","sessionId":"s"}']) + "\n")
    [second] = items(log)
    assert isinstance(second, SourceMessage) and second.context["title"] == "auth refactor"
    log.write_text("\n".join(lines[:2]) + "\n")
    [third] = items(log)
    assert isinstance(third, SourceMessage) and third.context["title"] == "Old summary"
