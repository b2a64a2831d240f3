"""The Codex CLI rollout reader, on hand-made rollouts in the current
envelope shape (0.4x) and the early header-then-items shape
(tests/data/import/codex/)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats import reader
from chronomem.service.ingest.formats.codex import READER
from chronomem.service.ingest.source import Item, ReadOptions, Skip, SourceMessage
from import_helpers import DATA, assert_claims_no_other_fixture, generator, stream

SESSIONS = DATA / "codex" / "sessions"
NEW_ID = "0199e3a1-5c2b-7d40-8f1e-2a6b9c3d4e5f"
OLD_ID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
NEW = SESSIONS / "2025" / "10" / "14" / f"rollout-2025-10-14T10-02-11-{NEW_ID}.jsonl"
OLD = SESSIONS / "2025" / "05" / "20" / f"rollout-2025-05-20T17-24-21-{OLD_ID}.jsonl"


def items(path: Path) -> list[Item]:
    return list(READER.read(path, ReadOptions(root=path)))


def at(minute: int, second: int, ms: int = 0) -> _dt.datetime:
    return _dt.datetime(2025, 10, 14, 10, minute, second, ms * 1000, tzinfo=_dt.timezone.utc)


META = {"cwd": "/home/ana/src/chronomem", "project": "chronomem", "version": "0.46.0", "branch": "feat/ingest",
        "repo": "git@github.com:ana/chronomem.git"}
TURN = {**META, "model": "gpt-5-codex"}  # once the first turn_context is read


def msg(line: int, text: str, when: _dt.datetime | None, speaker: str, context: dict[str, str] = TURN) -> SourceMessage:
    return SourceMessage(key=f"{NEW_ID}:{line}", text=text, occurred_at=when, speaker=speaker, session=NEW_ID,
                         context=context)


def test_current_rollout_exact_messages_and_skips() -> None:
    assert items(NEW) == [
        # line 2, the <environment_context> message, is dropped silently; line 4 (event_msg user_message)
        # repeats line 3 and is ignored
        msg(3, "Add a --since flag to the ingest command", at(2, 15), "user", META),
        msg(8, "[tool shell: rg -n 'def ingest' src]", at(2, 18, 900), "assistant"),  # reasoning (7) left out
        msg(9, "[tool result shell: 1 line]", at(2, 19, 310), "tool"),
        msg(11, "[tool apply_patch: src/chronomem/cli.py]", at(2, 30), "assistant"),
        msg(12, "[tool result apply_patch: 2 lines]", at(2, 30, 400), "tool"),
        Skip(f"{NEW.name}:13", "invalid JSON (a truncated or corrupt line)"),
        msg(14, "I added `--since` to `chronomem ingest`: it takes an ISO date and skips older messages.",
            at(2, 40, 120), "assistant"),  # line 15, its agent_message echo, ignored
        Skip(f"{NEW_ID}:16", "empty"),
        msg(17, "Pr\ufffdfe bitte auch die Zeitzone", at(3, 20), "user"),  # a Latin-1 byte
        msg(18, "Done: `--since` is read as UTC when it has no offset.", None, "assistant"),  # no timestamp
        msg(19, "[tool shell: git status --short]", at(3, 40), "assistant"),
        msg(20, "[tool result shell: exit 128, 1 line]", at(3, 40, 300), "tool"),
        # line 21, a developer message, dropped silently
        msg(22, "[tool result: 1 line, 1 image]", at(3, 50), "tool"),
        Skip(f"{NEW.name}:23", "invalid JSON (a truncated or corrupt line)"),  # still being written
    ]


def test_early_rollout_header_then_bare_items() -> None:
    context = {"branch": "main", "repo": "https://github.com/ana/notes.git"}
    assert items(OLD) == [
        # line 2 (<user_instructions>) and the {"record_type": "state"} lines dropped silently
        SourceMessage(f"{OLD_ID}:3", "List the files in this repo", None, "user", OLD_ID, context),
        SourceMessage(f"{OLD_ID}:5", "[tool shell: ls -1]", None, "assistant", OLD_ID, context),
        SourceMessage(f"{OLD_ID}:6", "[tool result shell: 3 lines]", None, "tool", OLD_ID, context),
        SourceMessage(f"{OLD_ID}:7", "The repo has README.md, src/ and tests/.", None, "assistant", OLD_ID, context),
    ]


def test_files_takes_the_sessions_folder_or_one_rollout(tmp_path: Path) -> None:
    assert READER.files(ReadOptions(root=SESSIONS)) == [OLD, NEW]
    assert READER.files(ReadOptions(root=SESSIONS.parent)) == [OLD, NEW]
    assert READER.files(ReadOptions(root=NEW)) == [NEW]
    (tmp_path / "history.jsonl").write_text('{"session_id":"x","ts":1,"text":"hi"}\n')
    with pytest.raises(InvalidInputError, match="no Codex rollouts"):
        READER.files(ReadOptions(root=tmp_path))
    claude = next((DATA / "claude-code").rglob("*.jsonl"))
    for bad, word in ((tmp_path / "missing", "does not exist"), (claude, "not a Codex rollout"),
                      (tmp_path / "history.jsonl", "not a Codex rollout")):
        with pytest.raises(InvalidInputError, match=word) as caught:
            READER.files(ReadOptions(root=bad))
        assert str(caught.value).startswith("path: ")


def test_detect_claims_rollouts_and_no_other_format(tmp_path: Path) -> None:
    for path in (SESSIONS, SESSIONS.parent, SESSIONS / "2025", NEW, OLD):
        assert READER.detect(path), path
    assert reader("codex") is READER
    assert_claims_no_other_fixture(READER, "codex")
    assert not READER.detect(tmp_path / "nowhere")
    # a generic JSONL whose first object happens to have an id and a timestamp is not a rollout
    generic = tmp_path / "turns.jsonl"
    generic.write_text('{"id": "1", "timestamp": "2025-01-01T00:00:00Z", "text": "hi"}\n')
    assert not READER.detect(generic)


def test_session_id_falls_back_to_the_file_uuid_and_odd_items_never_raise(tmp_path: Path) -> None:
    sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    path = tmp_path / f"rollout-2025-10-14T10-00-00-{sid}.jsonl"
    lines = [
        {"timestamp": "2025-10-14T12:00:00+02:00", "type": "response_item", "payload": {
            "type": "function_call", "name": "exec_command", "call_id": "c1",
            "arguments": json.dumps({"cmd": "cat " + "very/long/path/" * 30})}},
        {"timestamp": "2025-10-14T10:00:01Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "view_image", "call_id": "c2", "arguments": "not json"}},
        {"timestamp": "2025-10-14T10:00:02Z", "type": "response_item", "payload": {
            "type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "codex rollout"}}},
        {"timestamp": "2025-10-14T10:00:03Z", "type": "response_item", "payload": {"type": "message", "role": "user"}},
        {"timestamp": "2025-10-14T10:00:04Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:..."}]}},
        {"timestamp": "2025-10-14T10:00:05Z", "type": "response_item", "payload": {"type": "ghost_snapshot"}},
        {"timestamp": "2025-10-14T10:00:06Z", "type": "compacted", "payload": {"message": "summary"}},
        {"payload": "not an object", "type": "response_item"},
        {"something": "else"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    got = items(path)
    first = got[0]
    assert isinstance(first, SourceMessage) and first.session == sid and first.key == f"{sid}:1"
    assert first.occurred_at == _dt.datetime(2025, 10, 14, 10, 0, tzinfo=_dt.timezone.utc)
    assert first.text.startswith("[tool exec_command: cat very/long/path/") and first.text.endswith("…]")
    assert len(first.text) <= 201 and first.context == {}
    assert [(i.key, i.text) for i in got[1:3] if isinstance(i, SourceMessage)] == [
        (f"{sid}:2", "[tool view_image: not json]"), (f"{sid}:3", "[tool web_search: codex rollout]")]
    assert got[3:] == [
        Skip(f"{sid}:4", "empty"),
        SourceMessage(f"{sid}:5", "[image]", _dt.datetime(2025, 10, 14, 10, 0, 4, tzinfo=_dt.timezone.utc),
                      "user", sid, {}),
        Skip(f"{path.name}:8", "not a rollout line"),
        Skip(f"{path.name}:9", "not a rollout line"),
    ]


def test_a_30_mb_rollout_streams_in_constant_memory(tmp_path: Path) -> None:
    root = generator("codex").write(tmp_path / "sessions", 19000, seed=5)
    [path] = READER.files(ReadOptions(root=root))
    assert path.stat().st_size > 28_000_000 and READER.detect(root)
    got = stream(READER, root)
    assert got.messages > 5000 and got.skips > 0
    assert got.peak < 20_000_000, got.peak
    assert got.seconds < 10


def test_a_session_meta_longer_than_the_detect_head(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2025-10-14T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl"
    meta = {"timestamp": "2025-10-14T10:00:00.000Z", "type": "session_meta", "payload": {
        "id": "s-long", "cwd": "/w/app", "cli_version": "0.50.0",
        "base_instructions": {"text": "You are Codex. " * 3000}}}  # ~45 KB on one line
    user = {"timestamp": "2025-10-14T10:00:01.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}}
    path.write_text(json.dumps(meta, separators=(",", ":")) + "\n" + json.dumps(user) + "\n")
    assert READER.detect(path) and READER.detect(tmp_path) and READER.files(ReadOptions(root=path)) == [path]
    assert items(path) == [SourceMessage("s-long:2", "hello", _dt.datetime(2025, 10, 14, 10, 0, 1,
                                         tzinfo=_dt.timezone.utc), "user", "s-long",
                                         {"cwd": "/w/app", "project": "app", "version": "0.50.0"})]
